"""Benchmark: per-step cost of dpfit.torch.make_private against Opacus DP-SGD, side by side.

The same small MLP (784 -> 128 -> 10, ReLU, 101,770 float32 parameters), the same data
(synthetic, 10,240 records) and batch size (256), one thread. One step is a whole training
iteration: the next batch from the data loader, per-example gradients, clipping, noise and the
SGD update.

* Opacus (noise multiplier 1, the loader's fixed-size shuffled batches), in both of its modes,
  so that dpfit is compared with the faster one: ``hooks`` (``GradSampleModule`` +
  ``DPOptimizer``: materialised per-example gradients) and ``ghost``
  (``GradSampleModuleFastGradientClipping(use_ghost_clipping=True)`` +
  ``DPOptimizerFastGradientClipping`` + ``DPLossFastGradientClipping``: per-example norms
  without the per-example gradients, then a second backward pass).
* dpfit, fixed-epoch sampling with the default noise (nu-DP-FTRL streamed as the optimal BLT):
  ``optimizer.step()``; and dpfit with Poisson sampling and independent noise (DP-SGD, PLD
  accounting). The MLP is clipped by book-keeping (``dpfit.torch._bookkeeping``: per-example
  norms from layer inputs and output gradients, one backward pass).

Steps are interleaved (one step of each Opacus mode, then one of each dpfit variant) after a
warm-up, so machine load drifts hit all alike; reported: median per-step seconds, and for each
dpfit variant over each Opacus mode the ratio of medians and the median of paired ratios.
The JSON also records the machine, its load average and the command.

Run:  OMP_NUM_THREADS=1 python benchmarks/bench_torch.py --steps 60 \
          --json benchmarks/results/torch_vs_opacus.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from importlib import metadata
from pathlib import Path

import numpy as np
import torch
from opacus import GradSampleModule
from opacus.grad_sample import GradSampleModuleFastGradientClipping
from opacus.optimizers import DPOptimizer as OpacusDPOptimizer
from opacus.optimizers import DPOptimizerFastGradientClipping
from opacus.utils.fast_gradient_clipping_utils import DPLossFastGradientClipping
from torch.utils.data import DataLoader, TensorDataset

from dpfit.torch import make_private

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import command, machine  # this folder's helper

N, D_IN, HIDDEN, CLASSES, BATCH = 10240, 784, 128, 10, 256


def _model(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(D_IN, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, CLASSES)
    )


def _data() -> TensorDataset:
    gen = torch.Generator().manual_seed(0)
    X = torch.randn(N, D_IN, generator=gen)
    y = torch.randint(0, CLASSES, (N,), generator=gen)
    return TensorDataset(X, y)


def _cycle(loader):
    while True:
        yield from loader


def opacus_stepper(data: TensorDataset, mode: str):
    """One Opacus DP-SGD step per call: ``mode`` "hooks" or "ghost" (ghost clipping)."""
    options = {"noise_multiplier": 1.0, "max_grad_norm": 1.0, "expected_batch_size": BATCH}
    loss_fn = torch.nn.CrossEntropyLoss()
    if mode == "hooks":
        model = GradSampleModule(_model())
        opt = OpacusDPOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), **options)
    else:
        model = GradSampleModuleFastGradientClipping(
            _model(), max_grad_norm=1.0, use_ghost_clipping=True, loss_reduction="mean"
        )
        opt = DPOptimizerFastGradientClipping(
            torch.optim.SGD(model.parameters(), lr=0.1), loss_reduction="mean", **options
        )
        loss_fn = DPLossFastGradientClipping(model, opt, loss_fn, loss_reduction="mean")
    batches = _cycle(DataLoader(data, batch_size=BATCH, shuffle=True, drop_last=True))

    def step():
        x, y = next(batches)
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()

    return step


def dpfit_stepper(data: TensorDataset, epochs: int, **kw):
    model = _model()
    run = make_private(
        model,
        torch.optim.SGD(model.parameters(), lr=0.1),
        DataLoader(data, batch_size=BATCH),
        loss_fn=torch.nn.functional.cross_entropy,
        clip=1.0,
        epochs=epochs,
        epsilon=8.0,
        delta=1e-5,
        random_state=0,
        **kw,
    )

    def epochs_of_batches():
        for _ in range(epochs):
            yield from run.data_loader

    batches = epochs_of_batches()

    def step():
        next(batches)
        run.optimizer.step()

    return step, str(run.stream.choice)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    host = machine()
    data = _data()
    total = args.steps + args.warmup
    epochs = -(-total // (N // BATCH)) + 1
    opacus = ("opacus_hooks", "opacus_ghost")
    steppers = {name: opacus_stepper(data, name.split("_")[1]) for name in opacus}
    steppers["dpfit_fixed_epoch"], choice = dpfit_stepper(data, epochs)
    steppers["dpfit_poisson_dpsgd"], _ = dpfit_stepper(data, epochs, sampling="poisson", n_public=N)
    times = {name: [] for name in steppers}
    for i in range(total):
        for name, step in steppers.items():
            start = time.perf_counter()
            step()
            if i >= args.warmup:
                times[name].append(time.perf_counter() - start)
    t = {k: np.array(v) for k, v in times.items()}
    report = {
        "command": command(),
        "machine": host | {"load_average_at_end": os.getloadavg()},
        "torch": torch.__version__,
        "opacus": metadata.version("opacus"),
        "threads": 1,
        "params": sum(p.numel() for p in _model().parameters()),
        "batch": BATCH,
        "steps": args.steps,
        "dpfit_fixed_epoch_noise": choice,
        "median_s": {k: float(np.median(v)) for k, v in t.items()},
        "fastest_opacus": min(opacus, key=lambda k: np.median(t[k])),
    }
    for name in ("dpfit_fixed_epoch", "dpfit_poisson_dpsgd"):
        for base in opacus:
            report[f"{name}_over_{base}"] = {
                "ratio_of_medians": float(np.median(t[name]) / np.median(t[base])),
                "median_of_paired_ratios": float(np.median(t[name] / t[base])),
            }
    print(json.dumps(report, indent=1))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=1)


if __name__ == "__main__":
    main()
