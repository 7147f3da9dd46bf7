"""The ground floor of the library: what every other package stands on, importing only torch and
PyG (never ``nn``, ``models``, ``data`` or ``training``).

- :mod:`.dense`: :class:`~graph_transformers.core.dense.DenseBatch`, the padded view of a PyG
  batch that the global-attention layers use, and the dense-memory budget check.
- :mod:`.checks`: the input checks run before a model's forward (clear one-line errors), and
  the debug switch that extends the value checks to accelerator tensors.
- :mod:`.serialization`: ``weights_only`` loading of ``torch.save`` files with checksums verified.
"""
