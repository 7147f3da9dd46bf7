"""Which column of a node table holds the node ids (issue 57, item 4a): found by its name (``id``,
``node_id``, ``node``, ``nodeid``, ``name``, any case) or by its values (the first column whose
distinct cells hold every id of the edge list), ``data.id_column`` used as given, the feature
columns named in the log, and the log lines naming each file by its role."""
from __future__ import annotations

import logging
from pathlib import Path

import pytest

from graph_transformers.datasets.user.node_files import ID_COLUMN_NAMES
from graph_transformers.datasets.user.node_table import NodeTable
from graph_transformers.datasets.user.node_table_parser import read_node_table
from graph_transformers.errors import DataError

SPLIT = "random:0.5,0.25,0.25"
N = 8


@pytest.fixture(autouse=True)
def _logs_reach_caplog(monkeypatch):
    """An earlier CLI test may have turned off the package logger's propagation; caplog listens
    at the root."""
    monkeypatch.setattr(logging.getLogger("graph_transformers"), "propagate", True)


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _ring_edges(tmp_path: Path, ids: list[str], header: str = "") -> Path:
    return _write(tmp_path / "edges.csv", header + "".join(
        f"{ids[i]},{ids[(i + 1) % len(ids)]}\n" for i in range(len(ids))))


@pytest.mark.parametrize("column", [*ID_COLUMN_NAMES, "ID", "Node_Id"])
def test_the_id_column_is_found_by_its_name(tmp_path, caplog, column):
    ids = [f"p{i}" for i in range(N)]
    edges = _ring_edges(tmp_path, ids)
    nodes = _write(tmp_path / "nodes.csv", f"{column},label,f\n" + "".join(
        f"{v},{i % 2},{i / 10}\n" for i, v in enumerate(ids)))
    with caplog.at_level(logging.INFO, "graph_transformers"):
        g = read_node_table(edges, nodes, split=SPLIT)
    assert g.node_ids == tuple(ids) and g.id_column == column
    assert g.data.x.shape == (N, 1) and g.feature_names == ("f",)  # the id is no feature
    assert f"node ids in column {column!r} (by its name" in caplog.text


def test_the_earlier_name_of_the_list_wins(tmp_path):
    """``id`` before ``name``: a table with both reads its ids from ``id`` (``name`` holds text,
    here not a number, so it would be refused as a feature: the test lists the features)."""
    ids = [str(100 + i) for i in range(N)]
    nodes = _write(tmp_path / "nodes.csv", "name,id,label,f\n" + "".join(
        f"node {i},{v},{i % 2},{i}\n" for i, v in enumerate(ids)))
    g = read_node_table(_ring_edges(tmp_path, ids), nodes, split=SPLIT, feature_columns=["f"])
    assert g.id_column == "id" and g.node_ids == tuple(ids)


def test_webkb_like_table_reads_its_id_column_by_value_not_as_a_feature(tmp_path, caplog):
    """Issue 57: a WebKB table ``paper, w0..w2, label`` gave one feature too many (the paper ids
    became a feature). The ids are found as the column holding every id of the edge list, which
    has a header line here; the INFO lines name the id column and the feature columns."""
    ids = ["31336", "1061127", "1106406", "13195", "37879", "1126012", "1107140", "1102850"]
    edges = _ring_edges(tmp_path, ids, header="cited,citing\n")
    nodes = _write(tmp_path / "nodes.csv", "paper,w0,w1,w2,label\n" + "".join(
        f"{v},{i % 2},{(i + 1) % 2},{i % 3 == 0:d},{'ab'[i % 2]}\n" for i, v in enumerate(ids)))
    with caplog.at_level(logging.INFO, "graph_transformers"):
        g = read_node_table(edges, nodes, split=SPLIT)
    assert g.id_column == "paper" and g.node_ids == tuple(ids)
    assert g.feature_names == ("w0", "w1", "w2") and g.data.x.shape == (N, 3)
    assert g.data.edge_index.size(1) == 2 * N
    assert "node ids in column 'paper' (its cells are the edge list's ids" in caplog.text
    assert "3 feature column(s) (3 values per node): w0, w1, w2 (every column but" in caplog.text


def test_several_columns_holding_the_ids_take_the_first_with_a_warning(tmp_path, caplog):
    ids = [f"v{i}" for i in range(N)]
    nodes = _write(tmp_path / "nodes.csv", "key,alias,label\n" + "".join(
        f"{v},{ids[(i + 3) % N]},{i % 2}\n" for i, v in enumerate(ids)))
    with caplog.at_level(logging.INFO, "graph_transformers"):
        g = read_node_table(_ring_edges(tmp_path, ids), nodes, split=SPLIT, feature_columns=[])
    assert g.id_column == "key" and g.node_ids == tuple(ids)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "columns 'key', 'alias' each hold every node id of the edge list; the first, 'key'" \
        in warnings[0].getMessage() and "data.id_column" in warnings[0].getMessage()


def test_a_column_missing_one_edge_id_or_with_repeats_is_no_id_column(tmp_path):
    """The value rule needs every endpoint and distinct cells: ``near`` lacks one id and ``dup``
    repeats one, so neither is read as ids; the edge list then holds row numbers."""
    nodes = _write(tmp_path / "nodes.csv", "near,dup,label\n" + "".join(
        f"{i if i != 3 else 99},{min(i, 6)},{i % 2}\n" for i in range(N)))
    edges = _ring_edges(tmp_path, [str(i) for i in range(N)])
    g = read_node_table(edges, nodes, split=SPLIT)
    assert g.id_column is None and g.node_ids == tuple(str(i) for i in range(N))
    assert g.feature_names == ("near", "dup")


def test_data_id_column_is_used_as_given(tmp_path):
    """``data.id_column`` names the ids even where a column is called ``id`` (here a number,
    which then is a feature like any other)."""
    ids = [f"k{i}" for i in range(N)]
    nodes = _write(tmp_path / "nodes.csv", "id,key,label\n" + "".join(
        f"{7 * i},{v},{i % 2}\n" for i, v in enumerate(ids)))
    g = read_node_table(_ring_edges(tmp_path, ids), nodes, id_column="key", split=SPLIT)
    assert g.id_column == "key" and g.node_ids == tuple(ids) and g.feature_names == ("id",)
    with pytest.raises(DataError, match="edge endpoint"):  # 'id' holds no k<i>
        read_node_table(_ring_edges(tmp_path, ids), nodes, id_column="id", split=SPLIT)


def test_id_base_means_row_numbers_whatever_the_columns_hold(tmp_path):
    """``data.options.id_base`` says the edge list holds row numbers: no column is looked for."""
    nodes = _write(tmp_path / "nodes.csv", "rank,label\n" + "".join(
        f"{i + 1},{i % 2}\n" for i in range(N)))  # rank = 1..N would match the 1-based ids
    edges = _ring_edges(tmp_path, [str(i + 1) for i in range(N)])
    assert read_node_table(edges, nodes, split=SPLIT).id_column == "rank"
    g = read_node_table(edges, nodes, split=SPLIT, id_base=1)
    assert g.id_column is None and g.feature_names == ("rank",)


def test_a_graph_file_matches_its_nodes_by_value_or_names_the_missing_id_column(tmp_path):
    ids = [f"a{i}" for i in range(N)]
    graph = _write(tmp_path / "g.edgelist", "".join(f"{ids[i]} {ids[(i + 1) % N]}\n"
                                                    for i in range(N)))
    nodes = _write(tmp_path / "nodes.csv", "who,label\n" + "".join(
        f"{v},{i % 2}\n" for i, v in enumerate(reversed(ids))))
    g = read_node_table(graph, nodes, split=SPLIT)
    assert g.id_column == "who" and g.node_ids == tuple(reversed(ids))
    bare = _write(tmp_path / "bare.csv", "label,f\n" + "".join(f"{i % 2},{i}\n"
                                                             for i in range(N)))
    with pytest.raises(DataError, match=r"bare.csv: no id column \(none named "
                                        r"id/node_id/node/nodeid/name, none holding every "
                                        r"node\) to match the nodes of g.edgelist"):
        read_node_table(graph, bare, split=SPLIT)


def test_the_log_names_each_file_by_its_role_and_the_features_in_short(tmp_path, caplog):
    """The summary line says ``edge list <edges>, node table <nodes>`` (it called the edge list
    the node table), and a wide table's features are named first few + count."""
    ids = [f"n{i}" for i in range(N)]
    edges = _ring_edges(tmp_path, ids)
    nodes = _write(tmp_path / "nodes.csv", "node_id,label," + ",".join(
        f"f{k}" for k in range(8)) + "\n" + "".join(
        f"{v},{i % 2}," + ",".join(str((i + k) % 5) for k in range(8)) + "\n"
        for i, v in enumerate(ids)))
    with caplog.at_level(logging.INFO, "graph_transformers"):
        NodeTable(tmp_path / "cache", "train", edges, nodes, split_rule=SPLIT)
    text = caplog.text
    assert f"edge list {edges}, node table {nodes}: {N} nodes ({N} labelled), {2 * N} edges" \
        in text and "ids in column 'node_id'" in text
    assert "8 feature column(s) (8 values per node): f0, f1, f2, f3, f4 and 3 more" in text
    assert f"node table {edges}" not in text
