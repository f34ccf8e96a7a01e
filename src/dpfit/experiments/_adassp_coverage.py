"""Coverage and width of ``DPLinearRegression(method="adassp")``'s population interval.

Each trial draws a fresh dataset from one of the inference-coverage study's designs
(:func:`dpfit.experiments.inference_coverage._draw`: isotropic, anisotropic,
heteroscedastic, t(3) errors, and the integer/binary ``formula`` design, here fitted as a
plain design matrix), fits AdaSSP with its default population interval and records whether
each 95% interval covers theta*, the mean width relative to the non-private HC0 OLS
interval on the same data, and whether the fit warned (``CoverageWarning``). Coverage is
pooled over coefficients; its Monte Carlo s.e. sqrt(c (1 - c) / R) over the R replicates is
conservative for the pooled mean. The table in docs/inference.md ("AdaSSP: population
intervals") comes from::

    python -m dpfit.experiments._adassp_coverage --n 2000 20000 --rho 0.5 --reps 100
"""

from __future__ import annotations

import argparse
import math
import warnings
from typing import Any

import numpy as np
import pandas as pd

from ..exceptions import CoverageWarning, InsecureRandomnessWarning, LargeBudgetWarning
from ..models import DPLinearRegression
from .inference_coverage import DESIGNS, Z95, _draw, _robust_ols

__all__ = ["adassp_coverage"]


def _trial(design: str, n: int, rho: float, seed: int) -> dict[str, float]:
    data = _draw(design, n, np.random.default_rng([seed, 1]))
    bounds = data["bounds"]
    if isinstance(bounds, dict):
        bounds = list(bounds.values())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CoverageWarning)
        warnings.simplefilter("ignore", LargeBudgetWarning)
        warnings.simplefilter("ignore", InsecureRandomnessWarning)  # seeded: reproducible
        model = DPLinearRegression(
            rho=rho, method="adassp", bounds=bounds, y_bounds=data["y_bounds"], random_state=seed
        ).fit(data["X"], data["y"])
    ci = model.conf_int().to_numpy()
    theta = data["theta"]
    _, ols_se = _robust_ols(np.column_stack([np.ones(n), data["X"]]), data["y"])
    return {
        "covers": float(np.mean((ci[:, 0] <= theta) & (theta <= ci[:, 1]))),
        "width_ratio": float(np.mean((ci[:, 1] - ci[:, 0]) / (2 * Z95 * ols_se))),
        "warned": float(any(issubclass(w.category, CoverageWarning) for w in caught)),
    }


def adassp_coverage(
    designs: tuple[str, ...], ns: tuple[int, ...], rho: float, reps: int, seed: int = 0
) -> pd.DataFrame:
    """One row per (design, n): coverage, its Monte Carlo s.e., width ratio, share warned."""
    rows: list[dict[str, Any]] = []
    for design in designs:
        for n in ns:
            trials = pd.DataFrame(
                [_trial(design, n, rho, 1000 * seed + r) for r in range(reps)]
            ).mean()
            c = float(trials["covers"])
            rows.append(
                {
                    "design": design,
                    "n": n,
                    "rho": rho,
                    "coverage": c,
                    "mc_se": math.sqrt(c * (1 - c) / reps),
                    "width_vs_hc0": float(trials["width_ratio"]),
                    "warned": float(trials["warned"]),
                }
            )
            print(pd.DataFrame(rows[-1:]).to_string(index=False, header=len(rows) == 1))
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--designs", nargs="+", default=list(DESIGNS))
    parser.add_argument("--n", nargs="+", type=int, default=[2000, 20000])
    parser.add_argument("--rho", type=float, default=0.5)
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    table = adassp_coverage(tuple(args.designs), tuple(args.n), args.rho, args.reps, args.seed)
    print("| " + " | ".join(table.columns) + " |")
    print("|" + "---|" * len(table.columns))
    for row in table.itertuples(index=False):
        print("| " + " | ".join(f"{v:.3g}" if isinstance(v, float) else str(v) for v in row) + " |")


if __name__ == "__main__":
    main()
