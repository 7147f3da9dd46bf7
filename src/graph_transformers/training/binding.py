"""What binds a run to its data and its checkpoints (issue 26).

A run directory gets a **run id** when it is created (``run.json``); every checkpoint it writes
stores that id, the resolved config, and a **data fingerprint**: one sha256 per split over the
graphs' structure, features and labels (``x``, ``edge_index``, ``edge_attr``, ``y``) and the split's
membership. Positional encodings are left out on purpose: they are derived from the structure,
and their last bits depend on the LAPACK build, so a run moved to another machine still
matches its data.

``--resume``, ``evaluate`` and ``predict`` compare what they are about to use with what the
checkpoint was trained on, and refuse with one line naming what changed:

- the data (``--resume``, ``evaluate``): a split whose fingerprint differs, e.g. a CSV edited in
  place. ``--allow-data-change`` proceeds anyway and is recorded in ``metrics.json``
  (``data_changed``);
- the config keys that define the data and its split (``evaluate``, ``predict``), e.g.
  ``data.fold`` edited in the run's ``config.yaml``;
- the run id (``evaluate``, ``predict``): a checkpoint copied in from another run of the same
  architecture.

Runs and checkpoints written before this existed carry no id or fingerprint; for them the
checks are skipped.
"""
from __future__ import annotations

import hashlib
import json
import uuid
from pathlib import Path
from typing import Any

import torch

from ..errors import CheckpointError, RunError
from ..fileio import atomic_write_text

#: the run's identity file in its directory
RUN_FILE = "run.json"
#: the graph attributes a data fingerprint covers (derived encodings are left out)
FINGERPRINT_KEYS = ("x", "edge_index", "edge_attr", "y")
#: data keys that say where data is read from or where batches are built, not what they are (may
#: differ freely: ``on_device`` builds the same batches as the ``DataLoader``, tested)
WHERE_KEYS = ("data_dir", "cache_dir", "num_workers", "pin_memory", "on_device")
#: data keys that change the batches, not the graphs or the split
BATCH_KEYS = ("batch_size", "eval_batch_size", "bucket_by_size", "bucket_window",
              "num_neighbors", "sampler", "num_parts", "clusters_per_batch",
              "eval_clusters_per_batch", "static_shapes")


def new_run_id() -> str:
    """A fresh run id (32 hex digits)."""
    return uuid.uuid4().hex


def read_run_id(run_dir: str | Path) -> str | None:
    """The run id in ``run_dir/run.json``, ``None`` for a run written before run ids existed."""
    path = Path(run_dir) / RUN_FILE
    if not path.is_file():
        return None
    try:
        return str(json.loads(path.read_text())["run_id"])
    except (ValueError, KeyError, TypeError):
        raise RunError(f"{path}: not a run identity file (expected {{\"run_id\": ...}}); "
                       "restore it, or remove it to skip the run-id check") from None


def write_run_id(run_dir: str | Path, run_id: str) -> None:
    """Writes ``run_dir/run.json`` atomically."""
    atomic_write_text(Path(run_dir) / RUN_FILE, json.dumps({"run_id": run_id}) + "\n")


def _update(h: hashlib._Hash, name: str, t: torch.Tensor) -> None:
    t = t.detach().cpu().contiguous()
    h.update(f"{name}:{t.dtype}:{tuple(t.shape)};".encode())
    h.update(t.numpy().tobytes() if t.dtype != torch.bfloat16 else t.float().numpy().tobytes())


def split_fingerprint(dataset: Any) -> str:
    """sha256 (16 hex digits) of a split's graphs: :data:`FINGERPRINT_KEYS` of every graph, read
    from the stored tensors where PyG keeps them (an ``InMemoryDataset``: its collated tensors and
    the split's indices), else graph by graph, plus the tensors of the dataset's
    ``fingerprint_extra`` dict where it has one (a node table: the split's node ids)."""
    from torch_geometric.data import InMemoryDataset
    h = hashlib.sha256()
    data = getattr(dataset, "_data", None) if isinstance(dataset, InMemoryDataset) else None
    if data is not None:
        for key in FINGERPRINT_KEYS:
            value = getattr(data, key, None)
            if isinstance(value, torch.Tensor):
                _update(h, key, value)
        slices = getattr(dataset, "slices", None) or {}
        for key in FINGERPRINT_KEYS:
            if isinstance(slices.get(key), torch.Tensor):
                _update(h, f"slices.{key}", slices[key])
        indices = getattr(dataset, "_indices", None)
        if indices is not None:
            _update(h, "indices", torch.as_tensor(list(indices) if not isinstance(
                indices, torch.Tensor) else indices, dtype=torch.long))
    else:
        for i, graph in enumerate(dataset):
            for key in FINGERPRINT_KEYS:
                value = getattr(graph, key, None)
                if isinstance(value, torch.Tensor):
                    _update(h, f"{i}.{key}", value)
    # a dataset may name more tensors its split depends on (a node table: the split's node ids,
    # which the single graph's tensors do not show); datasets without them hash as before
    for key, value in sorted((getattr(dataset, "fingerprint_extra", None) or {}).items()):
        if isinstance(value, torch.Tensor):
            _update(h, f"extra.{key}", value)
    h.update(f"len:{len(dataset)}".encode())
    return h.hexdigest()[:16]


def data_fingerprint(splits: dict[str, Any]) -> dict[str, str]:
    """``{split: split_fingerprint}`` of a run's splits."""
    return {name: split_fingerprint(ds) for name, ds in splits.items()}


def changed_splits(stored: dict[str, str] | None, current: dict[str, str]) -> list[str]:
    """The splits whose fingerprint differs from the stored one (none when nothing is stored)."""
    if not stored:
        return []
    return sorted(s for s in set(stored) | set(current) if stored.get(s) != current.get(s))


def check_same_data(stored: dict[str, str] | None, current: dict[str, str], source: str,
                    allow: bool = False) -> list[str]:
    """Refuses data that differ from what the checkpoint was trained on.

    Returns:
        The changed splits (empty when nothing changed, or with ``allow``: proceeding anyway).

    Raises:
        RunError: naming the changed splits and ``source`` (the checkpoint), unless ``allow``.
    """
    changed = changed_splits(stored, current)
    if changed and not allow:
        raise RunError(f"the data of the {', '.join(changed)} split(s) differ from those {source} "
                       "was trained on (labels, graphs or split membership changed, e.g. the "
                       "file was edited); pass --allow-data-change to use them anyway (recorded "
                       "in the run)")
    return changed


def _data_section(config: dict) -> dict:
    data = dict(config.get("data") or {})
    for key in WHERE_KEYS + BATCH_KEYS:
        data.pop(key, None)
    return data


def check_same_split_config(stored_config: dict | None, config: dict, source: str,
                            where: str, path: str | Path | None = None) -> None:
    """Refuses a config whose data keys (dataset, fold, seed of the split, files, columns;
    not where the data are read from, nor batching) differ from the checkpoint's.

    Args:
        stored_config: the config the checkpoint stores (``None``: nothing is checked).
        config: the run's config now.
        source: what ``stored_config`` comes from, for the message (``"checkpoint best.ckpt"``).
        where: where ``config`` comes from, for the message (the run's ``config.yaml``).
        path: the checkpoint file, named where the stored config cannot be validated
            (default: ``source``).

    Raises:
        RunError: listing each differing key with both values.
    """
    if not stored_config:
        return
    from .config import ConfigError, build_config
    try:  # keys added to the schema since the checkpoint was written compare as their defaults
        stored_config = build_config(stored_config,
                                     source=path if path is not None else source).to_dict()
    except ConfigError:
        pass  # a config of an older schema: compare what it holds
    a, b = _data_section(stored_config), _data_section(config)
    diffs = [f"data.{k}: {a.get(k, '<unset>')!r} in {source}, {b.get(k, '<unset>')!r} in {where}"
             for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
    if diffs:
        raise RunError(f"{where} does not describe the data {source} was trained on: "
                       f"{'; '.join(diffs)}; restore it (the split would differ)")


def check_run_id(stored: str | None, run_id: str | None, path: str | Path, run_dir: str | Path
                 ) -> None:
    """Refuses a checkpoint written by another run.

    Raises:
        CheckpointError: when both ids are known and differ.
    """
    if stored and run_id and stored != run_id:
        raise CheckpointError(f"checkpoint {path} was written by another run (run id "
                              f"{stored[:8]}…, this run is {run_id[:8]}…): it does not belong to "
                              f"{run_dir}")


#: the split of a run on one graph's nodes, as trained (:func:`write_node_split`)
NODE_SPLIT_FILE = "node_split.pt"
#: the codes of :data:`NODE_SPLIT_FILE`: 0 for a node in no split
NODE_SPLIT_NAMES = ("none", "train", "val", "test")


def node_split_of(splits: dict[str, Any]) -> torch.Tensor | None:
    """The split of every node of a single-graph node-level run, as codes of
    :data:`NODE_SPLIT_NAMES` (``[num_nodes]``, int8), from each split's ``node_mask``; ``None``
    when the splits are not masks over one shared graph (graph-level data, several graphs)."""
    masks = {}
    for name, ds in splits.items():
        if name not in NODE_SPLIT_NAMES or len(ds) != 1:
            return None
        mask = getattr(ds[0], "node_mask", None)
        if not isinstance(mask, torch.Tensor):
            return None
        masks[name] = mask.bool().view(-1)
    sizes = {m.numel() for m in masks.values()}
    if len(sizes) != 1:
        return None
    codes = torch.zeros(sizes.pop(), dtype=torch.int8)
    for name, mask in masks.items():
        codes[mask] = NODE_SPLIT_NAMES.index(name)
    return codes


def write_node_split(run_dir: str | Path, splits: dict[str, Any],
                     node_ids: Any = None) -> bool:
    """Writes the node split a single-graph node-level run trains on (:func:`node_split_of`)
    and the graph's node ids (a node table's id column) to ``run_dir/node_split.pt``
    atomically, so that ``predict`` reads the split from the run instead of drawing it again.

    Returns:
        Whether the run has such a split (and the file was written).
    """
    from ..fileio import atomic_save
    codes = node_split_of(splits)
    if codes is None:
        return False
    ids = [str(i) for i in node_ids] if node_ids is not None else None
    atomic_save(Path(run_dir) / NODE_SPLIT_FILE,
                lambda f: torch.save({"codes": codes, "names": list(NODE_SPLIT_NAMES),
                                      "node_ids": ids}, f))
    return True


def read_node_split(run_dir: str | Path) -> dict[str, Any] | None:
    """The node split a run stored (:func:`write_node_split`): ``{"codes": [num_nodes] int8,
    "names": [...], "node_ids": list[str] | None}``, or ``None`` for a run that stored none.

    Raises:
        CheckpointError: the file exists but cannot be read (named).
    """
    path = Path(run_dir) / NODE_SPLIT_FILE
    if not path.is_file():
        return None
    try:
        stored = torch.load(path, weights_only=True, map_location="cpu")
        if not (isinstance(stored, dict) and isinstance(stored.get("codes"), torch.Tensor)):
            raise ValueError("not a node split")
    except Exception as err:  # noqa: BLE001 - any unreadable file is one named error
        raise CheckpointError(f"{path}: the run's node split cannot be read "
                              f"({' '.join(str(err).split())[:120]})") from None
    return stored


def stored_binding(state: dict) -> dict[str, Any]:
    """The run id, data fingerprint and config a checkpoint stores (``RunState``), as
    ``{"run_id", "data", "config"}`` (``None`` where absent)."""
    saved = (state.get("callbacks") or {}).get("RunState") or {}
    return {"run_id": saved.get("run_id"), "data": saved.get("data"),
            "config": saved.get("config")}
