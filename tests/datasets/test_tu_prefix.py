"""TU fold index files whose prefix is not the dataset's name (issue 57, item 4b):
``PROTEINS_full_*.index`` beside ``PROTEINS.zip`` were ignored without a word. They now get one
WARNING naming them and the option that reads them, ``data.options.index_prefix``, which works.

The tests build tiny TU-format zips in ``tmp_path`` (no network, no shared data)."""
from __future__ import annotations

import logging
from pathlib import Path

import pytest
from test_tu_user import GOOD, SPLITS, _cfg, _tu_zip

from graph_transformers.data.cache import DataNotFoundError
from graph_transformers.data.registry import load_splits
from graph_transformers.datasets import tu_folds
from graph_transformers.datasets.tu import TU
from graph_transformers.errors import UnsafeNameError


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    """Logs reach caplog (an earlier CLI test may have turned propagation off) and each test
    starts without the once-per-process memory of warned prefixes."""
    monkeypatch.setattr(logging.getLogger("graph_transformers"), "propagate", True)
    monkeypatch.setattr(tu_folds, "_warned", set())


def _folds(data: Path, prefix: str, lines=GOOD) -> list[Path]:
    paths = []
    for split, folds in lines.items():
        path = data / "TU" / f"{prefix}_{split}.index"
        path.write_text("\n".join(",".join(map(str, ids)) for ids in folds) + "\n")
        paths.append(path)
    return paths


def _warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_index_files_of_another_prefix_are_named_in_one_warning(tmp_path, caplog):
    data = tmp_path / "data"
    _tu_zip(data, "TOYP")
    _folds(data, "TOYP_full")
    cfg = _cfg(tmp_path, "TOYP")
    with caplog.at_level(logging.INFO, logger="graph_transformers"):
        splits = load_splits(cfg.data, cfg.encodings)
    assert splits["test"].split_rule["rule"] == "stratified_folds"  # the files are not used
    found = _warnings(caplog)
    assert len(found) == 1, found  # once, though the spec and three splits each read the folder
    assert ("TU TOYP: " in found[0] and "holds the fold index files TOYP_full_test.index, "
            "TOYP_full_train.index, TOYP_full_val.index, whose prefix 'TOYP_full' is not the "
            "dataset's name, so they are not used (the split comes from the seeded stratified "
            "folds); set data.options.index_prefix: TOYP_full to use them") in found[0]


def test_data_options_index_prefix_reads_those_files(tmp_path, caplog):
    data = tmp_path / "data"
    _tu_zip(data, "TOYQ")
    paths = _folds(data, "TOYQ_full")
    cfg = _cfg(tmp_path, "TOYQ", fold=1, options={"index_prefix": "TOYQ_full"})
    with caplog.at_level(logging.INFO, logger="graph_transformers"):
        splits = load_splits(cfg.data, cfg.encodings)
    assert [splits[s].indices_in_full for s in SPLITS] == [GOOD[s][1] for s in SPLITS]
    rule = splits["train"].split_rule
    assert rule["rule"] == "index_files" and (rule["num_folds"], rule["fold"]) == (2, 1)
    assert sorted(rule["files"]) == sorted(str(p) for p in paths)
    assert not _warnings(caplog)


def test_own_index_files_are_used_and_the_others_still_named(tmp_path, caplog):
    data = tmp_path / "data"
    _tu_zip(data, "TOYR")
    _folds(data, "TOYR")
    _folds(data, "toyr_v2")  # same start, any case
    with caplog.at_level(logging.INFO, logger="graph_transformers"):
        ds = TU(tmp_path / "cache", "TOYR", split="test", fold=0, data_dir=data)
    assert ds.indices_in_full == GOOD["test"][0] and ds.split_rule["rule"] == "index_files"
    found = _warnings(caplog)
    assert len(found) == 1 and "prefix 'toyr_v2'" in found[0] and \
        "(the split comes from TOYR_*.index)" in found[0]


def test_other_datasets_folds_and_unrelated_files_beside_other_archives_are_not_named(
        tmp_path, caplog):
    """``ENZYMES_*.index`` beside ``ENZYMES.zip`` belong to ENZYMES (the shared data folder);
    an unrelated prefix in a folder of several archives belongs to none in particular."""
    data = tmp_path / "data"
    _tu_zip(data, "TOYS")
    _tu_zip(data, "OTHER")
    _folds(data, "OTHER")
    _folds(data, "folds_v1")
    with caplog.at_level(logging.INFO, logger="graph_transformers"):
        TU(tmp_path / "cache", "TOYS", split="train", data_dir=data)
    assert not _warnings(caplog)
    assert tu_folds.foreign_index_files(data / "TU", "TOYS") == {}
    # alone with its archive, any stray prefix is meant for it (OTHER's files are strays now)
    (data / "TU" / "OTHER.zip").unlink()
    assert list(tu_folds.foreign_index_files(data / "TU", "TOYS")) == ["OTHER", "folds_v1"]


def test_a_prefix_without_its_files_or_with_a_path_is_refused(tmp_path):
    data = tmp_path / "data"
    _tu_zip(data, "TOYT")
    with pytest.raises(DataNotFoundError, match=r"TU TOYT: data.options.index_prefix is "
                                                r"'TOYT_full', but .*TU holds no "
                                                r"TOYT_full_train.index, TOYT_full_val.index and "
                                                r"TOYT_full_test.index"):
        TU(tmp_path / "cache", "TOYT", data_dir=data, index_prefix="TOYT_full")
    with pytest.raises(UnsafeNameError, match="data.options.index_prefix '../x' holds a path"):
        TU(tmp_path / "cache", "TOYT", data_dir=data, index_prefix="../x")
