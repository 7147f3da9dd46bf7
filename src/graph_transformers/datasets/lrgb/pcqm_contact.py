r"""``pcqm-contact`` of the Long Range Graph Benchmark (Dwivedi et al., "Long Range Graph
Benchmark", NeurIPS 2022 Datasets and Benchmarks, §3.3): 529,434 molecules of PCQM4Mv2 with a 3D
conformer; predict which atom pairs are in **contact** (closer than 3.5 Å in 3D but at least 5
bonds apart). A link-prediction task within each graph (``DatasetSpec.level == "pair"``), scored
by the filtered MRR of Tönshoff et al.'s corrected evaluation
(:mod:`graph_transformers.training.lrgb_metrics`). Read from LRGB's published files in
``DATA_DIR`` (never downloaded, no generator: ``data.source: generated`` is a config error).

**Files.** LRGB's release of the processed graphs, the zip that PyG's ``LRGBDataset`` downloads
(:data:`PCQM_CONTACT_URL`): one file per split, looked for, in order, as

* ``DATA_DIR/pcqmcontact/{train,val,test}.pt`` (the zip unpacked into ``DATA_DIR``);
* ``DATA_DIR/pcqm-contact/raw/{train,val,test}.pt`` (PyG's ``LRGBDataset(root=DATA_DIR,
  name="PCQM-Contact")`` layout).

Each file is a ``torch.save``\ d list of graphs, each the tuple ``(x, edge_attr, edge_index,
edge_label_index, edge_label)`` (PyG's ``process_pcqm_contact``): ``x`` ``[N, 9]`` and
``edge_attr`` ``[E, 3]`` OGB's atom and bond features (``smiles2graph``), ``edge_index``
``[2, E]`` (every bond both ways), ``edge_label_index`` ``[2, L]`` labelled atom pairs with
``edge_label`` ``[L]`` (1 = contact; both directions of a contact are listed, as LRGB's
``to_undirected``). It is read with ``torch.load(weights_only=True)`` (tensors, containers and
NumPy arrays; a file naming anything else is refused, never unpickled otherwise). The splits are
LRGB's shuffled 90 / 5 / 5 % split of its 530k subset.

Why these files and not LRGB's first form (``pcqm4m-contact.tsv.gz``, CXSMILES with a
``contact`` atom property, subset by row, plus ``530k_shuffle_split_dict.pt``): LRGB built its
graphs from that file with OGB's featurizer on molecules parsed *without sanitization*, which
current RDKit refuses (``getNumImplicitHs() called without preceding call to
calcImplicitValence()``), so the benchmark's graphs cannot be rebuilt exactly from it; the
per-split files hold LRGB's graphs as published.

**Graphs**: ``x`` ``LongTensor [N, 9]``, ``edge_attr`` ``LongTensor [E, 3]``, ``edge_index``
``LongTensor [2, E]``, and the labelled pairs ``edge_label_index`` ``LongTensor [2, P]`` with
``edge_label`` ``LongTensor [P]`` (PyG's link-prediction fields; batching offsets
``edge_label_index`` by the graphs' node counts). The positive pairs are the file's
(``edge_label == 1``; a pair labelled 0 in a file is not used). The negatives are LRGB's
``resample_negative``: for each positive pair ``(i, j)`` two atoms ``k`` are drawn uniformly
among the graph's atoms such that ``(i, k)`` is no contact (``k = i`` allowed; PyG's
``structured_negative_sampling``, drawn twice; duplicates dropped) — in ``train`` anew at every
access (:class:`ContactNegatives` as part of the dataset's ``transform``), in ``val`` / ``test``
once, with seed :data:`EVAL_NEGATIVES_SEED`, stored with the split (the validation loss then
compares like with like across epochs; the MRR uses no negatives: it ranks every atom of the
graph).

**Task.** Binary cross-entropy over the labelled pairs of the dot products of the model's node
embeddings (LRGB's ``inductive_edge`` head with ``edge_decoding: dot``; the model is built at
node level with ``hidden_dim`` outputs, :mod:`graph_transformers.training.tasks`). Metric
``mrr``: the filtered MRR per graph, averaged over graphs, the best checkpoint chosen by it.

**Cache.** Each split is processed on first use into ``CACHE/canonical/PCQM-Contact/processed/
<pre_transform key>_<files tag>_v<format>/<split>.pt`` (checksummed).
"""
from __future__ import annotations

import pickle
import re
import zipfile
from pathlib import Path
from typing import Any

import torch
from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.transforms import BaseTransform
from torch_geometric.utils import coalesce, structured_negative_sampling

from ...data.cache import DATA_ENV, DataNotFoundError, resolve_data_dir
from ...data.generated import PathLike, Transform, chain, check_split
from ...data.published import dir_with, looked
from ...data.registry import DatasetSpec
from ...data.safe_pickle import SAFE_PICKLE_GLOBALS
from ...errors import DataError
from .graph_tuples import as_tensor, check_node_ids, graph_tuple, integral, shaped
from .lrgb_dataset import LRGBSplitFile, lrgb_loader
from .peptides import OGB_ATOM_FEATURE_DIMS, OGB_BOND_FEATURE_DIMS

__all__ = ["ContactNegatives", "EVAL_NEGATIVES_SEED", "NEGATIVES_PER_POSITIVE", "PCQMContact",
           "PCQM_CONTACT_SPEC", "PCQM_CONTACT_URL", "load_pcqm_contact", "read_contact_graphs"]


#: bumped when the stored fields change (it is in the cache key)
_FORMAT = 1
#: LRGB's zip of the per-split files (the URL of PyG's ``LRGBDataset``)
PCQM_CONTACT_URL = "https://www.dropbox.com/s/qdag867u6h6i60y/pcqmcontact.zip?dl=1"
#: the folder of the unpacked zip / PyG's name of the dataset
_FOLDER, _PYG_NAME, _TITLE = "pcqmcontact", "pcqm-contact", "PCQM-Contact"
_SPLIT_FILES = ("train.pt", "val.pt", "test.pt")
_FIELDS = ("x", "edge_attr", "edge_index", "edge_label_index", "edge_label")
#: negatives drawn per positive pair (LRGB's ``structured_neg_sampling_transform``)
NEGATIVES_PER_POSITIVE = 2
#: the seed of the fixed negatives of ``val`` and ``test``
EVAL_NEGATIVES_SEED = 0


def _locate(data_dir: Path | None) -> Path:
    """The folder holding ``{train,val,test}.pt`` (module docstring).

    Raises:
        DataNotFoundError: no data directory, or no folder with the three files; one line
            naming the expected paths, the folders searched and LRGB's URL.
    """
    how = (f"download LRGB's {PCQM_CONTACT_URL} and unpack it into DATA_DIR, giving DATA_DIR/"
           f"{_FOLDER}/{{train,val,test}}.pt (or use PyG's layout DATA_DIR/{_PYG_NAME}/raw/); "
           "nothing is downloaded automatically")
    if data_dir is None:
        raise DataNotFoundError(f"{_TITLE}: no data directory (pass --data-dir or set "
                                f"${DATA_ENV}); to get the files, {how}")
    dirs = [data_dir / _FOLDER, data_dir / _PYG_NAME / "raw"]
    found = dir_with(dirs, _SPLIT_FILES)
    if found is None:
        raise DataNotFoundError(f"{_TITLE}: {data_dir / _FOLDER}/{{train,val,test}}.pt not "
                                f"found. Looked in: {looked(dirs)}. To use {_TITLE}, {how}")
    return found


# ------------------------------------------------------------------------------ the files
def _load(path: Path) -> Any:
    """``torch.load(path, weights_only=True)`` with NumPy's array types allowed.

    Raises:
        DataError: a file ``weights_only`` refuses (naming the global it holds) or cannot read.
    """
    numpy_types = [v for (module, _), v in SAFE_PICKLE_GLOBALS.items()
                   if module.startswith("numpy")]
    try:
        with torch.serialization.safe_globals(numpy_types):
            return torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, zipfile.BadZipFile, ValueError,
            OSError, AttributeError, IndexError, TypeError) as err:
        text = str(err)
        # torch names the global it refused: "Unsupported global: GLOBAL <name> ..." (torch
        # 2.4-2.7), "... unsupported GLOBAL <name> whose module ... is blocked" (later)
        named = re.search(r"GLOBAL (\S+)", text) if "Weights only" in text or \
            "Unsupported global" in text else None
        if named:
            unsafe = named.group(1)
            raise DataError(f"refusing to load {path}: it holds {unsafe}, not only tensors and "
                            "containers (LRGB's PCQM-Contact files are lists of tensor tuples); "
                            "it is not unpickled otherwise") from None
        first = text.strip().splitlines()[0][:160] if text.strip() else type(err).__name__
        raise DataError(f"cannot read {path}: not a torch file or damaged (torch.load with "
                        f"weights_only=True: {first})") from None


def _features(t: Tensor, dims: tuple[int, ...], what: str, where: str) -> Tensor:
    """Categorical OGB features ``[*, len(dims)]`` as int64, each column below its vocabulary."""
    t = integral(shaped(t, what, where, None, len(dims)), what, where)
    if t.numel():
        bound = torch.tensor(dims)
        bad = (t < 0) | (t >= bound)
        if bool(bad.any()):
            col = int(bad.any(dim=0).nonzero()[0])
            row = int(bad[:, col].nonzero()[0])
            raise DataError(f"{where}: {what} column {col} holds {int(t[row, col])}, outside "
                            f"OGB's vocabulary 0..{dims[col] - 1}")
    return t


def _graph(item: Any, where: str) -> Data:
    """One graph tuple of a PCQM-Contact file as a ``Data`` with its positive pairs (label 1).

    Raises:
        DataError: not a 5-tuple, a tensor of the wrong shape, type or range, a node id outside
            the graph, a label other than 0 / 1, or an atom in contact with itself.
    """
    x, edge_attr, edge_index, pairs, label = (
        as_tensor(v, f, where) for v, f in zip(graph_tuple(item, _FIELDS, where), _FIELDS))
    x = _features(x, OGB_ATOM_FEATURE_DIMS, "x", where)
    num_nodes = x.size(0)
    edge_index = integral(shaped(edge_index, "edge_index", where, 2, None), "edge_index", where)
    check_node_ids(edge_index, num_nodes, "edge_index", where)
    edge_attr = _features(edge_attr, OGB_BOND_FEATURE_DIMS, "edge_attr", where)
    if edge_attr.size(0) != edge_index.size(1):
        raise DataError(f"{where}: edge_attr has {edge_attr.size(0)} rows for "
                        f"{edge_index.size(1)} edges")
    pairs = integral(shaped(pairs, "edge_label_index", where, 2, None), "edge_label_index",
                     where)
    check_node_ids(pairs, num_nodes, "edge_label_index", where)
    label = integral(label.reshape(-1), "edge_label", where)
    if label.numel() != pairs.size(1):
        raise DataError(f"{where}: edge_label has {label.numel()} entries for {pairs.size(1)} "
                        "labelled pairs")
    if label.numel() and not bool(((label == 0) | (label == 1)).all()):
        raise DataError(f"{where}: edge_label holds values other than 0 and 1")
    pos = pairs[:, label == 1]
    if bool((pos[0] == pos[1]).any()):
        raise DataError(f"{where}: edge_label_index lists an atom in contact with itself "
                        "(contacts are at least 5 bonds apart)")
    pos = coalesce(pos, num_nodes=num_nodes)
    return Data(x=x, edge_index=edge_index, edge_attr=edge_attr, edge_label_index=pos,
                edge_label=torch.ones(pos.size(1), dtype=torch.long))


def read_contact_graphs(path: PathLike) -> list[Data]:
    """The graphs of one PCQM-Contact file (module docstring), checked, with their positive
    pairs only (``edge_label_index [2, P]``, ``edge_label`` all 1; duplicates dropped).

    Args:
        path: ``train.pt``, ``val.pt`` or ``test.pt``.

    Returns:
        One ``Data`` per graph, in the file's order: ``x [N, 9]``, ``edge_attr [E, 3]``,
        ``edge_index [2, E]``, ``edge_label_index [2, P]``, ``edge_label [P]``, all int64.

    Raises:
        DataError: an unreadable or refused file, not a list of graph tuples, or a graph that
            fails the checks; one line naming the file and the graph.
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"PCQM-Contact file not found: {path}")
    graphs = _load(path)
    if not isinstance(graphs, (list, tuple)):
        raise DataError(f"{path}: holds a {type(graphs).__name__}, not LRGB's list of ("
                        f"{', '.join(_FIELDS)}) graphs")
    if not graphs:
        raise DataError(f"{path}: holds no graph")
    return [_graph(g, f"{path}: graph {i}") for i, g in enumerate(graphs)]


class ContactNegatives(BaseTransform):
    """Adds the negative pairs to a graph's positive ones (module docstring; LRGB's
    ``resample_negative``): for each positive ``(i, j)``, :data:`NEGATIVES_PER_POSITIVE` atoms
    ``k`` drawn uniformly among the graph's with ``(i, k)`` no contact (``k = i`` allowed), by
    PyG's ``structured_negative_sampling`` (torch's global generator); duplicate negatives are
    dropped. ``edge_label_index`` becomes ``[positives, negatives]`` and ``edge_label`` 1 / 0;
    applied again to its own output, it draws new negatives for the same positives.

    Args:
        per_positive: negatives drawn per positive pair.

    Shapes: ``edge_label_index [2, P]`` → ``[2, P + M]`` with ``M ≤ per_positive · P``.
    """

    def __init__(self, per_positive: int = NEGATIVES_PER_POSITIVE) -> None:
        self.per_positive = int(per_positive)

    def forward(self, data: Data) -> Data:
        pos = data.edge_label_index[:, data.edge_label == 1]
        draws = [structured_negative_sampling(pos, data.num_nodes, contains_neg_self_loops=True)
                 for _ in range(self.per_positive)]
        neg = torch.cat([torch.stack([i, k]) for i, _, k in draws], dim=1) if draws else \
            pos.new_zeros(2, 0)
        neg = coalesce(neg, num_nodes=data.num_nodes)
        data.edge_label_index = torch.cat([pos, neg], dim=1)
        data.edge_label = torch.cat([torch.ones(pos.size(1), dtype=torch.long),
                                     torch.zeros(neg.size(1), dtype=torch.long)])
        return data

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(per_positive={self.per_positive})"


# ------------------------------------------------------------------------------ the dataset
class PCQMContact(LRGBSplitFile):
    r"""One split of PCQM-Contact read from LRGB's per-split files (module docstring), with
    ``pre_transform`` (the encodings) computed per graph when the split is first processed,
    cached and checksummed; ``train`` draws its negative pairs anew at every access
    (:class:`ContactNegatives`, before ``transform``), ``val`` / ``test`` store one fixed draw.

    Each graph: ``x`` ``LongTensor [N, 9]``, ``edge_attr`` ``LongTensor [E, 3]``,
    ``edge_index`` ``LongTensor [2, E]``, ``edge_label_index`` ``LongTensor [2, P]``,
    ``edge_label`` ``LongTensor [P]`` (1 = contact, 0 = drawn negative), plus the encodings.

    Args:
        root: the processing folder (default ``canonical_root()``); the split goes to
            ``root/PCQM-Contact/processed/<key>/<split>.pt``.
        split (str): ``"train"``, ``"val"`` or ``"test"`` (LRGB's files of that name).
        transform, pre_transform, force_reload: as in PyG.
        data_dir: where LRGB's folder is (default ``$GRAPH_TRANSFORMERS_DATA``).

    Attributes:
        provenance (dict): ``{split: "exact"}``.
        canonical_info (dict): the loader, the file read and the negatives.

    Raises:
        ValueError: an unknown split.
        DataNotFoundError: the files are not in the data directory.
        DataError: a damaged, refused or malformed file (:func:`read_contact_graphs`).
    """

    def __init__(self, root: PathLike | None = None, split: str = "train",
                 transform: Transform = None, pre_transform: Transform = None,
                 force_reload: bool = False, *, data_dir: PathLike | None = None) -> None:
        check_split(_TITLE, split)
        self.split, self.title = split, _TITLE
        self.path = _locate(resolve_data_dir(data_dir)) / f"{split}.pt"
        if split == "train":
            transform = chain(ContactNegatives(), transform)
        super().__init__(root, transform, pre_transform, force_reload, version=_FORMAT)
        self.canonical_info: dict[str, Any] = {
            "loader": f"{__name__}.PCQMContact",
            "files": str(self.path.parent),
            "split": f"LRGB's {split}.pt",
            "negatives": f"{NEGATIVES_PER_POSITIVE} per contact, same source atom; "
                         + ("redrawn at every access" if split == "train" else
                            f"drawn once with seed {EVAL_NEGATIVES_SEED}"),
        }

    def read_graphs(self) -> list[Data]:
        """The split's graphs, ``val`` / ``test`` with their fixed negatives drawn."""
        graphs = read_contact_graphs(self.path)
        if self.split != "train":
            negatives = ContactNegatives()
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(EVAL_NEGATIVES_SEED)
                graphs = [negatives(g) for g in graphs]
        return graphs


#: the loader of ``data.name: pcqm-contact``
load_pcqm_contact = lrgb_loader(PCQMContact, "pcqm-contact")


#: ``data.name: pcqm-contact`` (LRGB; contacts between atoms, filtered MRR)
PCQM_CONTACT_SPEC = DatasetSpec("pcqm-contact", "pair", "binary", 1, "mrr", load_pcqm_contact,
                                node_types=OGB_ATOM_FEATURE_DIMS,
                                edge_types=OGB_BOND_FEATURE_DIMS, source="canonical",
                                params=("data_dir",))
