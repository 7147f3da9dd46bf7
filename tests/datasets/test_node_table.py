"""A node-level graph from plain files (``data.name: node_table``): edge lists and node tables in
CSV / TSV, ids, features, labels, the three split forms, graph files through NetworkX, the
errors, the template config and ``predict`` on the nodes of the run's graph."""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

import graph_transformers as gtr
from graph_transformers.cli import main
from graph_transformers.data.cache import DataNotFoundError
from graph_transformers.datasets.user.node_table import NodeTable
from graph_transformers.datasets.user.node_table_parser import read_node_table
from graph_transformers.data.registry import load_splits, resolve_spec
from graph_transformers.errors import DataError
from graph_transformers.training.binding import data_fingerprint
from graph_transformers.training.config import ConfigError, build_config, load_config

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = REPO / "configs/graphs/gt_node_table.yaml"
N = 40


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _ring(tmp_path: Path, n: int = N, sep: str = ",", header: bool = True, prefix: str = "n",
          suffix: str = ".csv") -> tuple[Path, Path]:
    """A ring of ``n`` nodes ``<prefix><i>``, two classes (a / b) separable by feature ``f``."""
    edges = "".join(f"{prefix}{i}{sep}{prefix}{(i + 1) % n}\n" for i in range(n))
    nodes = "".join(f"{prefix}{i}{sep}{'ab'[i % 2]}{sep}{i % 2 + 0.01 * i:.2f}{sep}{i % 3}\n"
                    for i in range(n))
    e = _write(tmp_path / f"edges{suffix}", (f"src{sep}dst\n" if header else "") + edges)
    v = _write(tmp_path / f"nodes{suffix}", f"id{sep}label{sep}f{sep}g\n" + nodes)
    return e, v


# ------------------------------------------------------------------------------------ formats
def test_csv_and_tsv_with_and_without_header_read_the_same_graph(tmp_path):
    (tmp_path / "c").mkdir()
    (tmp_path / "t").mkdir()
    a = read_node_table(*_ring(tmp_path / "c", sep=",", header=True))
    b = read_node_table(*_ring(tmp_path / "t", sep="\t", header=False, suffix=".tsv"))
    assert a.standardized  # each feature column: mean 0, s.d. 1 over the nodes
    assert torch.allclose(a.data.x.mean(0), torch.zeros(2), atol=1e-6)
    assert torch.allclose(a.data.x.std(0, unbiased=False), torch.ones(2), atol=1e-5)
    for key in ("x", "edge_index", "y", "train_mask", "val_mask", "test_mask"):
        assert torch.equal(a.data[key], b.data[key]), key
    g = a.data
    assert g.num_nodes == N and g.x.shape == (N, 2) and a.feature_names == ("f", "g")
    assert g.edge_index.size(1) == 2 * N  # undirected: both directions
    assert a.task == "classification" and a.classes == ("a", "b")
    assert g.y.tolist() == [i % 2 for i in range(N)]
    assert a.node_ids[:3] == ("n0", "n1", "n2") and g.node_id[5] == "n5"


def test_row_number_ids_are_zero_or_one_based(tmp_path):
    # f: no id (a column holding every id of the edge list would be read as the ids)
    nodes = _write(tmp_path / "nodes.csv", "label,f\n" + "".join(
        f"{i % 2},{i / 10}\n" for i in range(6)))
    zero = _write(tmp_path / "e0.csv", "0 1\n1 2\n2 3\n3 4\n4 5\n")
    one = _write(tmp_path / "e1.csv", "# a comment line\n1 2\n2 3\n3 4\n4 5\n5 6\n")
    kw = dict(split="random:0.34,0.33,0.33")
    a, b = read_node_table(zero, nodes, **kw), read_node_table(one, nodes, **kw)
    assert torch.equal(a.data.edge_index, b.data.edge_index)
    assert a.node_ids == tuple("012345") and b.node_ids == tuple("123456")
    # 1..4 of 6 nodes: either base would fit; the option decides
    mid = _write(tmp_path / "e2.csv", "1,2\n2,3\n3,4\n")
    with pytest.raises(DataError, match="cannot tell whether the node ids are 0- or 1-based.*"
                                        "data.options.id_base"):
        read_node_table(mid, nodes, **kw)
    c = read_node_table(mid, nodes, id_base=1, **kw)
    assert c.data.edge_index[:, 0].tolist() == [0, 1]
    with pytest.raises(DataError, match=r"not in nodes.csv \(6 rows, 0-based ids 0..5\): '6' "
                                        r"\(line 2\)"):
        read_node_table(_write(tmp_path / "e3.csv", "0,1\n5,6\n"), nodes, **kw)
    # an integer id column: edges are matched by id, whatever the numbers
    ided = _write(tmp_path / "ided.csv", "id,label\n" + "".join(f"{10 + i},{i % 2}\n"
                                                                for i in range(6)))
    d = read_node_table(_write(tmp_path / "e4.csv", "10,11\n15,10\n"), ided, **kw)
    assert d.data.edge_index.tolist() == [[0, 0, 1, 5], [1, 5, 0, 0]]
    assert d.classes == ("0", "1") and "x" not in d.data  # no feature column


def test_string_ids_and_the_undirected_flag(tmp_path):
    nodes = _write(tmp_path / "nodes.csv", "id,label\nalice,x\nbob,y\ncarol,x\ndave,y\n"
                                           "erin,x\nfrank,y\n")
    edges = _write(tmp_path / "edges.csv", "from;to\nalice;bob\nbob;alice\nbob;carol\n"
                                           "bob;carol\n")
    kw = dict(split="random:0.34,0.33,0.33")
    both = read_node_table(edges, nodes, **kw).data.edge_index
    assert both.tolist() == [[0, 1, 1, 2], [1, 0, 2, 1]]  # reversed, duplicates dropped
    one = read_node_table(edges, nodes, undirected=False, **kw).data.edge_index
    assert one.tolist() == [[0, 1, 1], [1, 0, 2]]


def test_vector_features_in_one_column(tmp_path):
    edges = _write(tmp_path / "e.csv", "a,b\n")
    csv_nodes = _write(tmp_path / "n.csv", 'id,label,emb,w\na,0,"0.5,1,2",3\nb,1,"[4, 5, 6]",7\n'
                                           'c,0,"1;2;3",0\nd,1,7 8 9,1\ne,0,"0,0,0",0\n'
                                           'f,1,"1,1,1",1\n')
    g = read_node_table(edges, csv_nodes, split="random:0.34,0.33,0.33",
                        standardize_features=False)
    assert g.feature_names == ("emb[0]", "emb[1]", "emb[2]", "w")
    assert g.data.x.tolist()[:2] == [[0.5, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]]
    tsv_nodes = _write(tmp_path / "n.tsv", "id\tlabel\temb\tskip\na\t0\t1,2\tx\nb\t1\t3,4\tx\n"
                                           "c\t0\t5,6\tx\nd\t1\t7,8\tx\n")
    h = read_node_table(edges, tsv_nodes, feature_columns=["emb"], split="random:0.5,0.25,0.25",
                        standardize_features=False)
    assert h.data.x.shape == (4, 2) and h.data.x[3].tolist() == [7.0, 8.0]


def test_regression_labels_and_forced_task(tmp_path):
    edges = _write(tmp_path / "e.csv", "a,b\nb,c\n")
    nodes = _write(tmp_path / "n.csv", "id,label,f\na,1.5,0\nb,,1\nc,-2.25,2\nd,3,3\ne,0.5,4\n"
                                       "f,nan,5\n")
    g = read_node_table(edges, nodes, split="random:0.34,0.33,0.33")
    assert g.task == "regression" and g.classes is None
    assert g.data.y.shape == (6, 1) and math.isnan(g.data.y[1, 0]) and g.data.y[2, 0] == -2.25
    assert g.labelled.tolist() == [True, False, True, True, True, False]
    for s in ("train", "val", "test"):  # unlabelled nodes are in no split
        assert not g.data[f"{s}_mask"][[1, 5]].any()
    ints = _write(tmp_path / "i.csv", "id,label\na,1\nb,2\nc,10\nd,2\n")
    assert read_node_table(edges, ints, split="random:0.5,0.25,0.25").classes == ("1", "2", "10")
    assert read_node_table(edges, ints, task="regression",
                           split="random:0.5,0.25,0.25").task == "regression"
    cfg = build_config({"data": {"name": "node_table", "edges": str(edges), "nodes": str(nodes),
                                 "split": "random:0.34,0.33,0.33"},
                        "model": {"name": "gt", "pe": None}, "encodings": {"lap_pe": None}})
    spec = resolve_spec(cfg.data)
    assert (spec.level, spec.task, spec.out_dim, spec.metric, spec.node_dim, spec.targets) == \
        ("node", "regression", 1, "mae", 1, ("label",))
    # data.options reach the reader: the features as written, or refused with the key named
    raw = build_config(cfg.to_dict(), ["data.options={standardize_features: false}",
                                        f"data.cache_dir={tmp_path / 'cache'}"])
    assert load_splits(raw.data, None)["val"][0].x.view(-1).tolist() == [0, 1, 2, 3, 4, 5]
    bad = build_config(cfg.to_dict(), ["data.options={standardize_features: sometimes}"])
    with pytest.raises(DataError, match="standardize_features must be true or false"):
        resolve_spec(bad.data)
    typo = build_config(cfg.to_dict(), ["data.options={id_bse: 1}",
                                         f"data.cache_dir={tmp_path / 'cache'}"])
    with pytest.raises(ValueError, match="data.options: .*id_bse"):
        load_splits(typo.data, None)


# ------------------------------------------------------------------------------------ splits
def test_random_split_is_stratified_seeded_and_reproducible(tmp_path):
    edges = _write(tmp_path / "e.csv", "0,1\n")
    # 50 of class a, 30 of b, 20 unlabelled
    rows = [("a" if i < 50 else "b" if i < 80 else "") for i in range(100)]
    nodes = _write(tmp_path / "n.csv", "id,label\n" + "".join(f"{i},{c}\n"
                                                              for i, c in enumerate(rows)))
    a = read_node_table(edges, nodes, split="random:0.6,0.2,0.2", seed=3)
    b = read_node_table(edges, nodes, split="random:0.6,0.2,0.2", seed=3)
    c = read_node_table(edges, nodes, split="random:0.6,0.2,0.2", seed=4)
    assert torch.equal(a.data.train_mask, b.data.train_mask)
    assert not torch.equal(a.data.train_mask, c.data.train_mask)
    y = a.data.y
    for s, (na, nb) in {"train": (30, 18), "val": (10, 6), "test": (10, 6)}.items():
        m = a.data[f"{s}_mask"]
        assert int((m & (y == 0)).sum()) == na and int((m & (y == 1)).sum()) == nb
        assert not m[80:].any()
    # fractions below 1 leave labelled nodes out; "random" alone is the default 0.6/0.2/0.2
    d = read_node_table(edges, nodes, split="random:0.5,0.1,0.1")
    assert int(d.data.train_mask.sum()) == 40 and int(d.data.test_mask.sum()) == 8
    e = read_node_table(edges, nodes, split="random")
    assert int(e.data.train_mask.sum()) == 48
    assert "stratified by class (seed 0)" in e.split_rule
    with pytest.raises(DataError, match="data.split must be random:TRAIN,VAL,TEST"):
        read_node_table(edges, nodes, split="random:0.8,0.3,0.1")
    with pytest.raises(DataError, match="data.split must be .* got 'halves'"):
        read_node_table(edges, nodes, split="halves")


def test_mask_columns_split(tmp_path):
    edges = _write(tmp_path / "e.csv", "a,b\n")
    table = ("id,label,f,train_mask,val_mask,test_mask\n"
             "a,x,1,1,0,0\nb,y,2,true,false,false\nc,x,3,0,1,0\nd,y,4,0,0,1\ne,,5,0,0,\n")
    nodes = _write(tmp_path / "n.csv", table)
    g = read_node_table(edges, nodes, split="columns")
    assert g.data.train_mask.tolist() == [True, True, False, False, False]
    assert g.data.test_mask.tolist() == [False, False, False, True, False]
    assert g.feature_names == ("f",)  # masks are never features
    unset = read_node_table(edges, nodes)  # the mask columns are used when present
    assert torch.equal(unset.data.val_mask, g.data.val_mask) and "mask columns" in unset.split_rule
    bad = _write(tmp_path / "bad.csv", table.replace("c,x,3,0,1,0", "c,x,3,0,maybe,0"))
    with pytest.raises(DataError, match=r"bad.csv line 4: val_mask is 'maybe'"):
        read_node_table(edges, bad)
    no_masks = _write(tmp_path / "plain.csv", "id,label\na,x\nb,y\n")
    with pytest.raises(DataError, match="data.split is columns, but .* has no column"):
        read_node_table(edges, no_masks, split="columns")


def test_npz_split_in_node_table_order(tmp_path):
    edges, nodes = _ring(tmp_path, n=10)
    masks = {k: np.zeros(10, dtype=bool) for k in ("train_mask", "val_mask", "test_mask")}
    masks["train_mask"][:6], masks["val_mask"][6:8], masks["test_mask"][8:] = True, True, True
    np.savez(tmp_path / "split.npz", **masks)
    g = read_node_table(edges, nodes, split=str(tmp_path / "split.npz"))
    assert g.data.train_mask.tolist() == masks["train_mask"].tolist()
    assert g.files["split"].endswith("split.npz") and "split" in g.sha256
    np.savez(tmp_path / "ints.npz", **{k: v.astype(np.int64) for k, v in masks.items()})
    ints = read_node_table(edges, nodes, split=str(tmp_path / "ints.npz"))
    assert torch.equal(ints.data.val_mask, g.data.val_mask)
    np.savez(tmp_path / "short.npz", **{k: v[:9] for k, v in masks.items()})
    with pytest.raises(DataError, match="train_mask has 9 entries, the graph 10 nodes"):
        read_node_table(edges, nodes, split=str(tmp_path / "short.npz"))
    np.savez(tmp_path / "two.npz", train_mask=masks["train_mask"], val_mask=masks["val_mask"])
    with pytest.raises(DataError, match="no array 'test_mask'"):
        read_node_table(edges, nodes, split=str(tmp_path / "two.npz"))
    with pytest.raises(DataNotFoundError, match="split file not found"):
        read_node_table(edges, nodes, split=str(tmp_path / "none.npz"))


# ------------------------------------------------------------------------------------ errors
def test_clear_errors(tmp_path):
    edges, nodes = _ring(tmp_path, n=10)
    kw = dict(split="random:0.4,0.3,0.3")
    small = _write(tmp_path / "e.csv", "n0,n1\n")
    # ids of the edge list missing from the node table: the first few, with their lines
    extra = _write(tmp_path / "extra.csv", "src,dst\nn0,n1\nn1,zz\nyy,n2\nn3,xx\nn4,ww\n")
    with pytest.raises(DataError, match=r"extra.csv: 4 edge endpoint\(s\) not in nodes.csv's "
                                        r"'id' column: 'zz' \(line 3\), 'yy' \(line 4\), 'xx' "
                                        r"\(line 5\) and 1 more; add those nodes"):
        read_node_table(extra, nodes, **kw)
    # ragged feature vectors: the row is named
    ragged = _write(tmp_path / "ragged.csv", 'id,label,emb\nn0,a,"1,2"\nn1,b,"3,4,5"\n')
    with pytest.raises(DataError, match=r"ragged.csv line 3: the feature vector in column 'emb' "
                                        "has 3 values, the first row's has 2"):
        read_node_table(small, ragged, **kw)
    # an unquoted vector: more cells than columns
    unquoted = _write(tmp_path / "unquoted.csv", "id,label,emb\nn0,a,1,2\n")
    with pytest.raises(DataError, match=r"unquoted.csv line 2: 4 cells, but the header has 3 "
                                        "columns"):
        read_node_table(edges, unquoted, **kw)
    # a non-numeric feature column and an empty feature cell
    words = _write(tmp_path / "words.csv", "id,label,name\nn0,a,x\nn1,b,y\n")
    with pytest.raises(DataError, match="feature column 'name' holds 'x', not a number.*"
                                        "data.feature_columns"):
        read_node_table(small, words, **kw)
    holes = _write(tmp_path / "holes.csv", "id,label,f\nn0,a,1\nn1,b,\n")
    with pytest.raises(DataError, match="holes.csv line 3: no value in feature column 'f'"):
        read_node_table(small, holes, **kw)
    # unlabelled nodes in a split, overlapping masks
    masks = ("id,label,train_mask,val_mask,test_mask\n"
             "n0,a,1,0,0\nn1,,1,0,0\nn2,a,0,1,0\nn3,b,0,0,1\n")
    with pytest.raises(DataError, match=r"the train split holds 1 node\(s\) without a label "
                                        r"\('n1'\)"):
        read_node_table(small, _write(tmp_path / "unl.csv", masks), split="columns")
    overlap = masks.replace("n1,,1,0,0", "n1,b,1,0,1")
    with pytest.raises(DataError, match=r"the train and test masks overlap on 1 node\(s\) "
                                        r"\('n1'\)"):
        read_node_table(small, _write(tmp_path / "ovl.csv", overlap), split="columns")
    # files that cannot be parsed
    binary = tmp_path / "binary.csv"
    binary.write_bytes(b"id,label\n\xff\xfe\x00,1\n")
    with pytest.raises(DataError, match="binary.csv: not UTF-8 text"):
        read_node_table(edges, binary, **kw)
    quote = _write(tmp_path / "quote.csv", 'id,label\nn0,"a\n')
    with pytest.raises(DataError, match="quote.csv line .*cannot be parsed as CSV"):
        read_node_table(edges, quote, **kw)
    broken = _write(tmp_path / "broken.graphml", "<graphml><graph><node id='a'></graph>")
    with pytest.raises(DataError, match="broken.graphml: cannot be parsed as GRAPHML"):
        read_node_table(broken, **kw)
    short = _write(tmp_path / "short.csv", "n0,n1\nn2\n")
    with pytest.raises(DataError, match="short.csv line 2: 1 cell"):
        read_node_table(short, nodes, **kw)
    # missing label column, repeated ids, one class, files not found, no node table
    with pytest.raises(DataError, match="no label column 'class'.*data.label_column"):
        read_node_table(edges, nodes, label_column="class", **kw)
    twice = _write(tmp_path / "twice.csv", "id,label\nn0,a\nn0,b\n")
    with pytest.raises(DataError, match="twice.csv line 3: id 'n0' repeats the line 2"):
        read_node_table(edges, twice, **kw)
    with pytest.raises(DataError, match="classification needs at least two classes"):
        read_node_table(small, _write(tmp_path / "one.csv", "id,label\nn0,a\nn1,a\n"), **kw)
    with pytest.raises(DataNotFoundError, match="node table not found"):
        read_node_table(edges, tmp_path / "missing.csv", **kw)
    with pytest.raises(DataError, match="data.nodes is required with the edge list"):
        read_node_table(edges, **kw)


def test_config_keys_are_checked():
    with pytest.raises(ConfigError, match="data.edges apply to data.name: node_table"):
        build_config({"data": {"name": "csl", "edges": "e.csv"}})
    with pytest.raises(ConfigError, match="data.path and data.name: node_table exclude"):
        build_config({"data": {"name": "node_table", "path": "g.pt", "edges": "e.csv"}})
    cfg = build_config({"data": {"name": "node_table"}, "encodings": {"lap_pe": {}}})
    with pytest.raises(ValueError, match="set data.edges"):
        resolve_spec(cfg.data)


# ------------------------------------------------------------------------------------ graph files
def test_graphml_and_gml_through_networkx(tmp_path):
    import networkx as nx
    g = nx.Graph()
    for i in range(8):
        g.add_node(f"v{i}", label="ab"[i % 2] if i != 7 else "", f=float(i), h=i % 3)
    g.add_edges_from((f"v{i}", f"v{(i + 1) % 8}") for i in range(8))
    nx.write_graphml(g, tmp_path / "g.graphml")
    a = read_node_table(tmp_path / "g.graphml", split="random:0.34,0.33,0.33",
                        standardize_features=False)
    assert a.node_ids[:2] == ("v0", "v1") and a.classes == ("a", "b")
    assert a.data.x.shape == (8, 2) and a.data.x[3].tolist() == [3.0, 0.0]
    assert a.data.edge_index.size(1) == 16 and not a.labelled[7]
    # the same graph with a node table: ids matched, attributes from the table
    table = _write(tmp_path / "n.csv", "id,label,z\n" + "".join(
        f"v{i},{'xy'[i % 2]},{i * 2}\n" for i in range(9)))
    b = read_node_table(tmp_path / "g.graphml", table, split="random:0.34,0.33,0.33")
    assert b.data.num_nodes == 9 and b.classes == ("x", "y") and b.feature_names == ("z",)
    assert torch.equal(b.data.edge_index, a.data.edge_index)
    # GML: NetworkX writes the node names as GML labels, so the classes go in another attribute
    for _, attrs in g.nodes(data=True):
        attrs["cls"] = attrs.pop("label")
    nx.write_gml(g, tmp_path / "g.gml")
    c = read_node_table(tmp_path / "g.gml", split="random:0.34,0.33,0.33", label_column="cls",
                        standardize_features=False)
    assert c.node_ids[:2] == ("v0", "v1") and torch.equal(c.data.edge_index, a.data.edge_index)
    assert torch.equal(c.data.x, a.data.x) and torch.equal(c.data.y, a.data.y)
    # a GML whose labels are the classes (repeated): the GML ids name the nodes
    _write(tmp_path / "k.gml", "graph [\n" + "".join(
        f'  node [ id {i} label "{"ab"[i % 2]}" f {i} ]\n' for i in range(6))
        + "".join(f"  edge [ source {i} target {(i + 1) % 6} ]\n" for i in range(6)) + "]\n")
    k = read_node_table(tmp_path / "k.gml", split="random:0.34,0.33,0.33")
    assert k.node_ids == tuple("012345") and k.classes == ("a", "b") and k.data.x.shape == (6, 1)
    plain = _write(tmp_path / "p.edgelist", "v0 v1\nv1 v2\n")
    with pytest.raises(DataError, match="no node has the attribute 'label'"):
        read_node_table(plain)
    d = read_node_table(plain, table, undirected=False, split="random:0.34,0.33,0.33")
    assert d.data.edge_index.tolist() == [[0, 1], [1, 2]]


# ------------------------------------------------------------------------------------ datasets
def test_splits_share_one_graph_cached_by_content(tmp_path):
    edges, nodes = _ring(tmp_path)
    kw = dict(edges=edges, nodes=nodes, split_rule="random:0.6,0.2,0.2",
              standardize_features=False)
    splits = {s: NodeTable(tmp_path / "cache", s, **kw) for s in ("train", "val", "test")}
    masks = [splits[s][0].node_mask for s in ("train", "val", "test")]
    assert [int(m.sum()) for m in masks] == [24, 8, 8] and int(sum(masks).max()) == 1
    assert splits["test"].node_ids[0] == "n0" and splits["test"].classes == ("a", "b")
    assert splits["train"].provenance["node_table"]["split_sizes"] == \
        {"train": 24, "val": 8, "test": 8}
    first = data_fingerprint(splits)
    other = NodeTable(tmp_path / "cache", "train", seed=1, **kw)
    assert data_fingerprint({"train": other})["train"] != first["train"]  # the split's nodes
    assert len(list((tmp_path / "cache" / "graphs").glob("*.pt"))) == 2
    _write(nodes, nodes.read_text().replace("n3,b,1.03", "n3,b,9.500"))  # an edited file
    edited = NodeTable(tmp_path / "cache", "train", **kw)
    assert float(edited[0].x[3, 0]) == 9.5
    assert data_fingerprint({"train": edited})["train"] != first["train"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """The template, trained for one epoch through the CLI with only the three keys (and the
    epoch count) set."""
    root = tmp_path_factory.mktemp("node_table_run")
    edges, nodes = _ring(root)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GRAPH_TRANSFORMERS_CACHE", str(root / "cache"))
        assert main(["train", "--config", str(TEMPLATE), "--out", str(root / "run"), "--set",
                     f"data.edges={edges}", f"data.nodes={nodes}",
                     "data.split=random:0.6,0.2,0.2", "trainer.max_epochs=1",
                     "trainer.enable_progress_bar=false"]) == 0
        yield root


def test_template_trains_and_predicts_every_node(trained, capsys):
    run, out = trained / "run", trained / "nodes_predicted.csv"
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["epochs"] == 1 and metrics["metric"] == "accuracy"
    assert metrics["provenance"]["node_table"]["split_sizes"] == {"train": 24, "val": 8,
                                                                   "test": 8}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GRAPH_TRANSFORMERS_CACHE", str(trained / "cache"))
        assert main(["predict", str(run), "--out", str(out)]) == 0
        assert "40 nodes predicted (24 train, 8 val, 8 test, 0 none)" in capsys.readouterr().out
        assert main(["predict", str(run), "--data", str(out)]) == 2  # --data: graph-level only
        assert "is a node-level run; leave out --data" in capsys.readouterr().err
        from graph_transformers.training.trained import evaluate_run
        evaluated = evaluate_run(run)
    raw = out.read_bytes()
    assert b"\r\n" not in raw
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["node_id", "prediction", "p_a", "p_b", "split"]
    assert [r["node_id"] for r in rows] == [f"n{i}" for i in range(N)]
    for r in rows:
        assert float(r["p_a"]) + float(r["p_b"]) == pytest.approx(1.0, abs=1e-6)
        assert r["prediction"] == ("a" if float(r["p_a"]) >= float(r["p_b"]) else "b")
    splits = load_splits(load_config(run / "config.yaml").data, None)
    for s, ds in splits.items():
        members = {f"n{i}" for i in torch.nonzero(ds[0].node_mask).view(-1).tolist()}
        assert {r["node_id"] for r in rows if r["split"] == s} == members
    # the test rows' accuracy is evaluate's test accuracy
    test = [r for r in rows if r["split"] == "test"]
    acc = sum(r["prediction"] == "ab"[int(r["node_id"][1:]) % 2] for r in test) / len(test)
    assert acc == pytest.approx(evaluated["test"]["accuracy"], abs=1e-6)


def test_regression_run_predicts_values_from_python(tmp_path, monkeypatch):
    monkeypatch.setenv("GRAPH_TRANSFORMERS_CACHE", str(tmp_path / "cache"))
    edges = _write(tmp_path / "e.tsv", "".join(f"{i}\t{(i + 1) % 20}\n" for i in range(20)))
    nodes = _write(tmp_path / "n.tsv", "id\tlabel\tf\n" + "".join(
        f"{i}\t{'' if i == 19 else 0.5 * i}\t{i / 20:.3f}\n" for i in range(20)))
    config = {"model": {"name": "gt", "hidden_dim": 8, "num_layers": 1, "num_heads": 2,
                        "pe": None},
              "encodings": {"lap_pe": None},
              "data": {"name": "node_table", "edges": str(edges), "nodes": str(nodes),
                       "split": "random:0.5,0.25,0.25", "batch_size": 1},
              "trainer": {"max_epochs": 2, "enable_progress_bar": False}}
    metrics = gtr.train(config, out_dir=tmp_path / "run")
    assert metrics["metric"] == "mae" and math.isfinite(metrics["test"]["mae"])
    preds = gtr.load_run(tmp_path / "run").predict_nodes()
    assert len(preds) == 20 and preds.columns == ("prediction",) and preds.classes is None
    assert preds.node_ids[:3] == ("0", "1", "2") and preds.split[19] == "none"
    assert preds.values.shape == (20, 1) and torch.isfinite(preds.values).all()
    rows = preds.rows()
    assert list(rows[0]) == ["node_id", "prediction", "split"]
    preds.to_csv(tmp_path / "p.csv")
    assert (tmp_path / "p.csv").read_text().splitlines()[0] == "node_id,prediction,split"


def test_predict_nodes_of_any_single_graph_run(tmp_path):
    from torch_geometric.data import Data
    n = 30
    i = torch.arange(n)
    ring = torch.cat([torch.stack([i, (i + 1) % n]), torch.stack([(i + 1) % n, i])], dim=1)
    masks = {f"{s}_mask": torch.zeros(n, dtype=torch.bool) for s in ("train", "val", "test")}
    masks["train_mask"][:20], masks["val_mask"][20:25], masks["test_mask"][25:29] = \
        True, True, True
    graph = Data(x=(i % 2).float().unsqueeze(1), edge_index=ring, y=i % 3, **masks)
    config = {"model": {"name": "gt", "hidden_dim": 8, "num_layers": 1, "num_heads": 2,
                        "pe": None}, "encodings": {"lap_pe": None}, "data": {"batch_size": 1},
              "trainer": {"max_epochs": 1, "enable_progress_bar": False}}
    gtr.train(config, dataset=[graph], out_dir=tmp_path / "run")
    preds = gtr.load_run(tmp_path / "run", dataset=[graph]).predict_nodes()
    assert preds.node_ids == tuple(str(k) for k in range(n))
    assert preds.columns == ("p_0", "p_1", "p_2") and preds.class_names == ("0", "1", "2")
    assert preds.split[:1] + preds.split[20:21] + preds.split[25:26] + preds.split[29:] == \
        ("train", "val", "test", "none")
    assert torch.allclose(preds.values.sum(1), torch.ones(n))
    graphs = [Data(x=torch.ones(3, 1), edge_index=ring[:, :2] % 3, y=torch.tensor([k % 2]))
              for k in range(20)]
    gtr.train(config, dataset=graphs, out_dir=tmp_path / "graphs")
    with pytest.raises(ValueError, match="predict_nodes takes node-level runs; .* graph-level"):
        gtr.load_run(tmp_path / "graphs", dataset=graphs).predict_nodes()
