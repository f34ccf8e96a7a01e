"""Coverage and width of ``DPLinearRegression(method="adassp")``'s population interval.

Each trial draws a fresh dataset from one of the inference-coverage study's designs
(:func:`dpfit.experiments.inference_coverage._draw`: isotropic, anisotropic,
heteroscedastic, t(3) errors, and the integer/binary ``formula`` design, here fitted as a
plain design matrix), fits AdaSSP with its default population interval and records whether
each 95% interval covers theta*, the mean width relative to the non-private HC0 OLS
interval on the same data, whether the fit warned (``CoverageWarning``; any, and the one
about a noisy meat, :data:`dpfit.inference.whitened.NOISY_MEAT`) and the share of
responses outside the public y bounds (non-private, from the simulated data). Coverage is
pooled over coefficients; its Monte Carlo s.e. sqrt(c (1 - c) / R) over the R replicates is
conservative for the pooled mean. ``coverage_unwarned`` is the coverage over the fits that
did not warn (NaN where every fit warned). The table in docs/inference.md ("AdaSSP: population
intervals") comes from::

    python -m dpfit.experiments._adassp_coverage --n 2000 20000 --rho 0.5 --reps 100

``--y-widen w`` multiplies the half-width of the design's public y bounds by w (the centre
is kept), to separate the bias from clipping the response from the interval's own error;
``--clip-check`` prints, without noise, the HC0 standard errors with the whitened-gradient
clip at 3, 4, 6 and 8 residual scales over the unclipped ones (n = 2e5).
"""

from __future__ import annotations

import argparse
import math
import warnings
from typing import Any

import numpy as np
import pandas as pd

from ..exceptions import (
    CoverageWarning,
    IdentificationWarning,
    InsecureRandomnessWarning,
    LargeBudgetWarning,
)
from ..inference.whitened import NOISY_MEAT, inverse_sqrt
from ..models import DPLinearRegression
from ._nss_interval import robust_ols, scaled
from .inference_coverage import DESIGNS, Z95, _draw

__all__ = ["adassp_coverage", "clip_check"]


def _trial(design: str, n: int, rho: float, seed: int, widen: float) -> dict[str, float]:
    data = _draw(design, n, np.random.default_rng([seed, 1]))
    low, high = data["y_bounds"]
    centre, half = (low + high) / 2, widen * (high - low) / 2
    low_y, high_y = centre - half, centre + half
    data["y_bounds"] = (low_y, high_y)
    bounds = data["bounds"]
    if isinstance(bounds, dict):
        bounds = list(bounds.values())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CoverageWarning)
        warnings.simplefilter("always", IdentificationWarning)  # recorded, not raised
        warnings.simplefilter("ignore", LargeBudgetWarning)
        warnings.simplefilter("ignore", InsecureRandomnessWarning)  # seeded: reproducible
        model = DPLinearRegression(
            rho=rho, method="adassp", bounds=bounds, y_bounds=data["y_bounds"], random_state=seed
        ).fit(data["X"], data["y"])
    ci = model.conf_int().to_numpy()
    theta = data["theta"]
    _, ols_se = robust_ols(np.column_stack([np.ones(n), data["X"]]), data["y"])
    return {
        "covers": float(np.mean((ci[:, 0] <= theta) & (theta <= ci[:, 1]))),
        "width_ratio": float(np.mean((ci[:, 1] - ci[:, 0]) / (2 * Z95 * ols_se))),
        "warned": float(any(issubclass(w.category, CoverageWarning) for w in caught)),
        "meat_warned": float(any(str(w.message) == NOISY_MEAT for w in caught)),
        "y_clipped": float(np.mean((data["y"] <= low_y) | (data["y"] >= high_y))),
    }


def adassp_coverage(
    designs: tuple[str, ...],
    ns: tuple[int, ...],
    rho: float,
    reps: int,
    seed: int = 0,
    widen: float = 1.0,
) -> pd.DataFrame:
    """One row per (design, n): coverage, its Monte Carlo s.e., width ratio, shares warned,
    coverage of the unwarned fits."""
    rows: list[dict[str, Any]] = []
    for design in designs:
        for n in ns:
            each = pd.DataFrame(
                [_trial(design, n, rho, 1000 * seed + r, widen) for r in range(reps)]
            )
            trials = each.mean()
            c = float(trials["covers"])
            rows.append(
                {
                    "design": design,
                    "n": n,
                    "rho": rho,
                    "y_widen": widen,
                    "coverage": c,
                    "mc_se": math.sqrt(c * (1 - c) / reps),
                    "width_vs_hc0": float(trials["width_ratio"]),
                    "warned": float(trials["warned"]),
                    "meat_warned": float(trials["meat_warned"]),
                    "coverage_unwarned": float(each["covers"][each["warned"] == 0].mean()),
                    "y_clipped": float(trials["y_clipped"]),
                }
            )
            print(pd.DataFrame(rows[-1:]).to_string(index=False, header=len(rows) == 1))
    return pd.DataFrame(rows)


def clip_check(designs: tuple[str, ...], n: int = 200_000) -> pd.DataFrame:
    """Smallest ratio over coefficients of clipped to unclipped HC0 s.e., no noise.

    The clip is the one of :mod:`dpfit.baselines.adassp_population` (M sqrt(k) times the root
    mean of min(e^2, 1)) on the whitened gradients at the OLS fit of the rescaled data.
    """
    rows = []
    for design in designs:
        D, ys, _, _ = scaled(_draw(design, n, np.random.default_rng(0)))
        k = D.shape[1]
        e = ys - D @ np.linalg.lstsq(D, ys, rcond=None)[0]
        H = D.T @ D / n
        P = inverse_sqrt(H)
        g = (D @ P) * e[:, None]
        norms = np.linalg.norm(g, axis=1)
        Hinv, Pinv = np.linalg.inv(H), np.linalg.inv(P)
        full = np.diag(Hinv @ ((D * e[:, None] ** 2).T @ D / n) @ Hinv)
        row: dict[str, Any] = {"design": design}
        for M in (3, 4, 6, 8):
            C = M * math.sqrt(k) * math.sqrt(float(np.mean(np.minimum(e**2, 1.0))))
            gc = g * np.minimum(1.0, C / np.maximum(norms, 1e-300))[:, None]
            clipped = np.diag(Hinv @ Pinv @ (gc.T @ gc / n) @ Pinv @ Hinv)
            row[f"M={M}"] = float(np.min(np.sqrt(clipped / full)))
        rows.append(row)
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--designs", nargs="+", default=list(DESIGNS))
    parser.add_argument("--n", nargs="+", type=int, default=[2000, 20000])
    parser.add_argument("--rho", type=float, default=0.5)
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--y-widen", type=float, default=1.0)
    parser.add_argument("--clip-check", action="store_true")
    args = parser.parse_args(argv)
    if args.clip_check:
        print(clip_check(tuple(args.designs)).round(3).to_string(index=False))
        return
    table = adassp_coverage(
        tuple(args.designs), tuple(args.n), args.rho, args.reps, args.seed, args.y_widen
    )
    print("| " + " | ".join(table.columns) + " |")
    print("|" + "---|" * len(table.columns))
    for row in table.itertuples(index=False):
        print("| " + " | ".join(f"{v:.3g}" if isinstance(v, float) else str(v) for v in row) + " |")


if __name__ == "__main__":
    main()
