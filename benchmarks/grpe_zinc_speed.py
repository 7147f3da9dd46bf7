"""Training throughput and peak memory of GRPE-Small on ZINC (batch 128): the layer's gather /
scatter form (the paper's complexity trick) against the naive form that materializes the
``[B, N, N, d]`` relative tensors, measured in one process.

Variants (all GRPE-Small, 476,801 parameters, the same weights at the start):

* ``grpe``: the default (fused topology × edge relation, gather / scatter, size groups of 4);
* ``grpe-1group``: the same on one padded batch (no size groups);
* ``grpe-unfused-1group``: separate topology and edge relations (4 gathers + 2 scatters per
  layer, as the official code), one padded batch;
* ``grpe-materialized``: the naive form (tables gathered into pair tensors, einsum), one group.

Steps alternate between variants so that machine noise hits all of them alike; dropouts and input
noise are those of ``configs/zinc/grpe_small.yaml`` unless ``--no-dropout``. Step times are the
process's CPU time (``time.process_time``), which equals wall time for one thread on an idle
machine and is robust to other jobs sharing the cores (the table states the load). Peak memory is
the memory allocated during one training step above what was live before it (see
``graph_transformers.benchmarking.peak_step_memory_mib``).

Usage:
    python benchmarks/grpe_zinc_speed.py --data-dir ../shared/data [--steps 10] [--threads 1] \\
        [--out benchmarks/results/grpe_zinc_speed.md]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from functools import partial
from pathlib import Path

import torch
from torch_geometric.loader import DataLoader

sys.path.insert(0, str(Path(__file__).resolve().parent))
from speed import train_step  # noqa: E402

from graph_transformers.benchmarking import peak_step_memory_mib  # noqa: E402

import graph_transformers.nn.grpe_gather as grpe_gather  # noqa: E402
from graph_transformers.datasets.molecules.zinc import ZINCSubset  # noqa: E402
from graph_transformers.encodings import AddShortestPaths  # noqa: E402
from graph_transformers.models import GRPE, count_parameters  # noqa: E402

VARIANTS = {  # name: (size_groups, attention_impl, fuse)
    "grpe": (4, "gather", True),
    "grpe-1group": (1, "gather", True),
    "grpe-unfused-1group": (1, "gather", False),
    "grpe-materialized": (1, "materialized", True),
}

#: official GRPE-Small on this machine (issue text): 0.8 s per step of 128 graphs
REFERENCE_GRAPHS_PER_S = 160.0


def build(name: str, dropout: bool) -> GRPE:
    groups, impl, _ = VARIANTS[name]
    torch.manual_seed(0)
    return GRPE(80, 12, 8, 1, num_node_types=28, num_edge_types=4, max_distance=5, ffn_dim=80,
                dropout=0.1 if dropout else 0.0, attn_dropout=0.1 if dropout else 0.0,
                input_noise=0.2 if dropout else 0.0, attention_impl=impl, size_groups=groups,
                memory_budget_gb=None)


def run(name, fn):
    """Runs ``fn`` with the fusion setting of variant ``name``."""
    saved = grpe_gather.FUSE_LIMIT
    grpe_gather.FUSE_LIMIT = saved if VARIANTS[name][2] else 0
    try:
        return fn()
    finally:
        grpe_gather.FUSE_LIMIT = saved


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument("--no-dropout", action="store_true")
    ap.add_argument("--no-memory", action="store_true")
    ap.add_argument("--out", default=None, help="also write the table (markdown) here")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    ds = ZINCSubset(split="train", data_dir=args.data_dir, pre_transform=AddShortestPaths(5))
    loader = DataLoader(ds, batch_size=128, shuffle=True,
                        generator=torch.Generator().manual_seed(0))
    data = [b for _, b in zip(range(args.steps + args.warmup), loader)]
    models = {n: build(n, not args.no_dropout).train() for n in args.variants}
    opts = {n: torch.optim.AdamW(m.parameters(), 2e-4, weight_decay=1e-3, fused=True)
            for n, m in models.items()}
    times = {n: [] for n in models}
    for i, b in enumerate(data):
        for n in models:
            t = time.process_time()  # CPU time: robust to other jobs sharing the cores
            run(n, partial(train_step, models[n], opts[n], b, "fp32"))
            if i >= args.warmup:
                times[n].append(time.process_time() - t)
    load = os.getloadavg()[0]
    lines = [f"GRPE-Small on ZINC, batch 128, {args.steps} training steps per variant "
             f"(interleaved), CPU, {args.threads} thread(s), torch {torch.__version__}, "
             f"{'no dropout / noise' if args.no_dropout else 'dropout 0.1 / 0.1, input noise 0.2'}"
             f", load average {load:.1f} on {os.cpu_count()} cores", "",
             f"| variant | params | CPU ms/step | graphs/s | peak MiB | vs materialized | "
             f"vs official ({REFERENCE_GRAPHS_PER_S:.0f}/s) |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    graphs = statistics.fmean(b.num_graphs for b in data[args.warmup:])
    rate = {n: graphs / statistics.median(times[n]) for n in models}
    for n, m in models.items():
        measure = partial(peak_step_memory_mib, partial(train_step, m, opts[n], data[0], "fp32"))
        mem = "-" if args.no_memory else f"{run(n, measure):.0f}"
        ref = rate.get("grpe-materialized")
        lines.append(f"| {n} | {count_parameters(m):,} | {statistics.median(times[n]) * 1e3:.0f} "
                     f"| {rate[n]:.0f} | {mem} | "
                     f"{'-' if ref is None else f'{rate[n] / ref:.1f}x'} | "
                     f"{rate[n] / REFERENCE_GRAPHS_PER_S:.2f}x |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
