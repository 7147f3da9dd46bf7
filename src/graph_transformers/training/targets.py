"""Standardized regression targets: the model learns ``(y - mean) / std``, reports ``y``.

A regression target far from zero (a solubility centred at −5.2, s.d. 0.78) costs a freshly
initialized model its first epochs learning the offset, and an L1 loss of a few units can leave
it worse than predicting the training mean. The usual cure (scikit-learn's ``StandardScaler``
on the targets, the official GraphGPS / OGB-LSC pipelines) is done here inside the model, so
that everything downstream stays in the user's units:

- the **mean and s.d. per target column** are counted once on the training split (labelled
  entries only; a column with zero or undefined spread keeps s.d. 1);
- they live on the model as buffers ``target_mean`` / ``target_std`` ``[out_dim]`` (saved in
  every checkpoint, so ``predict``, ``evaluate`` and ``--resume`` need not recount them), and a
  forward hook maps the network's standardized output ``z`` to ``z * std + mean``: predictions
  and metrics are in the original units;
- the loss divides the residual by ``std`` (:class:`~.tasks.Task`, ``target_std``), i.e. it is
  the loss on standardized values: ``|ŷ − y| / s = |z − (y − m) / s|``.

``data.standardize_targets``: ``auto`` (the default) standardizes regression targets of a
user's data (molecule CSV, graph file, in-memory graphs, node table) and leaves the papers'
benchmarks (ZINC, the MoleculeNet and OGB sets) on their published protocol; ``true`` / ``false``
force it. ``metrics.json`` records what was used under ``target_standardization``.
"""
from __future__ import annotations

import logging
from typing import Any

import torch
from torch import Tensor, nn

log = logging.getLogger(__name__)

#: the buffers a standardizing model carries (``[out_dim]`` each)
BUFFERS = ("target_mean", "target_std")


def standardizes(data_cfg: Any, spec: Any) -> bool:
    """Whether a run standardizes its targets (see the module docstring).

    Args:
        data_cfg: the config's ``data`` section (``standardize_targets``).
        spec: the dataset's :class:`~graph_transformers.data.registry.DatasetSpec`.

    Raises:
        ValueError: ``standardize_targets: true`` for a task that is not regression.
    """
    choice = getattr(data_cfg, "standardize_targets", "auto")
    if choice is True and spec.task != "regression":
        raise ValueError(f"data.standardize_targets is true but dataset {spec.name!r} is a "
                         f"{spec.task} task; it applies to regression targets only")
    if choice == "auto":
        return spec.task == "regression" and spec.source == "user"
    return bool(choice)


def target_statistics(dataset, spec: Any) -> tuple[Tensor, Tensor]:
    """Mean and s.d. (population, ``ddof=0``) per target column of a training split.

    Args:
        dataset: the training split (PyG graphs with ``y``: ``[1, out_dim]`` or ``[out_dim]``
            per graph, ``[num_nodes(, out_dim)]`` for node tasks, where a ``node_mask`` selects
            the training nodes). NaN targets (missing labels) are left out.
        spec: the dataset's spec (``level``, ``out_dim``).

    Returns:
        ``(mean, std)``, float32 ``[out_dim]`` each; a column without labels gets mean 0, a
        column with no spread (or one label) s.d. 1.
    """
    ys = []
    for data in dataset:
        y = data.y
        mask = getattr(data, f"{spec.level}_mask", None) if spec.level != "graph" else None
        if mask is not None:
            y = y[mask]
        ys.append(y.reshape(-1, spec.out_dim).double())
    y = torch.cat(ys) if ys else torch.empty(0, spec.out_dim, dtype=torch.float64)
    labelled = ~torch.isnan(y)
    count = labelled.sum(0)
    mean = torch.where(labelled, y, 0).sum(0) / count.clamp_min(1)
    var = torch.where(labelled, (y - mean).square(), 0).sum(0) / count.clamp_min(1)
    std = var.sqrt()
    std = torch.where((count > 1) & (std > 1e-12), std, torch.ones_like(std))
    return mean.float(), std.float()


def _rescale(module: nn.Module, args: Any, output: Any) -> Any:
    """Forward hook: the network's standardized output ``z`` → ``z * std + mean`` (a model
    returning ``(prediction, auxiliary loss)`` keeps its auxiliary loss)."""
    if isinstance(output, tuple):
        out = output[0] * module.target_std + module.target_mean
        return output._replace(**{output._fields[0]: out}) if hasattr(output, "_fields") \
            else (out, *output[1:])
    return output * module.target_std + module.target_mean


def attach(model: nn.Module, mean: Tensor, std: Tensor) -> nn.Module:
    """Makes ``model`` predict in the units of ``mean`` / ``std`` (``[out_dim]`` each):
    registers them as the buffers ``target_mean`` / ``target_std`` and a forward hook that
    rescales the output. Attaching again only updates the buffers. Returns ``model``."""
    if is_attached(model):
        model.target_mean.copy_(mean)
        model.target_std.copy_(std)
        return model
    model.register_buffer("target_mean", mean.detach().clone().float())
    model.register_buffer("target_std", std.detach().clone().float())
    model._target_scaling_hook = model.register_forward_hook(_rescale)
    return model


def detach(model: nn.Module) -> nn.Module:
    """Removes what :func:`attach` added (the model then predicts its raw output)."""
    if is_attached(model):
        model._target_scaling_hook.remove()
        del model._target_scaling_hook
        for name in BUFFERS:
            delattr(model, name)
    return model


def is_attached(model: nn.Module) -> bool:
    """Whether ``model`` standardizes its targets (carries the buffers and the hook)."""
    return hasattr(model, "_target_scaling_hook")


def match_weights(model: nn.Module, weights: dict[str, Any], prefix: str = "") -> None:
    """Attaches or detaches the scaling so that ``model`` has exactly the target buffers that a
    checkpoint's ``weights`` hold (keys ``prefix + "target_mean"``): a checkpoint decides whether
    its model standardized, whatever the config says now (runs trained before this existed hold
    none)."""
    has = f"{prefix}target_mean" in weights
    if has and not is_attached(model):
        mean = weights[f"{prefix}target_mean"]
        attach(model, torch.zeros_like(mean), torch.ones_like(mean))
    elif not has and is_attached(model):
        log.info("the checkpoint was trained without target standardization; predicting its "
                 "raw output")
        detach(model)


def record(model: nn.Module) -> dict[str, list[float]] | None:
    """What ``metrics.json`` stores under ``target_standardization``: ``{"mean", "std"}`` per
    target column, or ``None`` when the model does not standardize."""
    if not is_attached(model):
        return None
    return {"mean": [round(float(v), 8) for v in model.target_mean],
            "std": [round(float(v), 8) for v in model.target_std]}


__all__ = ["BUFFERS", "attach", "detach", "is_attached", "match_weights", "record",
           "standardizes", "target_statistics"]
