"""Benchmark: a default ``dpfit.logit`` against statsmodels' ``Logit.fit()``, and its point error
against diffprivlib's ``LogisticRegression`` at equal epsilon.

Speed: n = 2e5 records, p = 20 features uniform on [-1, 1] (public bounds [-1, 1]), a 0/1
response from a logistic model. ``dpfit.logit("y ~ x0 + ... + x19", frame, rho=0.5,
bounds=...)`` with every default (200 preconditioned DP-GD steps, the bread, meat and margins
releases, the bounds check, the summary's inputs) is timed end to end against
``statsmodels.api.Logit(y, X).fit()`` on the same data as arrays (Newton's method, no formula:
the floor). Each pair is timed ``--repeats`` times in alternating order on one machine in
one run, with one BLAS thread each (unless the environment sets it); the ratio is the median
of the paired ratios (target of the GLM issue: at most 20).

Point error: ``--accuracy-n`` records (p as above), ``--reps`` fits each, the root mean squared
difference between the released coefficients (intercept included) and the non-private MLE of
the same data. dpfit at (epsilon, 1e-5)-DP (rho from the CKS conversion; the bounds check
off, so all of rho goes to the fit) against diffprivlib (objective perturbation, pure
epsilon-DP, ``data_norm`` = sqrt(p), default ``C = 1``), run by
``benchmarks/diffprivlib_worker.py`` in the interpreter given by ``--diffprivlib-python``
(diffprivlib 0.6 needs scikit-learn < 1.6; without the option the comparison is skipped and
the JSON says so).

Run:  .venv/bin/python benchmarks/bench_glm.py [--n 200000] [--p 20] [--repeats 3]
      [--accuracy-n 20000] [--reps 5] [--epsilon 1.0] [--diffprivlib-python PATH]
      [--json benchmarks/results/glm.json]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # before numpy is imported: one BLAS thread for both

import argparse  # noqa: E402 - after the thread settings
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import dpfit  # noqa: E402
from dpfit.privacy import approx_dp_to_zcdp  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import command, machine  # noqa: E402 - this folder's helper

DELTA = 1e-5


def data(n: int, p: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Features uniform on [-1, 1], y ~ Bernoulli(logistic(0.2 + x' beta)), beta in [-0.5, 0.5]."""
    gen = np.random.default_rng(seed)  # synthetic data, not privacy noise
    X = gen.uniform(-1.0, 1.0, (n, p))
    beta = np.concatenate([[0.2], np.linspace(-0.5, 0.5, p)])
    eta = beta[0] + X @ beta[1:]
    y = (gen.uniform(size=n) < 1.0 / (1.0 + np.exp(-eta))).astype(float)
    return X, y, beta


def _frame(X: np.ndarray, y: np.ndarray) -> tuple[pd.DataFrame, str, dict]:
    names = [f"x{j}" for j in range(X.shape[1])]
    frame = pd.DataFrame(X, columns=names).assign(y=y)
    return frame, "y ~ " + " + ".join(names), dict.fromkeys(names, (-1.0, 1.0))


def _dpfit(frame, formula, bounds, rho, seed, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded noise, coverage doubts: beside the point here
        return dpfit.logit(formula, frame, rho=rho, bounds=bounds, random_state=seed, **params)


def _statsmodels(X: np.ndarray, y: np.ndarray):
    import statsmodels.api as sm

    return sm.Logit(y, sm.add_constant(X)).fit(disp=0)


def speed(n: int, p: int, repeats: int) -> dict:
    X, y, _ = data(n, p)
    frame, formula, bounds = _frame(X, y)
    pairs = []
    for r in range(repeats):
        times = {}
        for which in ("dpfit", "statsmodels") if r % 2 == 0 else ("statsmodels", "dpfit"):
            start = time.perf_counter()
            if which == "dpfit":
                _dpfit(frame, formula, bounds, 0.5, r)
            else:
                _statsmodels(X, y)
            times[which] = time.perf_counter() - start
        pairs.append(times)
    ratios = [t["dpfit"] / t["statsmodels"] for t in pairs]
    return {"n": n, "p": p, "pairs": pairs, "ratio_median": statistics.median(ratios)}


def _rmse(estimates: np.ndarray, reference: np.ndarray) -> list[float]:
    return [float(np.sqrt(np.mean((e - reference) ** 2))) for e in np.atleast_2d(estimates)]


def accuracy(n: int, p: int, reps: int, epsilon: float, other: str | None) -> dict:
    X, y, beta = data(n, p, seed=1)
    mle = np.asarray(_statsmodels(X, y).params)
    frame, formula, bounds = _frame(X, y)
    rho = approx_dp_to_zcdp(epsilon, DELTA)
    ours = [
        _dpfit(frame, formula, bounds, rho, seed, bounds_check=0.0).estimate for seed in range(reps)
    ]
    out = {
        "n": n, "p": p, "epsilon": epsilon, "delta": DELTA, "rho": rho,
        "dpfit_rmse": _rmse(np.array(ours), mle),
        "mle_rmse_to_truth": _rmse(mle, beta)[0],
    }  # fmt: skip
    out["dpfit_rmse_median"] = statistics.median(out["dpfit_rmse"])
    if other is None:
        out["diffprivlib"] = "skipped: no --diffprivlib-python given"
        return out
    with tempfile.TemporaryDirectory() as tmp:
        np.savez(Path(tmp) / "data.npz", X=X, y=y)
        result = Path(tmp) / "out.json"
        worker = Path(__file__).resolve().parent / "diffprivlib_worker.py"
        subprocess.run(
            [other, str(worker), "--data", str(Path(tmp) / "data.npz"), "--epsilon",
             str(epsilon), "--repeats", str(reps), "--json", str(result)],
            check=True, timeout=3600,
        )  # fmt: skip
        theirs = json.loads(result.read_text())
    out["diffprivlib"] = {
        "version": theirs["version"], "C": theirs["C"],
        "rmse": _rmse(np.array(theirs["fits"]), mle),
    }  # fmt: skip
    out["diffprivlib"]["rmse_median"] = statistics.median(out["diffprivlib"]["rmse"])
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--p", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--accuracy-n", type=int, default=20_000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--diffprivlib-python", metavar="PATH")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    report = {
        "machine": machine(),
        "command": command(),
        "speed": speed(args.n, args.p, args.repeats),
        "accuracy": accuracy(
            args.accuracy_n, args.p, args.reps, args.epsilon, args.diffprivlib_python
        ),
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
