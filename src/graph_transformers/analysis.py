"""Attention analysis of a trained model (EGT §4.4, Figs. 3-4): attention maps beside the
adjacency and distance matrices, and the attention weight given to each hop distance per layer.

Works with any model that implements the hook

    ``attention_maps(data: Batch) -> (list of [B, N, N] per layer, mask [B, N])``

returning head-averaged attention over a graph's real nodes (row ``i``: query ``i``'s weights over
keys ``j``). GT, EGT, GRPE, Graphormer and GPS (full attention) implement it.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Batch
from torch_geometric.loader import DataLoader

from ._optional import require
from .core.dense import UNREACHABLE, DenseBatch


def _maps(model, data: Batch) -> tuple[list[Tensor], Tensor]:
    hook = getattr(model, "attention_maps", None)
    if hook is None:
        raise TypeError(f"{type(model).__name__} has no attention_maps(data) hook: attention "
                        "analysis needs a model with (dense or sparse) softmax attention")
    return hook(data)


def hop_bins(distances: Tensor, max_hops: int) -> Tensor:
    """Hop distances ``[B, N, N]`` (``-1`` unreachable) → bin ids ``0 … max_hops`` for those hops,
    ``max_hops + 1`` for farther pairs and ``max_hops + 2`` for unreachable ones."""
    far = max_hops + 1
    bins = distances.clamp(max=far)
    return torch.where(distances == UNREACHABLE, torch.full_like(bins, far + 1), bins)


@torch.no_grad()
def attention_by_hop(model, loader, max_hops: int = 8, max_batches: int | None = None
                     ) -> np.ndarray:
    """Mean attention weight a node gives to the nodes at each hop distance, per layer, averaged
    over all real nodes of all graphs in ``loader`` (EGT Fig. 3 c-e).

    For node ``i`` and hop ``d``: ``w_i(d) = Σ_{j : D_ij = d} Ã_ij`` (head-averaged ``Ã``).

    Returns:
        ``[num_layers, max_hops + 3]``: columns ``0 … max_hops``, then "farther" and "unreachable".
    """
    totals: Tensor | None = None
    count = 0
    nbins = max_hops + 3
    for k, data in enumerate(loader):
        if max_batches is not None and k >= max_batches:
            break
        maps, mask = _maps(model, data)
        bins = hop_bins(DenseBatch.from_batch(data).shortest_paths(), max_hops)
        bins = bins.masked_fill(~(mask.unsqueeze(2) & mask.unsqueeze(1)), 0)
        onehot = torch.nn.functional.one_hot(bins, nbins).to(maps[0].dtype)   # [B, N, N, bins]
        per_layer = torch.stack([torch.einsum("bij,bijk->k", a * mask.unsqueeze(2), onehot)
                                 for a in maps])                               # [L, bins]
        totals = per_layer if totals is None else totals + per_layer
        count += int(mask.sum())
    if totals is None:
        raise ValueError("attention_by_hop: the loader yielded no batch")
    return (totals / max(count, 1)).double().numpy()


def _normalize(a: np.ndarray) -> np.ndarray:
    lo, hi = float(a.min()), float(a.max())
    return (a - lo) / (hi - lo) if hi > lo else np.zeros_like(a)


def plot_attention_maps(samples: list[dict[str, Any]], path: str | Path) -> None:
    """One row per sample graph: adjacency, distance matrix, then each layer's head-averaged
    attention normalized to ``[0, 1]`` (EGT Figs. 3a, 4a)."""
    require("matplotlib", "attention plots")
    from matplotlib.figure import Figure  # object-oriented: no global backend switch
    layers = len(samples[0]["attention"])
    cols = layers + 2
    fig = Figure(figsize=(1.9 * cols, 2.0 * len(samples)))
    axes = fig.subplots(len(samples), cols, squeeze=False)
    for r, s in enumerate(samples):
        panels = [("adjacency", np.asarray(s["adjacency"]), "Greys"),
                  ("distance", np.asarray(s["distance"], dtype=float), "viridis")]
        panels += [(f"layer {ell + 1}", _normalize(np.asarray(a)), "magma")
                   for ell, a in enumerate(s["attention"])]
        for c, (title, img, cmap) in enumerate(panels):
            ax = axes[r, c]
            ax.imshow(img, cmap=cmap, interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
            if r == 0:
                ax.set_title(title, fontsize=8)
        axes[r, 0].set_ylabel(f"graph {s['index']} ({s['num_nodes']} nodes)", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def plot_hop_weights(weights: np.ndarray, max_hops: int, path: str | Path,
                     title: str = "") -> None:
    """Attention weight per hop distance, one line per layer (EGT Fig. 3 c-e)."""
    matplotlib = require("matplotlib", "attention plots")
    from matplotlib.figure import Figure  # object-oriented: no global backend switch
    labels = [str(d) for d in range(max_hops + 1)] + [f">{max_hops}", "∞"]
    keep = [k for k in range(weights.shape[1]) if k <= max_hops or weights[:, k].max() > 0]
    fig = Figure(figsize=(6.5, 3.6))
    ax = fig.subplots()
    cmap = matplotlib.colormaps["viridis"]
    for ell, row in enumerate(weights):
        ax.plot(range(len(keep)), row[keep], marker="o", ms=3,
                color=cmap(ell / max(1, len(weights) - 1)), label=f"layer {ell + 1}")
    ax.set_xticks(range(len(keep)), [labels[k] for k in keep])
    ax.set_xlabel("hop distance")
    ax.set_ylabel("attention weight per node")
    if title:
        ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def analyze_run(run_dir: str | Path, out_dir: str | Path | None = None, split: str = "val",
                num_graphs: int = 4, max_hops: int = 8, max_batches: int | None = None,
                data_dir: str | None = None, checkpoint: str = "best") -> dict[str, Any]:
    """Writes the attention analysis of a trained run to ``out_dir`` (default
    ``RUN_DIR/analysis``): ``attention_maps.png``, ``hop_weights.png`` and ``attention.json``
    (the per-layer hop weights and the sample graphs' matrices).

    Raises:
        RunError: for a directory that is not a run or lacks the checkpoint.
        TypeError: for a model without the ``attention_maps`` hook.
        ValueError: for an unknown split.
    """
    from .data.registry import load_splits
    from .fileio import atomic_write_text
    from .training.trained import load_trained_model

    config, spec, model = load_trained_model(run_dir, data_dir, checkpoint)
    splits = load_splits(config.data, config.encodings)
    if split not in splits:
        raise ValueError(f"unknown split {split!r}; the run's dataset has {sorted(splits)}")
    ds = splits[split]
    out = Path(out_dir) if out_dir is not None else Path(run_dir) / "analysis"
    out.mkdir(parents=True, exist_ok=True)
    bs = config.data.eval_batch_size or config.data.batch_size

    weights = attention_by_hop(model, DataLoader(ds, batch_size=bs), max_hops, max_batches)

    sample = Batch.from_data_list([ds[i] for i in range(min(num_graphs, len(ds)))])
    maps, mask = _maps(model, sample)
    dense = DenseBatch.from_batch(sample)
    dist = dense.shortest_paths()
    adj = dense.adjacency(self_loops=False)
    samples = []
    for b in range(sample.num_graphs):
        n = int(mask[b].sum())
        samples.append({"index": b, "num_nodes": n,
                        "adjacency": adj[b, :n, :n].int().tolist(),
                        "distance": dist[b, :n, :n].tolist(),
                        "attention": [m[b, :n, :n].double().tolist() for m in maps]})
    plot_attention_maps(samples, out / "attention_maps.png")
    name = config.name or config.model.name
    plot_hop_weights(weights, max_hops, out / "hop_weights.png",
                     title=f"{name} on {spec.name} ({split}): attention by hop distance")
    result = {"run": str(run_dir), "model": config.model.name, "dataset": spec.name,
              "split": split, "checkpoint": checkpoint,
              "hops": list(range(max_hops + 1)) + [f">{max_hops}", "unreachable"],
              "hop_weights": {f"layer_{ell + 1}": [float(v) for v in row]
                              for ell, row in enumerate(weights)},
              "samples": samples}
    atomic_write_text(out / "attention.json", json.dumps(result))
    return result
