"""Scaling of one attention layer with the number of nodes: sparse GT, full softmax attention and
Performer linear attention, forward + backward time and peak memory on one graph of N nodes
(average degree 10), N = 1e3 ... 1e6, plus the time of LapPE by the sparse eigensolver.

Each (model, N) point runs in its own forked subprocess with an address-space cap
(``resource.setrlimit(RLIMIT_AS)``, default 8 GiB, which includes the ~``baseline_vm_mib`` of
virtual memory the interpreter with torch already maps) and a timeout, so running out of memory is
reported as "OOM at N" instead of taking the machine down. After a model fails (OOM or timeout)
its larger sizes are not tried.

Models (hidden 64, 4 heads of 16, one layer, float32, 1 thread):

- ``sparse_gt``: :class:`GraphTransformerLayer` (attention over the ~10 N edges);
- ``full``: :class:`GPSLayer` with full attention only (SDPA; on CPU without attention dropout
  its flash kernel runs in linear memory and quadratic time);
- ``full_dropout``: the same with attention dropout 0.5 (GraphGPS's ZINC setting), which sends
  SDPA to its reference path that forms the ``N x N`` matrices;
- ``performer``: :class:`GPSLayer` with Performer attention only (48 random features).

Peak memory is the growth of the process's peak resident set (``VmHWM``, reset through
``/proc/self/clear_refs`` before the first step) over its resident set before it: what the
forward and backward passes allocate on top of the graph, the inputs and the weights.

Usage::

    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/gps_scaling.py [--mem-gib 8]
        [--timeout 120] [--out benchmarks/results]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import isolated  # noqa: E402
from isolated import cpu_name, reset_peak_rss, status_kib  # noqa: E402

SIZES = [1_000, 3_000, 10_000, 30_000, 100_000, 300_000, 1_000_000]
MODELS = ["sparse_gt", "full", "full_dropout", "performer"]
LABELS = {"sparse_gt": "sparse GT (edges)", "full": "full attention (SDPA, no dropout)",
          "full_dropout": "full attention, attn. dropout 0.5", "performer": "Performer (linear)"}
HIDDEN, HEADS, AVG_DEGREE, LAPPE_K = 64, 4, 10, 8


def _graph(n: int, seed: int = 0):
    import torch
    from torch_geometric.utils import coalesce
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(0, n, (n * AVG_DEGREE // 2,), generator=g)
    dst = torch.randint(0, n, (n * AVG_DEGREE // 2,), generator=g)
    keep = src != dst
    ei = torch.stack([torch.cat([src[keep], dst[keep]]), torch.cat([dst[keep], src[keep]])])
    return coalesce(ei, num_nodes=n)


def run_point(model: str, n: int) -> dict:
    """One measurement in this process (called in the subprocess)."""
    import torch
    torch.set_num_threads(1)
    torch.manual_seed(0)
    edge_index = _graph(n)
    if model == "lappe":
        from graph_transformers.encodings.lappe import laplacian_pe
        t0 = time.perf_counter()
        pe = laplacian_pe(edge_index, n, LAPPE_K)
        return {"status": "ok", "lappe_s": time.perf_counter() - t0,
                "finite": bool(torch.isfinite(pe).all())}
    from graph_transformers.nn import GPSLayer, GraphTransformerLayer
    if model == "sparse_gt":
        layer = GraphTransformerLayer(HIDDEN, HEADS)
    else:
        kind = "performer" if model == "performer" else "full"
        layer = GPSLayer(HIDDEN, HEADS, mpnn=None, attention=kind,
                         attn_dropout=0.5 if model == "full_dropout" else 0.0,
                         memory_budget_gb=None)  # let the memory cap, not the check, decide
    layer.train()
    x = torch.randn(n, HIDDEN)
    reset_peak_rss()
    rss0 = status_kib("VmRSS")
    times = []
    start = time.perf_counter()
    # up to 4 steps within ~20 s; a single step when one already takes over 10 s
    while len(times) < 4 and time.perf_counter() - start < 20:
        t0 = time.perf_counter()
        layer(x, edge_index).sum().backward()
        layer.zero_grad(set_to_none=True)
        times.append(time.perf_counter() - t0)
        if times[0] > 10:
            break
    timed = times[1:] if len(times) > 1 else times  # the first step warms up
    return {"status": "ok", "step_s": statistics.median(timed), "steps": len(times),
            "peak_mib": (status_kib("VmHWM") - rss0) / 1024}


def measure(model: str, n: int, mem_gib: float, timeout: float) -> dict:
    """One point in a forked child with the memory cap and ``timeout`` (:mod:`isolated`)."""
    return isolated.measure(run_point, (model, n), mem_gib, timeout)


def _fmt(r: dict, key: str, scale: float = 1.0, digits: int = 1) -> str:
    if r is None:
        return "–"
    if r["status"] == "ok":
        return f"{r[key] * scale:,.{digits}f}"
    return {"oom": "**OOM**", "timeout": "timeout", "skipped": "–"}.get(r["status"], "error")


def write_outputs(results: dict, out: Path, meta: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "gps_scaling.json").write_text(json.dumps({"meta": meta, "results": results},
                                                     indent=2) + "\n")
    lines = [f"Forward + backward of one layer (hidden {HIDDEN}, {HEADS} heads of "
             f"{HIDDEN // HEADS}, float32) on one graph of N nodes with average degree "
             f"{AVG_DEGREE}; {meta['cpu']}, 1 thread. Each point ran in a forked subprocess "
             f"capped at {meta['mem_gib']:g} GiB of address space (RLIMIT_AS; the process maps "
             f"~{meta.get('baseline_vm_mib', 0) / 1024:.1f} GiB before the first step), with a "
             f"timeout of {meta['timeout_s']:g} s ({meta['lappe_timeout_s']:g} s for LapPE). "
             "Time: median of the steps after a warm-up step, or the single step when one took "
             "over 10 s. Peak: growth of the peak RSS during the steps. " + meta.get("note", ""),
             "", "**Time per step (ms)**, and LapPE (k = 8 smallest non-trivial eigenvectors, "
             "ARPACK `eigsh`, computed once per graph):", "",
             "| N | " + " | ".join(LABELS[m] for m in MODELS) + " | LapPE (s) |",
             "|---:|" + "---:|" * (len(MODELS) + 1)]
    for n in SIZES:
        row = [f"{n:,}"]
        row += [_fmt(results[m].get(str(n)), "step_s", 1000, 0 if n >= 10_000 else 1)
                for m in MODELS]
        row.append(_fmt(results["lappe"].get(str(n)), "lappe_s", 1, 1))
        lines.append("| " + " | ".join(row) + " |")
    lines += ["", "**Peak memory growth (MiB)**:", "",
              "| N | " + " | ".join(LABELS[m] for m in MODELS) + " |",
              "|---:|" + "---:|" * len(MODELS)]
    for n in SIZES:
        row = [f"{n:,}"] + [_fmt(results[m].get(str(n)), "peak_mib", 1, 0) for m in MODELS]
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    for m in MODELS + ["lappe"]:
        fails = [(int(n), r) for n, r in results[m].items() if r["status"] in ("oom", "timeout")]
        if fails:
            n, r = min(fails)
            limit = meta["lappe_timeout_s"] if m == "lappe" else meta["timeout_s"]
            what = "out of memory" if r["status"] == "oom" else f"over the {limit:g} s timeout"
            name = LABELS.get(m, "LapPE (sparse eigensolver)")
            line = f"- {name}: {what} at N = {n:,}."
            if m == "full_dropout" and r["status"] == "timeout":
                from graph_transformers.nn.attention import full_attention_bytes
                need = full_attention_bytes(1, HEADS, n, HIDDEN // HEADS, 4, math_kernel=True)
                line += (f" Its N x N tensors alone would need {need / 2**30:.1f} GiB there "
                         "(`full_attention_bytes`), close to what the cap leaves.")
            lines.append(line)
    (out / "gps_scaling.md").write_text("\n".join(lines) + "\n")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for m in MODELS:
        ok = [(int(n), r) for n, r in results[m].items() if r["status"] == "ok"]
        ok.sort()
        if not ok:
            continue
        ns = [n for n, _ in ok]
        l1, = axes[0].loglog(ns, [r["step_s"] * 1000 for _, r in ok], "o-", label=LABELS[m])
        axes[1].loglog(ns, [max(r["peak_mib"], 0.1) for _, r in ok], "o-", color=l1.get_color(),
                       label=LABELS[m])
        fails = [(int(n), r) for n, r in results[m].items() if r["status"] in ("oom", "timeout")]
        for n, r in fails:
            mark = "OOM" if r["status"] == "oom" else "timeout"
            for ax, key, scale in ((axes[0], "step_s", 1000), (axes[1], "peak_mib", 1)):
                y = ok[-1][1][key] * scale
                ax.plot([n], [max(y, 0.1)], "x", color=l1.get_color(), markersize=10)
                ax.annotate(mark, (n, max(y, 0.1)), textcoords="offset points", xytext=(4, 4),
                            fontsize=8, color=l1.get_color())
    lap = sorted((int(n), r) for n, r in results["lappe"].items() if r["status"] == "ok")
    if lap:
        axes[0].loglog([n for n, _ in lap], [r["lappe_s"] * 1000 for _, r in lap], "k--",
                       label="LapPE k=8 (eigsh), once")
    axes[0].set(xlabel="nodes N (average degree 10)", ylabel="forward + backward, ms",
                title="time of one layer")
    axes[1].set(xlabel="nodes N (average degree 10)", ylabel="peak memory growth, MiB",
                title=f"memory (cap {meta['mem_gib']:g} GiB; x = failure)")
    axes[1].axhline(meta["mem_gib"] * 1024, color="grey", lw=0.8, ls=":")
    for ax in axes:
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "gps_scaling.png", dpi=120)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mem-gib", type=float, default=8.0)
    ap.add_argument("--timeout", type=float, default=150.0)
    ap.add_argument("--lappe-timeout", type=float, default=240.0)
    ap.add_argument("--max-n", type=int, default=SIZES[-1])
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    ap.add_argument("--replot", action="store_true",
                    help="rewrite the table and plot from --out/gps_scaling.json")
    ap.add_argument("--note", default="", help="a sentence added to the table's caption")
    args = ap.parse_args()
    if args.replot:
        saved = json.loads((args.out / "gps_scaling.json").read_text())
        if args.note:
            saved["meta"]["note"] = args.note
        write_outputs(saved["results"], args.out, saved["meta"])
        print((args.out / "gps_scaling.md").read_text())
        return
    import torch  # imported once here; the forked points inherit it
    import graph_transformers.encodings.lappe  # noqa: F401
    import graph_transformers.nn  # noqa: F401
    torch.set_num_threads(1)
    cpu = cpu_name()
    meta = {"note": args.note, "baseline_vm_mib": round(status_kib("VmSize") / 1024),
            "baseline_rss_mib": round(status_kib("VmRSS") / 1024), "mem_gib": args.mem_gib,
            "timeout_s": args.timeout, "lappe_timeout_s": args.lappe_timeout, "cpu": cpu,
            "hidden": HIDDEN, "heads": HEADS, "avg_degree": AVG_DEGREE,
            "date": time.strftime("%Y-%m-%d %H:%M")}
    results: dict[str, dict] = {m: {} for m in MODELS + ["lappe"]}
    t_all = time.perf_counter()
    for m in MODELS + ["lappe"]:
        failed = False
        for n in SIZES:
            if n > args.max_n:
                break
            if failed:
                results[m][str(n)] = {"status": "skipped"}
                continue
            r = measure(m, n, args.mem_gib, args.lappe_timeout if m == "lappe" else args.timeout)
            results[m][str(n)] = r
            print(f"{m:>13} N={n:>9,}: {r}", flush=True)
            failed = r["status"] != "ok"
            write_outputs(results, args.out, meta)
    meta["total_s"] = round(time.perf_counter() - t_all, 1)
    write_outputs(results, args.out, meta)
    print((args.out / "gps_scaling.md").read_text())


if __name__ == "__main__":
    main()
