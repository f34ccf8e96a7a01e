"""Benchmark: per-step cost of dpfit.torch.make_private against Opacus ghost clipping.

Opacus' fastest mode is compared: ghost clipping
(``GradSampleModuleFastGradientClipping(use_ghost_clipping=True)`` +
``DPOptimizerFastGradientClipping`` + ``DPLossFastGradientClipping``), in float32, fed batches
gathered from tensors already in memory (``torch.index_select(X, 0, index)``, as dpfit's
loader gathers a ``TensorDataset``; no DataLoader), noise multiplier 1, the batches of a
fixed random permutation cycled (as dpfit's fixed-epoch sampler does).
``--opacus-modes ghost,hooks`` adds the per-example-gradient hooks (``GradSampleModule`` +
``DPOptimizer``).

dpfit gets the same tensors as a ``TensorDataset`` in a ``DataLoader`` (its private loader
reads each batch with one index per tensor) and runs ``make_private`` with

* fixed-epoch sampling and the default noise (nu-DP-FTRL streamed as the optimal BLT);
  float32 sums in chunks of 128 rows with their declared rounding allowance;
* Poisson sampling with independent noise (DP-SGD, PLD accounting; float64 sums).

A non-private step of plain torch on the same model and batches (``torch_nonprivate``:
forward, ``backward()`` of the mean loss, SGD update) is timed alongside: a private step
does at least that work (book-keeping's forward and its product (f * G)^T A replace the
forward and the weight gradients) plus the norms and the noise, so it is the floor.

Models (``--model``): ``mlp``, 784 -> 128 -> 10 with ReLU (101,770 parameters; dpfit clips it
by book-keeping), and ``cnn``, Opacus' MNIST example network (two 2-D convolutions with
max-pooling, then two linear layers; 26,010 parameters; dpfit's vmap route). One step is a
whole training iteration: the next batch, per-example clipping, noise, the SGD update.
Steps are interleaved (one of each variant in turn) after a warm-up, each timed by the wall
clock and by the thread's CPU time; reported per variant: median seconds, and over Opacus
ghost clipping the ratio of medians and the median of paired ratios (time over Opacus' time,
and the speed-ups, their inverses). The JSON records the
machine, its load average and the command. One thread (``torch.set_num_threads(1)``; run
under ``taskset -c 0`` as well so both sides share one core).

Run:  taskset -c 0 python benchmarks/bench_torch.py --model mlp --batch 1000 --steps 40 \
          --json benchmarks/results/torch_mlp.json
      taskset -c 0 python benchmarks/bench_torch.py --model cnn --batch 256 --steps 20
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import warnings
from importlib import metadata
from pathlib import Path

import torch
from opacus import GradSampleModule
from opacus.grad_sample import GradSampleModuleFastGradientClipping
from opacus.optimizers import DPOptimizer as OpacusDPOptimizer
from opacus.optimizers import DPOptimizerFastGradientClipping
from opacus.utils.fast_gradient_clipping_utils import DPLossFastGradientClipping
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from dpfit.torch import make_private

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import command, machine  # this folder's helper

CLASSES = 10


def _model(kind: str) -> nn.Module:
    torch.manual_seed(0)
    if kind == "mlp":
        return nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, CLASSES))
    return nn.Sequential(  # opacus/examples/mnist.py: SampleConvNet
        nn.Conv2d(1, 16, 8, 2, padding=3),
        nn.ReLU(),
        nn.MaxPool2d(2, 1),
        nn.Conv2d(16, 32, 4, 2),
        nn.ReLU(),
        nn.MaxPool2d(2, 1),
        nn.Flatten(),
        nn.Linear(32 * 4 * 4, 32),
        nn.ReLU(),
        nn.Linear(32, CLASSES),
    )


def _data(kind: str, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)  # benchmark data, not privacy noise
    shape = (n, 784) if kind == "mlp" else (n, 1, 28, 28)
    return torch.randn(shape, generator=gen), torch.randint(0, CLASSES, (n,), generator=gen)


def opacus_stepper(kind: str, X: torch.Tensor, y: torch.Tensor, batch: int, mode: str):
    """One Opacus DP-SGD step per call, on batches indexed from the tensors."""
    options = {"noise_multiplier": 1.0, "max_grad_norm": 1.0, "expected_batch_size": batch}
    loss_fn = nn.CrossEntropyLoss()
    if mode == "hooks":
        model = GradSampleModule(_model(kind))
        opt = OpacusDPOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), **options)
    else:
        model = GradSampleModuleFastGradientClipping(
            _model(kind), max_grad_norm=1.0, use_ghost_clipping=True, loss_reduction="mean"
        )
        opt = DPOptimizerFastGradientClipping(
            torch.optim.SGD(model.parameters(), lr=0.1), loss_reduction="mean", **options
        )
        loss_fn = DPLossFastGradientClipping(model, opt, loss_fn, loss_reduction="mean")
    order = torch.randperm(len(y), generator=torch.Generator().manual_seed(1))
    per_epoch = len(y) // batch
    count = [0]

    def step():
        slot = count[0] % per_epoch
        count[0] += 1
        index = order[slot * batch : (slot + 1) * batch]
        opt.zero_grad()
        inputs, targets = torch.index_select(X, 0, index), torch.index_select(y, 0, index)
        loss_fn(model(inputs), targets).backward()
        opt.step()

    return step


def plain_stepper(kind: str, X: torch.Tensor, y: torch.Tensor, batch: int):
    """One non-private SGD step per call (forward, ``backward()`` of the mean loss, update) on
    the same batches: the floor a private step can approach, never beat (it adds clipping and
    the noise)."""
    model = _model(kind)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    order = torch.randperm(len(y), generator=torch.Generator().manual_seed(1))
    per_epoch = len(y) // batch
    count = [0]

    def step():
        slot = count[0] % per_epoch
        count[0] += 1
        index = order[slot * batch : (slot + 1) * batch]
        opt.zero_grad()
        inputs, targets = torch.index_select(X, 0, index), torch.index_select(y, 0, index)
        nn.functional.cross_entropy(model(inputs), targets).backward()
        opt.step()

    return step


def dpfit_stepper(kind: str, X: torch.Tensor, y: torch.Tensor, batch: int, epochs: int, **kw):
    model = _model(kind)
    run = make_private(
        model,
        torch.optim.SGD(model.parameters(), lr=0.1),
        DataLoader(TensorDataset(X, y), batch_size=batch),
        loss_fn=nn.functional.cross_entropy,
        clip=1.0,
        epochs=epochs,
        epsilon=8.0,
        delta=1e-5,
        random_state=0,
        **kw,
    )

    def batches():
        for _ in range(epochs):
            yield from run.data_loader

    it = batches()

    def step():
        next(it)
        run.optimizer.step()

    return step, str(run.stream.choice)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--n", type=int, default=60_000)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--opacus-modes", default="ghost")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    host = machine()
    X, y = _data(args.model, args.n)
    total = args.steps + args.warmup
    epochs = -(-total // (args.n // args.batch)) + 1
    steppers = {
        f"opacus_{mode}": opacus_stepper(args.model, X, y, args.batch, mode)
        for mode in args.opacus_modes.split(",")
    }
    steppers["torch_nonprivate"] = plain_stepper(args.model, X, y, args.batch)
    steppers["dpfit_fixed_epoch"], choice = dpfit_stepper(args.model, X, y, args.batch, epochs)
    steppers["dpfit_poisson_dpsgd"], _ = dpfit_stepper(
        args.model, X, y, args.batch, epochs, sampling="poisson", n_public=args.n
    )
    wall = {name: [] for name in steppers}
    cpu = {name: [] for name in steppers}
    for i in range(total):
        for name, step in steppers.items():
            start, thread = time.perf_counter(), time.thread_time()
            step()
            if i >= args.warmup:
                wall[name].append(time.perf_counter() - start)
                cpu[name].append(time.thread_time() - thread)

    def ratios(t: dict, name: str) -> dict:
        base = t["opacus_ghost"]
        paired = statistics.median(a / b for a, b in zip(t[name], base, strict=True))
        of_medians = statistics.median(t[name]) / statistics.median(base)
        return {
            "ratio_of_medians": of_medians,
            "median_of_paired_ratios": paired,
            "speedup": 1.0 / of_medians,
            "speedup_paired": 1.0 / paired,
        }

    report = {
        "command": command(),
        "machine": host | {"load_average_at_end": os.getloadavg()},
        "torch": torch.__version__,
        "opacus": metadata.version("opacus"),
        "threads": torch.get_num_threads(),
        "model": args.model,
        "params": sum(p.numel() for p in _model(args.model).parameters()),
        "batch": args.batch,
        "steps": args.steps,
        "dpfit_fixed_epoch_noise": choice,
        "median_s": {k: statistics.median(v) for k, v in wall.items()},
        "median_cpu_s": {k: statistics.median(v) for k, v in cpu.items()},
        "over_opacus_ghost": {
            clock: {name: ratios(t, name) for name in steppers if name != "opacus_ghost"}
            for clock, t in (("wall", wall), ("cpu", cpu))
        },
        "wall_s": wall,
        "cpu_s": cpu,
    }
    print(json.dumps({k: v for k, v in report.items() if k not in ("wall_s", "cpu_s")}, indent=1))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=1)


if __name__ == "__main__":
    main()
