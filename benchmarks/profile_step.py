"""Where a training step's time goes: a CPU profile (``torch.profiler``, self time by op) of a
few steps of ours or the reference of ``benchmarks/speed.py``, on the same ZINC batches.

The shares of matrix products (``mm``, ``addmm``, ``bmm``) and of copies / dtype conversions
(``copy_``) are printed first, then the profiler's table. Used for the "what bounds each model"
section of ``docs/speed.md``; absolute times depend on the load, the shares much less.

Usage:
    python benchmarks/profile_step.py egt --batching bucketed --precision bf16 --threads 1 \\
        --data-dir ../shared/data [--side ours|reference] [--official PATH] [--steps 4] \\
        [--out benchmarks/results/profiles/egt_bucketed_bf16.txt]
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parent))
import speed  # noqa: E402

from graph_transformers.fileio import atomic_write_text  # noqa: E402

MATMULS = ("aten::mm", "aten::addmm", "aten::bmm")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", choices=list(speed.MODELS))
    ap.add_argument("--side", choices=("ours", "reference"), default="ours")
    ap.add_argument("--official", default=None, help="official checkout (EGT/GRPE reference)")
    ap.add_argument("--batching", choices=speed.BATCHINGS, default="random")
    ap.add_argument("--precision", choices=speed.PRECISIONS, default="fp32")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)

    from graph_transformers.data.registry import load_splits, resolve_spec
    from graph_transformers.training.config import build_config, load_yaml
    from graph_transformers.training.allocator import keep_freed_memory

    torch.set_num_threads(args.threads)
    keep_freed_memory()  # the training default, as benchmarks/speed.py's rows
    overrides = ["data.batch_size=128", "model.dropout=0.0"]
    if args.data_dir:
        overrides.append(f"data.data_dir={args.data_dir}")
    if args.model == "gt":
        overrides.append("model.use_edge_features=false")
    config = build_config(load_yaml(speed.ROOT / speed.MODELS[args.model][0]), overrides)
    spec = resolve_spec(config.data)
    train = load_splits(config.data, config.encodings)["train"]
    ours, ref, reference = speed.build_sides(args.model, config, spec, train,
                                             {args.model: args.official})
    model = ours if args.side == "ours" else ref
    if model is None:
        print(reference)
        return 2
    precision = args.precision if args.side == "ours" else "fp32"
    batches = speed.measured_batches(config, train, args.batching, 128, args.steps)
    opt = torch.optim.Adam(model.parameters(), 1e-4)
    model.train()
    # warm-up on the very batches that are profiled, twice: the first step of each new batch
    # shape grows the heap and first-touches its pages (page faults then showed as a third of
    # the step, charged to whichever op wrote the fresh memory); the profile is the steady state
    for _ in range(2):
        for batch in batches:
            speed.train_step(model, opt, batch, precision)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for batch in batches:
            speed.train_step(model, opt, batch, precision)
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events)
    share = {name: sum(e.self_cpu_time_total for e in events if e.key == name) / total
             for name in (*MATMULS, "aten::copy_")}
    head = [f"{args.model}, {args.side} ({reference if args.side == 'reference' else 'ours'}), "
            f"{args.batching} batches of 128, {precision}, {args.steps} steps, "
            f"{args.threads} thread(s), torch {torch.__version__}, "
            f"load average {os.getloadavg()[0]:.2f}",
            "matrix products (mm + addmm + bmm): "
            f"{100 * sum(share[m] for m in MATMULS):.1f}% of self CPU time ("
            + ", ".join(f"{m.split('::')[1]} {100 * share[m]:.1f}%" for m in MATMULS)
            + f"); copy_ {100 * share['aten::copy_']:.1f}%", ""]
    text = "\n".join(head) + events.table(sort_by="self_cpu_time_total", row_limit=25) + "\n"
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(args.out, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
