"""Coverage of the seed papers' own-model cells (issue 53): the cells file, its configs, and the
coverage table of docs/reproduction.md."""
import math
import re
from collections import Counter
from pathlib import Path

import pytest

from graph_transformers.cli import main
from graph_transformers.training.config import load_config
from graph_transformers.training.coverage import (COVERAGE_END, COVERAGE_START, committed_table,
                                                  coverage_markdown, coverage_rows, load_cells,
                                                  load_papers, own_model_configs, paper_models,
                                                  parse_printed, seed_paper, update_coverage)

REPO = Path(__file__).resolve().parents[2]
PAPERS = REPO.parent / "shared" / "papers"
PAPER_FILES = {"gt": "gt_dwivedi_bresson_2020.txt",
               "egt": "egt_hussain_zaki_subramanian_2021.txt",
               "grpe": "grpe_park_et_al_2022.txt"}
CELLS = load_cells()
PAPERS_OF_CELLS = load_papers()
BY_ID = {c["id"]: c for c in CELLS}

#: the own-model cells each table of the papers prints (read from the paper texts):
#: GT Table 1: {ZINC, CLUSTER, PATTERN} × {LayerNorm, BatchNorm} × {no PE, LapPE} ×
#: {sparse, full}; Table 2: GT (Ours) on the three datasets; Table 3: the three datasets ×
#: {x, L, W}.
#: EGT Table 1: PATTERN ≈100k and ≈500k × {EGT, -EPE, -SPE}, CLUSTER ≈500k × 3, MNIST and
#: CIFAR10 ≈100k × {EGT, -SPE, -SPE + DO}, TSP ≈100k and ≈500k × {EGT, -SPE}, ZINC ≈100k
#: and ≈500k × {EGT, -EPE, -SPE, -SPE + DO} = 27; Table 2: EGT_SMALL and EGT × {Train,
#: Validate} MAE;
#: Table 3: PATTERN, CLUSTER, TSP, ZINC-FULL × 6 rows, MNIST, CIFAR10, ZINC × 7 rows (with
#: -SPE + DO), PCQM4M-LSC × 3 = 48; Table 7: 6 datasets × {EGT, EGT-U}; Table 8: 7 datasets ×
#: {un-augmented, augmented}.
#: GRPE Table 2: 1; Table 3: 1; Table 4: Standard, Large; Table 5: ≈100k, ≈500k; Table 6: 1;
#: Table 7: Train and Validate MAE; Table 8: Standard (Validate, Test-dev), Large (Validate);
#: Table 9: 6 rows; Table 10: 2 rows.
#: GNN+ (no seed paper, no text under ../shared/papers; issue 57) lists only its cells that have a
#: config here: Table 2: ZINC × {GCN+, GIN+, GatedGCN+}; Table 3: {Peptides-func,
#: Peptides-struct} × {GCN+, GatedGCN+}.
EXPECTED = {("gt", "Table 1"): 24, ("gt", "Table 2"): 3, ("gt", "Table 3"): 9,
            ("egt", "Table 1"): 27, ("egt", "Table 2"): 4, ("egt", "Table 3"): 48,
            ("egt", "Table 7"): 12, ("egt", "Table 8"): 14,
            ("grpe", "Table 2"): 1, ("grpe", "Table 3"): 1, ("grpe", "Table 4"): 2,
            ("grpe", "Table 5"): 2, ("grpe", "Table 6"): 1, ("grpe", "Table 7"): 2,
            ("grpe", "Table 8"): 3, ("grpe", "Table 9"): 6, ("grpe", "Table 10"): 2,
            ("gnnplus", "Table 2"): 3, ("gnnplus", "Table 3"): 4}


def test_every_table_of_the_papers_has_all_its_cells():
    assert Counter((c["paper"], c["table"]) for c in CELLS) == EXPECTED
    assert len(BY_ID) == len(CELLS), "duplicate cell ids"
    # GT Table 1 is a full grid
    grid = {c["id"] for c in CELLS if c["paper"] == "gt" and c["table"] == "Table 1"}
    assert grid == {f"gt-t1-{ds}-{n}-{pe}-{g}" for ds in ("zinc", "cluster", "pattern")
                    for n in ("bn", "ln") for pe in ("nope", "lappe") for g in ("sparse", "full")}


@pytest.mark.parametrize("cell", CELLS, ids=lambda c: c["id"])
def test_cell_entry(cell):
    assert cell["paper"] in PAPERS_OF_CELLS
    assert sum(k in cell for k in ("config", "same_as", "reason")) == 1
    assert parse_printed(cell["printed"]) == (cell["value"], cell["std"])
    for key in ("table", "row", "dataset", "budget", "metric"):
        assert cell[key], key
    if "reason" in cell:
        assert cell["reason"].strip()
    if "same_as" in cell:
        target = BY_ID[cell["same_as"]]
        assert "same_as" not in target and target["paper"] == cell["paper"]
        assert cell["note"].strip()
        if (target["value"], target["std"]) != (cell["value"], cell["std"]):
            assert target["printed"] in cell["note"] or "prints" in cell["note"]


@pytest.mark.slow
@pytest.mark.parametrize("cell", [c for c in CELLS if "config" in c], ids=lambda c: c["id"])
def test_config_reference_is_its_cell(cell):
    path = REPO / cell["config"]
    assert path.is_file(), cell["config"]
    config = load_config(path)
    ref = config.reference
    assert ref is not None, f"{cell['config']} has no reference"
    scale = cell.get("config_scale", 1)
    assert math.isclose(ref.value, cell["value"] * scale, rel_tol=0, abs_tol=1e-9)
    if cell["std"] is None:
        assert ref.std is None
    else:
        assert math.isclose(ref.std, cell["std"] * scale, rel_tol=0, abs_tol=1e-9)
    assert seed_paper(ref.source) == cell["paper"]
    assert re.search(rf"\b{cell['table']}\b", ref.source), (ref.source, cell["table"])
    assert config.to_dict()["model"]["name"] in paper_models(PAPERS_OF_CELLS[cell["paper"]])
    if cell["paper"] in ("gt", "egt"):
        assert ref.seeds in (None, 4)


def test_every_own_model_config_is_one_cells_config(monkeypatch):
    monkeypatch.chdir(REPO)
    own = own_model_configs("configs", relative_to=REPO)
    used = Counter(c["config"] for c in CELLS if "config" in c)
    assert sorted(own) == sorted(used), (sorted(set(own) - set(used)), sorted(set(used) - set(own)))
    assert max(used.values()) == 1, [k for k, n in used.items() if n > 1]


def test_paper_models_are_one_name_or_a_list():
    assert paper_models({"model": "gt"}) == ("gt",)
    assert paper_models(PAPERS_OF_CELLS["gnnplus"]) == ("gcn", "gine", "gatedgcn")
    assert seed_paper("Luo, Shi & Wu (ICML 2025) GNN+, arXiv:2502.09263v2, Table 2, ZINC, "
                      "GatedGCN+") == "gnnplus"
    for bad in (None, [], [""], 3):
        with pytest.raises(ValueError, match="model name or a list"):
            paper_models({"model": bad})


def test_seed_paper_of_a_source():
    assert seed_paper("Dwivedi & Bresson (2020), Table 1, ZINC, sparse graph") == "gt"
    assert seed_paper("Park et al. (2022) GRPE, Table 5, PATTERN ≈100k, GRPE") == "grpe"
    assert seed_paper("Dwivedi et al., Benchmarking GNNs (2020), as cited in Hussain et al. "
                      "(2021, arXiv:2108.03348v1) EGT Table 1, ZINC, GCN ≈100k") is None
    assert seed_paper("Hussain, Zaki & Subramanian (KDD 2022) EGT, as listed in ...") is None


@pytest.mark.skipif(not PAPERS.is_dir(), reason="the papers' texts are not beside the checkout")
def test_printed_numbers_are_in_the_paper_texts():
    texts = {k: re.sub(r"\s+|\\pm|±|</?b>", "", (PAPERS / f).read_text())
             for k, f in PAPER_FILES.items()}
    missing = [c["id"] for c in CELLS if c["paper"] in texts
               and "".join(p.strip() for p in c["printed"].split("±")) not in texts[c["paper"]]]
    assert not missing


def test_committed_coverage_table_is_fresh(monkeypatch):
    """docs/reproduction.md's coverage table is regenerated, never edited."""
    monkeypatch.chdir(REPO)
    rows = coverage_rows("results", "configs", relative_to=REPO)
    assert len(rows) == len(CELLS)
    assert committed_table(REPO / "docs/reproduction.md") == coverage_markdown(rows)


def test_update_coverage_rewrites_only_its_section(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text(f"before\n{COVERAGE_START}\nold\n{COVERAGE_END}\nafter\n")
    assert update_coverage(doc, "new\n")
    assert doc.read_text() == f"before\n{COVERAGE_START}\nnew\n{COVERAGE_END}\nafter\n"
    assert not update_coverage(doc, "new\n")
    (tmp_path / "bare.md").write_text("no markers\n")
    with pytest.raises(ValueError, match="markers"):
        update_coverage(tmp_path / "bare.md", "x\n")


def test_table_command_writes_the_coverage(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    doc = tmp_path / "doc.md"
    doc.write_text(f"# doc\n{COVERAGE_START}\n{COVERAGE_END}\n")
    assert main(["table", "results", "--out", str(tmp_path / "repro"),
                 "--coverage", str(doc)]) == 0
    assert committed_table(doc) == committed_table(REPO / "docs/reproduction.md")
