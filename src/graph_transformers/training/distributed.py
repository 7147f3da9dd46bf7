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
