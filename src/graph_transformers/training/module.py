"""The Lightning module: loss, metrics, optimizer and schedule around any registered model."""
from __future__ import annotations

import math

import lightning as L
import torch
import torchmetrics
from torch import Tensor, nn

from ..data.registry import DatasetSpec
from .distributed import broadcast_buffers
from .sections import CosineConfig, LinearConfig, OptimConfig, PlateauConfig
from .tasks import Task


#: relative difference allowed between the compiled and the eager loss of one evaluation batch
#: (float32: rounding gives 1e-7 to 1e-5; a miscompilation measured 6.5e-3)
COMPILED_LOSS_TOL = 1e-3
#: the same under autocast (bf16 matrix products round differently in the two)
COMPILED_LOSS_TOL_AUTOCAST = 3e-2


def split_output(out) -> tuple[Tensor, Tensor | None]:
    """A model's return value → ``(prediction, auxiliary loss or None)``; models with an auxiliary
    objective (EGT's distance prediction) return a ``ModelOutput(out, aux_loss)``."""
    if isinstance(out, tuple):
        return out[0], out[1]
    return out, None


def forward_loss(model: nn.Module, task: Task, batch) -> tuple[Tensor, Tensor | None, Tensor]:
    """The part of a step that ``model.compile: full`` compiles as one graph: the model's
    forward on ``batch`` and the task loss, ``(prediction, auxiliary loss or None, task
    loss)`` (the auxiliary loss, EGT's distance prediction, is added by the caller)."""
    out, aux = split_output(model(batch))
    return out, aux, task.loss(out, batch)


class GraphTaskModule(L.LightningModule):
    """Trains ``model`` on the task a :class:`DatasetSpec` describes.

    Logs ``train/loss`` and ``val/loss`` plus ``{train,val}/<metric>`` each epoch; the learning
    rate as ``lr``. Lightning's sanity check (a few validation batches before training) computes
    no metric, only the loss. Under DDP the logged values are reduced over the ranks (``sync_dist``,
    torchmetrics states) and validation runs with rank 0's buffers on every rank. ``task`` overrides
    the default :class:`Task` of ``spec`` (global class weights, split-level weighted accuracy).
    ``compile`` (``"full"`` or ``"cudagraphs"``, ``model.compile``) runs the forward and the
    loss of every step compiled as one graph (:func:`~.device.compile_step` of
    :func:`forward_loss`) in training; evaluation runs eagerly (its batches are not padded to
    one shape). The run's first training batch is also computed both ways in evaluation mode,
    and a compiled loss more than :data:`COMPILED_LOSS_TOL` from the eager one stops the run
    before the first step (:meth:`check_compiled_loss`): a compiler that miscompiles the model
    must not train it silently.
    """

    def __init__(self, model: nn.Module, spec: DatasetSpec, optim: OptimConfig,
                 task: Task | None = None, compile: str | None = None) -> None:
        super().__init__()
        self.model = model
        self.task = task if task is not None else Task(spec)
        self.optim = optim
        self.compile_mode = compile
        self._forward_loss = forward_loss
        self._compiled_loss_checked = compile is None
        if compile is not None:
            from .device import compile_step
            self._forward_loss = compile_step(forward_loss, compile)
        self.train_metrics = self.task.metrics().clone(prefix="train/")
        self.val_metrics = self.task.metrics().clone(prefix="val/")

    def forward(self, batch) -> Tensor:
        return split_output(self.model(batch))[0]

    def _step(self, batch, stage: str, metrics: torchmetrics.MetricCollection) -> Tensor:
        # the compiled step serves training only: evaluation batches keep their own shapes
        # (``data.static_shapes`` pads the training batches), which a ``dynamic=False`` graph
        # would recompile for batch after batch
        fn = forward_loss
        if stage == "train" and self.compile_mode is not None:
            if self.compile_mode == "cudagraphs":  # a new step: earlier outputs are done with
                torch.compiler.cudagraph_mark_step_begin()
            fn = self._forward_loss
        try:
            out, aux, loss = fn(self.model, self.task, batch)
        except Exception as err:
            if type(err).__name__ != "FailOnRecompileLimitHit":  # torch._dynamo.exc's
                raise
            from ..errors import TrainingError
            raise TrainingError(
                f"model.compile: {self.compile_mode} recompiled the training step for too many "
                "batch shapes (TorchDynamo's recompile limit): this model's static-shape batches "
                "still differ in some tensor's shape (GRIT's node-pair count, for one); train it "
                "with model.compile: false (docs/speed.md, 'One compiled graph per step')"
            ) from None
        metrics.update(*self.task.metric_inputs(out, batch))
        n = self.task.count(batch)
        # ``{stage}/loss`` is the task loss (what the plateau schedule and early stopping watch);
        # an auxiliary objective is logged beside it and added to what is optimized
        self.log(f"{stage}/loss", loss, on_step=False, on_epoch=True, batch_size=n,
                 prog_bar=stage == "val", sync_dist=True)
        if aux is not None:
            self.log(f"{stage}/aux_loss", aux, on_step=False, on_epoch=True, batch_size=n,
                     sync_dist=True)
            loss = loss + aux
        return loss

    def check_compiled_loss(self, batch) -> None:
        """Holds the compiled task loss of ``batch`` (the run's first training batch, a
        static-shape one) against the eager loss, both in evaluation mode (no dropout, no sign
        flips, BatchNorm on its running statistics) and without gradients; once per run, one
        host read, one more compilation (the evaluation-mode graph). The tolerance is
        :data:`COMPILED_LOSS_TOL` in float32 and :data:`COMPILED_LOSS_TOL_AUTOCAST` under
        autocast (bf16 on both sides, rounded apart).

        Raises:
            TrainingError: when they differ by more than that (measured: GPS on torch 2.13's
                CPU inductor before DenseBatch.to_dense became a gather, relative 6.5e-3 in
                float32 and 4.5e-3 in float64; see ``docs/speed.md``).
        """
        self._compiled_loss_checked = True
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                if self.compile_mode == "cudagraphs":
                    torch.compiler.cudagraph_mark_step_begin()
                compiled = self._forward_loss(self.model, self.task, batch)[2]
                a = float(compiled)
                eager = forward_loss(self.model, self.task, batch)[2]
                b = float(eager)
        finally:
            self.model.train(was_training)
        rel = abs(a - b) / max(abs(b), 1e-12)
        autocast = torch.is_autocast_enabled(eager.device.type)
        tol = COMPILED_LOSS_TOL_AUTOCAST if autocast else COMPILED_LOSS_TOL
        if not math.isfinite(rel) or rel > tol:
            from ..errors import TrainingError
            raise TrainingError(
                f"model.compile: {self.compile_mode} computes another loss than eager on the "
                f"first training batch (evaluation mode: compiled {a:.6g}, eager {b:.6g}, "
                f"relative difference {rel:.1e} > {tol:g}): torch.compile miscompiles this "
                "model here; train it with model.compile: false (docs/speed.md, 'Compiled "
                "steps')")

    def training_step(self, batch, batch_idx: int) -> Tensor:
        """One optimisation step's loss.

        Raises:
            TrainingError: the loss is NaN or infinite (diverged training, a too large learning
                rate, non-finite inputs); the run stops before the bad step is applied, and its
                last checkpoint is the previous epoch's.
            ValueError: a batch too small for BatchNorm in training (one node), naming it.
        """
        if not self._compiled_loss_checked:
            self.check_compiled_loss(batch)
        try:
            loss = self._step(batch, "train", self.train_metrics)
        except ValueError as err:
            if "more than 1 value per channel" not in str(err):
                raise
            # BatchNorm in training needs two values per channel: a batch of one node (a
            # one-atom molecule alone in its batch) or, for graph-level norms, of one graph
            graphs = int(getattr(batch, "num_graphs", 1) or 1)
            raise ValueError(
                f"training batch {batch_idx + 1} of epoch {self.current_epoch + 1} has "
                f"{batch.num_nodes} node(s) in {graphs} graph(s): BatchNorm needs at least two "
                "values per channel in training; raise data.batch_size (a one-atom molecule "
                "alone in a batch has one node), or use a model without BatchNorm") from None
        if not bool(torch.isfinite(loss)):
            from ..errors import TrainingError
            raise TrainingError(f"the training loss is {float(loss)} at epoch "
                                f"{self.current_epoch + 1}, batch {batch_idx + 1}; stopping (lower "
                                "optim.lr, or set trainer.gradient_clip_val, or check the inputs "
                                "for NaN/inf)")
        return loss

    def validation_step(self, batch, batch_idx: int) -> None:
        self._step(batch, "val", self.val_metrics)

    def on_validation_epoch_start(self) -> None:
        # DDP: every rank validates rank 0's buffers (BatchNorm statistics), the checkpointed ones
        broadcast_buffers(self.model)

    def on_train_epoch_end(self) -> None:
        self.log_dict(self.train_metrics.compute(), sync_dist=True)
        self.train_metrics.reset()
        self.log("lr", self.trainer.optimizers[0].param_groups[0]["lr"], sync_dist=True)

    def on_validation_epoch_end(self) -> None:
        if self.trainer.sanity_checking:  # a batch or two before training: a metric there says
            self.val_metrics.reset()      # nothing (ROC-AUC is NaN on a one-class batch)
            return
        self.log_dict(self.val_metrics.compute(), prog_bar=True, sync_dist=True)
        self.val_metrics.reset()

    def configure_optimizers(self):
        cls = torch.optim.Adam if self.optim.optimizer == "adam" else torch.optim.AdamW
        # the fused kernel (CPU and CUDA) is several times faster than the per-tensor loop
        opt = cls(self.parameters(), lr=self.optim.lr, weight_decay=self.optim.weight_decay,
                  eps=self.optim.eps, fused=all(p.is_floating_point() for p in self.parameters()))
        sched = self.optim.scheduler
        if sched is None:
            return opt
        if isinstance(sched, PlateauConfig):
            # stopping below min_lr needs the LR to get there; otherwise min_lr is a floor
            floor_lr = 0.0 if sched.stop_at_min_lr else sched.min_lr
            plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(
                opt, mode="min", factor=sched.factor, patience=sched.patience, min_lr=floor_lr)
            return {"optimizer": opt, "lr_scheduler": {"scheduler": plateau, "monitor": "val/loss",
                                                       "interval": "epoch"}}
        assert isinstance(sched, (CosineConfig, LinearConfig))
        total = max(1, int(self.trainer.estimated_stepping_batches))
        per_epoch = max(1, total // max(1, self.trainer.max_epochs))
        warmup = sched.warmup_epochs * per_epoch
        if isinstance(sched, LinearConfig):
            end = sched.end_lr / self.optim.lr

            def linear(step: int) -> float:
                if step < warmup:
                    return (step + 1) / warmup
                progress = min(1.0, (step - warmup) / max(1, total - warmup))
                return 1.0 + (end - 1.0) * progress

            lam = torch.optim.lr_scheduler.LambdaLR(opt, linear)
            return {"optimizer": opt, "lr_scheduler": {"scheduler": lam, "interval": "step"}}
        floor = sched.min_lr / self.optim.lr

        def factor(step: int) -> float:
            if step < warmup:
                return (step + 1) / warmup
            progress = min(1.0, (step - warmup) / max(1, total - warmup))
            return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress))

        lam = torch.optim.lr_scheduler.LambdaLR(opt, factor)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": lam, "interval": "step"}}


@torch.no_grad()
def evaluate(model: nn.Module, spec: DatasetSpec, loader, device: torch.device | str = "cpu",
             task: Task | None = None) -> dict[str, float]:
    """Loss and metrics of ``model`` (in eval mode) over a loader: ``{"loss": …, "<metric>": …}``
    (``task``: as in :class:`GraphTaskModule`)."""
    was_training = model.training
    model.eval()
    model.to(device)
    task = task if task is not None else Task(spec)
    metrics = task.metrics(sync_on_compute=False).to(device)  # one process evaluates
    total, count = None, 0
    for batch in loader:
        batch = batch.to(device)
        out = split_output(model(batch))[0]
        n = task.count(batch)
        loss = task.loss(out, batch).double() * n  # summed on the device: no sync per batch
        total = loss if total is None else total + loss
        count += n
        metrics.update(*task.metric_inputs(out, batch))
    result = {k: float(v) for k, v in metrics.compute().items()}
    result["loss"] = (float(total) if total is not None else 0.0) / max(float(count), 1.0)
    model.train(was_training)
    return result
