"""Fine-tuning: a new run that starts from a trained run's weights (``--init-from RUN_DIR``).

Every tensor of the new model whose name and shape match one in the trained run's checkpoint
(``best.ckpt``, else ``last.ckpt``; read with ``weights_only=True``) is copied in; the others
keep their fresh initialization. The task head (the ``head.*`` parameters of every model) is
re-initialized when the task differs, i.e. when the two runs' data sections (dataset, files,
target columns, task, level; not where the files live or how they are batched) differ: the
head of a ZINC model means nothing for a solubility CSV even where its shape fits. The
statistics of standardized targets (:mod:`~.targets`) are always this run's own. Only the
weights are taken: the optimizer, schedule and epoch count start afresh.

What was loaded and what was not (with the reason) is logged and written to the run directory
(``init_from.json``), and summarized in ``metrics.json`` (``init_from``).
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from torch import nn

from ..errors import RunError
from ..fileio import atomic_write_text
from .checkpoint import load_checkpoint
from .targets import BUFFERS

log = logging.getLogger(__name__)

#: the run-directory file recording what a fine-tuned run loaded
RECORD_FILE = "init_from.json"
#: the parameter-name prefix of every model's task head
HEAD_PREFIX = "head."


def source_checkpoint(run_dir: str | Path) -> Path:
    """The checkpoint a fine-tuned run starts from: ``best.ckpt`` of ``run_dir``, else
    ``last.ckpt``.

    Raises:
        RunError: ``run_dir`` is not a run directory or holds no checkpoint.
    """
    run = Path(run_dir)
    if not (run / "config.yaml").is_file():
        raise RunError(f"--init-from {run}: not a run directory (no config.yaml); pass the "
                       "directory a finished run was written to (one seed: seed_<s>/)")
    for name in ("best.ckpt", "last.ckpt"):
        if (run / "checkpoints" / name).is_file():
            return run / "checkpoints" / name
    raise RunError(f"--init-from {run}: no checkpoint (checkpoints/best.ckpt or last.ckpt); "
                   "the run's checkpoints were removed (a finished slice keeps best weights "
                   "only where it was asked to)")


def same_task(source_config: dict, config: dict, source_data: dict | None = None,
              data: dict | None = None) -> bool:
    """Whether two runs describe the same task: equal data keys (dataset, files, columns, task,
    level, metric; not where the files live or how they are batched), with keys missing from an
    older config at their defaults. In-memory graphs (``data.name: graph_list``), whose keys say
    nothing of the graphs, must also have the same training split: ``source_data`` / ``data``
    are the two runs' data fingerprints (:func:`~.binding.data_fingerprint`)."""
    from .binding import _data_section
    from .config import ConfigError, build_config
    try:
        source_config = build_config(source_config).to_dict()
    except ConfigError:
        pass  # an older schema: compare what it holds
    keep = ("name", "path", "smiles_column", "target_columns", "task", "level", "options",
            "split_files", "metric")
    a, b = _data_section(source_config), _data_section(config)
    if any(a.get(k) != b.get(k) for k in keep):
        return False
    if b.get("name") == "graph_list":
        return bool(source_data and data) and source_data.get("train") == data.get("train")
    return True


def init_from(model: nn.Module, run_dir: str | Path, config: dict,
              fingerprint: dict | None = None) -> dict[str, Any]:
    """Copies the matching weights of a trained run into ``model`` (see the module docstring).

    Args:
        model: the new run's freshly built model.
        run_dir: the trained run's directory.
        config: the new run's config (``Config.to_dict()``), to tell whether the task differs.
        fingerprint: the new run's data fingerprint (for in-memory graphs, :func:`same_task`).

    Returns:
        The record written to ``init_from.json``: ``run``, ``checkpoint``, ``epoch``,
        ``same_task``, ``loaded`` (tensor names), ``skipped`` (name → reason), ``unused``
        (checkpoint tensors the model has no place for), ``loaded_parameters`` /
        ``total_parameters`` (element counts of trainable parameters).

    Raises:
        RunError: no run or checkpoint at ``run_dir``; no tensor could be loaded (another
            architecture).
        CheckpointError: the checkpoint cannot be read.
    """
    from .config import load_config
    path = source_checkpoint(run_dir)
    state = load_checkpoint(path)
    weights = {k.removeprefix("model."): v for k, v in (state.get("state_dict") or {}).items()
               if k.startswith("model.")}
    source_config = load_config(Path(run_dir) / "config.yaml").to_dict()
    stored = ((state.get("callbacks") or {}).get("RunState") or {}).get("data")
    same = same_task(source_config, config, stored, fingerprint)
    own = model.state_dict()
    new_state, loaded, skipped = dict(own), [], {}
    for name, tensor in own.items():
        if name in BUFFERS:
            skipped[name] = "target statistics are counted on this run's training split"
        elif name.startswith(HEAD_PREFIX) and not same:
            skipped[name] = "task head re-initialized (the task differs)"
        elif name not in weights:
            skipped[name] = "not in the checkpoint"
        elif tuple(weights[name].shape) != tuple(tensor.shape):
            skipped[name] = (f"shape {list(weights[name].shape)} in the checkpoint, "
                             f"{list(tensor.shape)} here")
        else:
            new_state[name] = weights[name].to(dtype=tensor.dtype)
            loaded.append(name)
    body = [n for n in loaded if not n.startswith(HEAD_PREFIX)]
    if not body:
        raise RunError(f"--init-from {run_dir}: none of its weights fit this model (it is "
                       f"another architecture: {source_config.get('model', {}).get('name')!r} "
                       "there); fine-tune with the same model.name and sizes")
    model.load_state_dict(new_state)
    params = dict(model.named_parameters())
    loaded_set = set(loaded)
    record = {
        "run": str(run_dir), "checkpoint": path.name, "epoch": int(state.get("epoch", -1)) + 1,
        "same_task": same, "loaded": loaded, "skipped": skipped,
        "unused": sorted(set(weights) - set(own)),
        "loaded_parameters": sum(p.numel() for n, p in params.items() if n in loaded_set),
        "total_parameters": sum(p.numel() for p in params.values()),
    }
    heads = [n for n in skipped if n.startswith(HEAD_PREFIX)]
    others = {n: r for n, r in skipped.items() if not n.startswith(HEAD_PREFIX) and
              n not in BUFFERS}
    log.info("initialized from %s (%s, epoch %d): %d of %d tensors loaded (%d of %d "
             "parameters); task head %s%s", run_dir, path.name, record["epoch"], len(loaded),
             len(own), record["loaded_parameters"], record["total_parameters"],
             "re-initialized (the task differs)" if heads and not same else "loaded",
             f"; not loaded: {', '.join(f'{n} ({r})' for n, r in list(others.items())[:6])}"
             f"{', …' if len(others) > 6 else ''}" if others else "")
    return record


def write_record(out: Path, record: dict[str, Any]) -> None:
    """Writes ``init_from.json`` into the run directory ``out`` (atomically)."""
    import json
    atomic_write_text(out / RECORD_FILE, json.dumps(record, indent=1) + "\n")


def summary(out: Path) -> dict[str, Any] | None:
    """``metrics.json``'s ``init_from``: the source run, checkpoint and counts of what was
    loaded, read from ``out/init_from.json`` (``None`` for a run trained from scratch)."""
    import json
    path = out / RECORD_FILE
    if not path.is_file():
        return None
    rec = json.loads(path.read_text())
    return {"run": rec["run"], "checkpoint": rec["checkpoint"], "epoch": rec["epoch"],
            "same_task": rec["same_task"], "loaded": len(rec["loaded"]),
            "skipped": len(rec["skipped"]), "loaded_parameters": rec["loaded_parameters"],
            "total_parameters": rec["total_parameters"]}


__all__ = ["HEAD_PREFIX", "RECORD_FILE", "init_from", "same_task", "source_checkpoint",
           "summary", "write_record"]
