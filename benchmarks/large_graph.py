"""Node classification on one large graph (10⁵, 10⁶, 3·10⁶ nodes) by Cluster-GCN mini-batches:
this library's cheap global attentions against PyG's ``SGFormer`` and ``Polynormer`` at matched
width and depth, on the same graph, the same partitions, the same batches and the same threads.

The graph: :func:`~graph_transformers.datasets.synthetic.large_graph.make_sbm_graph`, a seeded
stochastic block model with 10 classes, class-correlated features (32 dims) and average degree
≈10; 60/20/20 % train/val/test node masks. METIS splits it once into clusters of about
``--cluster-size`` nodes (cached; :mod:`graph_transformers.data.cluster`), and every method trains
on the same epochs of batches, each merging ``--clusters-per-batch`` clusters drawn at random per
epoch with the edges between them restored (Chiang et al. 2019); evaluation runs over the clusters
in order (node chunks), so no method ever holds the whole graph's activations.

Methods (hidden 64, 2 layers, 4 heads, dropout 0, Adam lr 1e-3):

- ``gps_performer``: GPS layers (GCN + Performer attention, Choromanski et al. 2021);
- ``gps_linear``: GPS layers (GCN + linear attention, elu+1 features, Katharopoulos et al. 2020);
- ``exphormer``: GPS layers (GCN + Exphormer attention over the graph's edges, a random 3-regular
  expander drawn once on the whole graph, and one virtual node; Shirzad et al. 2023);
- ``sampled_gt``: GT layers (sparse attention over the batch's edges; Dwivedi & Bresson 2020);
- ``pyg_sgformer``: ``torch_geometric.nn.models.SGFormer`` (2 attention layers, 2 GCN layers);
- ``pyg_polynormer``: ``torch_geometric.nn.models.Polynormer`` (2 local, 2 global layers, one
  head of 64: in PyG 2.8.1 its global attention fails with more than one head, being built for
  ``hidden_channels`` inputs while it receives ``heads · hidden_channels``).

Each (method, N) point runs in a child (forked from a fresh server process, so that it may use
several threads whatever ran before it) capped at ``--mem-gib`` of address space with a
timeout (:mod:`isolated`); it reports seconds per training epoch (median over the epochs), the
peak resident set of the whole process (``VmHWM``: graph, partition, model and activations) and
accuracy on the validation and test nodes after the fixed number of epochs. Writes
``large_graph.json``, ``large_graph.md`` and ``large_graph.png`` (time and memory against N,
log–log) under ``--out``.

Usage::

    PYTHONPATH=src python benchmarks/large_graph.py [--sizes 100000 1000000 3000000]
        [--epochs 3] [--threads 2] [--mem-gib 22] [--timeout 3600] [--out benchmarks/results]
        [--methods ...] [--merge]

Needs a METIS backend (``pip install 'graph-transformers[large]'``).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from isolated import cpu_name, measure, status_kib  # noqa: E402

METHODS = ["gps_performer", "gps_linear", "exphormer", "sampled_gt", "pyg_sgformer",
           "pyg_polynormer"]
LABELS = {"gps_performer": "GPS-Performer", "gps_linear": "GPS-linear", "exphormer": "Exphormer",
          "sampled_gt": "GT (cluster batches)", "pyg_sgformer": "PyG SGFormer",
          "pyg_polynormer": "PyG Polynormer"}
OURS = ["gps_performer", "gps_linear", "exphormer", "sampled_gt"]
ANCHORS = ["pyg_sgformer", "pyg_polynormer"]
SIZES = [100_000, 1_000_000, 3_000_000]
#: what the server that forks each point imports first (isolated.measure)
PRELOAD = ["torch", "torch_geometric", "graph_transformers.models",
           "graph_transformers.data.cluster", "large_graph"]
HIDDEN, LAYERS, HEADS, LR = 64, 2, 4, 1e-3
NUM_CLASSES, FEATURE_DIM, AVG_DEGREE, EXPANDER_DEGREE = 10, 32, 10.0, 3


def make_graph(n: int, seed: int = 0):
    """The benchmark's graph of ``n`` nodes (module docstring)."""
    from graph_transformers.datasets.synthetic.large_graph import make_sbm_graph
    return make_sbm_graph(n, NUM_CLASSES, AVG_DEGREE, feature_dim=FEATURE_DIM, seed=seed)


def build(method: str):
    """``(model, logits(batch) -> [num_nodes, classes], takes_log_probs)`` of one method."""
    import torch
    if method in ("gps_performer", "gps_linear", "exphormer"):
        from graph_transformers.models import GPS
        attention = {"gps_performer": "performer", "gps_linear": "linear",
                     "exphormer": "exphormer"}[method]
        model = GPS(HIDDEN, LAYERS, HEADS, NUM_CLASSES, level="node",
                    num_node_features=FEATURE_DIM, mpnn="gcn", attention=attention,
                    use_edge_features=False, pe=None)
        return model, model, False
    if method == "sampled_gt":
        from graph_transformers.models import GraphTransformer
        model = GraphTransformer(HIDDEN, LAYERS, HEADS, NUM_CLASSES, level="node",
                                 num_node_features=FEATURE_DIM, pe=None)
        return model, model, False
    from torch_geometric.nn.models import Polynormer, SGFormer
    if method == "pyg_sgformer":
        model = SGFormer(FEATURE_DIM, HIDDEN, NUM_CLASSES, trans_num_layers=LAYERS,
                         trans_num_heads=HEADS, trans_dropout=0.0, gnn_num_layers=LAYERS,
                         gnn_dropout=0.0)
    elif method == "pyg_polynormer":
        # one head: its width is heads · hidden_channels, and in PyG 2.8.1 heads > 1 fails (the
        # global attention is built for hidden_channels inputs but receives heads · hidden)
        model = Polynormer(FEATURE_DIM, HIDDEN, NUM_CLASSES, local_layers=LAYERS,
                           global_layers=LAYERS, in_dropout=0.0, dropout=0.0,
                           global_dropout=0.0, heads=1)
        model._global = True  # its global layers from the first epoch (no local warm-up)
    else:
        raise ValueError(f"unknown method {method!r}; choose from {METHODS}")

    def logits(batch: torch_geometric.data.Data) -> torch.Tensor:  # noqa: F821
        return model(batch.x, batch.edge_index, batch.batch)
    return model, logits, True


def _loaders(data, n: int, args, seed: int = 0):
    from graph_transformers.data.cluster import cluster_loader
    parts = max(1, n // args.cluster_size)
    common = dict(num_parts=parts, seed=seed, cache_dir=args.cache)
    train = cluster_loader(data, clusters_per_batch=args.clusters_per_batch,
                           node_mask=data.train_mask, shuffle=True, **common)
    evaluate = {s: cluster_loader(data, clusters_per_batch=args.eval_clusters_per_batch,
                                  node_mask=data[f"{s}_mask"], shuffle=False, **common)
                for s in ("val", "test")}
    return train, evaluate, parts


def _prepare(batch):
    import torch
    batch.batch = torch.zeros(batch.num_nodes, dtype=torch.long)
    batch.num_graphs = 1
    return batch


def run_point(method: str, n: int, args) -> dict:
    """Trains ``method`` on the ``n``-node graph for ``args.epochs`` epochs (in the child)."""
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    data = make_graph(n)
    if method == "exphormer":  # drawn once on the whole graph, restricted per batch by n_id
        from graph_transformers.encodings.expander import random_expander
        data.expander_index = random_expander(n, EXPANDER_DEGREE, 0, data.edge_index)
    train, evaluate, parts = _loaders(data, n, args)
    rss_graph = status_kib("VmRSS")
    model, logits, log_probs = build(method)
    loss_fn = F.nll_loss if log_probs else F.cross_entropy
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    epoch_s, losses = [], []
    for epoch in range(args.epochs):
        train.batch_sampler.set_epoch(epoch)
        model.train()
        t0 = time.perf_counter()
        total, count = 0.0, 0
        for batch in train:
            batch = _prepare(batch)
            mask = batch.node_mask
            out = logits(batch)
            loss = loss_fn(out[mask], batch.y[mask])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += float(loss.detach()) * int(mask.sum())
            count += int(mask.sum())
        epoch_s.append(time.perf_counter() - t0)
        losses.append(total / max(count, 1))
    model.eval()
    acc = {}
    t0 = time.perf_counter()
    with torch.no_grad():
        for split, loader in evaluate.items():
            right = seen = 0
            for batch in loader:
                batch = _prepare(batch)
                mask = batch.node_mask
                pred = logits(batch)[mask].argmax(-1)
                right += int((pred == batch.y[mask]).sum())
                seen += int(mask.sum())
            acc[split] = right / max(seen, 1)
    eval_s = time.perf_counter() - t0
    if any(value != value for value in losses):  # NaN
        return {"status": "error", "error": f"non-finite training loss {losses}"}
    return {"status": "ok", "epoch_s": statistics.median(epoch_s), "epoch_times_s": epoch_s,
            "eval_s": eval_s, "train_loss": losses, "val_acc": acc["val"],
            "test_acc": acc["test"], "peak_rss_mib": status_kib("VmHWM") / 1024,
            "graph_rss_mib": rss_graph / 1024, "num_parts": parts,
            "num_params": sum(p.numel() for p in model.parameters()),
            "num_edges": int(data.edge_index.size(1))}


def _fmt(r: dict | None, key: str, digits: int = 1) -> str:
    if r is None:
        return "–"
    if r["status"] == "ok":
        return f"{r[key]:,.{digits}f}"
    return {"oom": "**OOM**", "timeout": "timeout", "skipped": "–"}.get(r["status"], "error")


def _ratio(results: dict, n: str) -> list[str]:
    """Our best method (fastest epoch among ours) against each anchor, as ratios."""
    ok = {m: results[m][n] for m in results if results[m].get(n, {}).get("status") == "ok"}
    ours = [m for m in OURS if m in ok]
    if not ours:
        return []
    best = min(ours, key=lambda m: ok[m]["epoch_s"])
    lines = []
    for a in ANCHORS:
        if a in ok:
            lines.append(f"- N = {int(n):,}: {LABELS[best]} (our fastest) takes "
                         f"{ok[best]['epoch_s'] / ok[a]['epoch_s']:.2f}× the seconds per epoch "
                         f"and {ok[best]['peak_rss_mib'] / ok[a]['peak_rss_mib']:.2f}× the peak "
                         f"memory of {LABELS[a]}; test accuracy {ok[best]['test_acc']:.3f} vs "
                         f"{ok[a]['test_acc']:.3f}.")
    return lines


def _load_range(results: dict) -> str:
    """The 1-minute load averages seen before and after the points, as a caption sentence."""
    loads = [v for r in results.values() for p in r.values() for v in p.get("load_avg_1min", [])]
    if not loads:
        return ""
    return f"1-minute load average {min(loads):.2f}–{max(loads):.2f} around the points. "


def write_outputs(results: dict, out: Path, meta: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / "large_graph.json.tmp"
    tmp.write_text(json.dumps({"meta": meta, "results": results}, indent=2) + "\n")
    tmp.replace(out / "large_graph.json")
    methods = [m for m in METHODS if m in results]
    sizes = sorted({int(n) for r in results.values() for n in r})
    head = "| N | " + " | ".join(LABELS[m] for m in methods) + " |"
    rule = "|---:|" + "---:|" * len(methods)
    lines = [f"Node classification on a seeded SBM graph (10 classes, 32 features, average degree "
             f"≈{AVG_DEGREE:g}), Cluster-GCN batches: clusters of ≈{meta['cluster_size']:,} nodes "
             f"(METIS, {meta['metis']}), {meta['clusters_per_batch']} per training batch, "
             f"{meta['epochs']} epochs; hidden {HIDDEN}, {LAYERS} layers, {HEADS} heads, Adam "
             f"lr {LR:g}; {meta['cpu']}, {meta['threads']} thread(s), float32. Each point in a "
             f"forked process capped at {meta['mem_gib']:g} GiB of address space, timeout "
             f"{meta['timeout_s']:g} s. {_load_range(results)}{meta.get('note', '')}".rstrip(),
             "",
             "**Seconds per training epoch** (median over the epochs):", "", head, rule]
    for n in sizes:
        lines.append(f"| {n:,} | " + " | ".join(_fmt(results[m].get(str(n)), "epoch_s")
                                                  for m in methods) + " |")
    lines += ["", "**Peak resident memory of the process (MiB)**:", "", head, rule]
    for n in sizes:
        lines.append(f"| {n:,} | " + " | ".join(_fmt(results[m].get(str(n)), "peak_rss_mib", 0)
                                                  for m in methods) + " |")
    lines += ["", f"**Test accuracy after {meta['epochs']} epochs**:", "", head, rule]
    for n in sizes:
        lines.append(f"| {n:,} | " + " | ".join(_fmt(results[m].get(str(n)), "test_acc", 3)
                                                  for m in methods) + " |")
    lines += ["", "**Our fastest method against PyG's anchors, same run:**", ""]
    for n in sizes:
        lines += _ratio(results, str(n))
    fails = [f"- {LABELS[m]} at N = {int(n):,}: {r['status']}"
             + (f" ({r.get('error', '')[:160]})" if r.get("error") else "")
             for m in methods for n, r in results[m].items() if r["status"] != "ok"]
    if fails:
        lines += ["", "Failures:", ""] + fails
    (out / "large_graph.md").write_text("\n".join(lines) + "\n")
    _plot(results, out, sizes)


def _plot(results: dict, out: Path, sizes: list[int]) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for m in results:
        ok = sorted((int(n), r) for n, r in results[m].items() if r["status"] == "ok")
        if not ok:
            continue
        style = "o-" if m in OURS else "s--"
        ns = [n for n, _ in ok]
        axes[0].loglog(ns, [r["epoch_s"] for _, r in ok], style, label=LABELS[m])
        axes[1].loglog(ns, [r["peak_rss_mib"] for _, r in ok], style, label=LABELS[m])
    axes[0].set(xlabel="nodes N", ylabel="seconds per epoch", title="time")
    axes[1].set(xlabel="nodes N", ylabel="peak RSS, MiB", title="memory")
    for ax in axes:
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "large_graph.png", dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=SIZES)
    ap.add_argument("--methods", nargs="+", default=METHODS, choices=METHODS)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cluster-size", type=int, default=1000,
                    help="nodes per METIS cluster (num_parts = N // this)")
    ap.add_argument("--clusters-per-batch", type=int, default=10)
    ap.add_argument("--eval-clusters-per-batch", type=int, default=50)
    ap.add_argument("--mem-gib", type=float, default=22.0)
    ap.add_argument("--timeout", type=float, default=3600.0)
    ap.add_argument("--cache", type=Path, default=Path("/tmp/gt-large-graph-cache"),
                    help="where the METIS partitions are cached")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    ap.add_argument("--note", default="", help="a sentence added to the table's caption")
    ap.add_argument("--merge", action="store_true",
                    help="keep the points of an existing <out>/large_graph.json and replace only "
                         "those measured now (e.g. one re-measured on a quiet machine)")
    args = ap.parse_args(argv)
    import torch
    import graph_transformers.models  # noqa: F401  (imported once; the children inherit it)
    from graph_transformers.data.cluster import metis_backend
    backend = metis_backend()
    if backend is None:
        sys.exit("no METIS backend: pip install 'graph-transformers[large]'")
    meta = {"cpu": cpu_name(), "threads": args.threads, "epochs": args.epochs,
            "cluster_size": args.cluster_size, "clusters_per_batch": args.clusters_per_batch,
            "mem_gib": args.mem_gib, "timeout_s": args.timeout, "metis": backend,
            "note": args.note, "torch": torch.__version__,
            "date": time.strftime("%Y-%m-%d %H:%M")}
    results: dict[str, dict] = {m: {} for m in args.methods}
    if args.merge and (args.out / "large_graph.json").is_file():
        saved = json.loads((args.out / "large_graph.json").read_text())
        kept = {k: saved["meta"][k] for k in ("threads", "epochs", "cluster_size",
                                              "clusters_per_batch")}
        now = {k: meta[k] for k in kept}
        if kept != now:
            sys.exit(f"--merge: {args.out / 'large_graph.json'} was measured under {kept}, "
                     f"not {now}")
        for m, points in saved["results"].items():
            results.setdefault(m, {}).update(points)
        results = {m: results[m] for m in METHODS if m in results}  # the table's order
        meta["date"] = f"{saved['meta']['date']}; merged {meta['date']}"
    for n in args.sizes:
        # the partition once, before the methods, so that no method's time includes METIS
        t0 = time.perf_counter()
        _loaders(make_graph(n), n, args)
        print(f"N={n:,}: graph and partition ready in {time.perf_counter() - t0:.1f} s",
              flush=True)
        for m in args.methods:
            load = os.getloadavg()[0]
            # forked from a fresh server: a fork of this process, whose thread pool has run
            # (the partition above, or a caller's work), would block in its first parallel op
            r = measure(run_point, (m, n, args), args.mem_gib, args.timeout, preload=PRELOAD)
            r["load_avg_1min"] = [load, os.getloadavg()[0]]  # before and after the point
            results[m][str(n)] = r
            print(f"{m:>15} N={n:>10,}: {r}", flush=True)
            write_outputs(results, args.out, meta)
    print((args.out / "large_graph.md").read_text())
    return results


if __name__ == "__main__":
    main()
