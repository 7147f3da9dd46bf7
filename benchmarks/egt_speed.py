"""EGT training throughput and peak memory: ZINC batches of 128 (the ZINC-500k config) and
synthetic graphs of N = 64 … 512 nodes in batches of 8.

Part 1 (ZINC, one process, steps interleaved so machine noise hits every variant alike):

* ``bucketed``: batches from :class:`SizeBucketBatchSampler` (similar-size graphs, the configs'
  default) — the library's training path;
* ``random``: plain shuffled batches (padding to the largest of 128 random graphs);
* ``bucketed, glibc default malloc``: the same as ``bucketed`` with glibc's default allocator
  settings (every large tensor is fresh ``mmap`` memory, see ``training/allocator.py``).

Each variant trains its own copy of the same initial model. The reference is the official EGT
code's ZINC-500k configuration measured on this machine in the issue: 22 graphs/s (5.9 s per step
of 128 graphs, 5 GiB).

Part 2 (synthetic graphs, each size in a subprocess with an address-space cap, so running out of
memory is reported instead of taking the machine down): Erdős-Rényi graphs with average degree
10, batch 8, the same network without edge features. The estimated need is
``B · N² · bytes_per_pair`` (``EGT.bytes_per_pair``), the measured peak the profiler's replay of a
step's allocations.

Usage:
    python benchmarks/egt_speed.py --data-dir ../shared/data [--steps 20] [--threads 2]
        [--sizes 64 128 256 512] [--cap-gb 12] [--out benchmarks/results/egt_speed.md]
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import torch
from torch_geometric.data import Batch, Data
from torch_geometric.loader import DataLoader

from graph_transformers.benchmarking import peak_step_memory_mib
from graph_transformers.core.dense import DenseBatch
from graph_transformers.data.sampler import SizeBucketBatchSampler, graph_sizes
from graph_transformers.datasets.molecules.zinc import ZINCSubset
from graph_transformers.encodings import AddSVDPE
from graph_transformers.models import EGT, count_parameters
from graph_transformers.training.allocator import keep_freed_memory

REFERENCE_GRAPHS_PER_S = 22.0  # the official EGT code, ZINC-500k config, this machine (issue)
ROOT = Path(__file__).resolve().parents[1]


def zinc_model() -> EGT:
    """EGT-SPE + DO, ZINC-500k (configs/zinc/egt_spe_do.yaml)."""
    torch.manual_seed(0)
    return EGT(64, 64, 10, 8, 1, num_node_types=28, num_edge_types=4, pe="svd", pe_dim=16,
               distance_objective=True, distance_weight=0.05, memory_budget_gb=None)


def synthetic_model() -> EGT:
    torch.manual_seed(0)
    return EGT(64, 64, 10, 8, 1, num_node_types=28, use_edge_features=False, pe=None,
               memory_budget_gb=None)


def step(model, opt, batch) -> None:
    opt.zero_grad(set_to_none=True)
    out = model(batch)
    pred, aux = out.out, (out.aux_loss if out.aux_loss is not None else 0.0)
    loss = (pred.view(-1) - batch.y).abs().mean() + aux
    loss.backward()
    opt.step()


def padded_pairs(batch) -> tuple[int, int]:
    n = DenseBatch.from_batch(batch).num_nodes
    return int(n.numel() * int(n.max()) ** 2), int((n ** 2).sum())


# ----------------------------------------------------------------------------- part 1: ZINC
def zinc_part(args) -> dict:
    ds = ZINCSubset(split="train", data_dir=args.data_dir, pre_transform=AddSVDPE(8))
    sampler = SizeBucketBatchSampler(graph_sizes(ds), 128, window=50, seed=0)
    bucketed = [b for _, b in zip(range(args.steps), DataLoader(ds, batch_sampler=sampler))]
    plain = DataLoader(ds, batch_size=128, shuffle=True, generator=torch.Generator().manual_seed(0))
    random = [b for _, b in zip(range(args.steps), plain)]
    variants = {"bucketed": (bucketed, True), "random": (random, True),
                "bucketed, glibc default malloc": (bucketed, False)}
    base = zinc_model()
    models = {v: copy.deepcopy(base) for v in variants}
    opts = {v: torch.optim.Adam(m.parameters(), 5e-4, fused=True) for v, m in models.items()}
    for v, (data, tuned) in variants.items():  # warm-up
        keep_freed_memory(tuned)
        for b in data[:2]:
            step(models[v], opts[v], b)
    times = {v: [] for v in variants}
    for k in range(args.steps):
        for v, (data, tuned) in variants.items():
            keep_freed_memory(tuned)
            t = time.perf_counter()
            step(models[v], opts[v], data[k])
            times[v].append(time.perf_counter() - t)
    keep_freed_memory(True)
    rows = []
    for v, (data, _) in variants.items():
        med = statistics.median(times[v])
        graphs = statistics.fmean(b.num_graphs for b in data)
        pad, real = map(sum, zip(*(padded_pairs(b) for b in data)))
        mem = peak_step_memory_mib(partial(step, models[v], opts[v], data[0]))
        rows.append({"variant": v, "ms_per_step": med * 1e3, "graphs_per_s": graphs / med,
                     "peak_mib": mem, "padding": pad / real,
                     "vs_official": graphs / med / REFERENCE_GRAPHS_PER_S})
    return {"params": count_parameters(base), "steps": args.steps, "rows": rows}


# ----------------------------------------------------------------------------- part 2: sizes
def synthetic_batch(n: int, batch: int, degree: float, seed: int) -> Batch:
    gen = torch.Generator().manual_seed(seed)
    graphs = []
    for _ in range(batch):
        a = torch.rand(n, n, generator=gen) < degree / (n - 1)
        a = torch.triu(a, 1)
        a = a | a.T
        graphs.append(Data(x=torch.randint(0, 28, (n,), generator=gen),
                           edge_index=a.nonzero().T.contiguous(), y=torch.randn(1), num_nodes=n))
    return Batch.from_data_list(graphs)


def one_size(n: int, batch: int, steps: int, cap_gb: float) -> dict:
    """Runs in a child process: time and peak memory of EGT on B graphs of n nodes."""
    cap = int(cap_gb * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    model = synthetic_model()
    opt = torch.optim.Adam(model.parameters(), 5e-4, fused=True)
    need = batch * n * n * model.train().bytes_per_pair()
    data = [synthetic_batch(n, batch, 10.0, s) for s in range(steps + 1)]
    try:
        step(model, opt, data[0])
        times = []
        for b in data[1:]:
            t = time.perf_counter()
            step(model, opt, b)
            times.append(time.perf_counter() - t)
        med = statistics.median(times)
        mem = peak_step_memory_mib(lambda: step(model, opt, data[0]))
        return {"N": n, "batch": batch, "ms_per_step": med * 1e3, "graphs_per_s": batch / med,
                "peak_mib": mem, "estimate_mib": need / 2**20, "status": "ok"}
    except (RuntimeError, MemoryError) as err:
        return {"N": n, "batch": batch, "estimate_mib": need / 2**20,
                "status": f"out of memory under the {cap_gb:g} GiB cap",
                "error": str(err).splitlines()[0][:160]}


def sizes_part(args) -> list[dict]:
    rows = []
    for n in args.sizes:
        cmd = [sys.executable, __file__, "--child", str(n), "--steps", str(max(2, args.steps // 4)),
               "--threads", str(args.threads), "--cap-gb", str(args.cap_gb)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
        line = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
        if proc.returncode == 0 and line:
            rows.append(json.loads(line[-1]))
        else:
            rows.append({"N": n, "batch": 8, "status": f"failed (exit {proc.returncode})",
                         "error": (proc.stderr.strip().splitlines() or [""])[-1][:160]})
        print(rows[-1], flush=True)
    return rows


def render(zinc: dict | None, sizes: list[dict], args) -> str:
    lines = [f"EGT training speed, torch {torch.__version__}, {args.threads} CPU threads, "
             f"{os.cpu_count()} cores visible", ""]
    if zinc:
        lines += [f"ZINC, batch 128, EGT-SPE+DO 500k config ({zinc['params']:,} parameters), "
                  f"median of {zinc['steps']} interleaved steps:", "",
                  "| variant | ms/step | graphs/s | × official (22 graphs/s) | padded/real pairs "
                  "| peak MiB per step |", "|---|---:|---:|---:|---:|---:|"]
        for r in zinc["rows"]:
            lines.append(f"| {r['variant']} | {r['ms_per_step']:.0f} | {r['graphs_per_s']:.1f} | "
                         f"{r['vs_official']:.2f}× | {r['padding']:.2f} | {r['peak_mib']:.0f} |")
        lines.append("")
    if sizes:
        lines += ["Synthetic graphs (average degree 10), batch 8, the same network without edge "
                  f"features, each size in a subprocess capped at {args.cap_gb:g} GiB:", "",
                  "| N | ms/step | graphs/s | peak MiB per step | estimate MiB | status |",
                  "|---:|---:|---:|---:|---:|---|"]
        for r in sizes:
            ms = f"{r['ms_per_step']:.0f}" if "ms_per_step" in r else "–"
            gs = f"{r['graphs_per_s']:.2f}" if "graphs_per_s" in r else "–"
            pk = f"{r['peak_mib']:.0f}" if "peak_mib" in r else "–"
            est = f"{r['estimate_mib']:.0f}" if "estimate_mib" in r else "–"
            lines.append(f"| {r['N']} | {ms} | {gs} | {pk} | {est} | {r['status']} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--sizes", type=int, nargs="*", default=[64, 128, 256, 512])
    ap.add_argument("--cap-gb", type=float, default=12.0,
                    help="address-space cap of each synthetic-size subprocess")
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--skip-zinc", action="store_true")
    ap.add_argument("--out", type=Path, default=None, help="also write the table (markdown) and "
                    "a .json beside it")
    ap.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    keep_freed_memory(True)
    if args.child is not None:
        print(json.dumps(one_size(args.child, 8, args.steps, args.cap_gb)))
        return
    zinc = None if args.skip_zinc else zinc_part(args)
    sizes = sizes_part(args) if args.sizes else []
    text = render(zinc, sizes, args)
    print(text)
    if args.out:
        from graph_transformers.fileio import atomic_write_text
        atomic_write_text(args.out, text)
        atomic_write_text(args.out.with_suffix(".json"),
                          json.dumps({"zinc": zinc, "sizes": sizes}, indent=1))


if __name__ == "__main__":
    main()
