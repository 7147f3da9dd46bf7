"""Bad input gets a clear error, not a crash deep inside."""
from __future__ import annotations

import pytest
import torch
from torch_geometric.data import Batch, Data

from graph_transformers.models import GraphTransformer, build_model
from graph_transformers.models.utils import full_graph_edge_index


def _model(**kw):
    args = dict(hidden_dim=16, num_layers=1, num_heads=2, out_dim=1, num_node_types=3, pe=None)
    args.update(kw)
    return GraphTransformer(**args)


def _graph(n=4):
    ei = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])
    return Data(x=torch.zeros(n, 1, dtype=torch.long), edge_index=ei,
                edge_attr=torch.ones(4, dtype=torch.long))


def test_edge_index_out_of_range():
    g = _graph()
    g.edge_index = torch.tensor([[0, 7], [1, 0]])
    with pytest.raises(ValueError, match="node ids in"):
        _model()(Batch.from_data_list([g]))


def test_nan_features():
    g = _graph()
    g.x = torch.tensor([[0.0], [float("nan")], [1.0], [2.0]])
    with pytest.raises(ValueError, match="NaN"):
        _model(num_node_types=None, num_node_features=1)(Batch.from_data_list([g]))


def test_category_out_of_range():
    g = _graph()
    g.x[0, 0] = 5
    with pytest.raises(ValueError, match=r"outside \[0, 3\)"):
        _model()(Batch.from_data_list([g]))


def test_missing_encodings_and_edges():
    with pytest.raises(ValueError, match="no lap_pe"):
        _model(pe="lap", pe_dim=2)(Batch.from_data_list([_graph()]))
    g = _graph()
    del g.edge_attr
    with pytest.raises(ValueError, match="no edge_attr"):
        _model(use_edge_features=True, num_edge_types=2)(Batch.from_data_list([g]))


def test_unknown_model_and_dataset():
    from graph_transformers.data.registry import get_spec
    with pytest.raises(ValueError, match="unknown model 'foo'"):
        build_model("foo")
    with pytest.raises(ValueError, match="unknown dataset 'imagenet'"):
        get_spec("imagenet")


def test_full_graph_edge_index():
    batch = torch.tensor([0, 0, 0, 1, 1, 2])
    ei = full_graph_edge_index(batch)
    pairs = set(map(tuple, ei.t().tolist()))
    expected = {(i, j) for g in ([0, 1, 2], [3, 4], [5]) for i in g for j in g if i != j}
    assert pairs == expected and ei.size(1) == len(expected)
    assert full_graph_edge_index(batch, self_loops=True).size(1) == 9 + 4 + 1
