"""Coverage on real outcomes: resampled files as populations, skewed and heavy-tailed designs.

Each trial draws n records *with replacement* from a finite population
(:mod:`dpfit.experiments._realdata_populations`: eight real files, three simulated skewed or
heavy-tailed tables, and an IV model on the wealth file), whose full-table least-squares (or
2SLS) coefficient is theta*. It fits the library's default, as a careful analyst would, with
public bounds that contain every value of the table, and records per coefficient whether the
95% interval covers theta* and its width over the non-private HC1 interval on the same data
(robust 2SLS with the HC1 factor for IV), whether the fit emitted a ``CoverageWarning``
(``warned``), the reasons it gave by kind (:func:`warning_kinds`: in that warning, in an
``IdentificationWarning`` or in a note of its summary), and, side by side, the interval
debiased by the released gap to least squares (estimate + gap, the gap's noise added to the
variance; post-processing of the same fit, the candidate "debias" of docs/inference.md) and
whether that gap is material (the warning of the least-squares target, recorded for either
target).

Fits: ``dpfit``'s default ``DPLinearRegression`` (preconditioned DP-GD, target
least squares) on every population but two; ``adassp-k401ksubs`` is ``method="adassp"`` on
the wealth file, ``iv-k401ksubs`` the default ``DPIVRegression``.

The claims (each with a negative control in tests/experiments/test_realdata_coverage.py):

* ``silent-misses``: in every cell, for every coefficient, the share of fits that are silent
  (no CoverageWarning) *and* miss theta* is at most 0.10, up to a one-sided binomial test
  at level 0.001 (per coefficient and cell);
* ``silent-coverage``: pooled over every silent fit and coefficient, coverage lies in
  [0.93, 0.97] (within 2 MC s.e., which carry the correlation within fits);
* ``silent-at-scale``: at n = 2e4, rho = 1, at least 80% of the fits are silent on at least
  6 of the 8 real files.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ..exceptions import (
    CoverageWarning,
    IdentificationWarning,
    LargeBudgetWarning,
    SideConditionWarning,
)
from ..models import DPIVRegression, DPLinearRegression
from ._coverage_table import grid
from ._realdata_populations import POPULATIONS, population
from ._silent_coverage import SILENT_COVERAGE, coefficient_rows
from .registry import Claim, ClaimResult, Experiment, register

__all__ = ["EXPERIMENT", "REAL_FILES", "cell_table", "warning_kinds"]

Z95 = 1.959963984540054
#: The real files (the ``silent-at-scale`` claim counts these).
REAL_FILES = POPULATIONS[:8]
#: Designs: every population, and AdaSSP on the wealth file.
DESIGNS = (*POPULATIONS, "adassp-k401ksubs")
#: A phrase of each reason a fit can give in a CoverageWarning -> its kind (the calibration
#: rows); every reason of an IdentificationWarning is of the kind "unidentified", and the notes
#: that are no warning have the kinds of :data:`_NOTE_KINDS`.
_KINDS = {
    "iterates have not converged": "drift",
    "the noise swamps the data": "swamped",
    "(the sandwich's meat)": "meat",
    "Clipping moves the estimate": "clipping",
    "Rows far beyond the row clip": "clipping",
    "lie at the public y bounds": "clipped-y",
    "first stage is weak": "weak-first-stage",
    "instruments are weak": "weak-instruments",
}
_NOTE_KINDS = {"(the sandwich's meat)": "meat-note", "AdaSSP's ridge": "ridge"}


def warning_kinds(
    coverage: list[str], identification: Sequence[str] = (), notes: Sequence[str] = ()
) -> set[str]:
    """The kinds of the reasons one fit gave: in its CoverageWarning messages (``coverage``,
    :data:`_KINDS`; "other" when none is known), its IdentificationWarning messages (kind
    "unidentified") and the rest of its summary's notes (``notes``, which repeat the
    warnings; :data:`_NOTE_KINDS`)."""
    told = [n for n in notes if n not in coverage and n not in identification]
    found = {kind for text in coverage for phrase, kind in _KINDS.items() if phrase in text}
    found |= {kind for text in told for phrase, kind in _NOTE_KINDS.items() if phrase in text}
    if coverage and not any(phrase in text for text in coverage for phrase in _KINDS):
        found.add("other")
    return found | ({"unidentified"} if identification else set())


def _hc1(D: np.ndarray, y: np.ndarray, Z: np.ndarray | None) -> np.ndarray:
    """Non-private HC1 standard errors of OLS (2SLS when ``Z`` is given)."""
    n, k = D.shape
    X = D if Z is None else Z @ np.linalg.lstsq(Z, D, rcond=None)[0]
    beta = np.linalg.solve(X.T @ D, X.T @ y)
    e = y - D @ beta
    bread = np.linalg.inv(X.T @ X)
    meat = (X * e[:, None] ** 2).T @ X
    return np.sqrt(np.diag(bread @ meat @ bread) * n / (n - k))


def _fit(
    design: str, sample: pd.DataFrame, pop: Any, params: Mapping[str, Any], seed: int
) -> tuple[Any, list[str], list[str]]:
    """The fit of one trial, its CoverageWarning and its IdentificationWarning messages."""
    x, z = list(pop.x), list(pop.z)
    public = {"rho": float(params["rho"]), "y_bounds": pop.y_bounds, "random_state": seed}
    if "target" in params:  # the candidates of realdata_tables; the default otherwise
        public["target"] = params["target"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CoverageWarning)
        warnings.simplefilter("always", IdentificationWarning)
        warnings.simplefilter("ignore", LargeBudgetWarning)
        warnings.simplefilter("ignore", SideConditionWarning)
        if z:
            bounds = {c: pop.bounds[c] for c in [*x, *z]}
            model = DPIVRegression(bounds=bounds, **public)
            res = model.fit(sample[x], sample[pop.response], Z=sample[[*z, *x[1:]]]).result_
        else:
            method = "adassp" if design.startswith("adassp-") else "gd"
            bounds = [pop.bounds[c] for c in x]
            model = DPLinearRegression(method=method, bounds=bounds, **public)
            res = model.fit(sample[x].to_numpy(), sample[pop.response].to_numpy()).result_
    return res, *(
        [str(w.message) for w in caught if issubclass(w.category, category)]
        for category in (CoverageWarning, IdentificationWarning)
    )


def _trial(params: Mapping[str, Any], seed: int) -> dict[str, float]:
    design, n = str(params["design"]), int(params["n"])
    pop = population(design.removeprefix("adassp-"))
    rows = np.random.default_rng([seed, 26]).integers(0, len(pop.frame), n)
    sample = pop.frame.iloc[rows].reset_index(drop=True)
    res, messages, named = _fit(design, sample, pop, params, seed)
    cov = res.covariance("population")
    lower, upper = res.conf_int(0.05).to_numpy().T
    theta = pop.theta
    D = np.column_stack([np.ones(n), sample[list(pop.x)].to_numpy()])
    Z = None
    if pop.z:
        Z = np.column_stack([np.ones(n), sample[[*pop.z, *pop.x[1:]]].to_numpy()])
    ref = 2 * Z95 * _hc1(D, sample[pop.response].to_numpy(), Z)
    kinds = warning_kinds(messages, named, res.notes)
    out = {"warned": float(bool(messages)), "k": float(theta.size)}
    out.update({f"warn_{kind}": 1.0 for kind in kinds})
    debiased = _debiased(res.estimate, cov)
    if debiased is not None:  # the released gap's verdict, whatever the fit's target
        out["gap_warned"] = float(cov.gap.material(cov.bse).any())
    for j in range(theta.size):
        out[f"covers_{j}"] = float(lower[j] <= theta[j] <= upper[j])
        out[f"width_{j}"] = float((upper[j] - lower[j]) / ref[j])
        if debiased is not None:
            centre, half = debiased[0][j], debiased[1][j]
            out[f"db_covers_{j}"] = float(abs(centre - theta[j]) <= half)
            out[f"db_width_{j}"] = float(2 * half / ref[j])
            out[f"gap_{j}"] = float(cov.gap.relative(cov.bse)[j])
    return out


def _debiased(estimate: np.ndarray, cov: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """Centre and half-width of the interval debiased by the released gap (post-processing):
    estimate + gap, with the gap's noise covariance added (Student-t, the fit's dof)."""
    if getattr(cov, "gap", None) is None:  # AdaSSP, IV, or a dpfit without the gap
        return None
    se = np.sqrt(cov.bse**2 + cov.gap.noise_se**2)
    return estimate + cov.gap.gap, stats.t.ppf(0.975, cov.dof) * se


def cell_table(results: pd.DataFrame, prefix: str = "covers_") -> pd.DataFrame:
    """Per cell: fits, share warned, coverage of silent fits (pooled over coefficients), the
    largest share of silent misses over the coefficients, and median width over HC1."""
    long = coefficient_rows(results, prefix)
    long["silent_miss"] = (long["warned"] == 0) & (long["covers"] == 0)
    g = long.groupby(["design", "n", "rho"])
    silent = long[long["warned"] == 0].groupby(["design", "n", "rho"])
    table = pd.DataFrame(
        {
            "fits": results.groupby(["design", "n", "rho"]).size(),
            "warned": results.groupby(["design", "n", "rho"])["warned"].mean(),
            "coverage": g["covers"].mean(),
            "silent_coverage": silent["covers"].mean(),
            "worst_silent_miss": long.groupby(["design", "n", "rho", "j"])["silent_miss"]
            .mean()
            .groupby(["design", "n", "rho"])
            .max(),
            "width_hc1": g["width"].median(),
        }
    )
    return table.reset_index()


def _silent_misses(results: pd.DataFrame) -> ClaimResult:
    """Per cell and coefficient, silent misses at most 0.10 (one-sided binomial, 0.001)."""
    long = coefficient_rows(results)
    long["silent_miss"] = (long["warned"] == 0) & (long["covers"] == 0)
    counts = long.groupby(["design", "n", "rho", "j"])["silent_miss"].agg(["sum", "size"])
    p = stats.binom.sf(counts["sum"] - 1, counts["size"], SILENT_MISS)
    failed = counts[p < MISS_LEVEL]
    numbers = {"cells x coefficients": float(len(counts)), "failing": float(len(failed))}
    numbers["largest share"] = float((counts["sum"] / counts["size"]).max())
    detail = ", ".join(f"{d} n={n} rho={r:g} coef {j}" for d, n, r, j in failed.index[:8])
    return ClaimResult(
        passed=failed.empty and len(counts) > 0,
        numbers=numbers,
        detail="above 0.10 (binomial p < 0.001): " + (detail or "none"),
    )


def _silent_at_scale(results: pd.DataFrame) -> ClaimResult:
    """At n = 2e4, rho = 1: at least 80% silent fits on at least 6 of the real files."""
    cell = results[(results["n"] == 20_000) & (results["rho"] == 1.0)]
    cell = cell[cell["design"].isin(REAL_FILES)]
    silent = 1.0 - cell.groupby("design")["warned"].mean()
    numbers = {f"{d} silent": float(v) for d, v in silent.items()}
    files = int((silent >= 0.8).sum())
    numbers["files at 80%"] = float(files)
    return ClaimResult(
        passed=files >= 6, numbers=numbers, detail=f"{files} of {len(silent)} files at 80%"
    )


#: The largest share of silent misses a coefficient may have in a cell, and the level of the
#: one-sided binomial test that judges it.
SILENT_MISS = 0.10
MISS_LEVEL = 0.001

CLAIMS = [
    Claim(
        name="silent-misses",
        statement=(
            "In every cell, for every coefficient, the share of fits that emit no "
            "CoverageWarning and whose 95% interval misses theta* is at most 0.10 (rejected "
            "when a one-sided binomial test against 0.10 has p < 0.001)."
        ),
        evaluate=_silent_misses,
    ),
    SILENT_COVERAGE,
    Claim(
        name="silent-at-scale",
        statement=(
            "At n = 2e4 and rho = 1, at least 80% of the fits emit no CoverageWarning on at "
            "least 6 of the 8 real files."
        ),
        evaluate=_silent_at_scale,
    ),
]


EXPERIMENT = register(
    Experiment(
        name="realdata-coverage",
        paper="dpfit, beyond the papers: honest intervals on real outcomes (docs/inference.md)",
        figure="real-data coverage and warning calibration (docs/inference.md)",
        description=(
            "Coverage of theta* (the full-table least-squares or 2SLS coefficient) by the "
            "default 95% intervals on samples drawn with replacement from eight real files "
            "and three simulated skewed or heavy-tailed tables, plus AdaSSP and the IV "
            "default on the wealth file; public bounds contain every value; n in {2000, "
            "2e4, 2e5}, rho in {0.1, 1}; widths over non-private HC1."
        ),
        grid={
            "smoke": grid(("k401ksubs", "wage2"), [2000], [1.0]),
            "quick": grid(DESIGNS, [2000, 20_000, 200_000], [0.1, 1.0]),
            "paper": grid(DESIGNS, [2000, 20_000, 200_000], [0.1, 1.0]),
        },
        replicates={"smoke": 2, "quick": 40, "paper": 200},
        trial=_trial,
        privacy="Each trial is one fit at rho (replace-one, public n); seeded noise.",
        claims=CLAIMS,
    )
)
