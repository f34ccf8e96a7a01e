"""Opacus side of ``bench_dp_gd.py opacus``: full-batch DP-SGD on nn.Linear, timed per mode.

Runs in a fresh process of an environment with Opacus (``pip install 'dpfit[bench]'``):

    python benchmarks/opacus_worker.py --n 100000 --p 100 --steps 100 --threads 1 \
        --repeats 3 --dtype float32 --json out.json

The problem is dpfit's: least squares 0.5 (y_i - x_i^T theta)^2 averaged over all n records
(full batch, no sampling), per-example clipping to ``clip``, Gaussian noise, SGD step eta,
in ``--dtype`` (float32 by default: Opacus' fastest; the data are drawn in float64 and
converted). Modes: ``hooks`` (GradSampleModule + DPOptimizer: materialised per-sample
gradients) and ``ghost`` (GradSampleModuleFastGradientClipping with ghost clipping +
DPOptimizerFastGradientClipping + DPLossFastGradientClipping). Each repeat times ``steps``
optimizer steps (forward, backward, clip, noise, update) on tensors already in memory.
"""

from __future__ import annotations

import argparse
import json
import time

import torch
from opacus import GradSampleModule
from opacus.grad_sample import GradSampleModuleFastGradientClipping
from opacus.optimizers import DPOptimizer, DPOptimizerFastGradientClipping
from opacus.utils.fast_gradient_clipping_utils import DPLossFastGradientClipping


def _data(n: int, p: int, dtype: torch.dtype = torch.float64):
    gen = torch.Generator().manual_seed(0)
    X = torch.randn(n, p, generator=gen, dtype=torch.float64)
    theta = torch.randn(p, generator=gen, dtype=torch.float64)
    y = X @ (theta / theta.norm()) + torch.randn(n, generator=gen, dtype=torch.float64)
    return X.to(dtype), y.to(dtype)


def _run_hooks(X, y, *, steps, step_size, clip, noise_multiplier) -> tuple[float, float]:
    model = GradSampleModule(torch.nn.Linear(X.shape[1], 1, bias=False).to(X.dtype))
    torch.nn.init.zeros_(model._module.weight)
    optimizer = DPOptimizer(
        torch.optim.SGD(model.parameters(), lr=step_size),
        noise_multiplier=noise_multiplier,
        max_grad_norm=clip,
        expected_batch_size=X.shape[0],
        loss_reduction="mean",
    )
    start, cpu = time.perf_counter(), time.thread_time()
    for _ in range(steps):
        optimizer.zero_grad()
        loss = 0.5 * ((model(X).squeeze(1) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
    return time.perf_counter() - start, time.thread_time() - cpu


def _run_ghost(X, y, *, steps, step_size, clip, noise_multiplier) -> tuple[float, float]:
    model = GradSampleModuleFastGradientClipping(
        torch.nn.Linear(X.shape[1], 1, bias=False).to(X.dtype),
        max_grad_norm=clip,
        use_ghost_clipping=True,
        loss_reduction="mean",
    )
    torch.nn.init.zeros_(model._module.weight)
    optimizer = DPOptimizerFastGradientClipping(
        torch.optim.SGD(model.parameters(), lr=step_size),
        noise_multiplier=noise_multiplier,
        max_grad_norm=clip,
        expected_batch_size=X.shape[0],
        loss_reduction="mean",
    )
    criterion = DPLossFastGradientClipping(
        model, optimizer, torch.nn.MSELoss(reduction="mean"), loss_reduction="mean"
    )
    start, cpu = time.perf_counter(), time.thread_time()
    for _ in range(steps):
        optimizer.zero_grad()
        # per-sample losses must have shape (n,): an (n, 1) loss broadcasts to (n, n)
        loss = 0.5 * criterion(model(X).squeeze(1), y)
        loss.backward()
        optimizer.step()
    return time.perf_counter() - start, time.thread_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--p", type=int, default=100)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--step-size", type=float, default=0.2)
    parser.add_argument("--clip", type=float, default=50.0)
    parser.add_argument("--noise-multiplier", type=float, default=1.0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    parser.add_argument("--json", required=True)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    X, y = _data(args.n, args.p, getattr(torch, args.dtype))
    kwargs = {
        "steps": args.steps,
        "step_size": args.step_size,
        "clip": args.clip,
        "noise_multiplier": args.noise_multiplier,
    }
    runners = {"hooks": _run_hooks, "ghost": _run_ghost}
    for run in runners.values():  # warm-up: hooks registration, allocator
        run(X, y, **{**kwargs, "steps": 2})
    times = {mode: [] for mode in runners}
    cpu = {mode: [] for mode in runners}
    for _ in range(args.repeats):
        for mode, run in runners.items():
            wall, thread = run(X, y, **kwargs)
            times[mode].append(wall)
            cpu[mode].append(thread)
    out = {
        "torch": torch.__version__,
        "opacus": __import__("opacus").__version__,
        "threads": args.threads,
        "dtype": args.dtype,
        "seconds": times,
        "cpu_seconds": cpu,
    }
    with open(args.json, "w") as fh:
        json.dump(out, fh)


if __name__ == "__main__":
    main()
