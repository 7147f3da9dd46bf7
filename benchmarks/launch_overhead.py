"""Launch overhead of a training step, per ZINC model (issue 56, item 5).

On a GPU a small-graph model's step costs a roughly fixed 8-15 µs per dispatched ATen op, so the
figure that predicts its GPU speed is the op count. For each model of the device check
(:data:`graph_transformers.device_check.MODELS`, its ZINC config, one batch of ``--batch-size``
ZINC training graphs, the trainer's fused Adam) this script measures on the CPU:

- ``eager_ops_per_step``: ATen ops of one eager training step (forward, loss, backward, Adam)
  on the ordinary PyG batch, :func:`graph_transformers.step_profile.step_ops`, and
  ``forward_backward_ops`` without Adam; ``host_syncs`` among them (reads of device values;
  on the CPU they cost nothing, on a GPU each waits for the device);
  ``static_eager_ops_per_step``: the same step, eager, on the same graphs as a static-shape
  batch (``static_max_nodes`` set: GRPE and Graphormer then run one size group);
- ``graph_breaks``: graph breaks of the forward + loss under ``torch._dynamo.explain`` on the
  batch with ``static_max_nodes`` set (the static-shape contract, docs/speed.md), with the reasons;
- ``cpu_step_ms``: the step's median wall time eager (ordinary batch) and with the forward +
  loss compiled on the static-shape batch of the same graphs
  (``torch.compile(fullgraph=True, dynamic=False)``; backward and Adam eager), at 1 and 2 threads,
  compiled once per thread count (inductor's CPU kernels keep the thread count they were
  generated for) and interleaved within it (eager and compiled alternate on the same batch
  within each round, so a change of machine load hits both). A model whose forward does not
  compile as one graph gets ``"compiled": null`` and the error.

Writes ``launch_overhead.json`` (``{"models": {name: {"eager_ops_per_step": int, "graph_breaks":
int, "cpu_step_ms": {"eager": {"1": ms, "2": ms}, "compiled": {"1": ms, "2": ms}}}}, "meta":
{...}}``) and ``launch_overhead.md`` to ``--out`` (default ``benchmarks/results``).

    python benchmarks/launch_overhead.py --data-dir ../shared/data          # ≈15 min, 2 cores
    python benchmarks/launch_overhead.py --synthetic --tiny --rounds 1 --out /tmp/lo   # smoke
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

try:
    import graph_transformers  # noqa: F401
except ImportError:  # a source checkout without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import torch

from graph_transformers.device_check import MODELS, load_data, model_configs, uncached_keys
from graph_transformers.device_measure import without_keys
from graph_transformers.fileio import atomic_write_text
from graph_transformers.step_profile import count_ops, step_ops, train_step

REPO = Path(__file__).resolve().parents[1]


def _optimizer(model: torch.nn.Module) -> torch.optim.Optimizer:
    """The trainer's optimizer (training.module.configure_optimizers): fused Adam."""
    return torch.optim.Adam(model.parameters(), lr=1e-4,
                            fused=all(p.is_floating_point() for p in model.parameters()))


def _static_batch(batch):
    """``batch`` with the static-shape contract's ``static_max_nodes`` (its largest graph)."""
    b = batch.clone()
    b.static_max_nodes = int(torch.diff(b.ptr).max())
    return b


def _graph_breaks(model, batch, task) -> tuple[int | None, list[str]]:
    """Graph breaks of the forward + loss (``step_profile.graph_breaks``, where it exists)."""
    try:
        from graph_transformers.step_profile import graph_breaks
    except ImportError:
        return None, ["step_profile.graph_breaks not available"]
    from graph_transformers.training.module import split_output

    def forward_loss(b):
        out, aux = split_output(model(b))
        loss = task.loss(out, b)
        return loss if aux is None else loss + aux
    return graph_breaks(forward_loss, batch)


def _timed(step, steps: int) -> float:
    """Median ms of ``steps`` calls of ``step`` (after one untimed call)."""
    step()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def measure(name: str, cfg, batch, args) -> dict:
    """The figures of one model (see the module docstring)."""
    from graph_transformers.data.registry import resolve_spec
    from graph_transformers.models import count_parameters
    from graph_transformers.training.build import make_model
    from graph_transformers.training.module import split_output
    from graph_transformers.training.tasks import Task

    torch.manual_seed(0)
    spec = resolve_spec(cfg.data)
    task = Task(spec)
    model = make_model(cfg, spec).train()
    plain = without_keys(batch, uncached_keys(cfg))
    static = _static_batch(plain)
    entry: dict = {"config": MODELS[name][0], "params": count_parameters(model)}
    opt = _optimizer(model)
    ops = step_ops(model, plain, task, opt)
    fb = count_ops(lambda: train_step(model, plain, task))
    model.zero_grad(set_to_none=True)
    static_ops = step_ops(model, static, task, opt)
    entry.update(eager_ops_per_step=ops.total, forward_backward_ops=fb.total,
                 host_syncs=ops.host_syncs, static_eager_ops_per_step=static_ops.total,
                 static_host_syncs=static_ops.host_syncs, top_ops=dict(ops.top(8)))
    breaks, reasons = _graph_breaks(model, static, task)
    entry.update(graph_breaks=breaks, graph_break_reasons=reasons[:10])
    if args.no_timing:
        return entry

    eager = copy.deepcopy(model)
    eager_opt = _optimizer(eager)
    compiled_model = copy.deepcopy(model)
    compiled_opt = _optimizer(compiled_model)

    def forward_loss(m, b):
        out, aux = split_output(m(b))
        loss = task.loss(out, b)
        return loss if aux is None else loss + aux

    def eager_step():
        forward_loss(eager, plain).backward()
        eager_opt.step()
        eager_opt.zero_grad(set_to_none=True)

    # inductor's CPU kernels fix their OpenMP thread count when they are generated (and dynamo
    # does not recompile when torch.set_num_threads changes it), so each thread count gets its
    # own compilation; eager and compiled are interleaved within each thread count
    compile_error = None
    samples: dict = {"eager": {}, "compiled": {}}
    for threads in args.threads:
        torch.set_num_threads(threads)
        torch._dynamo.reset()
        compiled_fn = torch.compile(lambda b: forward_loss(compiled_model, b), fullgraph=True,
                                    dynamic=False)

        def compiled_step(compiled_fn=compiled_fn):
            compiled_fn(static).backward()
            compiled_opt.step()
            compiled_opt.zero_grad(set_to_none=True)

        if compile_error is None:
            t0 = time.perf_counter()
            try:
                compiled_step()  # compiles
                entry.setdefault("compile_s", {})[str(threads)] = round(
                    time.perf_counter() - t0, 1)
            except Exception as err:  # noqa: BLE001 - a model that does not compile is a result
                compile_error = f"{type(err).__name__}: {str(err).splitlines()[0][:300]}"
        for _ in range(args.rounds):
            samples["eager"].setdefault(str(threads), []).append(_timed(eager_step, args.steps))
            if compile_error is None:
                samples["compiled"].setdefault(str(threads), []).append(
                    _timed(compiled_step, args.steps))
    entry["cpu_step_ms"] = {
        "eager": {t: round(min(v), 2) for t, v in samples["eager"].items()},
        "compiled": ({t: round(min(v), 2) for t, v in samples["compiled"].items()}
                     if compile_error is None else None)}
    if compile_error is not None:
        entry["compile_error"] = compile_error
    else:
        entry["compiled_speedup"] = {t: round(entry["cpu_step_ms"]["eager"][t] / ms, 2)
                                     for t, ms in entry["cpu_step_ms"]["compiled"].items()}
    torch._dynamo.reset()
    return entry


def markdown(result: dict) -> str:
    """The result as a Markdown table."""
    meta = result["meta"]
    threads = [str(t) for t in meta["threads"]]
    lines = ["# Launch overhead per training step (ZINC models)", "",
             f"{meta['cpu']}; torch {meta['torch']}; {meta['data']}; batch of "
             f"{meta['batch_graphs']} graphs ({meta['batch_nodes']} nodes); "
             f"{'tiny models; ' if meta['tiny'] else ''}step = forward, loss, backward, fused "
             f"Adam. Times: best of {meta['rounds']} interleaved rounds of the median of "
             f"{meta['steps']} steps; load average {meta['load_before']} before, "
             f"{meta['load_after']} after. Compiled = forward + loss under "
             "`torch.compile(fullgraph=True, dynamic=False)`.", "",
             "| model | params | ATen ops / step | fwd+bwd ops | host syncs | ops / step, static "
             "batch | graph breaks | "
             + " | ".join(f"eager ms ({t} thr) | compiled ms ({t} thr)" for t in threads)
             + " |", "|---|" + "---:|" * (6 + 2 * len(threads))]
    for name, e in result["models"].items():
        ms = e.get("cpu_step_ms") or {}
        cells = []
        for t in threads:
            cells.append(str((ms.get("eager") or {}).get(t, "–")))
            comp = ms.get("compiled")
            cells.append(str(comp.get(t, "–")) if comp else
                         ("fails" if "compile_error" in e else "–"))
        gb = "–" if e.get("graph_breaks") is None else e["graph_breaks"]
        lines.append(f"| {name} | {e['params']:,} | {e['eager_ops_per_step']:,} | "
                     f"{e['forward_backward_ops']:,} | {e['host_syncs']} | "
                     f"{e['static_eager_ops_per_step']:,} | {gb} | "
                     + " | ".join(cells) + " |")
    errors = [(n, e["compile_error"]) for n, e in result["models"].items()
              if "compile_error" in e]
    if errors:
        lines += ["", "Compile errors:", ""] + [f"- {n}: `{err}`" for n, err in errors]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Measures every model and writes the reports; returns 0."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", default=None)
    p.add_argument("--synthetic", action="store_true")
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--steps", type=int, default=10, help="timed steps per measurement")
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--tiny", action="store_true", help="tiny models (a smoke run)")
    p.add_argument("--no-timing", action="store_true", help="op counts and graph breaks only")
    p.add_argument("--out", default=str(REPO / "benchmarks" / "results"))
    args = p.parse_args(argv)
    from graph_transformers.training.device import cpu_name

    configs = model_configs(args.models, REPO / "configs" / "zinc", args.tiny)
    data = load_data(configs, args.data_dir, args.batch_size, args.batch_size, args.synthetic)
    load_before = round(os.getloadavg()[0], 2)
    models = {}
    for name, cfg in configs.items():
        t0 = time.perf_counter()
        models[name] = measure(name, cfg, data.batch, args)
        print(f"launch_overhead: {name}: {models[name]['eager_ops_per_step']} ops, "
              f"{models[name]['graph_breaks']} breaks, {models[name].get('cpu_step_ms')} "
              f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
    result = {"models": models, "meta": {
        "cpu": cpu_name(), "torch": torch.__version__, "python": platform.python_version(),
        "data": data.source, "batch_graphs": int(data.batch.num_graphs),
        "batch_nodes": int(data.batch.num_nodes), "tiny": bool(args.tiny),
        "threads": args.threads, "steps": args.steps, "rounds": args.rounds,
        "load_before": load_before, "load_after": round(os.getloadavg()[0], 2),
        "date": time.strftime("%Y-%m-%d")}}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "launch_overhead.json", json.dumps(result, indent=1) + "\n")
    report = markdown(result)
    atomic_write_text(out / "launch_overhead.md", report)
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
