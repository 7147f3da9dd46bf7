"""Padding changes nothing (issue 56): for every ZINC model of the device check, the loss, every
parameter gradient and the BatchNorm running statistics on a static-shape batch
(graph_transformers.data.static_shapes.pad_batch) equal those on the unpadded batch of the same
graphs, in float64, in training mode without dropout, noise or sign flips (EGT's distance
objective included); evaluation outputs at the real graphs are equal too."""
import copy
import inspect
from pathlib import Path

import pytest
import torch
from torch_geometric.data import Batch

from graph_transformers.data.static_shapes import StaticBudget, pad_batch
from graph_transformers.device_check import MODELS, TINY, UNCACHED, synthetic_molecules

REPO = Path(__file__).resolve().parents[2]
#: what is random in a training forward: all off
RANDOM_OFF = {"dropout": 0.0, "attn_dropout": 0.0, "in_feat_dropout": 0.0, "input_noise": 0.0,
              "sign_flip": "none"}


#: models of the device check, and EGT with its distance objective (an auxiliary loss over pairs)
CASES = {**MODELS, "egt_spe_do": ("egt_spe_do.yaml", {})}
TINY = {**TINY, "egt_spe_do": TINY["egt"]}


def _config(name):
    from graph_transformers.models import MODELS as REGISTRY
    from graph_transformers.training.config import build_config
    from graph_transformers.training.config_yaml import load_yaml
    file, overrides = CASES[name]
    raw = load_yaml(REPO / "configs" / "zinc" / file)
    over = {**overrides, **{f"model.{k}": v for k, v in TINY[name].items()}}
    params = inspect.signature(REGISTRY[raw["model"]["name"]].__init__).parameters
    over.update({f"model.{k}": v for k, v in RANDOM_OFF.items() if k in params})
    for key, value in over.items():
        *path, field = key.split(".")
        node = raw
        for part in path:
            node = node.setdefault(part, {})
        node[field] = value
    return build_config(raw)


def _graphs(cfg, n=5):
    from graph_transformers.data.registry import build_pre_transform
    pre = build_pre_transform(cfg.encodings)
    graphs = [pre(d) if pre is not None else d for d in synthetic_molecules(n, seed=2)]
    drop = [attr for (key, flag), attr in UNCACHED.items()
            if getattr(cfg.encodings, key, None) is not None
            and not getattr(getattr(cfg.encodings, key), flag)]
    for d in graphs:
        for attr in drop:
            del d[attr]
    return graphs


def _double(batch):
    for key in list(batch.keys()):
        value = batch[key]
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            batch[key] = value.double()
    return batch


def _out(model, batch):
    from graph_transformers.training.module import split_output
    return split_output(model(batch))


def _step(model, task, batch):
    model.zero_grad()
    out, aux = _out(model, batch)
    loss = task.loss(out, batch) + (aux if aux is not None else 0.0)
    loss.backward()
    return loss.detach(), {k: p.grad.clone() for k, p in model.named_parameters()
                           if p.grad is not None}


@pytest.mark.parametrize("name", list(CASES))
def test_padded_batch_gives_the_same_loss_gradients_and_statistics(name):
    from graph_transformers.data.registry import resolve_spec
    from graph_transformers.training.build import make_model
    from graph_transformers.training.tasks import Task
    cfg = _config(name)
    spec = resolve_spec(cfg.data)
    task = Task(spec)
    graphs = _graphs(cfg)
    nodes = [d.num_nodes for d in graphs]
    edges = [d.edge_index.size(1) for d in graphs]
    # 3 padding graphs of 3 nodes, 7 padding edges, graphs padded to 2 nodes beyond the largest
    budget = StaticBudget(num_graphs=len(graphs) + 3, num_nodes=sum(nodes) + 9,
                          num_edges=sum(edges) + 7, max_nodes=max(nodes) + 2)
    plain = _double(Batch.from_data_list(graphs))
    padded = _double(pad_batch(Batch.from_data_list(graphs), budget))
    torch.manual_seed(0)
    model = make_model(cfg, spec).double().train()
    twin = copy.deepcopy(model)
    loss, grads = _step(model, task, plain)
    loss_pad, grads_pad = _step(twin, task, padded)
    assert torch.isfinite(loss)
    assert torch.allclose(loss, loss_pad, rtol=1e-10, atol=1e-10), (float(loss), float(loss_pad))
    assert grads.keys() == grads_pad.keys() and grads
    for key, g in grads.items():
        assert torch.allclose(g, grads_pad[key], rtol=1e-10, atol=1e-10), key
    buffers = dict(twin.named_buffers())
    for key, b in model.named_buffers():
        assert torch.allclose(b.double(), buffers[key].double(), rtol=1e-10, atol=1e-10), key
    model.eval()
    twin.eval()
    with torch.no_grad():
        out, out_pad = _out(model, plain)[0], _out(twin, padded)[0]
    assert torch.allclose(out, out_pad[:len(graphs)], rtol=1e-10, atol=1e-10)
