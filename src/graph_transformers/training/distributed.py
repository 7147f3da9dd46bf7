"""What multi-process (DDP) training needs beyond Lightning's defaults: the launcher's rank before
Lightning has started, a seed per rank, and one set of module buffers on every rank for
validation. See ``docs/scaling.md``."""
from __future__ import annotations

import os

import lightning as L
import torch
from torch import nn


def launch_is_rank_zero() -> bool:
    """Whether this process is global rank 0 as its launcher's environment says, before Lightning
    sets up the process group (true for a plain single process).

    Read, in order: ``RANK`` (torchrun and other ``torch.distributed`` launchers);
    ``LOCAL_RANK`` with ``NODE_RANK`` (the processes Lightning's own launcher starts: rank 0 when
    both are 0); ``SLURM_PROCID`` (``srun``); ``JSM_NAMESPACE_RANK`` (LSF). Used to keep other
    ranks from writing run files before the trainer exists; afterwards Lightning's
    ``trainer.is_global_zero`` is authoritative.

    Raises:
        ValueError: when the variable that applies is not an integer.
    """
    env = os.environ
    if "RANK" in env:
        return int(env["RANK"]) == 0
    if "LOCAL_RANK" in env:
        return int(env["LOCAL_RANK"]) == 0 and int(env.get("NODE_RANK", 0)) == 0
    for key in ("SLURM_PROCID", "JSM_NAMESPACE_RANK"):
        if key in env:
            return int(env[key]) == 0
    return True


class SeedPerRank(L.Callback):
    """Reseeds every rank of a multi-process run with ``seed + global_rank`` (Python, NumPy,
    torch and dataloader workers, via ``lightning.seed_everything``) once the processes are set
    up, so that dropout, augmentations (e.g. Laplacian-PE sign flips) and worker streams differ
    between ranks instead of repeating rank 0's draws. Model initialization is unaffected: it
    happens before, from ``seed``, and DDP broadcasts rank 0's weights anyway. A single-process
    run is left untouched (rank 0 keeps ``seed``).
    """

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def setup(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        if trainer.world_size > 1:
            L.seed_everything(self.seed + trainer.global_rank, workers=True, verbose=False)


def broadcast_buffers(module: nn.Module, src: int = 0) -> None:
    """Copies ``module``'s buffers (BatchNorm running statistics, counters) from rank ``src`` to
    every rank of the default process group, in place; does nothing without one.

    Under DDP the buffers are broadcast from rank 0 at the start of each training forward, but
    each rank's last training step then updates its own copy, so after an epoch the ranks'
    BatchNorm statistics differ. Broadcasting them before validation makes every rank evaluate
    the model that rank 0 saves in the checkpoint.
    """
    dist = torch.distributed
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return
    for buf in module.buffers():
        if buf.dtype == torch.bool:  # not every backend (gloo) broadcasts bool tensors
            tmp = buf.data.to(torch.uint8)
            dist.broadcast(tmp, src=src)
            buf.data.copy_(tmp.bool())
        else:
            dist.broadcast(buf.data, src=src)


#: Lightning's DDP strategy names that take a ``_find_unused_parameters_true`` variant
DDP_STRATEGIES = ("ddp", "ddp_spawn", "ddp_fork", "ddp_notebook")


def unused_parameters(module, dataset, batch_size: int) -> list[str]:
    """Names of ``module``'s trainable parameters that get no gradient from one training loss,
    found by one forward and backward pass of a copy of ``module`` on the first ``batch_size``
    graphs of ``dataset`` (the module, its buffers and the global RNG streams are untouched).

    Some models hold parameters that one step's loss never reaches by design (GT with edge
    features: the last layer's edge-stream update, whose output nothing reads). DDP then waits
    for their gradients forever; Lightning stops the run at the second step.

    Args:
        module: the task module (:class:`~.module.GraphTaskModule`: ``model`` and ``task``).
        dataset: the training split (graphs); ``None`` or a single graph: nothing is probed.
        batch_size: graphs of the probe batch.

    Returns:
        The parameter names, in ``named_parameters`` order (empty when all are used).
    """
    import copy

    from torch_geometric.data import Batch
    from torch_geometric.data.data import BaseData
    # one graph (node tasks: sampled neighbourhoods, Cluster-GCN parts) or no graphs: no probe
    if dataset is None or len(dataset) < 2 or not isinstance(dataset[0], BaseData):
        return []
    probe = copy.deepcopy(module).train()
    graphs = [dataset[i] for i in range(min(batch_size, len(dataset)))]
    from .module import split_output
    batch = Batch.from_data_list(graphs)
    with torch.random.fork_rng(devices=[]):
        out, aux = split_output(probe.model(batch))
        loss = probe.task.loss(out, batch)
        (loss if aux is None else loss + aux).backward()
    return [n for n, p in probe.named_parameters() if p.requires_grad and p.grad is None]


def ddp_strategy(strategy, module, dataset, batch_size: int):
    """The strategy to give Lightning: ``strategy`` unchanged, except that a plain DDP strategy
    name (:data:`DDP_STRATEGIES`) becomes its ``_find_unused_parameters_true`` variant when
    :func:`unused_parameters` finds parameters that one step leaves without a gradient (logged
    at INFO with how many), so that DDP reduces the gradients of the others and such a model
    trains as in one process.

    Args:
        strategy: ``config.trainer.strategy``.
        module: as :func:`unused_parameters`.
        dataset: as :func:`unused_parameters`.
        batch_size: as :func:`unused_parameters`.

    Returns:
        The strategy name.
    """
    if strategy not in DDP_STRATEGIES:
        return strategy
    unused = unused_parameters(module, dataset, batch_size)
    if not unused:
        return strategy
    import logging
    logging.getLogger(__name__).info(
        "%d parameter tensor(s) get no gradient from a training step (%s%s): DDP runs with "
        "find_unused_parameters=True", len(unused), ", ".join(unused[:3]),
        ", ..." if len(unused) > 3 else "")
    return f"{strategy}_find_unused_parameters_true"
