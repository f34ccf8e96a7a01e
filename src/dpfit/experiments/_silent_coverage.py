"""Coverage of the fits that stay silent, written once for the coverage studies.

The real-data and GLM coverage studies store one row per fit with ``covers_j`` and
``width_j`` per coefficient and ``warned`` (the fit emitted a ``CoverageWarning``). Their
claims pool the coverage of the silent fits over coefficients, with a Monte Carlo s.e. that
treats fits as clusters (a fit's coefficients share its noise draw), and test it against
the band [0.93, 0.97] within 2 s.e.
"""

from __future__ import annotations

import math

import pandas as pd

from .registry import Claim, ClaimResult

__all__ = [
    "BAND",
    "SILENT_COVERAGE",
    "cell_coverage",
    "clustered_coverage",
    "coefficient_rows",
    "in_band",
    "silent_coverage",
]

#: The pooled coverage a 95% interval should reach, before Monte Carlo error.
BAND = (0.93, 0.97)


def coefficient_rows(results: pd.DataFrame, prefix: str = "covers_") -> pd.DataFrame:
    """One row per (fit, coefficient): design, n, rho, warned, j, covers, width, fit."""
    frames = []
    for j in range(int(results["k"].max())):
        if f"{prefix}{j}" not in results:
            continue
        part = results[["design", "n", "rho", "warned"]].assign(
            j=j,
            covers=results[f"{prefix}{j}"],
            width=results[f"{prefix.replace('covers', 'width')}{j}"],
            fit=results.index,
        )
        frames.append(part.dropna(subset=["covers"]))
    return pd.concat(frames, ignore_index=True)


def clustered_coverage(rows: pd.DataFrame) -> tuple[float, float, int]:
    """Pooled coverage of ``rows``, its Monte Carlo s.e. with fits as clusters (a ratio
    estimator's s.e., at least the binomial s.e. at 0.95), and the number of fits."""
    per_fit = rows.groupby("fit")["covers"].agg(["sum", "size"])
    total = per_fit["size"].sum()
    coverage = per_fit["sum"].sum() / total
    resid = per_fit["sum"] - coverage * per_fit["size"]
    se = max(math.sqrt((resid**2).sum()) / total, math.sqrt(0.95 * 0.05 / total))
    return float(coverage), float(se), len(per_fit)


def in_band(coverage: float, se: float) -> bool:
    """``coverage`` within 2 s.e. of :data:`BAND`."""
    return BAND[0] - 2 * se <= coverage <= BAND[1] + 2 * se


def cell_coverage(table: pd.DataFrame, size: str, label: str) -> ClaimResult:
    """The claim over a per-cell ``table`` (columns design, rho, warned, silent_coverage, mc_se
    and the cell's size column ``size``, shown as ``label``): every cell warns in more than
    half its fits or its silent fits cover within 2 s.e. of :data:`BAND`."""
    bad = table[
        (table["warned"] <= 0.5)
        & ~table.apply(lambda r: in_band(r["silent_coverage"], r["mc_se"]), axis=1)
    ]
    detail = ", ".join(
        f"{r['design']} {label}={r[size]} rho={r['rho']:g}: "
        f"{r['silent_coverage']:.3f} +/- {r['mc_se']:.3f}"
        for _, r in bad.iterrows()
    )
    numbers = {"cells": float(len(table)), "failing": float(len(bad))}
    numbers["warned cells"] = float((table["warned"] > 0.5).sum())
    return ClaimResult(
        passed=bad.empty and len(table) > 0, numbers=numbers, detail=detail or "none failing"
    )


def silent_coverage(results: pd.DataFrame) -> ClaimResult:
    """The claim: pooled coverage of the silent fits in :data:`BAND` within 2 MC s.e."""
    rows = coefficient_rows(results)
    silent = rows[rows["warned"] == 0]
    if silent.empty:
        return ClaimResult(passed=False, numbers={"silent fits": 0.0}, detail="no silent fit")
    coverage, se, fits = clustered_coverage(silent)
    numbers = {"silent coverage": coverage, "mc_se": se, "silent fits": float(fits)}
    return ClaimResult(
        passed=in_band(coverage, se), numbers=numbers, detail=f"{coverage:.4f} +/- {se:.4f}"
    )


#: The claim of a study whose fits store per-coefficient coverage: :func:`silent_coverage`.
SILENT_COVERAGE = Claim(
    name="silent-coverage",
    statement=(
        "Pooled over every fit without a CoverageWarning and every coefficient, coverage "
        "of theta* lies in [0.93, 0.97] within 2 Monte Carlo s.e. (fits as clusters)."
    ),
    evaluate=silent_coverage,
)
