"""Measured statistics of ZINC, PATTERN and CLUSTER as this library loads them, side by side with
the published figures (issue 10, section 4).

For every split: the number of graphs, nodes and edges per graph (mean, min, max; edges are
undirected, i.e. ``edge_index.size(1) / 2``) and the label balance (ZINC: target mean / std /
min / max; PATTERN / CLUSTER: node count and fraction per class). For the generated SBM sets it
also gives what the generator's specification predicts (exact expectations, with the standard
error of the split mean), so a difference from a published figure can be told apart from
sampling noise. Published figures are in :data:`PUBLISHED`, each with its source.

The datasets come from the library's loaders and cache (``--cache-dir``, default
``$GRAPH_TRANSFORMERS_CACHE``): the first run generates PATTERN / CLUSTER and builds the
reconstructed ZINC train split (minutes on a busy CPU), later runs only read the cache.

Usage::

    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/dataset_stats.py \\
        --data-dir ../shared/data --cache-dir /tmp/gt_cache [--out benchmarks/results]

Writes ``<out>/dataset_stats.json`` and prints a Markdown table (the one in docs/datasets.md).
With ``--update --datasets X``, only X is measured and the others are kept from the existing
file.
"""
from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

SPLITS = ("train", "val", "test")

#: Sizes of SBM communities and PATTERN patterns: uniform on 5..34 (``randint(5, 35)``).
_SIZE_MEAN = 19.5
_SIZE_VAR = (30**2 - 1) / 12  # variance of a discrete uniform over 30 values

PUBLISHED = {
    "ZINC": {
        "graphs": {"train": 10000, "val": 1000, "test": 1000},
        "nodes": {"mean": 23.16, "min": 9, "max": 37},
        "edges_directed": {"mean": 39.83, "min": 16, "max": 84},
        "source": (
            "Dwivedi et al., Benchmarking GNNs (arXiv:2003.00982), split sizes; node/edge "
            "figures as restated in the DGL ZINCDataset documentation (dgl.data.ZINCDataset: "
            "'9-37 nodes and 16-84 edges', 'Average number of nodes: 23.16', 'Average number "
            "of edges: 39.83')"
        ),
    },
    "PATTERN": {
        "graphs": {"train": 10000, "val": 2000, "test": 2000},
        "nodes": {"mean": 118.9, "min": 44, "max": 188},
        "train_class_sizes": [979220, 209900],
        "source": (
            "graph counts and node range 44-188: Dwivedi et al., Benchmarking GNNs "
            "(arXiv:2003.00982; restated in dgl.data.PATTERNDataset); mean 118.9 nodes: the "
            "same benchmark's figure, and equal to the EGT class sizes' total / 10,000; class "
            "sizes: official EGT code, shamim-hussain/egt @ 5a1efb19 "
            "lib/training/schemes/pattern/{svd,eig}.py (class_sizes = [979220, 209900])"
        ),
    },
    "CLUSTER": {
        "graphs": {"train": 10000, "val": 1000, "test": 1000},
        "nodes": {"mean": 117.2, "min": 41, "max": 190},
        "train_class_sizes": [19695, 19222, 19559, 19417, 19801, 20139],
        "source": (
            "graph counts: Dwivedi et al., Benchmarking GNNs (arXiv:2003.00982; restated in "
            "dgl.data.CLUSTERDataset: 10,000 / 1,000 / 1,000); nodes 41-190, mean 117.2: the "
            "benchmark paper (DGL's docstring says 40-190); class sizes: official EGT code, "
            "shamim-hussain/egt @ 5a1efb19 lib/training/schemes/cluster/{svd,eig}.py. They sum "
            "to 117,833 nodes, about 1,000 graphs' worth (not the 10,000 train graphs, which "
            "hold about 1.17M nodes), so only their proportions are compared"
        ),
    },
}


def _summary(values: np.ndarray) -> dict[str, float]:
    return {
        "mean": round(float(values.mean()), 3),
        "std": round(float(values.std()), 3),
        "min": int(values.min()) if values.dtype.kind in "iu" else round(float(values.min()), 3),
        "max": int(values.max()) if values.dtype.kind in "iu" else round(float(values.max()), 3),
    }


def _graph_stats(ds) -> dict:
    """Counts from an ``InMemoryDataset``'s collated storage (no per-graph copies)."""
    nodes = np.diff(ds.slices["x"].numpy())
    edges = np.diff(ds.slices["edge_index"].numpy()) // 2
    return {
        "graphs": int(nodes.shape[0]),
        "nodes": _summary(nodes),
        "edges": _summary(edges),
        "nodes_total": int(nodes.sum()),
    }


def _class_balance(y: np.ndarray, num_classes: int) -> dict:
    counts = np.bincount(y, minlength=num_classes)
    return {
        "class_counts": counts.tolist(),
        "class_fractions": [round(float(c) / counts.sum(), 4) for c in counts],
    }


def zinc_stats(data_dir: Path, cache_dir: Path) -> dict:
    from graph_transformers.datasets.molecules.zinc import ZINCSubset

    out: dict = {"splits": {}}
    for split in SPLITS:
        ds = ZINCSubset(root=cache_dir / "ZINC", split=split, data_dir=data_dir, download=False)
        s = _graph_stats(ds)
        y = ds._data.y.numpy().astype(np.float64)
        s["target"] = {k: round(float(f(y)), 5) for k, f in
                       (("mean", np.mean), ("std", np.std), ("min", np.min), ("max", np.max))}
        s["provenance"] = ds.provenance[split]
        if split == "train" and s["provenance"] == "reconstructed":
            s["ring_rule_sensitive"] = len(ds.provenance_info.get("ring_rule_sensitive", []))
        out["splits"][split] = s
    return out


def _sbm_expectations(k: int, p: float, q: float) -> tuple[float, float]:
    """Mean and variance of the node count, and the expected number of undirected edges, of a
    K-community SBM with community sizes uniform on 5..34."""
    e_pairs_in = (_SIZE_VAR + _SIZE_MEAN**2 - _SIZE_MEAN) / 2  # E[C(s, 2)]
    edges = p * k * e_pairs_in + q * math.comb(k, 2) * _SIZE_MEAN**2
    return k * _SIZE_MEAN, edges


def cluster_stats(cache_dir: Path) -> dict:
    from graph_transformers.datasets.synthetic import sbm

    out: dict = {"splits": {}}
    k = sbm.CLUSTER_NUM_COMMUNITIES
    nodes_mean, edges_mean = _sbm_expectations(k, sbm.CLUSTER_P, sbm.CLUSTER_Q)
    nodes_sd = math.sqrt(k * _SIZE_VAR)
    for split in SPLITS:
        ds = sbm.CLUSTER(root=cache_dir / "CLUSTER", split=split)
        s = _graph_stats(ds)
        s.update(_class_balance(ds._data.y.numpy(), sbm.CLUSTER_NUM_CLASSES))
        s["nodes_mean_se"] = round(nodes_sd / math.sqrt(s["graphs"]), 3)
        out["splits"][split] = s
    out["expected"] = {"nodes_mean": nodes_mean, "nodes_sd": round(nodes_sd, 3),
                       "edges_mean": round(edges_mean, 2), "class_fraction": round(1 / k, 4),
                       "nodes_support": [5 * k, 34 * k]}
    return out


def pattern_stats(cache_dir: Path, seed: int = 0) -> dict:
    from graph_transformers.datasets.synthetic import sbm

    out: dict = {"splits": {}}
    k = sbm.PATTERN_NUM_COMMUNITIES
    sbm_nodes, sbm_edges = _sbm_expectations(k, sbm.PATTERN_P, sbm.PATTERN_Q)
    # the 100 fixed pattern instances of this seed (cheap to redraw: same stream as the loader)
    patterns = sbm._draw_patterns(np.random.default_rng(sbm._pattern_streams(seed)[0]),
                                  sbm.PATTERN_NUM_PATTERNS)
    n0 = np.array([u0.shape[0] for _, _, u0 in patterns], dtype=np.float64)
    e0 = np.array([src.shape[0] for src, _, _ in patterns], dtype=np.float64)
    for split in SPLITS:
        ds = sbm.PATTERN(root=cache_dir / "PATTERN", split=split, seed=seed)
        s = _graph_stats(ds)
        s.update(_class_balance(ds._data.y.numpy(), sbm.PATTERN_NUM_CLASSES))
        out["splits"][split] = s
    # Expectation given this seed's patterns, and over the pattern draw too (the original's 100
    # patterns are another draw: their mean size has s.d. sqrt(var/100) = 0.87 nodes).
    out["patterns"] = {"count": int(n0.shape[0]), "size_mean": round(float(n0.mean()), 3),
                       "size_min": int(n0.min()), "size_max": int(n0.max()),
                       "edges_mean": round(float(e0.mean()), 3)}
    out["expected"] = {
        "nodes_mean_given_patterns": round(sbm_nodes + n0.mean(), 3),
        "edges_mean_given_patterns": round(
            sbm_edges + sbm.PATTERN_Q_PATTERN * sbm_nodes * n0.mean() + e0.mean(), 2),
        "positive_fraction_given_patterns": round(n0.mean() / (sbm_nodes + n0.mean()), 4),
        "nodes_mean_over_pattern_draws": sbm_nodes + _SIZE_MEAN,
        "pattern_size_mean_sd_over_draws": round(math.sqrt(_SIZE_VAR / n0.shape[0]), 3),
        "sbm_nodes_mean_se_train": round(math.sqrt(k * _SIZE_VAR / 10000), 3),
    }
    return out


def _fmt_range(s: dict) -> str:
    return f"{s['mean']:.1f} ({s['min']}-{s['max']})"


def table(stats: dict) -> str:
    """Markdown table: one row per dataset split, then the published row."""
    lines = [
        "| dataset | split | source | graphs | nodes / graph mean (min-max) | "
        "undirected edges / graph mean (min-max) | labels |",
        "|---|---|---|---|---|---|---|",
    ]
    if "ZINC" in stats:
        z = stats["ZINC"]
        for split, s in z["splits"].items():
            t = s["target"]
            lines.append(
                f"| ZINC | {split} | {s['provenance']} | {s['graphs']} | {_fmt_range(s['nodes'])} "
                f"| {_fmt_range(s['edges'])} | y mean {t['mean']:.3f}, std {t['std']:.3f}, "
                f"{t['min']:.2f} to {t['max']:.2f} |")
        p = PUBLISHED["ZINC"]
        lines.append(
            f"| ZINC | all | published | {'/'.join(str(v) for v in p['graphs'].values())} | "
            f"{p['nodes']['mean']} ({p['nodes']['min']}-{p['nodes']['max']}) | "
            f"directed: {p['edges_directed']['mean']} ({p['edges_directed']['min']}-"
            f"{p['edges_directed']['max']}) | |")
    for name in ("PATTERN", "CLUSTER"):
        if name not in stats:
            continue
        d = stats[name]
        for split, s in d["splits"].items():
            fr = ", ".join(f"{100 * f:.2f}" for f in s["class_fractions"])
            lines.append(
                f"| {name} | {split} | generated | {s['graphs']} | {_fmt_range(s['nodes'])} | "
                f"{_fmt_range(s['edges'])} | class % {fr} |")
        p = PUBLISHED[name]
        cs = np.array(p["train_class_sizes"], dtype=np.float64)
        fr = ", ".join(f"{100 * f:.2f}" for f in cs / cs.sum())
        lines.append(
            f"| {name} | all | published | {'/'.join(str(v) for v in p['graphs'].values())} | "
            f"{p['nodes']['mean']} ({p['nodes']['min']}-{p['nodes']['max']}) | - | "
            f"class % (EGT class sizes) {fr} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    from graph_transformers.data.cache import resolve_cache_dir, resolve_data_dir

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default=None,
                    help="raw data holding ZINC/ (default $GRAPH_TRANSFORMERS_DATA)")
    ap.add_argument("--cache-dir", default=None,
                    help="processed-data cache (default $GRAPH_TRANSFORMERS_CACHE)")
    ap.add_argument("--datasets", nargs="+", default=["ZINC", "PATTERN", "CLUSTER"],
                    choices=["ZINC", "PATTERN", "CLUSTER"])
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    ap.add_argument("--update", action="store_true",
                    help="keep the other datasets of an existing dataset_stats.json (so the "
                         "datasets can be measured by separate runs)")
    args = ap.parse_args(argv)
    cache_dir = resolve_cache_dir(args.cache_dir)
    out = Path(args.out)
    stats: dict = {}
    seconds: dict = {}
    if args.update and (out / "dataset_stats.json").is_file():
        old = json.loads((out / "dataset_stats.json").read_text())
        stats, seconds = old["datasets"], old["seconds"]
    for name in args.datasets:
        t0 = time.perf_counter()
        if name == "ZINC":
            data_dir = resolve_data_dir(args.data_dir)
            if data_dir is None:
                raise SystemExit("ZINC needs --data-dir or $GRAPH_TRANSFORMERS_DATA "
                                 "(a folder laid out like shared/data)")
            stats[name] = zinc_stats(data_dir, cache_dir)
        elif name == "PATTERN":
            stats[name] = pattern_stats(cache_dir)
        else:
            stats[name] = cluster_stats(cache_dir)
        stats[name]["published"] = PUBLISHED[name]
        seconds[name] = round(time.perf_counter() - t0, 1)
    if args.update and (out / "dataset_stats.json").is_file():  # re-read: another run may
        old = json.loads((out / "dataset_stats.json").read_text())  # have finished meanwhile
        stats = {**old["datasets"], **{n: stats[n] for n in args.datasets}}
        seconds = {**old["seconds"], **{n: seconds[n] for n in args.datasets}}
    order = [n for n in ("ZINC", "PATTERN", "CLUSTER") if n in stats]
    stats = {n: stats[n] for n in order}
    result = {"datasets": stats, "seconds": seconds,
              "edges": "undirected (edge_index.size(1) / 2)"}
    out.mkdir(parents=True, exist_ok=True)
    (out / "dataset_stats.json").write_text(json.dumps(result, indent=1) + "\n")
    print(table(stats))
    return result


if __name__ == "__main__":
    main()
