"""Training throughput and peak memory of GT on ZINC (batch 128) against the same-size network
built from PyG's ``TransformerConv``, measured in one process.

Every model is the same block (input embeddings + LapPE, 10 × [attention, O_h, residual, BatchNorm,
FFN(2d), residual, BatchNorm], mean readout, MLP head; hidden 64, 8 heads) and differs only in the
attention kernel: ours (``GraphTransformerLayer``), or PyG's ``TransformerConv`` followed by the same
O_h. Steps alternate between models so that machine noise hits all of them alike.

Peak memory is the memory allocated during one training step above what was live before it
(activations, gradients, optimizer temporaries), see :func:`peak_step_memory_mib`.

Usage:
    python benchmarks/gt_zinc_speed.py --data-dir ../shared/data [--steps 30] [--threads 2] [--device cuda]
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch
from torch import nn
from torch_geometric.loader import DataLoader
from torch_geometric.nn import TransformerConv

from graph_transformers.benchmarking import peak_step_memory_mib
from graph_transformers.data.zinc import ZINCSubset
from graph_transformers.encodings import AddLaplacianPE
from graph_transformers.models import GraphTransformer, count_parameters
from graph_transformers.models.encoders import FeatureEncoder, LapPEEncoder
from graph_transformers.models.heads import MLPReadout, graph_readout


class PyGTransformerConvNet(nn.Module):
    """The GT block with PyG's ``TransformerConv`` as the attention (reference model)."""

    def __init__(self, hidden_dim=64, num_layers=10, num_heads=8, use_edge_features=False):
        super().__init__()
        self.use_edge_features = use_edge_features
        self.node_encoder = FeatureEncoder(hidden_dim, 28, name="node")
        self.edge_encoder = FeatureEncoder(hidden_dim, 4, name="edge") if use_edge_features else None
        self.pe_encoder = LapPEEncoder(8, hidden_dim)
        self.convs = nn.ModuleList(
            TransformerConv(hidden_dim, hidden_dim // num_heads, heads=num_heads, root_weight=False,
                            edge_dim=hidden_dim if use_edge_features else None)
            for _ in range(num_layers))
        self.o_h = nn.ModuleList(nn.Linear(hidden_dim, hidden_dim) for _ in range(num_layers))
        self.norm1 = nn.ModuleList(nn.BatchNorm1d(hidden_dim) for _ in range(num_layers))
        self.ffn = nn.ModuleList(nn.Sequential(nn.Linear(hidden_dim, 2 * hidden_dim), nn.ReLU(),
                                               nn.Linear(2 * hidden_dim, hidden_dim))
                                 for _ in range(num_layers))
        self.norm2 = nn.ModuleList(nn.BatchNorm1d(hidden_dim) for _ in range(num_layers))
        self.head = MLPReadout(hidden_dim, 1)

    def forward(self, data):
        h = self.node_encoder(data.x) + self.pe_encoder(data.lap_pe, data.batch)
        e = self.edge_encoder(data.edge_attr) if self.use_edge_features else None
        for conv, o, n1, ffn, n2 in zip(self.convs, self.o_h, self.norm1, self.ffn, self.norm2):
            h = n1(h + o(conv(h, data.edge_index, e)))
            h = n2(h + ffn(h))
        return self.head(graph_readout(h, data.batch, "mean", data.num_graphs))


def build(name: str) -> nn.Module:
    if name == "gt":
        return GraphTransformer(64, 10, 8, 1, num_node_types=28, pe="lap", pe_dim=8)
    if name == "gt-edge":
        return GraphTransformer(64, 10, 8, 1, num_node_types=28, num_edge_types=4,
                                use_edge_features=True, pe="lap", pe_dim=8)
    if name == "pyg-transformerconv":
        return PyGTransformerConvNet()
    if name == "pyg-transformerconv-edge":
        return PyGTransformerConvNet(use_edge_features=True)
    raise ValueError(name)


MODELS = ("gt", "pyg-transformerconv", "gt-edge", "pyg-transformerconv-edge")


def batches(data_dir: str, n: int, batch_size: int = 128):
    ds = ZINCSubset(split="train", data_dir=data_dir, pre_transform=AddLaplacianPE(8))
    loader = DataLoader(ds, batch_size=batch_size, shuffle=True,
                        generator=torch.Generator().manual_seed(0))
    out = []
    for b in loader:
        out.append(b)
        if len(out) == n:
            break
    return out


def step(model, opt, batch):
    opt.zero_grad(set_to_none=True)
    loss = (model(batch).view(-1) - batch.y).abs().mean()
    loss.backward()
    opt.step()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    ap.add_argument("--no-memory", action="store_true")
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    data = [b.to(args.device) for b in batches(args.data_dir, args.steps)]
    graphs = [b.num_graphs for b in data]
    models = {n: build(n).to(args.device) for n in args.models}
    opts = {n: torch.optim.Adam(m.parameters(), 1e-3, fused=True) for n, m in models.items()}
    for n in models:
        for b in data[: args.warmup]:
            step(models[n], opts[n], b)
    times = {n: [] for n in models}
    for b in data:
        for n in models:
            t = time.perf_counter()
            step(models[n], opts[n], b)
            if args.device.startswith("cuda"):
                torch.cuda.synchronize()
            times[n].append(time.perf_counter() - t)
    print(f"GT on ZINC, batch 128, {args.steps} training steps per model, {args.device}, "
          f"{args.threads} threads, torch {torch.__version__}")
    print(f"{'model':<26} {'params':>8} {'ms/step':>8} {'graphs/s':>9} {'peak MiB':>9}")
    rate = {}
    for n in models:
        med = statistics.median(times[n])
        rate[n] = statistics.fmean(graphs) / med
        cuda = args.device.startswith("cuda")
        mem = "-" if args.no_memory else \
            f"{peak_step_memory_mib(lambda: step(models[n], opts[n], data[0]), cuda):.0f}"
        print(f"{n:<26} {count_parameters(models[n]):>8} {med * 1e3:>8.1f} {rate[n]:>9.0f} {mem:>9}")
    for ours, ref in (("gt", "pyg-transformerconv"), ("gt-edge", "pyg-transformerconv-edge")):
        if ours in rate and ref in rate:
            print(f"ratio {ours} / {ref}: {rate[ours] / rate[ref]:.2f}x")


if __name__ == "__main__":
    main()
