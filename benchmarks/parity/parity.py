"""Same-budget parity: the official implementation's model and ours, trained identically on ZINC.

For one model (``egt``, ``grpe``, ``gps`` or ``grit``) and each seed, both sides get

* the same data: the library's ZINC loader (reconstructed train split, exact val/test) with the
  encodings of the model's config (``configs/zinc/*.yaml``), the same training batches in the
  same order (a data-order generator seeded by the seed, shared by both sides);
* the same loop: the library's :class:`~graph_transformers.training.module.GraphTaskModule`
  (L1 loss plus any auxiliary loss, the config's optimizer, learning rate, weight decay and
  scheduler) under one ``lightning.Trainer`` set-up (the config's gradient clipping, no sanity
  validation);
* the same budget: ``--epochs`` epochs with the config's schedule compressed to that length
  (warmup epochs and plateau patience scaled by ``epochs / config max_epochs``, patience at least
  2; ``--schedule original`` keeps them).

Ours is the library's model built from the config; the official one is imported from
``--official PATH`` and wrapped by an adapter (``adapters.py``). After every epoch both sides are
evaluated on val and test; the report compares them at equal epochs (the last), plots the
validation curves of every seed, and gives a verdict (:func:`verdict`).

Usage:
    python benchmarks/parity/parity.py {egt,grpe,gps,grit} --official PATH [--epochs 40]
        [--seeds 2] [--data-dir ../shared/data] [--out results/parity] [--threads 2] [--device auto]
        [--limit-train-graphs N] [--limit-eval-graphs N] [--config configs/zinc/...yaml]
        [--schedule compressed] [--resume] [--minutes M]

Writes ``<out>/<model>.json`` and ``<out>/<model>.png``. Without an official checkout it says
which repository is missing and exits with status 2.

Each finished (seed, side) training is also written to ``<out>/<model>.runs/seed<S>_<side>.json``
together with the settings it ran under; a rerun with ``--resume`` reuses the finished ones whose
settings match and trains only the rest, so a comparison can be spread over several sessions.
The official side's settings leave out the model options its adapter does not read
(:data:`OFFICIAL_MODEL_KEYS`), so changing our layer retrains only our side. The summary
``<out>/<model>.json`` records the settings of each side (``run_keys``), so a committed summary is
resumable too: ``--resume`` also reuses a seed's run found in it under matching settings (e.g. on a
fresh machine, with ``--out results/parity`` or a copy of that file in ``--out``).

A training longer than a session is resumable within itself: while it runs, each epoch's end
writes ``<out>/<model>.runs/seed<S>_<side>.state/last.ckpt`` (model, optimizer, schedule, RNG
and batch-order state, the curves so far). ``--minutes M`` stops at the last epoch boundary
within M minutes and exits with status 3; the same command plus ``--resume`` continues from that
state (also after a crash or a kill), as an uninterrupted training would at the same thread
count. The state is removed once that training finishes; keep ``--out`` outside the work tree
for such runs (checkpoints are not committed).
"""
from __future__ import annotations

import argparse
import json
import logging
import math
import os
import platform
import shutil
import statistics
import sys
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any
from collections.abc import Callable

import torch

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

import lightning as L  # noqa: E402
from lightning.pytorch.callbacks import ModelCheckpoint  # noqa: E402
from torch_geometric.loader import DataLoader  # noqa: E402

from adapters import (OFFICIAL, OfficialCodeError, build_official_egt,  # noqa: E402
                      build_official_gps, build_official_grit, build_official_grpe,
                      check_checkout, official_commit)
from graph_transformers.fileio import atomic_write_text  # noqa: E402
from graph_transformers.data.registry import load_splits, resolve_spec  # noqa: E402
from graph_transformers.data.sampler import SizeBucketBatchSampler, graph_sizes  # noqa: E402
from graph_transformers.models import count_parameters  # noqa: E402
from graph_transformers.training.stats import RULES, mean_std, parity_verdict  # noqa: E402
from graph_transformers.training.config import Config, build_config, load_yaml  # noqa: E402
from graph_transformers.training.sections import (CosineConfig, LinearConfig,  # noqa: E402
                                                  PlateauConfig)
from graph_transformers.training.callbacks import RunState, SliceDeadline  # noqa: E402
from graph_transformers.training.checkpoint import AtomicCheckpointIO  # noqa: E402
from graph_transformers.training.device import device_name  # noqa: E402
from graph_transformers.training.module import GraphTaskModule, evaluate  # noqa: E402
from graph_transformers.training.build import make_model, model_kwargs  # noqa: E402
from graph_transformers.training.loaders import make_loader  # noqa: E402

log = logging.getLogger("parity")

#: default config of each model: the rows whose paper budgets do not fit this machine
CONFIGS = {"egt": "configs/zinc/egt_spe_do_100k.yaml", "grpe": "configs/zinc/grpe_small.yaml",
           "gps": "configs/zinc/gps.yaml", "grit": "configs/zinc/grit.yaml"}


# ----------------------------------------------------------------------------------- config
def parity_config(path: str | Path, epochs: int, data_dir: str | None, schedule: str = "compressed"
                  ) -> tuple[Config, dict[str, Any]]:
    """The model's config with ``trainer.max_epochs = epochs`` and its schedule compressed to
    ``epochs`` (see the module docstring); returns the config and a description of the schedule.

    Raises:
        ValueError: for an unknown ``schedule``.
    """
    if schedule not in ("compressed", "original"):
        raise ValueError(f"--schedule must be 'compressed' or 'original', got {schedule!r}")
    raw = load_yaml(path)
    base = build_config(raw)
    ratio = epochs / base.trainer.max_epochs
    over = [f"trainer.max_epochs={epochs}"]
    if data_dir:
        over.append(f"data.data_dir={data_dir}")
    sched = base.optim.scheduler
    if schedule == "compressed":
        if isinstance(sched, (CosineConfig, LinearConfig)):
            over.append(f"optim.scheduler.warmup_epochs={round(sched.warmup_epochs * ratio)}")
        elif isinstance(sched, PlateauConfig):
            over.append(f"optim.scheduler.patience={max(2, round(sched.patience * ratio))}")
    config = build_config(raw, over)
    described = {"mode": schedule, "paper_epochs": base.trainer.max_epochs, "epochs": epochs,
                 **(config.optim.scheduler.model_dump() if config.optim.scheduler else {})}
    return config, described


# ----------------------------------------------------------------------------------- models
def build_official(model: str, path: Path, config: Config, spec) -> torch.nn.Module:
    """The official model for ``model``, sized as the library's config (``adapters.py``)."""
    m = config.model
    if model == "egt":
        kw = model_kwargs(config, spec)
        return build_official_egt(
            path, hidden_dim=m.hidden_dim, edge_hidden_dim=m.edge_hidden_dim,
            num_layers=m.num_layers, num_heads=m.num_heads, num_node_types=spec.node_types,
            num_edge_types=spec.edge_types, pe_dim=kw.get("pe_dim", 0) if m.pe else 0,
            distance_objective=m.distance_objective, distance_hops=m.distance_hops,
            distance_weight=m.distance_weight, node_ffn_multiplier=m.node_ffn_multiplier,
            edge_ffn_multiplier=m.edge_ffn_multiplier, attn_dropout=m.attn_dropout,
            dropout=m.dropout, clamp=m.clamp, mlp_layers=m.mlp_layers)
    if model == "grpe":
        return build_official_grpe(
            path, hidden_dim=m.hidden_dim, num_layers=m.num_layers, num_heads=m.num_heads,
            ffn_dim=m.ffn_dim, dropout=m.dropout, attn_dropout=m.attn_dropout,
            max_distance=config.encodings.spd.max_distance, num_node_types=spec.node_types,
            num_edge_types=spec.edge_types, input_noise=m.input_noise,
            share_encodings=m.share_encodings, mlp_layers=m.mlp_layers)
    if model == "gps":
        return build_official_gps(
            path, hidden_dim=m.hidden_dim, num_layers=m.num_layers, num_heads=m.num_heads,
            num_node_types=spec.node_types, num_edge_types=spec.edge_types,
            walk_length=config.encodings.rwse.walk_length, pe_embed_dim=m.pe_embed_dim,
            dropout=m.dropout, attn_dropout=m.attn_dropout, mlp_layers=m.mlp_layers)
    if model == "grit":
        if m.head != "halving" or not m.use_edge_features:
            raise ValueError("the official GRIT adapter builds ZINC's model: head 'halving' "
                             "(san_graph) and edge features (TypeDictEdge)")
        return build_official_grit(
            path, hidden_dim=m.hidden_dim, num_layers=m.num_layers, num_heads=m.num_heads,
            num_node_types=spec.node_types, num_edge_types=spec.edge_types,
            walk_length=config.encodings.rrwp.walk_length, dropout=m.dropout,
            attn_dropout=m.attn_dropout, clamp=m.clamp, deg_scaler=m.deg_scaler,
            edge_update=m.edge_update, full_attention=m.full_attention, norm=m.norm,
            readout=m.readout, mlp_layers=m.mlp_layers)
    raise ValueError(f"unknown model {model!r}; known: {sorted(CONFIGS)}")


# ----------------------------------------------------------------------------------- data
def train_loader(config: Config, dataset, seed: int) -> DataLoader:
    """Training batches in an order fixed by ``seed`` alone (identical for both sides): the
    config's size-bucketing sampler seeded with ``seed``, else a shuffle with its own generator.
    """
    bs = config.data.batch_size
    if config.data.bucket_by_size:
        sampler = SizeBucketBatchSampler(graph_sizes(dataset), bs,
                                         window=config.data.bucket_window, seed=seed)
        return DataLoader(dataset, batch_sampler=sampler)
    gen = torch.Generator().manual_seed(seed)
    return DataLoader(dataset, batch_size=bs, shuffle=True, generator=gen)


class GeneratorState:
    """The state of a shuffling generator as a stateful sampler for
    :class:`~graph_transformers.training.callbacks.RunState`: saved in each epoch's checkpoint
    (after that epoch's draw) and restored at a resume, so the next epoch shuffles as an
    uninterrupted run would."""

    def __init__(self, generator: torch.Generator) -> None:
        self.generator = generator

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {"generator": self.generator.get_state()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        self.generator.set_state(state["generator"])


def loader_state(loader: DataLoader):
    """What fixes the next epoch's batches of a :func:`train_loader` loader: its size-bucketing
    batch sampler, else its shuffling generator (:class:`GeneratorState`)."""
    if isinstance(loader.batch_sampler, SizeBucketBatchSampler):
        return loader.batch_sampler
    return GeneratorState(loader.generator)


# ----------------------------------------------------------------------------------- training
class Recorder(L.Callback):
    """Per epoch: the validation MAE Lightning logged, the test MAE (the library's
    :func:`evaluate`), training seconds, the device that trained it (:func:`device_name`: a
    training resumed on another machine mixes epoch times); per step (after ``warmup_steps``
    steps): wall seconds and CPU seconds of the process (all threads; on a CPU shared with other
    jobs the CPU seconds are the better measure of the cost of a step). The curves and the wall
    time so far are part of each checkpoint, so a resumed training reports the whole of them."""

    def __init__(self, spec, test_loader, metric: str, warmup_steps: int = 1) -> None:
        self.spec, self.test_loader, self.metric = spec, test_loader, metric
        self.warmup_steps = warmup_steps
        self.val, self.test, self.epoch_s, self.step_s, self.lr = [], [], [], [], []
        self.step_cpu_s: list[float] = []
        self.device: list[str | None] = []
        self._t0 = self._e0 = self._c0 = 0.0
        self._steps = 0
        self.prior_wall_s = 0.0  # wall seconds of the slices before a resume
        self._fit0 = 0.0

    #: the curves are saved in each checkpoint (``state_dict``) and restored at a resume
    _CURVES = ("val", "test", "epoch_s", "step_s", "step_cpu_s", "lr", "device")

    def state_dict(self) -> dict[str, Any]:
        return {**{k: list(getattr(self, k)) for k in self._CURVES}, "wall_s": self.wall_s()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for k in self._CURVES:
            # a state saved before the device was recorded: its epochs' device is unknown
            setattr(self, k, list(state[k]) if k in state else [None] * len(state["val"]))
        self.prior_wall_s = state["wall_s"]

    def wall_s(self) -> float:
        """Wall seconds of the training so far, over all its slices."""
        return self.prior_wall_s + (time.perf_counter() - self._fit0 if self._fit0 else 0.0)

    def on_fit_start(self, trainer, module) -> None:
        self._fit0 = time.perf_counter()
        self._steps = 0  # each slice's first step (warm-up) is left out of the step times

    def _sync(self, module) -> None:
        if module.device.type == "cuda":
            torch.cuda.synchronize(module.device)

    def on_train_epoch_start(self, trainer, module) -> None:
        self._e0 = time.perf_counter()

    def on_train_batch_start(self, trainer, module, batch, batch_idx) -> None:
        self._sync(module)
        self._t0 = time.perf_counter()
        self._c0 = time.process_time()

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx) -> None:
        self._sync(module)
        self._steps += 1
        if self._steps > self.warmup_steps:
            self.step_s.append(time.perf_counter() - self._t0)
            self.step_cpu_s.append(time.process_time() - self._c0)

    def on_validation_start(self, trainer, module) -> None:
        if trainer.sanity_checking:
            return
        self._sync(module)
        self.epoch_s.append(time.perf_counter() - self._e0)

    def on_validation_end(self, trainer, module) -> None:
        if trainer.sanity_checking:
            return
        self.val.append(float(trainer.callback_metrics[f"val/{self.metric}"]))
        res = evaluate(module.model, self.spec, self.test_loader, device=module.device)
        self.test.append(res[self.metric])
        self.lr.append(trainer.optimizers[0].param_groups[0]["lr"])
        self.device.append(device_name(module.device))
        log.info("epoch %d: val %s %.4f, test %.4f, %.1f s", len(self.val), self.metric,
                 self.val[-1], self.test[-1], self.epoch_s[-1] if self.epoch_s else float("nan"))


def train_side(build: Callable[[], torch.nn.Module], config: Config, spec, splits: dict,
               seed: int, device: str, eval_loaders: dict, state_dir: Path | None = None,
               minutes: float | None = None) -> dict[str, Any] | None:
    """Trains one side for one seed with the library's training module; returns its curves.

    With ``state_dir``, the training is resumable: each epoch's end writes
    ``<state_dir>/last.ckpt`` (model, optimizer, schedule, RNG and batch-order state, the curves
    so far), and a call finding one there continues from it, as an uninterrupted training would
    (same batches, same dropout draws at the same thread count). With ``minutes``, the training
    stops at the last epoch boundary that keeps it within that many minutes
    (:class:`~graph_transformers.training.callbacks.SliceDeadline`) and returns ``None`` when
    epochs remain; the caller resumes it later from ``state_dir``.
    """
    L.seed_everything(seed, workers=True, verbose=False)
    model = build()
    num_params = count_parameters(model)
    module = GraphTaskModule(model, spec, config.optim)
    rec = Recorder(spec, eval_loaders["test"], spec.metric)
    loader = train_loader(config, splits["train"], seed)
    callbacks: list[L.Callback] = [rec]
    ckpt = None
    if state_dir is not None:
        callbacks += [RunState(config.model_dump(mode="json"), [loader_state(loader)]),
                      # the latest epoch as last.ckpt at every epoch's end (save_last alone
                      # writes only at the fit's end in Lightning 2.6: nothing after a kill)
                      ModelCheckpoint(dirpath=str(state_dir), filename="last", monitor=None,
                                      save_top_k=1, enable_version_counter=False)]
        ckpt = state_dir / "last.ckpt"
        if ckpt.is_file():
            log.info("resuming from %s", ckpt)
        else:
            ckpt = None
    if minutes is not None:
        callbacks.append(SliceDeadline(minutes))
    accel = "gpu" if device == "cuda" else device
    trainer = L.Trainer(max_epochs=config.trainer.max_epochs, accelerator=accel, devices=1,
                        gradient_clip_val=config.trainer.gradient_clip_val, logger=False,
                        enable_checkpointing=state_dir is not None, enable_progress_bar=False,
                        enable_model_summary=False, num_sanity_val_steps=0, callbacks=callbacks,
                        plugins=[AtomicCheckpointIO()])
    trainer.fit(module, loader, eval_loaders["val"], ckpt_path=str(ckpt) if ckpt else None)
    if len(rec.val) < config.trainer.max_epochs:
        return None
    best = min(range(len(rec.val)), key=rec.val.__getitem__)
    return {"seed": seed, "num_params": num_params, "val_curve": rec.val, "test_curve": rec.test,
            "lr_curve": rec.lr, "val_final": rec.val[-1], "test_final": rec.test[-1],
            "best_val_epoch": best + 1, "test_at_best_val": rec.test[best],
            "epoch_seconds": rec.epoch_s,
            "epoch_devices": rec.device,
            "devices": count_devices(rec.device),
            "seconds_per_step": statistics.median(rec.step_s) if rec.step_s else None,
            "cpu_seconds_per_step": (statistics.median(rec.step_cpu_s) if rec.step_cpu_s
                                     else None),
            "steps_per_epoch": int(trainer.num_training_batches),
            "wall_s": rec.wall_s()}


def count_devices(names: list[str | None]) -> dict[str, int]:
    """Epochs per device, in the order the devices first trained (``None``, an epoch of a state
    saved before devices were recorded, counts as ``"unrecorded"``)."""
    return dict(Counter(name or "unrecorded" for name in names))


def _stats(values: list[float]) -> tuple[float, float]:
    mean, std = mean_std(values)  # the sample s.d. (0 here for one seed: the curves need a number)
    return mean, (std if std is not None else 0.0)


def summarize_side(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Across seeds: per-seed curves, the mean curve, and mean ± s.d. at the last epoch."""
    test_mean, test_std = _stats([r["test_final"] for r in runs])
    val_mean, val_std = _stats([r["val_final"] for r in runs])
    n = min(len(r["val_curve"]) for r in runs)
    steps = [r["seconds_per_step"] for r in runs if r["seconds_per_step"] is not None]
    cpu = [r["cpu_seconds_per_step"] for r in runs if r["cpu_seconds_per_step"] is not None]
    return {
        "num_params": runs[0]["num_params"],
        "val_curve": [r["val_curve"] for r in runs],
        "val_curve_mean": [statistics.fmean(r["val_curve"][i] for r in runs) for i in range(n)],
        "test_curve": [r["test_curve"] for r in runs],
        "val_mean": val_mean, "val_std": val_std,
        "test_mean": test_mean, "test_std": test_std,
        "test_at_best_val": [r["test_at_best_val"] for r in runs],
        "best_val_epoch": [r["best_val_epoch"] for r in runs],
        "seconds_per_step": statistics.fmean(steps) if steps else None,
        "cpu_seconds_per_step": statistics.fmean(cpu) if cpu else None,
        "steps_per_epoch": runs[0]["steps_per_epoch"],
        "epoch_seconds_mean": statistics.fmean(s for r in runs for s in r["epoch_seconds"]),
        # epochs per device over the seeds: with several, the times above mix machines
        "devices": count_devices([d for r in runs
                                  for d in r.get("epoch_devices", [None] * len(r["val_curve"]))]),
        "wall_s": sum(r["wall_s"] for r in runs),
        "runs": runs,
    }


def verdict(ours: dict[str, Any], official: dict[str, Any], seeds: int) -> dict[str, Any]:
    """Test MAE at the last (equal) epoch, judged by the library's parity rule
    (:func:`graph_transformers.training.stats.parity_verdict`): ``better`` / ``worse`` only where
    Welch's t-test on the per-seed values gives p < 0.05, else ``parity``; with one seed,
    ``inconclusive (1 seed)``."""
    judged = parity_verdict([r["test_final"] for r in ours["runs"]],
                            [r["test_final"] for r in official["runs"]])
    return {**judged, "metric": "test MAE at the last epoch (lower is better)",
            "rule": RULES.split("A parity row ", 1)[1]}


def plot(result: dict[str, Any], path: Path) -> None:
    """Overlay of the validation curves of both sides, one line per seed."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for side, color, style in (("ours", "tab:blue", "-"), ("official", "tab:orange", "--")):
        for seed, curve in zip(result["seeds"], result[side]["val_curve"]):
            ax.plot(range(1, len(curve) + 1), curve, style, color=color, marker=".",
                    label=f"{side}, seed {seed} ({result[side]['num_params']:,} params)")
    ax.set_xlabel("epoch")
    ax.set_ylabel("validation MAE")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(f"{result['model'].upper()} on ZINC: ours vs official "
                 f"{result['official_repo']}@{result['official_commit'][:8]}\n"
                 f"verdict: {result['verdict']['label']}", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ----------------------------------------------------------------------------------- resume
#: the ``model`` keys of the config that :func:`build_official` reads: the official side's runs
#: are keyed on these only, so a change to our layer (e.g. ``norm_position``) retrains our side
#: and reuses the official one
OFFICIAL_MODEL_KEYS = {
    "egt": ("name", "hidden_dim", "edge_hidden_dim", "num_layers", "num_heads", "pe",
            "distance_objective", "distance_hops", "distance_weight", "node_ffn_multiplier",
            "edge_ffn_multiplier", "attn_dropout", "dropout", "clamp", "mlp_layers"),
    "grpe": ("name", "hidden_dim", "num_layers", "num_heads", "ffn_dim", "dropout",
             "attn_dropout", "input_noise", "share_encodings", "mlp_layers"),
    "gps": ("name", "hidden_dim", "num_layers", "num_heads", "pe_embed_dim", "dropout",
            "attn_dropout", "mlp_layers"),
    "grit": ("name", "hidden_dim", "num_layers", "num_heads", "use_edge_features",
             "full_attention", "dropout", "attn_dropout", "clamp", "deg_scaler", "edge_update",
             "norm", "readout", "mlp_layers", "head"),
}


def run_key(args: argparse.Namespace, config: Config, official_commit_hash: str,
            side: str = "ours") -> dict[str, Any]:
    """The settings a finished run of ``side`` must share with this invocation to be reused:
    the whole config for ours, the config less the model keys the official adapter ignores for
    the official side (:func:`side_view`)."""
    key = {"model": args.model, "epochs": args.epochs, "official_commit": official_commit_hash,
           "config": config.model_dump(mode="json"), "threads": args.threads,
           "device": args.device, "limit_train_graphs": args.limit_train_graphs,
           "limit_eval_graphs": args.limit_eval_graphs}
    return side_view(key, side)


def side_view(key: dict[str, Any], side: str) -> dict[str, Any]:
    """``key`` as it matters to ``side``: for the official side, ``config.model`` restricted to
    :data:`OFFICIAL_MODEL_KEYS` (idempotent, so it also reads keys stored whole)."""
    if side == "ours":
        return key
    keep = OFFICIAL_MODEL_KEYS[key["model"]]
    model = {k: v for k, v in key["config"]["model"].items() if k in keep}
    return {**key, "config": {**key["config"], "model": model}}


def side_path(out: Path, model: str, seed: int, side: str) -> Path:
    """Where the finished run of one (seed, side) is kept (see the module docstring)."""
    return out / f"{model}.runs" / f"seed{seed}_{side}.json"


def same_settings(stored: dict[str, Any] | None, key: dict[str, Any], side: str) -> bool:
    """Whether the stored settings of ``side`` are ``key`` as far as ``side`` is concerned
    (:func:`side_view`); ``False`` when none were stored."""
    return stored is not None and side_view(stored, side) == side_view(key, side)


def state_path(out: Path, model: str, seed: int, side: str) -> Path:
    """Where the unfinished training of one (seed, side) keeps its resume state: ``last.ckpt``
    and ``key.json``, the settings it runs under (removed once the training finishes)."""
    return out / f"{model}.runs" / f"seed{seed}_{side}.state"


def prepare_state(path: Path, key: dict[str, Any], side: str, resume: bool) -> None:
    """Makes ``path`` the resume state of a training under ``key``: kept with ``resume`` when its
    settings match, else cleared (a stale or unwanted state is never continued)."""
    stored = path / "key.json"
    if path.exists():
        keep = resume and stored.is_file() and same_settings(json.loads(stored.read_text()),
                                                             key, side)
        if keep:
            return
        if resume:
            log.warning("%s was trained under other settings; starting again", path)
        shutil.rmtree(path)
    path.mkdir(parents=True)
    atomic_write_text(stored, json.dumps(key, indent=1) + "\n")


def load_side(path: Path, key: dict[str, Any], side: str = "ours") -> dict[str, Any] | None:
    """The stored run of ``side`` at ``path`` when it ran under ``key`` (compared as
    :func:`side_view`); ``None`` when absent or stale."""
    if not path.exists():
        return None
    stored = json.loads(path.read_text())
    if not same_settings(stored.get("key"), key, side):
        log.warning("%s ran under other settings; training it again", path)
        return None
    return stored["run"]


def load_summary_run(path: Path, key: dict[str, Any], side: str, seed: int
                     ) -> dict[str, Any] | None:
    """The run of (``seed``, ``side``) in the summary ``<out>/<model>.json`` at ``path`` when the
    summary records that side's settings (``run_keys``) and they match ``key``; ``None`` when the
    file, its settings or the seed are absent, or the settings differ."""
    if not path.exists():
        return None
    summary = json.loads(path.read_text())
    if not same_settings((summary.get("run_keys") or {}).get(side), key, side):
        return None
    for done in summary.get(side, {}).get("runs", []):
        if done.get("seed") == seed:
            return done
    return None


# ----------------------------------------------------------------------------------- main
class Unfinished(Exception):
    """The ``--minutes`` budget ended before every (seed, side) finished; ``--resume`` goes on."""


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Trains both sides for every seed and writes ``<out>/<model>.{json,png}``."""
    official_path = check_checkout(args.model, args.official)
    torch.set_num_threads(args.threads)
    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    config_path = Path(args.config or ROOT / CONFIGS[args.model])
    config, schedule = parity_config(config_path, args.epochs, args.data_dir, args.schedule)
    spec = resolve_spec(config.data)
    splits = load_splits(config.data, config.encodings)
    provenance = {}
    for ds in splits.values():
        provenance.update(getattr(ds, "provenance", {}) or {})
    if args.limit_train_graphs:
        splits["train"] = splits["train"][: args.limit_train_graphs]
    if args.limit_eval_graphs:
        for s in ("val", "test"):
            splits[s] = splits[s][: args.limit_eval_graphs]
    eval_loaders = {s: make_loader(config, splits[s], s) for s in ("val", "test")}
    seeds = list(range(args.seed0, args.seed0 + args.seeds))
    sides = {
        "ours": lambda: make_model(config, spec, splits["train"]),
        "official": lambda: build_official(args.model, official_path, config, spec),
    }
    out = Path(args.out)
    commit = official_commit(official_path)
    runs: dict[str, list] = {"ours": [], "official": []}
    keys = {side: run_key(args, config, commit, side) for side in sides}
    summary_path = out / f"{args.model}.json"
    start = time.perf_counter()
    for seed in seeds:
        for side, build in sides.items():
            key = keys[side]
            path = side_path(out, args.model, seed, side)
            done = load_side(path, key, side) if args.resume else None
            source = path
            if done is None and args.resume:
                done, source = load_summary_run(summary_path, key, side, seed), summary_path
            if done is not None:
                log.info("%s, seed %d, %s: reusing %s", args.model, seed, side, source)
                runs[side].append(done)
                continue
            minutes = None
            if args.minutes is not None:
                minutes = args.minutes - (time.perf_counter() - start) / 60
                if minutes <= 0:
                    raise Unfinished(f"the {args.minutes:g}-minute budget is spent before "
                                     f"seed {seed}, {side}")
            log.info("%s, seed %d, %s", args.model, seed, side)
            state = state_path(out, args.model, seed, side)
            prepare_state(state, key, side, args.resume)
            done = train_side(build, config, spec, splits, seed, device, eval_loaders,
                              state_dir=state, minutes=minutes)
            if done is None:
                raise Unfinished(f"seed {seed}, {side} stopped at the end of the "
                                 f"{args.minutes:g}-minute budget; its state is in {state}")
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path, json.dumps({"key": key, "run": done}, indent=1) + "\n")
            shutil.rmtree(state)
            runs[side].append(done)
    ours, official = summarize_side(runs["ours"]), summarize_side(runs["official"])
    info = OFFICIAL[args.model]
    result = {
        "model": args.model,
        "official_repo": info["repo"],
        "official_commit": commit,
        "official_files": list(info["files"]),
        "epochs": args.epochs,
        "seeds": seeds,
        "ours": ours,
        "official": official,
        "verdict": None,
        "run_keys": keys,
        "conditions": {
            "config": str(config_path.relative_to(ROOT) if config_path.is_relative_to(ROOT)
                          else config_path),
            "dataset": "zinc", "provenance": provenance,
            "graphs": {s: len(d) for s, d in splits.items()},
            "limit_train_graphs": args.limit_train_graphs,
            "limit_eval_graphs": args.limit_eval_graphs,
            "batch_size": config.data.batch_size, "bucket_by_size": config.data.bucket_by_size,
            "optimizer": config.optim.optimizer, "lr": config.optim.lr,
            "weight_decay": config.optim.weight_decay, "eps": config.optim.eps,
            "schedule": schedule, "gradient_clip_val": config.trainer.gradient_clip_val,
            "loss": "L1 (+ the model's auxiliary loss)",
            "threads": torch.get_num_threads(), "device": device,
            "device_name": device_name(device),  # of this invocation; per side: ``devices``
            "torch": torch.__version__, "python": platform.python_version(),
            "num_params": {"ours": ours["num_params"], "official": official["num_params"]},
        },
    }
    result["verdict"] = verdict(ours, official, len(seeds))
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / f"{args.model}.json", json.dumps(result, indent=1) + "\n")
    plot(result, out / f"{args.model}.png")
    return result


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", choices=sorted(CONFIGS))
    p.add_argument("--official", default=None,
                   help="path to a local checkout of the official repository (default: "
                        "$GT_PARITY_EGT / $GT_PARITY_GRPE / $GT_PARITY_GPS / $GT_PARITY_GRIT)")
    p.add_argument("--epochs", type=int, default=40)
    p.add_argument("--seeds", type=int, default=2, help="number of seeds (seed0, seed0+1, …)")
    p.add_argument("--seed0", type=int, default=0)
    p.add_argument("--config", default=None, help="config (default: the model's configs/zinc)")
    p.add_argument("--schedule", default="compressed", choices=("compressed", "original"))
    p.add_argument("--data-dir", default=None, help="data.data_dir (the ZINC raw files)")
    p.add_argument("--out", default=str(ROOT / "results" / "parity"))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    p.add_argument("--resume", action="store_true",
                   help="reuse the finished (seed, side) runs under <out>/<model>.runs, or "
                        "in the summary <out>/<model>.json, whose settings match, and continue "
                        "an unfinished one from its state there")
    p.add_argument("--minutes", type=float, default=None,
                   help="stop at the last epoch boundary within this many minutes, keeping "
                        "the unfinished training's state for a later --resume")
    p.add_argument("--limit-train-graphs", type=int, default=None,
                   help="train on the first N training graphs only (smoke runs)")
    p.add_argument("--limit-eval-graphs", type=int, default=None,
                   help="evaluate on the first N val and test graphs only (smoke runs)")
    args = p.parse_args(argv)
    if args.official is None:
        args.official = os.environ.get(OFFICIAL[args.model]["env"]) or None
    if args.epochs < 1 or args.seeds < 1:
        p.error("--epochs and --seeds must be at least 1")
    if args.minutes is not None and not args.minutes > 0:
        p.error("--minutes must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    warnings.filterwarnings("ignore", ".*does not have many workers.*")
    args = parse_args(argv)
    try:
        result = run(args)
    except OfficialCodeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except Unfinished as err:
        print(f"unfinished: {err}; continue with the same command plus --resume",
              file=sys.stderr)
        return 3
    o, f = result["ours"], result["official"]
    print(f"{args.model}: ours {o['test_mean']:.4f} ± {o['test_std']:.4f} "
          f"({o['num_params']:,} params, {o['seconds_per_step'] or math.nan:.3f} s/step), "
          f"official {f['test_mean']:.4f} ± {f['test_std']:.4f} ({f['num_params']:,} params, "
          f"{f['seconds_per_step'] or math.nan:.3f} s/step) → {result['verdict']['label']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
