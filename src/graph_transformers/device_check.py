"""A check of the models on an accelerator: parity with the CPU, mixed precision, SDPA kernels,
throughput, memory and one-epoch training time (``graph-transformers check-device`` and
``benchmarks/gpu_check.py``; how to run it on a GPU machine: ``docs/gpu.md``).

For each model (GT, GT with edges, EGT, GRPE, Graphormer, GPS, GatedGCN, GRIT with its RRWP pairs
cached and GRIT computing them on the device; the ZINC configs under ``configs/zinc``) and one
fixed batch of ZINC graphs (the library's ZINC loader; a clearly
labelled synthetic batch of molecule-sized graphs when the data is absent):

- **parity**: forward and backward of the same weights on the CPU and on the device, in eval
  mode (no dropout, sign flips or input noise; BatchNorm on running statistics taken from the
  batch, :func:`calibrate_norms`), float32 with TF32 off, and float64 where the device supports
  it; the relative L2 difference of the outputs and of the gradient of every parameter (worst
  one), against a stated tolerance; in float32 the gradients are also held against float32's own
  error on the model (the CPU's float32 against float64);
- **bf16**: the loss under ``torch.autocast(bfloat16)`` is finite and its relative difference to
  the float32 loss is within a stated tolerance;
- **SDPA**: which ``scaled_dot_product_attention`` kernel ran (flash, memory-efficient, cuDNN,
  the CPU flash kernel, or the math fallback), recorded from the dispatched ATen ops;
- **speed and memory**: training steps (forward, backward, Adam) on the batch in float32 and
  bf16-mixed: graphs/s timed with CUDA events (wall clock on the CPU) and the peak memory of a
  step (``torch.cuda.max_memory_allocated``; not measured on the CPU);
- **epoch**: the time of one epoch over the ZINC training split (or ``--epoch-graphs`` graphs), in
  float32 and bf16-mixed, including data loading;
- with ``--compiled``, the same model again as ``docs/gpu.md`` recommends training it on a GPU
  (static-shape batches built on the device, the forward and loss compiled as one graph, CUDA
  graphs on CUDA): graph breaks, the compiled padded loss against the eager one, compilation
  time, step speed and one epoch in fp32 and bf16 (:mod:`graph_transformers.device_compiled`).

Writes ``gpu_check.json`` and ``gpu_check.md`` to ``--out`` (default ``benchmarks/results``).
This module holds the models, the data and the report; the measurements and their tolerances
are :mod:`graph_transformers.device_measure`.
"""
from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from .device_compiled import TOL_COMPILED_LOSS, StaticTrainData, measure_compiled, step_mode
from .device_measure import (FP32_MARGIN, TOL_BF16_LOSS, TOL_FP32, TOL_FP64, measure_model,
                             verdict)

#: the models checked: name → ZINC config under ``configs/zinc`` and overrides
MODELS: dict[str, tuple[str, dict[str, Any]]] = {
    "gt": ("gt.yaml", {"model.use_edge_features": False}),
    "gt_edge": ("gt.yaml", {}),
    "egt": ("egt.yaml", {}),
    "grpe": ("grpe_small.yaml", {}),
    "graphormer": ("graphormer_small.yaml", {}),
    "gps": ("gps.yaml", {}),
    "gatedgcn": ("gatedgcn_100k.yaml", {}),
    "grit": ("grit.yaml", {}),
    # the RRWP pairs computed per batch on the device (encodings.rrwp.batch_rrwp)
    "grit_batch_rrwp": ("grit.yaml", {"encodings.rrwp.cache_pairs": False}),
}
#: tiny sizes for ``--tiny`` (CPU smoke runs)
TINY = {"gt": dict(hidden_dim=16, num_layers=2, num_heads=2),
        "gt_edge": dict(hidden_dim=16, num_layers=2, num_heads=2),
        "egt": dict(hidden_dim=16, edge_hidden_dim=8, num_layers=2, num_heads=2),
        "grpe": dict(hidden_dim=16, ffn_dim=16, num_layers=2, num_heads=2),
        "graphormer": dict(hidden_dim=16, ffn_dim=16, num_layers=2, num_heads=2),
        "gps": dict(hidden_dim=16, num_layers=2, num_heads=2, pe_embed_dim=4),
        "gatedgcn": dict(hidden_dim=16, num_layers=2),
        "grit": dict(hidden_dim=16, num_layers=2, num_heads=2),
        "grit_batch_rrwp": dict(hidden_dim=16, num_layers=2, num_heads=2)}
#: ``Data`` attributes a model's config leaves uncached (its model computes them per batch): the
#: shared batch, processed with the union of the encodings, drops them for that model
UNCACHED = {("rrwp", "cache_pairs"): "rrwp_pair"}


REPO = Path(__file__).resolve().parents[2]



# ----------------------------------------------------------------------------- data
@dataclass
class CheckData:
    """The batch and training split of the check, and where they come from."""

    batch: Any
    train: Any
    source: str


def _encodings_union(configs: dict[str, Any]) -> Any:
    """One encodings section holding every model's encodings (so ZINC is processed once), with
    everything cached (:data:`UNCACHED`: a model that computes some per batch gets a batch
    without them, :func:`uncached_keys`)."""
    from .training.model_sections import EncodingsConfig
    merged: dict[str, Any] = {}
    for cfg in configs.values():
        for key, value in cfg.encodings.model_dump().items():
            if value is None:
                continue
            value = {**value, **{f: True for (k, f) in UNCACHED if k == key}}
            if key in merged and merged[key] != value:
                raise ValueError(f"the ZINC configs disagree on encodings.{key}: {merged[key]} vs "
                                 f"{value}")
            merged[key] = value
    return EncodingsConfig.model_validate(merged)


def synthetic_molecules(num_graphs: int, seed: int = 0, min_nodes: int = 9,
                        max_nodes: int = 38) -> list:
    """Molecule-sized random graphs shaped like ZINC (28 atom types, 3 bond types, 9-38 atoms,
    chains with rings closed at random, a float target), for when the ZINC files are absent."""
    from torch_geometric.data import Data
    g = torch.Generator().manual_seed(seed)
    graphs = []
    for _ in range(num_graphs):
        n = int(torch.randint(min_nodes, max_nodes + 1, (1,), generator=g))
        parent = [int(torch.randint(0, max(i, 1), (1,), generator=g)) for i in range(1, n)]
        edges = [(p, i) for i, p in zip(range(1, n), parent)]
        for _ in range(max(1, n // 8)):  # ring closures
            a, b = (int(v) for v in torch.randint(0, n, (2,), generator=g))
            if a != b and (a, b) not in edges and (b, a) not in edges:
                edges.append((a, b))
        src = [a for a, b in edges] + [b for a, b in edges]
        dst = [b for a, b in edges] + [a for a, b in edges]
        bond = torch.randint(1, 4, (len(edges),), generator=g)
        graphs.append(Data(x=torch.randint(0, 28, (n, 1), generator=g),
                           edge_index=torch.tensor([src, dst], dtype=torch.long),
                           edge_attr=torch.cat([bond, bond]).view(-1, 1),
                           y=torch.randn(1, generator=g), num_nodes=n))
    return graphs


def uncached_keys(cfg: Any) -> tuple[str, ...]:
    """The ``Data`` attributes ``cfg``'s encodings leave uncached (:data:`UNCACHED`)."""
    return tuple(attr for (key, flag), attr in UNCACHED.items()
                 if (section := getattr(cfg.encodings, key, None)) is not None
                 and not getattr(section, flag))



def load_data(configs: dict[str, Any], data_dir: str | None, batch_size: int,
              epoch_graphs: int | None, synthetic: bool = False) -> CheckData:
    """The fixed batch (the first ``batch_size`` training graphs) and the training split, with
    every model's encodings; synthetic molecules when ``synthetic`` or the data is missing."""
    from torch_geometric.loader import DataLoader

    from .data.cache import DataNotFoundError
    from .data.registry import build_pre_transform, load_splits
    encodings = _encodings_union(configs)
    any_cfg = next(iter(configs.values()))
    train = None
    source = ""
    if not synthetic:
        try:
            data_cfg = any_cfg.data.model_copy(update={"data_dir": data_dir})
            train = load_splits(data_cfg, encodings)["train"]
            origin = (getattr(train, "provenance", None) or {}).get("train", "exact")
            source = (f"ZINC-12k train split ({len(train)} graphs, {origin}"
                      f"{'' if origin == 'exact' else ': not the benchmark graphs'}) "
                      f"from {data_dir}")
        except (DataNotFoundError, FileNotFoundError, ImportError) as err:
            source = f"SYNTHETIC molecule-sized graphs (ZINC unavailable: {err})"
    if train is None:
        if not source:
            source = "SYNTHETIC molecule-sized graphs (--synthetic)"
        pre = build_pre_transform(encodings)
        n = max(batch_size, epoch_graphs or batch_size)
        train = [pre(d) if pre is not None else d for d in synthetic_molecules(n)]
    if epoch_graphs is not None:
        train = train[:epoch_graphs] if not isinstance(train, list) else train[:epoch_graphs]
    batch = next(iter(DataLoader(train, batch_size=batch_size, shuffle=False)))
    return CheckData(batch=batch, train=train, source=source)



# ----------------------------------------------------------------------------- driver
def model_configs(names: list[str], config_dir: Path, tiny: bool) -> dict[str, Any]:
    """The resolved config of every checked model."""
    from .training.config import build_config
    from .training.config_yaml import load_yaml
    out = {}
    for name in names:
        if name not in MODELS:
            raise ValueError(f"unknown model {name!r}; known: {sorted(MODELS)}")
        file, overrides = MODELS[name]
        raw = load_yaml(config_dir / file)
        over = dict(overrides)
        if tiny:
            over.update({f"model.{k}": v for k, v in TINY[name].items()})
        for key, value in over.items():  # "section.field" or "section.sub.field"
            *path, field = key.split(".")
            node = raw
            for part in path:
                node = node.setdefault(part, {})
            node[field] = value
        out[name] = build_config(raw)
    return out


def check(args: argparse.Namespace) -> dict:
    """Runs the check (see the module docstring) and returns the result dict. TF32 matrix
    products are off while it runs (parity in true float32) and, with ``args.deterministic``,
    PyTorch's deterministic algorithms are on (``warn_only``: an operation without one still
    runs, with PyTorch's warning); both are restored afterwards."""
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("check-device: --device cuda but torch.cuda.is_available() is False")
    previous = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    was_deterministic = (torch.are_deterministic_algorithms_enabled(),
                         torch.is_deterministic_algorithms_warn_only_enabled())
    torch.backends.cuda.matmul.allow_tf32 = False  # parity in true float32, restored on return
    torch.backends.cudnn.allow_tf32 = False
    if getattr(args, "deterministic", False):
        torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        return _check_models(args, device)
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = previous
        torch.use_deterministic_algorithms(was_deterministic[0], warn_only=was_deterministic[1])


def _check_models(args: argparse.Namespace, device: torch.device) -> dict:
    """The body of :func:`check`, with TF32 off."""
    from .data.registry import resolve_spec
    from .models import count_parameters
    from .training.device import loader_options
    from .training.build import make_model
    from .training.tasks import Task

    t_start = time.perf_counter()
    configs = model_configs(args.models, Path(args.config_dir), args.tiny)
    data = load_data(configs, args.data_dir, args.batch_size, args.epoch_graphs, args.synthetic)
    workers = loader_options("auto", "auto", "cpu" if device.type == "cpu" else "gpu")
    result = _environment(device, data, args.tiny, getattr(args, "calibrate_norms", True),
                          getattr(args, "deterministic", False))
    compiled = getattr(args, "compiled", False)
    result["compiled_mode"] = step_mode(device) if compiled else None
    static_data: dict[tuple, StaticTrainData] = {}  # (batch size, dropped keys) → packed split
    for name, cfg in configs.items():
        t0 = time.perf_counter()
        torch.manual_seed(0)
        spec = resolve_spec(cfg.data)
        model = make_model(cfg, spec)
        entry: dict[str, Any] = {"config": MODELS[name][0], "params": count_parameters(model)}
        drop = uncached_keys(cfg)
        if drop:
            entry["computed_per_batch"] = list(drop)
        try:
            task = Task(spec)
            measure_model(entry, model, task, device, data, args, cfg.data.batch_size,
                          workers, drop)
            entry["ok"] = verdict(entry)
            if compiled:
                key = (cfg.data.batch_size, drop)
                if key not in static_data:
                    static_data[key] = StaticTrainData(data.train, cfg.data.batch_size, device,
                                                       drop)
                entry["compiled"] = measure_compiled(model, task, device, static_data[key],
                                                     args.steps, args.epoch)
                entry["ok"] = entry["ok"] and entry["compiled"]["ok"]
        except Exception as err:  # noqa: BLE001 - a failing model is a result, not a crash
            entry["error"] = f"{type(err).__name__}: {err}"
            entry["ok"] = False
        entry["seconds"] = round(time.perf_counter() - t0, 1)
        result["models"][name] = entry
        if getattr(args, "out", None):  # what is done so far survives a command's time limit
            write_reports({**result, "seconds": round(time.perf_counter() - t_start, 1),
                           "ok": False, "partial": True}, Path(args.out), echo=False)
        print(f"check-device: {name}: {'ok' if entry['ok'] else 'FAILED'} "
              f"({entry['seconds']} s){' ' + entry['error'] if 'error' in entry else ''}",
              file=sys.stderr, flush=True)
    result["seconds"] = round(time.perf_counter() - t_start, 1)
    result["ok"] = all(e["ok"] for e in result["models"].values())
    return result


def _environment(device: torch.device, data: Any, tiny: bool, calibrate: bool = True,
                 deterministic: bool = False) -> dict[str, Any]:
    """The head of the result: device, versions, the batch checked, the tolerances, where the
    BatchNorm statistics came from and whether deterministic algorithms were on."""
    from .training.device import cpu_name
    batch = data.batch
    return {
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else
        cpu_name(),
        "device_type": device.type, "torch": torch.__version__,
        "cuda": torch.version.cuda, "python": platform.python_version(),
        "data": data.source, "batch_graphs": int(batch.num_graphs),
        "batch_nodes": int(batch.num_nodes), "tiny_models": bool(tiny),
        "tolerances": {"fp32_rel": TOL_FP32, "fp64_rel": TOL_FP64,
                       "bf16_loss_rel": TOL_BF16_LOSS, "fp32_margin": FP32_MARGIN},
        "norm_statistics": "batch" if calibrate else "initial",
        "deterministic_algorithms": bool(deterministic),
        "models": {}}



def _fmt(v: float | None, spec: str = ".1e") -> str:
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, spec)


def markdown(result: dict) -> str:
    """The result as a Markdown report."""
    partial = " (partial: stopped before every model was checked)" if result.get("partial") else ""
    lines = [f"# Device check: {result['device']} ({result['device_type']}){partial}", "",
             f"torch {result['torch']}, CUDA {result['cuda']}, Python {result['python']}; "
             f"{result['seconds']} s in all.", "",
             f"Data: {result['data']}; fixed batch of {result['batch_graphs']} graphs "
             f"({result['batch_nodes']} nodes)"
             + (" — **tiny models** (smoke run)" if result["tiny_models"] else "") + ".", "",
             "Parity: relative L2 difference CPU vs device of outputs, loss and the worst "
             "parameter gradient, eval mode with BatchNorm statistics "
             + ("from the batch" if result.get("norm_statistics", "batch") == "batch"
                else "at their initial values")
             + (", deterministic algorithms on" if result.get("deterministic_algorithms")
                else "") + "; tolerance "
             f"{TOL_FP32:g} (float32, TF32 off; for gradients {FP32_MARGIN:g}× float32's own "
             "error where larger: the CPU's float32 gradients against its float64 ones, "
             f"column 'fp32 own') and {TOL_FP64:g} (float64). bf16: autocast loss vs float32 "
             "loss, tolerance "
             f"{TOL_BF16_LOSS:g}; bf16 grad Δ: relative L2 over all gradients together.", "",
             "| model | params | fp32 out / grad | fp32 own | fp64 out / grad | bf16 loss Δ "
             "| bf16 grad Δ | SDPA fp32 / bf16 | graphs/s fp32 / bf16 | peak MiB fp32 / bf16 "
             "| epoch s fp32 / bf16 | ok |",
             "|---|---:|---|---:|---|---:|---:|---|---|---|---|---|"]
    for name, e in result["models"].items():
        if "error" in e:
            lines.append(f"| {name} | {e.get('params', '')} | error: {e['error']} "
                         "| | | | | | | | | no |")
            continue
        p32, p64, bf = e["parity_fp32"], e.get("parity_fp64"), e["bf16"]
        f64 = (f"{_fmt(p64['output_rel'])} / {_fmt(p64['grad_rel'])}" if p64 else "n/a")
        ep = (f"{e['epoch_fp32']['seconds']} / {e['epoch_bf16']['seconds']}"
              if "epoch_fp32" in e else "–")
        s32, s16 = e["speed_fp32"], e["speed_bf16"]
        lines.append(
            f"| {name} | {e['params']:,} | {_fmt(p32['output_rel'])} / {_fmt(p32['grad_rel'])} "
            f"| {_fmt(p32.get('fp32_own_grad_rel'))} | {f64} | {_fmt(bf['loss_rel'])} "
            f"| {_fmt(bf['grad_rel'])} "
            f"| {e['sdpa_fp32']} / {e['sdpa_bf16']} "
            f"| {s32['graphs_per_s']} / {s16['graphs_per_s']} "
            f"| {_fmt(s32['peak_mib'], '.0f')} / {_fmt(s16['peak_mib'], '.0f')} | {ep} "
            f"| {'yes' if e['ok'] else 'NO'} |")
    if result.get("compiled_mode"):
        lines += compiled_markdown(result)
    return "\n".join(lines) + "\n"


def compiled_markdown(result: dict) -> list[str]:
    """The report's section on the compiled mode (``--compiled``), as lines."""
    mode = result["compiled_mode"]
    lines = ["", f"## Compiled mode: static shapes on the device, `model.compile: {mode}`", "",
             "Training batches packed to fixed budgets (G graphs, Nn nodes, Ne edges, N nodes per "
             "graph; `data.static_shapes`), gathered and padded on the device from the split "
             "stored there once (`data.on_device`); the forward and loss compiled as one graph "
             "(`fullgraph=True, dynamic=False`"
             + (", CUDA graphs of forward and backward" if mode == "cudagraphs" else "")
             + "), fused Adam. Loss Δ: the compiled eval-mode loss on the padded first batch "
             f"against the eager loss on its graphs unpadded (tolerance {TOL_COMPILED_LOSS:g}). "
             "Graphs/s count real graphs only, on one static batch of about `data.batch_size` "
             "graphs; epoch: the whole packed split, gathering and padding included (storing it "
             "on the device once: store s); epoch speed-up: the eager fp32 epoch (PyG's "
             "DataLoader) over the compiled one.", "",
             "| model | graph breaks | budget G / Nn / Ne / N | padding nodes | loss Δ "
             "| compile s | graphs/s fp32 / bf16 | epoch speed-up fp32 | peak MiB fp32 / bf16 "
             "| epoch s fp32 / bf16 | store s | ok |",
             "|---|---:|---|---:|---:|---:|---|---:|---|---|---:|---|"]
    for name, e in result["models"].items():
        c = e.get("compiled")
        if c is None:
            continue
        b = c["budget"]
        budget = f"{b['num_graphs']} / {b['num_nodes']} / {b['num_edges']} / {b['max_nodes']}"
        pad = f"{100 * c['padding']['nodes']:.1f}%"
        if "speed_fp32" not in c:
            breaks = c.get("graph_breaks", "–")
            lines.append(f"| {name} | {breaks} | {budget} | {pad} | error: "
                         f"{c.get('error', '')} | | | | | | | no |")
            continue
        s32, s16 = c["speed_fp32"], c.get("speed_bf16") or {}
        eager_epoch = (e.get("epoch_fp32") or {}).get("seconds")
        speedup = (f"{eager_epoch / c['epoch_fp32']['seconds']:.2f}×"
                   if eager_epoch and c.get("epoch_fp32", {}).get("seconds") else "–")
        ep = (f"{c['epoch_fp32']['seconds']} / {c['epoch_bf16']['seconds']}"
              if "epoch_bf16" in c else "–")
        lines.append(
            f"| {name} | {c['graph_breaks']} | {budget} | {pad} "
            f"| {_fmt(c['parity']['loss_rel'])} | {c.get('compile_s', '–')} "
            f"| {s32['graphs_per_s']} / {s16.get('graphs_per_s', '–')} | {speedup} "
            f"| {_fmt(s32['peak_mib'], '.0f')} / {_fmt(s16.get('peak_mib'), '.0f')} | {ep} "
            f"| {c['store_s']} | {'yes' if c['ok'] else 'NO'} "
            + (f"(error: {c['error']}) |" if "error" in c else "|"))
    reasons = [(n, r) for n, e in result["models"].items()
               for r in (e.get("compiled") or {}).get("graph_break_reasons", [])]
    if reasons:
        lines += ["", "Graph breaks:", ""] + [f"- {n}: `{r}`" for n, r in reasons]
    return lines


def parser() -> argparse.ArgumentParser:
    """The command-line options (shared by the CLI subcommand and the benchmark script)."""
    p = argparse.ArgumentParser(prog="gpu_check", description=__doc__.split("\n\n")[0])
    add_arguments(p)
    return p


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Adds the check's options to ``p``."""
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu",
                   help="device to check against the CPU (default: cuda if available)")
    p.add_argument("--data-dir", default=None, help="directory with the ZINC files")
    p.add_argument("--synthetic", action="store_true",
                   help="use synthetic molecule-sized graphs instead of ZINC")
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    p.add_argument("--batch-size", type=int, default=128, help="graphs of the fixed batch")
    p.add_argument("--steps", type=int, default=20, help="timed training steps per precision")
    p.add_argument("--no-epoch", dest="epoch", action="store_false",
                   help="skip the one-epoch training times")
    p.add_argument("--epoch-graphs", type=int, default=None,
                   help="graphs of the timed epoch (default: the whole training split)")
    p.add_argument("--tiny", action="store_true", help="tiny models (a smoke run)")
    p.add_argument("--initial-norm-stats", dest="calibrate_norms", action="store_false",
                   help="keep BatchNorm's initial statistics (mean 0, variance 1) instead of "
                        "taking them from the batch (the first GPU run's condition)")
    p.add_argument("--deterministic", action="store_true",
                   help="torch.use_deterministic_algorithms (warn_only) during the check: "
                        "tells summation-order effects (atomics) from others")
    p.add_argument("--compiled", action="store_true",
                   help="also measure the compiled mode (static-shape batches built on the "
                        "device, model.compile: full, on CUDA cudagraphs) beside the eager one")
    p.add_argument("--config-dir", default=str(REPO / "configs" / "zinc"),
                   help="the ZINC configs of the models")
    p.add_argument("--out", default=str(REPO / "benchmarks" / "results"),
                   help="directory of gpu_check.json and gpu_check.md")


def main(argv: list[str] | None = None, args: argparse.Namespace | None = None) -> int:
    """Runs the check and writes its reports; returns 0 when every model passed, else 1."""
    if args is None:
        args = parser().parse_args(argv)
    result = check(args)
    write_reports(result, Path(args.out))
    return 0 if result["ok"] else 1


def write_reports(result: dict, out: Path, echo: bool = True) -> None:
    """Writes ``gpu_check.json`` and ``gpu_check.md`` to ``out`` (atomically; a ``partial``
    result, written after each model, says so in its title) and prints the report when
    ``echo``."""
    from .fileio import atomic_write_text
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "gpu_check.json", json.dumps(result, indent=1) + "\n")
    report = markdown(result)
    atomic_write_text(out / "gpu_check.md", report)
    if echo:
        print(report)


if __name__ == "__main__":
    sys.exit(main())
