"""Config validation: unknown keys and wrong types name the key; overrides; base files."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from graph_transformers.training.config import ConfigError, build_config, load_config
from graph_transformers.training.config_yaml import parse_override

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_every_shipped_config_validates():
    paths = sorted((REPO / "configs").rglob("*.yaml")) + \
        sorted((REPO / "src/graph_transformers/configs").glob("*.yaml"))
    assert paths
    for p in paths:
        cfg = load_config(p)
        assert cfg.model.name
        # the CSV, graph-file and node-table templates name a user's files
        if cfg.data.path is None and cfg.data.name != "node_table":
            from graph_transformers.data.registry import get_spec
            from graph_transformers.training.build import make_model
            make_model(cfg, get_spec(cfg.data.name))


def test_unknown_key_is_named():
    with pytest.raises(ConfigError, match=r"model\.hiden_dim: unknown key"):
        build_config({"model": {"name": "gt", "hiden_dim": 64}, "encodings": {"lap_pe": {}}})
    with pytest.raises(ConfigError, match=r"trainer\.max_epoch is not an argument of "
                                          r"lightning\.Trainer \(did you mean 'max_epochs'"):
        build_config({"trainer": {"max_epoch": 3}, "encodings": {"lap_pe": {}}})
    with pytest.raises(ConfigError, match="colour: unknown key"):
        build_config({"colour": "red", "encodings": {"lap_pe": {}}})


def test_wrong_type_is_named():
    with pytest.raises(ConfigError, match=r"optim\.lr"):
        build_config({"optim": {"lr": "fast"}, "encodings": {"lap_pe": {}}})
    with pytest.raises(ConfigError, match=r"model\.num_layers"):
        build_config({"model": {"num_layers": -1}, "encodings": {"lap_pe": {}}})
    with pytest.raises(ConfigError, match=r"model\.norm"):
        build_config({"model": {"norm": "group"}, "encodings": {"lap_pe": {}}})


def test_unknown_model_name():
    with pytest.raises(ConfigError, match="unknown model name 'gpt'"):
        build_config({"model": {"name": "gpt"}})


def test_cross_checks():
    with pytest.raises(ConfigError, match="encodings.lap_pe is not set"):
        build_config({"model": {"pe": "lap"}})
    with pytest.raises(ConfigError, match="divisible"):
        build_config({"model": {"hidden_dim": 30, "num_heads": 8}, "encodings": {"lap_pe": {}}})
    with pytest.raises(ConfigError, match="full_graph"):
        build_config({"model": {"full_graph": True, "use_edge_features": True},
                      "encodings": {"lap_pe": {}}})


def test_overrides():
    cfg = build_config({"encodings": {"lap_pe": {"k": 8}}},
                       ["optim.lr=1e-3", "trainer.max_epochs=7", "model.pe=null",
                        "encodings.lap_pe=null", "data.name=zinc"])
    assert cfg.optim.lr == pytest.approx(1e-3)
    assert cfg.trainer.max_epochs == 7
    assert cfg.model.pe is None and cfg.encodings.lap_pe is None
    assert parse_override("a.b=[1, 2]") == (["a", "b"], [1, 2])
    with pytest.raises(ConfigError, match="key.subkey=value"):
        parse_override("optim.lr")
    with pytest.raises(ConfigError, match="unknown key"):
        build_config({"encodings": {"lap_pe": {}}}, ["optim.learning_rate=1"])


def test_base_files_merge(tmp_path):
    (tmp_path / "a.yaml").write_text(yaml.safe_dump(
        {"model": {"name": "gt", "hidden_dim": 32, "num_heads": 4},
         "encodings": {"lap_pe": {"k": 4}}, "seed": 1}))
    (tmp_path / "b.yaml").write_text(yaml.safe_dump({"base": "a.yaml", "model": {"num_heads": 8}}))
    cfg = load_config(tmp_path / "b.yaml")
    assert (cfg.model.hidden_dim, cfg.model.num_heads, cfg.seed) == (32, 8, 1)
    (tmp_path / "c.yaml").write_text("base: c.yaml\n")
    with pytest.raises(ConfigError, match="cycle"):
        load_config(tmp_path / "c.yaml")
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "missing.yaml")


def test_zinc_config_mirrors_paper():
    from graph_transformers.data.registry import get_spec
    from graph_transformers.models import count_parameters
    from graph_transformers.training.build import make_model
    cfg = load_config(REPO / "configs/zinc/gt.yaml")
    assert count_parameters(make_model(cfg, get_spec("zinc"))) == 588929  # paper Table 1
    cfg = load_config(REPO / "configs/zinc/gt_nope.yaml")
    assert count_parameters(make_model(cfg, get_spec("zinc"))) == 588353
    cfg = load_config(REPO / "configs/zinc/gt_wlpe.yaml")
    assert count_parameters(make_model(cfg, get_spec("zinc"))) == 590721  # paper Table 3


def test_param_budget_check():
    from graph_transformers.training.build import check_param_budget
    check_param_budget(105_000, 100_000)
    check_param_budget(123, None)
    with pytest.raises(ConfigError, match="outside the budget 500,000"):
        check_param_budget(588_929, 500_000)  # GT's own "500k" ZINC model is 18% over


@pytest.mark.parametrize("path, expected", [
    ("configs/pattern/gt.yaml", 522982), ("configs/pattern/gt_nope.yaml", 522742),
    ("configs/cluster/gt.yaml", 524026), ("configs/cluster/gt_nope.yaml", 523146)])
def test_sbm_configs_match_paper_parameter_counts(path, expected):
    from graph_transformers.data.registry import get_spec
    from graph_transformers.models import count_parameters
    from graph_transformers.training.build import make_model
    cfg = load_config(REPO / path)
    assert count_parameters(make_model(cfg, get_spec(cfg.data.name))) == expected  # Table 1


@pytest.mark.parametrize("stop", [True, False])
def test_plateau_floors_the_lr_unless_it_stops_there(stop):
    # official EGT: max(lr · factor, min_lr) and training goes on; GT: the LR falls below min_lr
    # and the run stops (StopAtMinLR)
    import torch

    from graph_transformers.data.registry import get_spec
    from graph_transformers.training.module import GraphTaskModule
    cfg = build_config({"model": {"name": "gt", "pe": None}, "optim": {"lr": 1e-3, "scheduler": {
        "name": "plateau", "factor": 0.5, "patience": 0, "min_lr": 1e-4, "stop_at_min_lr": stop}}})
    module = GraphTaskModule(torch.nn.Linear(2, 2), get_spec("csl"), cfg.optim)
    sched = module.configure_optimizers()["lr_scheduler"]["scheduler"]
    for _ in range(20):
        sched.step(1.0)
    lr = sched.optimizer.param_groups[0]["lr"]
    assert (lr < 1e-4) if stop else lr == pytest.approx(1e-4)


def test_every_lightning_trainer_argument_is_accepted_and_typos_are_named():
    import inspect

    import lightning

    from graph_transformers.training.sections import (RESERVED_TRAINER_ARGS, TrainerConfig,
                                                      trainer_arguments)
    params = inspect.signature(lightning.Trainer.__init__).parameters
    # the typed fields are validated by their own types; every other argument passes through
    untyped = trainer_arguments() - set(RESERVED_TRAINER_ARGS) - set(TrainerConfig.model_fields)
    assert {"num_sanity_val_steps", "gradient_clip_algorithm", "val_check_interval"} <= untyped
    for name in sorted(untyped):
        default = params[name].default
        value = default if default is not inspect.Parameter.empty else None
        cfg = build_config({"model": {"name": "gt", "pe": None}, "trainer": {name: value}})
        if value is not None:
            assert cfg.trainer.trainer_kwargs()[name] == value
    with pytest.raises(ConfigError, match="trainer.num_sanity_val_step is not an argument of "
                                          "lightning.Trainer \\(did you mean "
                                          "'num_sanity_val_steps'"):
        build_config({"model": {"name": "gt", "pe": None},
                      "trainer": {"num_sanity_val_step": 0}})
    for name in RESERVED_TRAINER_ARGS:
        with pytest.raises(ConfigError, match=f"trainer.{name} cannot be set"):
            build_config({"model": {"name": "gt", "pe": None}, "trainer": {name: None}})


# ----------------------------------------------------------------------------- renamed keys
@pytest.mark.parametrize("name, old, new", [
    ("egt", "clip", "model.clamp"),
    ("grpe", "attention_dropout", "model.attn_dropout"),
    ("graphormer", "attention_dropout", "model.attn_dropout"),
    ("gps", "max_attention_bytes", "model.memory_budget_gb, in GiB"),
])
def test_old_model_keys_are_refused_naming_the_new_key(name, old, new):
    """0.2.0: the keys renamed in issue 14 (accepted with a FutureWarning until then) are unknown
    keys like any other: a one-line ConfigError names the key and its new name, in a config and
    through a --set override, and no warning is given."""
    import warnings

    raw = {"model": {"name": name, old: 2**31}, "encodings": {"spd": {}, "rwse": {}}}
    expected = (f"invalid config: model.{old}: unknown key (renamed {new}; the old name was "
                "removed in 0.2.0)")
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        with pytest.raises(ConfigError) as err:
            build_config(raw)
        assert str(err.value) == expected and "\n" not in str(err.value)
        with pytest.raises(ConfigError, match=re.escape(expected)):
            build_config({"model": {"name": name}, "encodings": raw["encodings"]},
                         [f"model.{old}=1"])


def test_an_unknown_key_names_its_source():
    with pytest.raises(ConfigError) as err:
        build_config({"model": {"name": "egt", "clip": 3.0, "clamp": 4.0}}, source="run.yaml")
    assert str(err.value) == ("run.yaml: invalid config: model.clip: unknown key (renamed "
                              "model.clamp; the old name was removed in 0.2.0)")
    with pytest.raises(ConfigError, match="^invalid config: model.nope: unknown key$"):
        build_config({"model": {"name": "egt", "nope": 1}})


def test_the_old_section_class_names_are_gone():
    """0.2.0: ``GTModelConfig`` and the other pre-issue-27 names of the derived sections are no
    longer attributes of the config module (``model_section(name)`` is the one way)."""
    import graph_transformers.training.config as config
    for old in ("GTModelConfig", "EGTModelConfig", "MPNNModelConfig", "RENAMED_MODEL_KEYS",
                "rename_model_keys"):
        assert not hasattr(config, old), old
