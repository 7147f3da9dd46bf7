"""``sign_flip: node`` (issue 53): one random sign per node over its whole encoding vector, the
flip of the code behind the EGT paper (``shamim-hussain/egt`` at ``5a1efb1``, ``RandomNeg``:
signs of shape ``[batch, nodes]`` times the flattened ``[.., 2r]`` SVD features), beside the
per-graph flip of each singular-vector pair (``"graph"``, from ``8aa625f``)."""
from __future__ import annotations

import pytest
import torch
from torch_geometric.data import Batch, Data

from graph_transformers.models import EGT
from graph_transformers.models.encoders import check_sign_flip, flip_signs
from graph_transformers.training.config import build_config


def test_node_flip_is_one_sign_per_node_as_by_hand():
    pe = torch.arange(1.0, 1.0 + 7 * 6).reshape(7, 6)  # 7 nodes, r = 3: [u_1..u_3, v_1..v_3]
    batch = torch.tensor([0, 0, 0, 1, 1, 2, 2])
    torch.manual_seed(5)
    out = flip_signs(pe, "svd", "node", batch, 3)
    torch.manual_seed(5)  # the hand computation: the same draw, one ±1 per node
    by_hand = pe.clone()
    for i, s in enumerate((torch.randint(0, 2, (7, 1)) * 2 - 1).view(-1).tolist()):
        by_hand[i] = pe[i] * s
    assert torch.equal(out, by_hand)
    ratio = out / pe
    assert torch.equal(ratio, ratio[:, :1].expand_as(ratio))  # the whole 2r-vector of a node
    # nodes of one graph get independent signs (over many draws both patterns appear)
    torch.manual_seed(0)
    signs = torch.stack([(flip_signs(pe, "svd", "node", batch, 3) / pe)[:3, 0]
                         for _ in range(64)])
    assert (signs[:, 0] != signs[:, 1]).any() and (signs[:, 0] == signs[:, 1]).any()


def test_graph_flip_keeps_pairs_and_differs_from_node_flip():
    pe = torch.randn(5, 4, dtype=torch.float64)
    batch = torch.tensor([0, 0, 0, 1, 1])
    torch.manual_seed(1)
    g = flip_signs(pe, "svd", "graph", batch, 2) / pe
    # "graph": nodes of a graph share signs, and u_k and v_k share theirs
    assert torch.equal(g[0], g[1]) and torch.equal(g[:, :2], g[:, 2:])


def test_config_and_model_accept_node():
    check_sign_flip("node")
    with pytest.raises(ValueError, match="'batch', 'graph', 'node' or 'none'"):
        check_sign_flip("pair")
    cfg = build_config({"model": {"name": "egt", "pe": "svd", "sign_flip": "node"},
                        "encodings": {"svd_pe": {"r": 2}}})
    assert cfg.model.sign_flip == "node"


def test_egt_trains_with_the_node_flip_and_evaluates_without_it():
    torch.manual_seed(0)
    model = EGT(16, 8, 1, 2, 1, num_node_types=3, pe="svd", pe_dim=4, sign_flip="node",
                use_edge_features=False)
    ring = torch.tensor([[0, 1, 2, 3, 1, 2, 3, 0], [1, 2, 3, 0, 0, 1, 2, 3]])
    graphs = [Data(x=torch.randint(0, 3, (4, 1)), edge_index=ring, svd_pe=torch.randn(4, 4))
              for _ in range(3)]
    batch = Batch.from_data_list(graphs)
    model.eval()
    assert torch.equal(model(batch).out, model(batch).out)  # no flip in evaluation
    model.train()
    torch.manual_seed(1)
    a = model(batch).out
    torch.manual_seed(2)
    b = model(batch).out
    assert not torch.allclose(a, b)  # the flip is drawn anew in training
