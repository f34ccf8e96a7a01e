"""Benchmark: per-step cost of dpfit.torch.make_private against Opacus DP-SGD, side by side.

The same small MLP (784 -> 128 -> 10, ReLU, 101,770 float32 parameters), the same data
(synthetic, 10,240 records) and batch size (256), one thread. One step is a whole training
iteration: the next batch from the data loader, per-example gradients, clipping, noise and the
SGD update.

* Opacus (``GradSampleModule`` hooks + ``DPOptimizer``, noise multiplier 1, the loader's
  fixed-size shuffled batches): ``loss.backward(); optimizer.step()``.
* dpfit, fixed-epoch sampling with the default noise (nu-DP-FTRL streamed as the optimal BLT):
  ``optimizer.step()``; and dpfit with Poisson sampling and independent noise (DP-SGD, PLD
  accounting).

Steps are interleaved (one Opacus step, then one of each dpfit variant) after a warm-up, so
machine load drifts hit all alike; reported: median per-step seconds, the ratio of medians and
the median of paired ratios.

Run:  python benchmarks/bench_torch.py --steps 60 --json benchmarks/results/torch_vs_opacus.json
"""

from __future__ import annotations

import argparse
import json
import platform
import time
import warnings

import numpy as np
import torch
from opacus import GradSampleModule
from opacus.optimizers import DPOptimizer as OpacusDPOptimizer
from torch.utils.data import DataLoader, TensorDataset

from dpfit.torch import make_private

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


def opacus_stepper(data: TensorDataset):
    model = GradSampleModule(_model())
    opt = OpacusDPOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.1),
        noise_multiplier=1.0,
        max_grad_norm=1.0,
        expected_batch_size=BATCH,
    )
    batches = _cycle(DataLoader(data, batch_size=BATCH, shuffle=True, drop_last=True))
    loss_fn = torch.nn.CrossEntropyLoss()

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
    data = _data()
    total = args.steps + args.warmup
    epochs = -(-total // (N // BATCH)) + 1
    steppers = {"opacus": opacus_stepper(data)}
    steppers["dpfit_fixed_epoch"], choice = dpfit_stepper(data, epochs)
    steppers["dpfit_poisson_dpsgd"], _ = dpfit_stepper(
        data, epochs, sampling="poisson", n_public=N
    )
    times = {name: [] for name in steppers}
    for i in range(total):
        for name, step in steppers.items():
            start = time.perf_counter()
            step()
            if i >= args.warmup:
                times[name].append(time.perf_counter() - start)
    t = {k: np.array(v) for k, v in times.items()}
    report = {
        "machine": platform.processor() or platform.machine(),
        "torch": torch.__version__,
        "threads": 1,
        "params": sum(p.numel() for p in _model().parameters()),
        "batch": BATCH,
        "steps": args.steps,
        "dpfit_fixed_epoch_noise": choice,
        "median_s": {k: float(np.median(v)) for k, v in t.items()},
    }
    for name in ("dpfit_fixed_epoch", "dpfit_poisson_dpsgd"):
        report[f"{name}_over_opacus"] = {
            "ratio_of_medians": float(np.median(t[name]) / np.median(t["opacus"])),
            "median_of_paired_ratios": float(np.median(t[name] / t["opacus"])),
        }
    print(json.dumps(report, indent=1))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=1)


if __name__ == "__main__":
    main()
