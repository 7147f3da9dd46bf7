"""The data framework: the dataset registry (:mod:`.registry`: config names → the datasets of
:mod:`graph_transformers.datasets`, imported lazily; ``data.source``; the record
``metrics.json`` keeps; each registration declares the arguments its loader accepts), the
processed-data cache (:mod:`.cache`), downloads (:mod:`.download`), the benchmarks' published
files (:mod:`.published`: finding, unpacking and downloading them, their field conversion),
split names and argument checks and the base class of generated datasets (:mod:`.generated`),
parallel generation (:mod:`.parallel`), progress bars (:mod:`.progress`) and the batch
samplers (:mod:`.sampler`, :mod:`.sampling`, :mod:`.cluster`) and the checks every reader
of a user's text table shares (:mod:`.textfiles`). The datasets themselves live in
:mod:`graph_transformers.datasets`, by family (``docs/adding_a_dataset.md``).
"""
from .._lazy import lazy_exports

#: what users call (the API reference lists them), imported on first use so that importing the
#: package stays cheap; everything else lives in its module
_LAZY = {
    "DatasetSpec": "registry", "register_dataset": "registry", "get_spec": "registry",
    "load_splits": "registry", "SizeBucketBatchSampler": "sampler",
    "DistributedBatchSampler": "sampler", "neighbor_loader": "sampling",
    "cluster_loader": "cluster", "metis_partition": "cluster"
}

__all__ = sorted(_LAZY)
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
