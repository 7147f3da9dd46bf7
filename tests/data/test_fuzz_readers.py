"""Property-based fuzzing of every reader that takes a user's file (issue 54, item 7): a molecule
CSV (``data.path``), a node table and its edge list (``data.name: node_table``), a YAML config
and its ``--set key=value`` overrides, graph-file split files (``data.split_files``) and the
node table's ``.npz`` split (``data.split``).

Each property feeds a reader valid files, valid files serialized other ways (line ends, a byte
order mark, quoting, padding, blank lines), and damaged ones: random bytes, truncations, other
encodings (UTF-16, Latin-1), other delimiters, byte edits, a repeated header column, a binary
file. The reader must either load the file cleanly with the right number of rows (counted here
by the documented rules, independently of the reader), or raise one of the library's own errors
(:class:`~graph_transformers.errors.DataError`, :class:`~graph_transformers.errors.RunError`,
:class:`~graph_transformers.training.config.ConfigError`) whose message is one line. Any other
exception, a message over several lines, or a load that gains or loses rows fails the property.

The runs are deterministic (``derandomize=True``, no example database) and bounded:
``max_examples`` per property is in :data:`EXAMPLES` (docs/reliability.md states the counts).
"""
from __future__ import annotations

import csv
import io
import tempfile
from functools import partial
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from graph_transformers.datasets.user.graph_list import read_index_file
from graph_transformers.datasets.user.node_columns import npz_masks as _npz_masks
from graph_transformers.datasets.user.node_table_parser import read_node_table
from graph_transformers.errors import DataError, RunError
from graph_transformers.training.config import ConfigError, build_config, load_config
from graph_transformers.training.config_yaml import apply_overrides, parse_override

REPO = Path(__file__).resolve().parents[2]
#: the library's own error types: what a bad file may raise
LIBRARY_ERRORS = (DataError, RunError, ConfigError)
#: examples per property (docs/reliability.md, "Fuzzed readers", states these counts)
EXAMPLES = {"molecule_csv": 150, "node_table": 200, "edge_list": 200, "config_text": 200,
            "config_structured": 200, "overrides": 200, "split_file": 200, "npz_split": 100}


def _settings(name: str) -> settings:
    return settings(max_examples=EXAMPLES[name], deadline=None, derandomize=True,
                    database=None, suppress_health_check=[
                        HealthCheck.too_slow, HealthCheck.data_too_large,
                        HealthCheck.function_scoped_fixture])  # the autouse cache fixture


def _loud(read):
    """``(result, None)`` for a clean load, ``(None, error)`` for a library error whose message
    is one line; any other exception propagates (and fails the property)."""
    try:
        result = read()
    except LIBRARY_ERRORS as err:
        event(f"refused: {type(err).__name__}")  # --hypothesis-show-statistics counts them
        message = str(err)
        assert message and message.splitlines() == [message], repr(message)
        assert "Traceback" not in message
        return None, err
    event("loaded")
    return result, None


# ----------------------------------------------------------------------------- damage
#: a binary file's first bytes: pickle, zip (torch .pt, xlsx), gzip, NumPy, NUL-laden
BINARY_HEADS = [b"\x80\x04\x95\x10\x00\x00\x00", b"PK\x03\x04\x14\x00\x00\x00",
                b"\x1f\x8b\x08\x00\x00\x00", b"\x93NUMPY\x01\x00v\x00", b"\x00\x01\x02\x03"]


@st.composite
def damaged(draw, valid: bytes, text: str) -> bytes:
    """``valid`` (the bytes of ``text``) as given, written another valid way (Windows line
    ends, a byte order mark, blank lines: the same rows), or damaged one of the ways a user's
    file is."""
    how = draw(st.sampled_from(["asis", "crlf", "bom", "blank", "truncate", "replace", "insert",
                                "delete", "random", "utf16", "latin1", "delimiter", "binary",
                                "repeat", "quote", "separator"]))
    data = bytearray(valid)
    if how == "crlf":
        return valid.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    if how == "bom":
        return valid if valid.startswith(b"\xef\xbb\xbf") else b"\xef\xbb\xbf" + valid
    if how == "blank":  # an empty line after the first line break, and one at the end
        return valid.replace(b"\n", b"\n\n", 1) + b"\n"
    if how == "truncate":
        return bytes(data[:draw(st.integers(0, len(data)))])
    if how in ("replace", "insert", "delete"):
        for _ in range(draw(st.integers(1, 4))):
            at = draw(st.integers(0, max(len(data) - 1, 0)))
            if how == "delete":
                del data[at:at + draw(st.integers(1, 8))]
            else:
                chunk = draw(st.binary(min_size=1, max_size=4) | st.sampled_from(
                    [b'"', b",", b"\n", b"\r", b";", b"\t", b"\xe9", b"\x00", b"#", b" "]))
                data[at:at + (len(chunk) if how == "replace" else 0)] = chunk
        return bytes(data)
    if how == "quote":  # a '"' opening a cell that is never closed
        starts = [0] + [i + 1 for i, b in enumerate(valid) if b in b",\n"]
        at = draw(st.sampled_from(starts))
        return valid[:at] + b'"' + valid[at:]
    if how == "separator":  # a line end replaced by one str.splitlines() knows, CSV does not
        ends = [i for i, c in enumerate(text) if c == "\n"] or [0]
        at = draw(st.sampled_from(ends))
        return (text[:at] + draw(st.sampled_from("\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"))
                + text[at + 1:]).encode()
    if how == "random":
        return draw(st.binary(max_size=300))
    if how == "utf16":
        return text.encode(draw(st.sampled_from(["utf-16", "utf-16-le", "utf-16-be"])))
    if how == "latin1":  # a non-ASCII character written as Latin-1
        plain = text.lstrip("\ufeff")  # Latin-1 has no byte order mark
        at = draw(st.integers(0, len(plain)))
        return (plain[:at] + draw(st.sampled_from("éüñ°")) + plain[at:]).encode("latin-1",
                                                                              "replace")
    if how == "delimiter":
        return text.replace(",", draw(st.sampled_from([";", "\t", " ", "|"]))).encode()
    if how == "binary":
        return draw(st.sampled_from(BINARY_HEADS)) + valid
    if how == "repeat":  # the header's first column once more, at its end
        head, _, rest = text.partition("\n")
        return (head + "," + head.split(",")[0] + "\n" + rest).encode()
    return valid


def _text_or_none(data: bytes) -> str | None:
    """The documented reading of a user's text file: UTF-8 (a leading byte order mark
    dropped), no NUL byte; ``None`` where the file must be refused."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return None if "\x00" in text else text.removeprefix("\ufeff")


def _records(text: str, **fmt) -> list[list[str]] | None:
    """CSV records of ``text`` (``None`` where a line cannot be parsed, or a cell holds a line
    break: both must be refused)."""
    try:
        records = list(csv.reader(io.StringIO(text, newline=""), **fmt))
    except csv.Error:
        return None
    if any("\n" in c or "\r" in c for r in records for c in r):
        return None
    return records


# ----------------------------------------------------------------------------- molecule CSV
SMILES = ["C", "CC", "CCO", "CCN", "c1ccccc1", "C1CCCCC1", "CC(=O)O", "c1ccncc1", "CCCl", "OCCO"]


@st.composite
def molecule_csv(draw) -> tuple[str, int]:
    """A valid molecule CSV (``smiles,y``; maybe an extra column), serialized one of the ways a
    user's file may be, and its number of data rows."""
    rows = draw(st.lists(st.tuples(st.sampled_from(SMILES),
                                   st.floats(-1e6, 1e6).map(repr) | st.just("")),
                         min_size=1, max_size=8))
    extra = draw(st.booleans())
    quote, pad = draw(st.booleans()), draw(st.booleans())
    end = draw(st.sampled_from(["\n", "\r\n", "\r"]))

    def line(cells):
        cells = [f" {c} " if pad else c for c in cells]
        return ",".join(f'"{c}"' if quote else c for c in cells)

    header = ["smiles", "y"] + (["id"] if extra else [])
    lines = [line(header)] + [line([s, y] + ([f"m{i}"] if extra else []))
                              for i, (s, y) in enumerate(rows)]
    for _ in range(draw(st.integers(0, 2))):  # blank lines (skipped, as documented)
        lines.insert(draw(st.integers(1, len(lines))), draw(st.sampled_from(["", "  ", ","])))
    text = end.join(lines) + (end if draw(st.booleans()) else "")
    return ("\ufeff" if draw(st.booleans()) else "") + text, len(rows)


def _molecule_rows(data: bytes) -> int | None:
    """The data rows of a molecule CSV by the documented rules (``None``: must be refused): CSV
    records below the header with a non-blank cell; the header has ``smiles`` and ``y`` once."""
    text = _text_or_none(data)
    records = None if text is None else _records(text)
    if not records:
        return None
    header = [h.strip() for h in records[0]]
    if header.count("smiles") != 1 or header.count("y") != 1:
        return None
    return sum(1 for r in records[1:] if r and any(c.strip() for c in r))


@_settings("molecule_csv")
@given(st.data())
def test_molecule_csv_loads_every_row_or_fails_loudly(data):
    pytest.importorskip("rdkit")
    from graph_transformers.datasets.molecules.molecule_csv import load_molecule_csv
    text, num_rows = data.draw(molecule_csv())
    valid = text.encode()
    raw = data.draw(damaged(valid, text))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "molecules.csv"
        path.write_bytes(raw)
        ds, err = _loud(lambda: load_molecule_csv(Path(tmp) / "cache", "all", path=path,
                                                  target_columns=["y"], task="regression"))
    if raw == valid:
        assert err is None, err
    if ds is not None:
        expected = _molecule_rows(raw)
        assert expected is not None, "a file that must be refused was loaded"
        record = ds.provenance
        assert record["num_rows"] == expected, (record["num_rows"], expected)
        assert len(ds) + len(ds.skipped) == expected
        if raw == valid:
            assert expected == num_rows and len(ds) == num_rows


# ----------------------------------------------------------------------------- node table + edges
NUM_NODES = 12
NODES = "id,label,f\n" + "".join(f"n{i},{'ab'[i % 2]},{i * 0.5}\n" for i in range(NUM_NODES))
EDGES = "source,target\n" + "".join(f"n{i},n{(i + 1) % NUM_NODES}\n" for i in range(NUM_NODES))


def _delimited(text: str, comments: bool) -> list[list[str]] | None:
    """The non-blank rows (stripped cells) of a node table or an edge list by the documented
    rules: the delimiter (tab, comma, semicolon, else spaces) read off the first non-blank line,
    ``#`` lines comments in an edge list; ``None``: must be refused."""
    lines = io.StringIO(text, newline="").readlines()
    if comments:
        lines = ["\n" if ln.lstrip().startswith("#") else ln for ln in lines]
    first = next((ln for ln in lines if ln.strip()), "")
    delim = "\t" if "\t" in first else "," if "," in first else ";" if ";" in first else None
    if delim is None:
        return [ln.split() for ln in lines if ln.strip()]
    records = _records("".join(lines), delimiter=delim, strict=True)
    if records is None:
        return None
    return [[c.strip() for c in r] for r in records if r and any(c.strip() for c in r)]


def _node_rows(data: bytes) -> int | None:
    text = _text_or_none(data)
    rows = None if text is None else _delimited(text, comments=False)
    if not rows or len(set(rows[0])) != len(rows[0]):
        return None
    return len(rows) - 1


def _edge_count(data: bytes, ids: set[str]) -> int | None:
    """Directed edges after ``undirected`` and dropping duplicates, by the documented rules (a
    first line neither of whose ids is a node is a header)."""
    text = _text_or_none(data)
    rows = None if text is None else _delimited(text, comments=True)
    if rows is None:
        return None
    if rows and len(rows[0]) >= 2 and rows[0][0] not in ids and rows[0][1] not in ids:
        if rows[0][0] == rows[0][1]:
            return None  # a header naming one column twice
        rows = rows[1:]
    if any(len(r) < 2 or r[0] not in ids or r[1] not in ids for r in rows) or not rows:
        return None
    return len({p for r in rows for p in ((r[0], r[1]), (r[1], r[0]))})


def _read_graph(edges: bytes, nodes: bytes):
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "edges.csv").write_bytes(edges)
        (Path(tmp) / "nodes.csv").write_bytes(nodes)
        return _loud(lambda: read_node_table(Path(tmp) / "edges.csv", Path(tmp) / "nodes.csv",
                                             split="random:0.5,0.25,0.25", seed=0))


@_settings("node_table")
@given(st.data())
def test_node_table_reads_every_node_or_fails_loudly(data):
    raw = data.draw(damaged(NODES.encode(), NODES))
    graph, err = _read_graph(EDGES.encode(), raw)
    if raw == NODES.encode():
        assert err is None, err
    if graph is not None:
        expected = _node_rows(raw)
        assert expected is not None, "a file that must be refused was loaded"
        assert int(graph.data.num_nodes) == len(graph.node_ids) == expected


@_settings("edge_list")
@given(st.data())
def test_edge_list_reads_every_edge_or_fails_loudly(data):
    raw = data.draw(damaged(EDGES.encode(), EDGES))
    graph, err = _read_graph(raw, NODES.encode())
    if raw == EDGES.encode():
        assert err is None, err
    if graph is not None:
        expected = _edge_count(raw, {f"n{i}" for i in range(NUM_NODES)})
        assert expected is not None, "a file that must be refused was loaded"
        assert int(graph.data.edge_index.size(1)) == expected
        assert int(graph.data.num_nodes) == NUM_NODES


# ----------------------------------------------------------------------------- configs
CONFIG = REPO / "src/graph_transformers/configs/csl_gt.yaml"
BASE = yaml.safe_load(CONFIG.read_text())
#: keys an override or a structured config sets (sections, leaves and unknown ones)
KEYS = ["model.name", "model.hidden_dim", "model.num_heads", "model.pe", "model",
        "data.name", "data.batch_size", "data.path", "data.target_columns", "data.options",
        "data.allow_no_edges", "data.split_files", "optim.lr", "optim.scheduler",
        "optim.scheduler.name", "encodings.lap_pe", "encodings.lap_pe.k", "trainer.max_epochs",
        "seed", "name", "base", "nope.key", "model.depth"]
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12), st.floats(),
                    st.text(max_size=12))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text(max_size=6) | st.integers(0, 3), inner,
                                        max_size=3), max_leaves=6)


def _load_text(data: bytes):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "config.yaml"
        path.write_bytes(data)
        return _loud(lambda: load_config(path))


@_settings("config_text")
@given(st.data())
def test_a_config_file_loads_or_fails_loudly(data):
    text = CONFIG.read_text()
    raw = data.draw(damaged(text.encode(), text) | st.text(max_size=200).map(str.encode)
                    | st.sampled_from(["? [a]\n: 1\n", "{[1]: 2}", "model: {name: [gt]}\n",
                                       "a: &x [*x]\n", "- 1\n", "''\n"]).map(str.encode))
    config, err = _load_text(raw)
    if raw == text.encode():
        assert err is None, err
    assert config is None or config.model.name


@_settings("config_structured")
@given(st.dictionaries(st.sampled_from(KEYS), VALUES, min_size=1, max_size=3))
def test_a_config_with_any_values_validates_or_fails_loudly(values):
    raw = dict(BASE)
    for key, value in values.items():
        node, *path = key.split(".")
        parent = raw  # copies along the path: BASE is never changed
        for part in path:
            child = parent.get(node)
            parent[node] = dict(child) if isinstance(child, dict) else {}
            parent, node = parent[node], part
        parent[node] = value
    _loud(lambda: build_config(raw))
    _loud(lambda: _load_text(yaml.safe_dump(raw).encode()))


@_settings("overrides")
@given(st.lists(st.text(max_size=30) | st.builds(
    lambda k, v: f"{k}={v}", st.sampled_from(KEYS),
    VALUES.map(lambda v: yaml.safe_dump(v, default_flow_style=True).strip())
    | st.text(max_size=12)), min_size=1, max_size=3))
def test_overrides_parse_or_fail_loudly(overrides):
    for text in overrides:
        parsed, err = _loud(partial(parse_override, text))
        if parsed is not None:
            parts, _ = parsed
            assert parts and all(parts) and ".".join(parts) == text.split("=", 1)[0].strip()
    _loud(lambda: apply_overrides(BASE, overrides))
    _loud(lambda: build_config(BASE, overrides))


# ----------------------------------------------------------------------------- split files
SIZE = 20


def _ids(data: bytes) -> list[int] | None:
    """The ids of a split file by the documented rules (integers between commas, spaces or new
    lines; each in range, once); ``None``: must be refused."""
    text = _text_or_none(data)
    if text is None:
        return None
    try:
        ids = [int(t) for t in text.replace(",", " ").split()]
    except ValueError:
        return None
    ok = all(0 <= i < SIZE for i in ids) and len(set(ids)) == len(ids)
    return ids if ok else None


@_settings("split_file")
@given(st.data())
def test_a_split_file_reads_its_ids_or_fails_loudly(data):
    ids = data.draw(st.lists(st.integers(0, SIZE - 1), unique=True, max_size=10))
    sep = data.draw(st.sampled_from([",", " ", "\n", ", "]))
    text = sep.join(map(str, ids)) + "\n"
    raw = data.draw(damaged(text.encode(), text))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "train.txt"
        path.write_bytes(raw)
        got, err = _loud(lambda: read_index_file(path, SIZE, "graphs"))
    if raw == text.encode():
        assert got == ids, err
    if got is not None:
        assert got == _ids(raw)


@_settings("npz_split")
@given(st.data())
def test_an_npz_split_reads_its_masks_or_fails_loudly(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    masks = {f"{s}_mask": rng.random(SIZE) < 0.3 for s in ("train", "val", "test")}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "split.npz"
        np.savez(path, **masks)
        valid = path.read_bytes()
        raw = data.draw(damaged(valid, valid.decode("latin-1")))
        path.write_bytes(raw)
        got, err = _loud(lambda: _npz_masks(path, SIZE))
    if raw == valid:
        assert err is None, err
    if got is not None:
        assert set(got) == {"train", "val", "test"}
        assert all(m.dtype == bool and m.shape == (SIZE,) for m in got.values())


def test_the_example_counts_are_the_documented_ones():
    doc = (REPO / "docs" / "reliability.md").read_text()
    for name, count in EXAMPLES.items():
        assert f"`{name}` {count}" in doc, name
    assert f"{sum(EXAMPLES.values()):,} in all" in doc
