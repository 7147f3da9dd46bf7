"""Training-step speed of the library's models against the official code (EGT, GRPE, GRIT) and
PyG's ``TransformerConv`` (GT), at equal conditions.

For each (model, batching, precision) configuration, in its own process (so that allocator
settings and heap state never leak from one configuration into the next):

* both sides are built at matched size from the same ZINC config (``configs/zinc/*.yaml``):
  ours with the library's :func:`make_model`; the reference with the official code wrapped by
  ``benchmarks/parity/adapters.py`` (EGT, GRPE, GRIT; ``--official-egt/--official-grpe/
  --official-grit PATH`` to a local checkout, never committed here) or, for GT, the same block
  built from PyG's ``TransformerConv`` (``PyGTransformerConvNet``);
* both sides get the same real ZINC training batches (``--batch-size`` graphs, default 128),
  ``random`` (a shuffled loader) or ``bucketed`` (the library's ``SizeBucketBatchSampler``);
* one step = forward + L1 loss (+ the model's auxiliary loss) + backward + Adam step; the steps of
  the two sides alternate batch by batch in one process, same threads, so machine noise hits both;
* ``--kernels``: our side with the compiled fast paths (``graph_transformers.nn.fused``; GT's
  sparse attention) or without (``off``); each row records which ran (``kernels``);
* ``--compile``: our side under ``torch.compile`` (``model.compile: true``, dynamic shapes); the
  compilation happens in the warm-up steps and its time is recorded (``ours_compile_s``: the
  first warm-up step); the FLOPs are counted on an eager copy (compiled kernels are not seen by
  the counter);
* ``--deterministic``: our side's steps run with ``torch.use_deterministic_algorithms(True)``
  (``trainer.deterministic: true``). With ``--compile`` on more than one thread this matters for
  speed: inductor then lowers the accumulating scatters (``index_add``, ``index_put``) to ATen's
  kernels, whose deterministic CPU path runs in parallel, instead of generated loops with
  ``atomic_add`` (``docs/speed.md#grit``);
* ``--warm-pass``: before timing, one untimed pass over the timed batches, so every batch shape
  has been seen once (the steady state of a training loop; without it, the first step on each
  new shape pays the heap growth and first-touch page faults, which the medians mostly hide but
  the whole-step rates do not);
* ``bf16``: ours under ``torch.autocast(dtype=torch.bfloat16)``; the reference runs fp32 (the
  official code has no bf16 path, and the issue's bf16 target is against the official fp32).

Reported per row: graphs/s of each side (mean graphs per batch / median step time), their ratio,
peak memory per step of each side (:func:`peak_step_memory_mib`, CPU profiler replay), the
whole-step arithmetic rate (FLOPs counted by ``torch.utils.flop_counter.FlopCounterMode`` over
forward + backward of every measured batch: matrix products, convolutions and attention kernels;
elementwise work is not counted, so the rate is a lower bound of the work done) divided by the
measured time, and that rate as a fraction of this machine's matmul peak, measured in the same
process (best of repeated ``2048 × 2048`` products in the row's precision). Threads and the load
average (1-minute, at the start and the end) are recorded; ratios measured on a loaded machine are
flagged in the table.

Usage:
    python benchmarks/speed.py --data-dir ../shared/data [--official-egt PATH]
        [--official-grpe PATH] [--official-grit PATH] [--models egt grpe gt gt-edge grit]
        [--batching random bucketed]
        [--precision fp32 bf16] [--steps 20] [--warm-pass] [--threads 2]
        [--out benchmarks/results/speed] [--kernels auto|off|require] [--compile]
        [--deterministic] [--append]

Writes ``<out>.json`` (``{"rows": [...], "conditions": {...}}``) and ``<out>.md``. Without an
official checkout the row is measured for ours alone and says that the ratio was not measured.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from graph_transformers.fileio import atomic_write_text
from graph_transformers.training.device import cpu_name

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE / "parity"))

#: model → (config, reference kind)
MODELS = {
    "egt": ("configs/zinc/egt_spe_do.yaml", "official EGT"),
    "grpe": ("configs/zinc/grpe_small.yaml", "official GRPE"),
    "gt": ("configs/zinc/gt.yaml", "PyG TransformerConv block"),
    "gt-edge": ("configs/zinc/gt.yaml", "PyG TransformerConv + edge_dim block"),
    "grit": ("configs/zinc/grit.yaml", "official GRIT"),
}
BATCHINGS = ("random", "bucketed")
PRECISIONS = ("fp32", "bf16")
LOADED = 0.5  # 1-minute load average above which a row is flagged as measured on a busy machine


# ----------------------------------------------------------------------------------- reference
class PyGTransformerConvNet(nn.Module):
    """The GT block with PyG's ``TransformerConv`` as the attention (the GT reference).

    Same layout as :class:`~graph_transformers.models.GraphTransformer` on ZINC: atom (and bond)
    embeddings + LapPE projection, ``num_layers`` × [attention, ``O_h``, residual, BatchNorm,
    FFN(2d), residual, BatchNorm], mean readout, MLP head. ``TransformerConv(edge_dim=d)`` adds the
    projected edge features to the keys and values (PyG's edge handling), where GT multiplies them
    into the scores and carries an edge stream.
    """

    def __init__(self, hidden_dim: int, num_layers: int, num_heads: int, num_node_types: int,
                 num_edge_types: int | None, pe_dim: int) -> None:
        super().__init__()
        from torch_geometric.nn import TransformerConv

        from graph_transformers.models.encoders import FeatureEncoder, LapPEEncoder
        from graph_transformers.models.heads import MLPReadout
        edge_dim = hidden_dim if num_edge_types else None
        self.node_encoder = FeatureEncoder(hidden_dim, num_node_types, name="node")
        self.edge_encoder = (FeatureEncoder(hidden_dim, num_edge_types, name="edge")
                             if num_edge_types else None)
        self.pe_encoder = LapPEEncoder(pe_dim, hidden_dim)
        self.convs = nn.ModuleList(
            TransformerConv(hidden_dim, hidden_dim // num_heads, heads=num_heads,
                            root_weight=False, edge_dim=edge_dim) for _ in range(num_layers))
        self.o_h = nn.ModuleList(nn.Linear(hidden_dim, hidden_dim) for _ in range(num_layers))
        self.norm1 = nn.ModuleList(nn.BatchNorm1d(hidden_dim) for _ in range(num_layers))
        self.ffn = nn.ModuleList(nn.Sequential(nn.Linear(hidden_dim, 2 * hidden_dim), nn.ReLU(),
                                               nn.Linear(2 * hidden_dim, hidden_dim))
                                 for _ in range(num_layers))
        self.norm2 = nn.ModuleList(nn.BatchNorm1d(hidden_dim) for _ in range(num_layers))
        self.head = MLPReadout(hidden_dim, 1)

    def forward(self, data) -> Tensor:
        from graph_transformers.models.heads import graph_readout
        h = self.node_encoder(data.x) + self.pe_encoder(data.lap_pe, data.batch)
        e = self.edge_encoder(data.edge_attr) if self.edge_encoder is not None else None
        for conv, o, n1, ffn, n2 in zip(self.convs, self.o_h, self.norm1, self.ffn, self.norm2):
            h = n1(h + o(conv(h, data.edge_index, e)))
            h = n2(h + ffn(h))
        return self.head(graph_readout(h, data.batch, "mean", data.num_graphs))


def build_sides(model: str, config, spec, train, official: dict[str, str | None]
                ) -> tuple[nn.Module, nn.Module | None, str]:
    """Ours and the reference at matched size; the reference is ``None`` (with the reason) when
    its official checkout was not given."""
    from graph_transformers.training.build import make_model
    torch.manual_seed(0)
    ours = make_model(config, spec, train)
    torch.manual_seed(0)
    if model in ("gt", "gt-edge"):
        m = config.model
        return ours, PyGTransformerConvNet(
            m.hidden_dim, m.num_layers, m.num_heads, spec.node_types,
            spec.edge_types if model == "gt-edge" else None,
            config.encodings.lap_pe.k), MODELS[model][1]
    path = official.get(model)
    if not path:
        return ours, None, f"{MODELS[model][1]}: not measured (no --official-{model} checkout)"
    from adapters import check_checkout, official_commit
    from parity import build_official
    checkout = check_checkout(model, path)
    ref = build_official(model, checkout, config, spec)
    return ours, ref, f"{MODELS[model][1]} @ {official_commit(checkout)[:12]}"


# ----------------------------------------------------------------------------------- batches
def measured_batches(config, train, batching: str, batch_size: int, n: int) -> list:
    """The first ``n`` training batches of ``batch_size`` ZINC graphs, in a fixed order."""
    from torch_geometric.loader import DataLoader

    from graph_transformers.data.sampler import SizeBucketBatchSampler, graph_sizes
    if batching == "random":
        loader = DataLoader(train, batch_size=batch_size, shuffle=True,
                            generator=torch.Generator().manual_seed(0))
    else:
        sampler = SizeBucketBatchSampler(graph_sizes(train), batch_size, seed=0)
        loader = DataLoader(train, batch_sampler=sampler)
    out = []
    for batch in loader:
        out.append(batch)
        if len(out) == n:
            break
    return out


def step_loss(model: nn.Module, batch, precision: str) -> Tensor:
    """L1 loss of one batch plus the model's auxiliary loss (EGT's distance objective)."""
    from graph_transformers.training.module import split_output
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
        pred, aux = split_output(model(batch))
        loss = (pred.float().view(-1) - batch.y.view(-1)).abs().mean()
        if aux is not None:
            loss = loss + aux.float()
    return loss


def train_step(model: nn.Module, opt: torch.optim.Optimizer, batch, precision: str,
               deterministic: bool = False) -> None:
    """One training step; with ``deterministic``, under ``torch.use_deterministic_algorithms``
    (restored afterwards)."""
    prior = (torch.are_deterministic_algorithms_enabled(),
             torch.is_deterministic_algorithms_warn_only_enabled())
    if deterministic:
        torch.use_deterministic_algorithms(True)
    try:
        opt.zero_grad(set_to_none=True)
        step_loss(model, batch, precision).backward()
        opt.step()
    finally:
        torch.use_deterministic_algorithms(prior[0], warn_only=prior[1])


def count_flops(model: nn.Module, batches: list, precision: str) -> int:
    """FLOPs of forward + backward over ``batches`` (``FlopCounterMode``: matmul-type kernels)."""
    from torch.utils.flop_counter import FlopCounterMode
    total = 0
    for batch in batches:
        model.zero_grad(set_to_none=True)
        with FlopCounterMode(display=False) as counter:
            step_loss(model, batch, precision).backward()
        total += counter.get_total_flops()
    model.zero_grad(set_to_none=True)
    return total


def matmul_peak_gflops(precision: str, n: int = 2048, repeats: int = 8) -> float:
    """Best rate of ``n × n`` matrix products on this process's threads (GFLOP/s)."""
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    a = torch.randn(n, n).to(dtype)
    b = torch.randn(n, n).to(dtype)
    torch.mm(a, b)
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - t)
    return 2 * n ** 3 / best / 1e9


# ----------------------------------------------------------------------------------- one row
def measure(args: argparse.Namespace, model: str, batching: str, precision: str
            ) -> dict[str, Any]:
    """Measures one configuration (called in its own process by :func:`main`)."""
    from graph_transformers.benchmarking import peak_step_memory_mib
    from graph_transformers.data.registry import load_splits, resolve_spec
    from graph_transformers.models import count_parameters
    from graph_transformers.training.allocator import keep_freed_memory
    from graph_transformers.training.config import build_config, load_yaml

    from graph_transformers.nn import fused

    torch.set_num_threads(args.threads)
    kernels = "n/a (no compiled path)"  # EGT, GRPE, GRIT: plain PyTorch ops only
    if model in ("gt", "gt-edge"):     # GT's sparse attention has the compiled kernel
        kernels = ("fused" if fused.kernels_available()
                   else f"plain ({fused.ENV}={fused.kernel_mode()})")
    allocator = keep_freed_memory() if args.allocator == "library" else False
    load_start = os.getloadavg()[0]
    overrides = [f"data.batch_size={args.batch_size}", "model.dropout=0.0"]
    if args.data_dir:
        overrides.append(f"data.data_dir={args.data_dir}")
    if model == "gt":
        overrides.append("model.use_edge_features=false")
    config = build_config(load_yaml(ROOT / MODELS[model][0]), overrides)
    spec = resolve_spec(config.data)
    train = load_splits(config.data, config.encodings)["train"]
    ours, ref, reference = build_sides(model, config, spec, train,
                                       {"egt": args.official_egt, "grpe": args.official_grpe,
                                        "grit": args.official_grit})
    counted = ours  # the module whose FLOPs are counted: an eager copy when ours is compiled
    if args.compile:
        from graph_transformers.training.device import compile_model
        counted = copy.deepcopy(ours)
        compile_model(ours)
        kernels = "torch.compile (dynamic)"
    if args.deterministic:
        kernels = f"deterministic; {kernels}"
    batches = measured_batches(config, train, batching, args.batch_size,
                               args.warmup + args.steps)
    sides = {"ours": (ours, precision)}
    if ref is not None:
        sides["reference"] = (ref, "fp32")
    det = {"ours": args.deterministic, "reference": False}
    opts = {k: torch.optim.Adam(m.parameters(), 1e-4) for k, (m, _) in sides.items()}
    for m, _ in sides.values():
        m.train()
    timed = batches[args.warmup:]
    # warm-up steps, then (--warm-pass) one untimed pass over the timed batches themselves: the
    # first step of each new batch shape grows the heap and first-touches its pages, which a
    # training loop pays once, not every epoch
    compile_s = None
    for batch in batches[: args.warmup] + (timed if args.warm_pass else []):
        for k, (m, p) in sides.items():
            t = time.perf_counter()
            train_step(m, opts[k], batch, p, det[k])
            if k == "ours" and compile_s is None:
                compile_s = time.perf_counter() - t
    times: dict[str, list[float]] = {k: [] for k in sides}
    for batch in timed:
        for k, (m, p) in sides.items():
            t = time.perf_counter()
            train_step(m, opts[k], batch, p, det[k])
            times[k].append(time.perf_counter() - t)
    graphs = statistics.fmean(b.num_graphs for b in timed)
    rate = {k: graphs / statistics.median(v) for k, v in times.items()}
    if counted is not ours:
        counted.load_state_dict(ours.state_dict())
    flops = {k: count_flops(counted if k == "ours" else m, timed, p)
             for k, (m, p) in sides.items()}
    gflops = {k: flops[k] / sum(times[k]) / 1e9 for k in sides}
    memory = {k: peak_step_memory_mib(lambda m=m, k=k, p=p: train_step(m, opts[k], timed[0], p,
                                                                          det[k]))
              for k, (m, p) in sides.items()}
    peak = matmul_peak_gflops(precision)
    load_end = os.getloadavg()[0]
    ratio = rate["ours"] / rate["reference"] if "reference" in rate else None
    return {
        "model": model, "config": MODELS[model][0], "batching": batching, "precision": precision,
        "batch_size": args.batch_size, "steps": args.steps,
        "ours_params": count_parameters(ours),
        "ours_graphs_per_s": round(rate["ours"], 1),
        "reference": reference,
        "reference_precision": "fp32" if ref is not None else None,
        "reference_params": count_parameters(ref) if ref is not None else None,
        "reference_graphs_per_s": round(rate["reference"], 1) if ref is not None else None,
        "ratio": round(ratio, 3) if ratio is not None else None,
        "ours_peak_mib": round(memory["ours"], 1),
        "reference_peak_mib": round(memory["reference"], 1) if ref is not None else None,
        "whole_step_gflops": round(gflops["ours"], 1),
        "reference_whole_step_gflops": round(gflops["reference"], 1) if ref is not None else None,
        "peak_gflops": round(peak, 1),
        "peak_fraction": round(gflops["ours"] / peak, 3),
        "flops_per_graph": round(flops["ours"] / (graphs * len(timed))),
        "threads": args.threads, "allocator": "keep freed memory" if allocator else "glibc default",
        "kernels": kernels,
        "ours_compile_s": round(compile_s, 1) if args.compile else None,
        "ours_deterministic": args.deterministic,
        "load_avg": [round(load_start, 2), round(load_end, 2)],
    }


# ----------------------------------------------------------------------------------- report
def markdown(result: dict[str, Any]) -> str:
    """The rows as a Markdown table with the conditions."""
    c = result["conditions"]
    lines = [
        "# Training-step speed at equal conditions (`benchmarks/speed.py`)", "",
        f"{c['machine']}; torch {c['torch']}; {c['threads']} threads; ZINC training batches of "
        f"{c['batch_size']}; {c['steps']} interleaved steps per side after {c['warmup']} warm-up "
        "steps" + (" and one untimed pass over the timed batches (steady state)"
                   if c.get("warm_pass") else "") + "; allocator: " + c["allocator"] + ". FLOPs: "
        "`FlopCounterMode` (matmul-type "
        "kernels of forward + backward), so GFLOP/s is a lower bound of the work rate; peak = "
        "best `2048²` matmul rate in the row's precision, measured in the same process.", "",
        "| model | batching | precision | ours g/s | reference | ref g/s | ratio | ours MiB | "
        "ref MiB | GFLOP/s | peak | % peak | kernels | load |",
        "|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in result["rows"]:
        def fmt(v, spec=""):
            return "—" if v is None else format(v, spec)
        busy = " (busy)" if max(r["load_avg"]) > LOADED + r["threads"] else ""
        lines.append(
            f"| {r['model']} | {r['batching']} | {r['precision']} | {r['ours_graphs_per_s']:.0f} | "
            f"{r['reference']} | {fmt(r['reference_graphs_per_s'], '.0f')} | "
            f"{fmt(r['ratio'], '.2f')} | {r['ours_peak_mib']:.0f} | "
            f"{fmt(r['reference_peak_mib'], '.0f')} | {r['whole_step_gflops']:.0f} | "
            f"{r['peak_gflops']:.0f} | {100 * r['peak_fraction']:.0f}% | "
            f"{r.get('kernels', 'plain')} | "
            f"{r['load_avg'][0]:.2f}–{r['load_avg'][1]:.2f}{busy} |")
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--official-egt", default=os.environ.get("GT_PARITY_EGT"))
    ap.add_argument("--official-grpe", default=os.environ.get("GT_PARITY_GRPE"))
    ap.add_argument("--official-grit", default=os.environ.get("GT_PARITY_GRIT"))
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    ap.add_argument("--batching", nargs="+", default=list(BATCHINGS), choices=BATCHINGS)
    ap.add_argument("--precision", nargs="+", default=["fp32"], choices=PRECISIONS)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--warm-pass", action="store_true",
                    help="before timing, one untimed pass over the timed batches (steady state: "
                         "every batch shape already seen, no first-touch page faults)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--allocator", choices=("library", "glibc"), default="library",
                    help="library: the training default (freed memory kept in the process)")
    ap.add_argument("--out", default=str(HERE / "results" / "speed"))
    ap.add_argument("--append", action="store_true",
                    help="keep the rows of an existing <out>.json (same conditions) and replace "
                         "only the (model, batching, precision) rows measured now")
    ap.add_argument("--kernels", choices=("auto", "off", "require"), default="auto",
                    help="GRAPH_TRANSFORMERS_KERNELS for our side: the compiled fast paths "
                         "(auto: when they build; off: the plain PyTorch path)")
    ap.add_argument("--compile", action="store_true",
                    help="our side under torch.compile (model.compile: true); the compilation "
                         "runs in the warm-up steps")
    ap.add_argument("--deterministic", action="store_true",
                    help="our side's steps under torch.use_deterministic_algorithms(True) "
                         "(trainer.deterministic: true)")
    ap.add_argument("--single", default=None, help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ["GRAPH_TRANSFORMERS_KERNELS"] = args.kernels  # inherited by the row processes
    if args.single:
        print("ROW " + json.dumps(measure(args, *args.single.split(":"))), flush=True)
        return 0
    rows = []
    passthrough = [a for a in (argv if argv is not None else sys.argv[1:]) if a != "--append"]
    for model in args.models:
        for batching in args.batching:
            for precision in args.precision:
                cmd = [sys.executable, __file__, *passthrough,
                       "--single", f"{model}:{batching}:{precision}"]
                proc = subprocess.run(cmd, capture_output=True, text=True)
                found = [ln[4:] for ln in proc.stdout.splitlines() if ln.startswith("ROW ")]
                if proc.returncode != 0 or not found:
                    sys.stderr.write(proc.stderr[-4000:])
                    print(f"{model} {batching} {precision}: failed (exit {proc.returncode})")
                    return 1
                row = json.loads(found[-1])
                rows.append(row)
                print(f"{model:8} {batching:8} {precision}: ours {row['ours_graphs_per_s']} g/s, "
                      f"reference {row['reference_graphs_per_s']} g/s, ratio {row['ratio']}, "
                      f"{row['whole_step_gflops']} GFLOP/s ({100 * row['peak_fraction']:.0f}% of "
                      f"{row['peak_gflops']}), load {row['load_avg']}", flush=True)
    result = {"conditions": {"machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
                             "cpu": cpu_name(),
                             "torch": torch.__version__, "threads": args.threads,
                             "batch_size": args.batch_size, "steps": args.steps,
                             "warmup": args.warmup, "warm_pass": args.warm_pass,
                             "allocator": "library default (freed memory kept)"
                             if args.allocator == "library" else "glibc default"},
              "rows": rows}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if args.append and out.with_suffix(".json").exists():
        old = json.loads(out.with_suffix(".json").read_text())
        if old["conditions"] != result["conditions"]:
            print(f"--append: {out.with_suffix('.json')} was measured under other conditions")
            return 1
        key = lambda r: (r["model"], r["batching"], r["precision"],  # noqa: E731
                         r.get("kernels", "").split(" ")[0])
        new = {key(r) for r in rows}
        result["rows"] = [r for r in old["rows"] if key(r) not in new] + rows
    atomic_write_text(out.with_suffix(".json"), json.dumps(result, indent=2) + "\n")
    atomic_write_text(out.with_suffix(".md"), markdown(result))
    print(f"wrote {out.with_suffix('.json')} and {out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
