"""float32's own gradient error for a model on the device check's ZINC batch, on the CPU: the
worst per-parameter relative difference of float32 gradients from float64 ones, with BatchNorm's
initial statistics and with statistics taken from the batch (``device_measure.calibrate_norms``).
The figure the first GPU run's GT-with-edges gap is compared with in ``docs/gpu.md``.

    PYTHONPATH=src OMP_NUM_THREADS=1 python benchmarks/fp32_own_error.py --models gt_edge \
        --data-dir ../shared/data      # GRAPH_TRANSFORMERS_KERNELS=off: the plain path CUDA runs
"""
from __future__ import annotations

import argparse
import copy
from pathlib import Path

import torch

from graph_transformers import device_check as dc
from graph_transformers import device_measure as dm
from graph_transformers.data.registry import resolve_spec
from graph_transformers.training.build import make_model
from graph_transformers.training.tasks import Task


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="+", default=["gt_edge"], choices=list(dc.MODELS))
    p.add_argument("--data-dir", default=None)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--param", default="layers.8.ffn_e.0.weight",
                   help="a parameter whose own error is printed too")
    args = p.parse_args()
    torch.set_num_threads(1)
    configs = dc.model_configs(args.models, Path(dc.REPO / "configs" / "zinc"), False)
    data = dc.load_data(configs, args.data_dir, args.batch_size, None)
    print(data.source)
    cpu = torch.device("cpu")
    for name, cfg in configs.items():
        for calibrate in (False, True):
            torch.manual_seed(0)
            spec = resolve_spec(cfg.data)
            model, task = make_model(cfg, spec), Task(spec)
            if calibrate:
                dm.calibrate_norms(model, data.batch)
            _, _, g32 = dm.forward_backward(copy.deepcopy(model),
                                            dm.cast_batch(data.batch, cpu, torch.float32), task)
            _, _, g64 = dm.forward_backward(copy.deepcopy(model).double(),
                                            dm.cast_batch(data.batch, cpu, torch.float64), task)
            worst = dm.worst_grad(g64, g32)
            own = dm.rel_diff(g64[args.param], g32[args.param]) if args.param in g64 else None
            print(f"{name} ({'batch' if calibrate else 'initial'} statistics): worst "
                  f"{worst[0]:.2e} ({worst[1]}); {args.param}: "
                  f"{'-' if own is None else format(own, '.2e')}")


if __name__ == "__main__":
    main()
