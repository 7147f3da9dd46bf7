"""Inputs are read loudly (issue 54, item 3): a header naming a used column twice, an edge list
without edges, a binary file where a CSV is expected and a quoted cell left open are one-line
:class:`~graph_transformers.errors.DataError`\\ s naming the file; a one-column ``predict`` input
keeps its empty rows. Plus one plain test per bug the fuzz suite
(``tests/data/test_fuzz_readers.py``)
found. Each of these failed before the change."""
from __future__ import annotations

import csv
import gzip
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest

from graph_transformers.data.registry import resolve_spec
from graph_transformers.data.textfiles import check_header, check_text_head, read_head
from graph_transformers.datasets.user.graph_list import read_index_file
from graph_transformers.datasets.user.node_table import node_table_spec
from graph_transformers.datasets.user.node_table_parser import read_node_table
from graph_transformers.errors import DataError
from graph_transformers.prediction import read_csv_columns, read_inputs, read_smiles_csv
from graph_transformers.training.config import ConfigError, build_config, load_config

NODES = "id,label,f\n" + "".join(f"n{i},{'ab'[i % 2]},{i}\n" for i in range(8))
EDGES = "source,target\n" + "".join(f"n{i},n{(i + 1) % 8}\n" for i in range(8))
SPLIT = "random:0.5,0.25,0.25"


def _write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def _molecules(tmp_path: Path, text: str, targets=("logSolubility",)):
    pytest.importorskip("rdkit")
    from graph_transformers.datasets.molecules.molecule_csv import load_molecule_csv
    path = _write(tmp_path / "molecules.csv", text)
    return load_molecule_csv(tmp_path / "cache", "all", path=path, target_columns=list(targets),
                             task="regression")


# ----------------------------------------------------------------------------- repeated names
def test_a_repeated_target_column_of_a_molecule_csv_is_refused(tmp_path):
    text = "smiles,id,logSolubility,note,logSolubility\nCCO,a,1.0,x,2.0\nCCN,b,1.5,y,2.5\n"
    with pytest.raises(DataError) as err:
        _molecules(tmp_path, text)
    assert str(err.value) == (f"{tmp_path / 'molecules.csv'}: column 'logSolubility' appears "
                              "twice in the header (columns 3 and 5); rename one")


def test_a_repeated_column_the_molecule_csv_does_not_read_is_harmless(tmp_path):
    ds = _molecules(tmp_path, "smiles,logSolubility,note,note\nCCO,1.0,x,y\nCCN,1.5,x,y\n")
    assert len(ds) == 2 and ds.task_names == ["logSolubility"]
    with pytest.raises(DataError, match=r"column 'smiles' appears twice in the header "
                                        r"\(columns 1 and 3\)"):
        _molecules(tmp_path, "smiles,logSolubility,smiles\nCCO,1.0,CCN\n")


def test_the_default_targets_of_a_molecule_csv_are_every_column_so_a_repeat_is_refused(
        tmp_path):
    pytest.importorskip("rdkit")
    from graph_transformers.datasets.molecules.molecule_csv import MoleculeCSV
    path = _write(tmp_path / "molecules.csv", "smiles,y,y,y\nCCO,1,2,3\n")
    # no target_columns: every column but the SMILES one is a target, so each is used
    with pytest.raises(DataError, match=r"column 'y' appears 3 times in the header \(columns "
                                        r"2, 3 and 4\); rename one"):
        MoleculeCSV(tmp_path / "cache", "all", path, task="regression")


def test_a_repeated_node_table_column_names_both_positions(tmp_path):
    nodes = _write(tmp_path / "nodes.csv", NODES.replace("id,label,f", "id,label,label", 1))
    with pytest.raises(DataError, match=r"nodes.csv: column 'label' appears twice in the header "
                                        r"\(columns 2 and 3\); rename one"):
        read_node_table(_write(tmp_path / "edges.csv", EDGES), nodes, split=SPLIT)


def test_an_edge_list_header_naming_one_column_twice_is_refused(tmp_path):
    edges = _write(tmp_path / "edges.csv", EDGES.replace("source,target", "id,id", 1))
    with pytest.raises(DataError, match=r"edges.csv: column 'id' appears twice in the header "
                                        r"\(columns 1 and 2\)"):
        read_node_table(edges, _write(tmp_path / "nodes.csv", NODES), split=SPLIT)


def test_predict_inputs_refuse_a_repeated_column_they_read(tmp_path):
    path = _write(tmp_path / "in.csv", "smiles,name,smiles\nCCO,a,CCN\n")
    with pytest.raises(DataError, match=r"in.csv: column 'smiles' appears twice in the header "
                                        r"\(columns 1 and 3\); rename one"):
        read_smiles_csv(path)
    path = _write(tmp_path / "keep.csv", "name,smiles,name\na,CCO,b\n")
    assert read_smiles_csv(path) == ["CCO"]  # the SMILES column is once in the header
    with pytest.raises(DataError, match=r"keep.csv: column 'name' appears twice in the header "
                                        r"\(columns 1 and 3\); rename one"):
        read_csv_columns(path, exclude=["smiles"])  # --keep-columns all: name twice
    assert read_csv_columns(path, ["smiles"]) == {"smiles": ["CCO"]}


def test_check_header_only_refuses_names_it_is_told_are_used():
    check_header("f.csv", ["a", "b", "a"], used=["b"])
    with pytest.raises(DataError, match=r"^f.csv: column 'a' appears twice in the header "
                                        r"\(columns 1 and 3\); rename one$"):
        check_header("f.csv", ["a", "b", "a"])


def test_the_published_moleculenet_files_have_no_repeated_column(data_dir):
    """No shipped MoleculeNet file repeats a header name (sider's five names with commas are
    quoted and read whole), so the published files load as before."""
    folder = data_dir / "MoleculeNet"
    files = sorted(folder.glob("*.csv")) + sorted(folder.glob("*.csv.gz"))
    assert len(files) >= 7
    for path in files:
        opener = gzip.open if path.name.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8-sig", newline="") as f:
            header = [h.strip() for h in next(csv.reader(f))]
        check_header(path, header)  # every column, not just the used ones
        check_text_head(path, read_head(path, gzip_ok=True), gzip_ok=True)
    with open(folder / "sider.csv", newline="") as f:
        sider = next(csv.reader(f))
    assert len(sider) == len(set(sider)) == 28 and sum("," in h for h in sider) == 5


def test_sider_loads_its_27_tasks(data_dir, tmp_path):
    pytest.importorskip("rdkit")
    from graph_transformers.datasets.molecules.moleculenet import MoleculeNetCSV
    ds = MoleculeNetCSV(tmp_path, "sider", "all", data_dir=data_dir, max_rows=20)
    assert ds.num_tasks == 27 and len(ds) + len(ds.skipped) == 20


# ----------------------------------------------------------------------------- no edges
@pytest.mark.parametrize("edges,what", [
    ("", "the edge list is empty (0 bytes)"),
    ("source,target\n", "the edge list holds no edges (a header, comments or blank lines only)"),
    ("# no edges yet\n\n", "the edge list holds no edges (a header, comments or blank lines "
                           "only)")])
def test_an_edge_list_without_edges_is_refused_unless_allowed(tmp_path, edges, what):
    e, n = _write(tmp_path / "edges.csv", edges), _write(tmp_path / "nodes.csv", NODES)
    with pytest.raises(DataError) as err:
        read_node_table(e, n, split=SPLIT)
    assert str(err.value) == (f"{e}: {what}; give one edge per line (source, target), or set "
                              "data.allow_no_edges: true to train on the nodes without edges")
    graph = read_node_table(e, n, split=SPLIT, allow_no_edges=True)
    assert graph.data.edge_index.shape == (2, 0) and graph.data.num_nodes == 8


def test_allow_no_edges_is_a_data_key_that_reaches_the_loader(tmp_path):
    e, n = _write(tmp_path / "edges.csv", ""), _write(tmp_path / "nodes.csv", NODES)
    data = {"name": "node_table", "edges": str(e), "nodes": str(n), "split": SPLIT}
    cfg = build_config({"data": data, "encodings": {"lap_pe": {}}})
    assert cfg.data.allow_no_edges is False
    with pytest.raises(DataError, match="the edge list is empty"):
        resolve_spec(cfg.data)
    cfg = build_config({"data": {**data, "allow_no_edges": True}, "encodings": {"lap_pe": {}}})
    assert resolve_spec(cfg.data).level == "node"
    assert node_table_spec(str(e), str(n), split_rule=SPLIT, allow_no_edges=True).level == "node"
    with pytest.raises(ConfigError, match="data.allow_no_edges apply to data.name: node_table"):
        build_config({"data": {"name": "csl", "allow_no_edges": True}})


# ----------------------------------------------------------------------------- empty inputs
def test_a_one_column_input_keeps_its_empty_rows(tmp_path):
    path = _write(tmp_path / "in.csv", 'smiles\nCCO\n""\n   \n\nc1ccccc1\n"  "\n')
    # an empty line (no characters) is skipped; "" and spaces are inputs, empty ones
    assert read_smiles_csv(path) == ["CCO", "", "", "c1ccccc1", ""]
    assert read_csv_columns(_write(tmp_path / "two.csv", 'id,smiles\na,CCO\n""\n'),
                            exclude=["smiles"]) == {"id": ["a", ""]}


# ----------------------------------------------------------------------------- binary files
@pytest.fixture
def binaries(tmp_path) -> dict[str, Path]:
    buf = tmp_path / "w.zip"
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("data.pkl", b"x")
    return {"pickle": _write(tmp_path / "x.pkl", pickle.dumps({"smiles": ["CCO"]})),
            "pickle.csv": _write(tmp_path / "p.csv", pickle.dumps([1, 2, 3])),
            "zip": _write(tmp_path / "z.csv", buf.read_bytes()),
            "gzip": _write(tmp_path / "g.csv", gzip.compress(NODES.encode())),
            "utf16": _write(tmp_path / "u.csv", NODES.encode("utf-16")),
            "nul": _write(tmp_path / "n.csv", NODES.encode("utf-16-le")),
            "latin1": _write(tmp_path / "l.csv", "id,label\nn0,café\n".encode("latin-1"))}


MESSAGES = {
    "pickle": "x.pkl: this is a Python pickle, not a CSV/text table",
    "pickle.csv": "p.csv: this is a Python pickle, not a CSV/text table",
    "zip": "z.csv: this is a zip archive (e.g. a torch .pt file or an Excel .xlsx workbook), "
           "not a CSV/text table",
    "gzip": "g.csv: this is gzip-compressed, not a CSV/text table; decompress it first (e.g. "
            "gunzip)",
    "utf16": "u.csv: this is UTF-16 text, not UTF-8; save it as UTF-8",
    "nul": "n.csv: holds a NUL byte (offset 1, line 1): a binary file or UTF-16 text, not a "
           "CSV/text table; save it as UTF-8 text",
    "latin1": "l.csv: not UTF-8 text (byte 0xe9 at offset 15, line 2); save it as UTF-8",
}


@pytest.mark.parametrize("kind", sorted(MESSAGES))
def test_a_binary_node_table_or_edge_list_is_named(binaries, tmp_path, kind):
    good_nodes, good_edges = (_write(tmp_path / "nodes.csv", NODES),
                              _write(tmp_path / "edges.csv", EDGES))
    for edges, nodes in ((good_edges, binaries[kind]), (binaries[kind], good_nodes)):
        with pytest.raises(DataError) as err:
            read_node_table(edges, nodes, split=SPLIT)
        assert str(err.value) == f"{tmp_path}/{MESSAGES[kind]}"


@pytest.mark.parametrize("kind", ["pickle", "pickle.csv", "zip", "gzip", "utf16", "nul"])
def test_a_binary_predict_input_is_named(binaries, tmp_path, kind):
    with pytest.raises(DataError) as err:
        read_inputs(binaries[kind])
    assert str(err.value) == f"{tmp_path}/{MESSAGES[kind]}"


@pytest.mark.parametrize("kind", ["pickle", "zip", "gzip", "utf16"])
def test_a_binary_molecule_csv_is_named(binaries, tmp_path, kind):
    pytest.importorskip("rdkit")
    from graph_transformers.datasets.molecules.molecule_csv import load_molecule_csv
    with pytest.raises(DataError) as err:
        load_molecule_csv(tmp_path / "cache", "all", path=binaries[kind], target_columns=["y"])
    assert str(err.value) == f"{tmp_path}/{MESSAGES[kind]}"


def test_a_gzipped_molecule_csv_is_still_read_and_a_gzipped_pickle_named(tmp_path):
    pytest.importorskip("rdkit")
    from graph_transformers.datasets.molecules.molecule_csv import load_molecule_csv
    good = _write(tmp_path / "m.csv.gz", gzip.compress(b"smiles,y\nCCO,1\nCCN,2\n"))
    assert len(load_molecule_csv(tmp_path / "cache", "all", path=good,
                                 target_columns=["y"])) == 2
    bad = _write(tmp_path / "b.csv.gz", gzip.compress(pickle.dumps([1])))
    with pytest.raises(DataError, match="b.csv.gz: this is a Python pickle, not a CSV/text"):
        load_molecule_csv(tmp_path / "cache", "all", path=bad, target_columns=["y"])


def test_a_text_header_that_starts_like_a_binary_format_is_text(tmp_path):
    path = _write(tmp_path / "in.csv", "PAR1,smiles\nx,CCO\n")
    assert read_smiles_csv(path) == ["CCO"]


# ----------------------------------------------------------------------------- fuzzer's finds
def test_an_open_quote_no_longer_swallows_the_rows_below_it(tmp_path):
    """Found by the fuzz suite: ``"`` opening a cell made the CSV reader merge every line up to
    the next ``"`` (or the end of the file) into that cell: rows vanished silently."""
    text = 'smiles,logSolubility\nCCO,1.0\n"CCN,2.0\nCCC,3.0\nc1ccccc1,4.0\n'
    message = (r'molecules.csv line 3: a quoted cell runs over lines 3-5 \(a \'"\' left '
               r"open\?\); a cell cannot hold a line break, so close or remove the quote")
    with pytest.raises(DataError, match=message):
        _molecules(tmp_path, text)
    with pytest.raises(DataError, match=message.replace("molecules", "in")):
        read_smiles_csv(_write(tmp_path / "in.csv", text))
    nodes = NODES.replace("n2,a,2", '"n2,a,2', 1) + 'x",a,9\n'
    with pytest.raises(DataError, match=r"nodes.csv line 4: a quoted cell runs over lines 4-"):
        read_node_table(_write(tmp_path / "edges.csv", EDGES),
                        _write(tmp_path / "nodes.csv", nodes), split=SPLIT)


@pytest.mark.parametrize("sep", ["\x0b", "\x0c", "\x1c", "\x85", "\u2028"])
def test_a_line_separator_csv_does_not_know_adds_no_rows(tmp_path, sep):
    """Found by the fuzz suite: the node-table reader split lines with ``str.splitlines()``,
    which breaks at form feeds, ``\\x1c``, U+2028, ...; the CSV reader (and an editor) does not,
    so ``n1,n2<FF>n5,n7`` gave an edge n5-n7 that is not a line of the file."""
    edges = _write(tmp_path / "edges.csv", EDGES.replace("n1,n2\n", f"n1,n2{sep}n5,n7\n"))
    with pytest.raises(DataError, match=r"edge endpoint\(s\) not in nodes.csv"):
        read_node_table(edges, _write(tmp_path / "nodes.csv", NODES), split=SPLIT)


def test_nul_bytes_in_a_node_table_are_refused(tmp_path):
    """Found by the fuzz suite: a NUL byte was read as text (a label ``'\\x00'``, a class)."""
    nodes = _write(tmp_path / "nodes.csv", NODES.replace("n0,a", "n0,\x00", 1))
    with pytest.raises(DataError, match=r"nodes.csv: holds a NUL byte \(offset 14, line 2\)"):
        read_node_table(_write(tmp_path / "edges.csv", EDGES), nodes, split=SPLIT)


def test_a_split_file_that_is_not_text_is_a_data_error(tmp_path):
    """Found by the fuzz suite: bytes that are not UTF-8 raised UnicodeDecodeError."""
    path = _write(tmp_path / "train.txt", b"\x80")
    with pytest.raises(DataError, match=r"train.txt: not UTF-8 text \(byte 0x80 at offset 0"):
        read_index_file(path, 10, "graphs")
    np.save(tmp_path / "ids.npy", np.arange(3))
    with pytest.raises(DataError, match="ids.npy: this is a NumPy .npy array, not a CSV/text"):
        read_index_file(tmp_path / "ids.npy", 10, "graphs")
    assert read_index_file(_write(tmp_path / "bom.txt", "\ufeff1, 2\n3\n"), 10, "graphs") == \
        [1, 2, 3]


def test_a_yaml_mapping_with_a_list_key_is_a_config_error(tmp_path):
    """Found by the fuzz suite: ``? [a]: 1`` raised TypeError (unhashable key) from the
    duplicate-key check, not a ConfigError."""
    path = _write(tmp_path / "bad.yaml", "? [a]\n: 1\n")
    with pytest.raises(ConfigError, match="bad.yaml: line 1, column 3: invalid YAML: while "
                                          "constructing a mapping.*found unhashable key"):
        load_config(path)


def test_a_model_name_that_is_a_list_is_a_config_error():
    """Found by the fuzz suite: ``model.name=[]`` raised TypeError (unhashable) in validation."""
    for name in ([], ["gt"], {"a": 1}):
        with pytest.raises(ConfigError, match="model: Value error, unknown model name"):
            build_config({"model": {"name": name}})
    with pytest.raises(ConfigError, match="unknown model name"):
        build_config({}, ["model.name=[gt]"])


def test_a_molecule_csv_content_error_is_a_data_error(tmp_path):
    """Found by the fuzz suite: an empty file, a missing column, a label that is no number and
    a file without one valid molecule raised plain ValueError, not the library's DataError."""
    for text, message in (("", "empty file"), ("smiles\nCCO\n", "target columns"),
                          ("smiles,logSolubility\nCCO,abc\n", "label 'abc' is not a number"),
                          ("smiles,logSolubility\nxyz,1\n", "no valid molecule")):
        with pytest.raises(DataError, match=message):
            _molecules(tmp_path, text)
