"""Weak instruments: the Anderson-Rubin set covers where the Wald interval does not.

Each trial draws a fresh dataset from a linear IV model with known beta*, fits the default
``DPIVRegression`` (noisy-moment 2SLS) and records whether beta* lies in (a) its Wald
interval (``conf_int``), (b) its Anderson-Rubin set (``ar_interval``: the privacy noise's
variance added to the AR statistic's, :mod:`dpfit.inference.anderson_rubin`), and (c) the
AR set computed from the same released moments **without** the noise term (a set that
treats M~ as if it were the data's M), whether the fit warned that the instruments are
weak (Stock & Yogo 2005), the first-stage F and whether the AR set was unbounded.

Design (q excluded instruments, concentration parameter mu^2 = n pi'pi / var(v)):

    z ~ N(0, I_q),  (u, v) ~ N(0, [[1, 0.95], [0.95, 1]]),
    x = sqrt(mu^2 / (n q)) 1'z + v,  y = 1 + 0.5 x + u.

``weak-over`` has q = 3, mu^2 = 10 (expected first-stage F about 4.3), ``weak-just`` q = 1,
mu^2 = 4 (about 5), ``strong-over`` q = 3, mu^2 = 1000. Strong endogeneity (0.95) makes the
weak-instrument bias of 2SLS towards OLS visible in the Wald interval (Staiger & Stock
1997; Stock & Yogo 2005). At n = 5000 and rho = 20 the privacy noise is small against the
sampling error (the weak-instrument problem is the data's); at n = 2000 and rho = 1 it is
not (the cell that shows the noise term is needed). Public bounds: each column's
population mean +/- 6 population s.d.

The claims (each with a negative control in tests/experiments/test_weak_iv_coverage.py):

* ``ar-covers``: in every cell the AR set covers beta* in at least 0.93 of the fits;
* ``wald-misses``: in the weak over-identified cell with little noise, the Wald interval
  covers beta* in less than 0.90 of the fits (the design is weak enough to matter);
* ``weak-warned``: the fit warns that the instruments are weak in at least 0.90 of the fits
  of every weak cell and in at most 0.05 of the strong cell's;
* ``noise-term``: in the noisy cell, the AR set without the noise term covers beta* in
  less than 0.90 of the fits.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..exceptions import (
    CoverageWarning,
    IdentificationWarning,
    InsecureRandomnessWarning,
    LargeBudgetWarning,
)
from ..inference.anderson_rubin import ar_set
from ..models import DPIVRegression
from ._coverage_table import per_cell
from .registry import Claim, ClaimResult, Experiment, register

__all__ = ["DESIGNS", "EXPERIMENT", "coverage_table"]

BETA = 0.5
ENDOGENEITY = 0.95
#: design -> (excluded instruments q, concentration parameter mu^2)
DESIGNS = {"weak-over": (3, 10.0), "weak-just": (1, 4.0), "strong-over": (3, 1000.0)}
#: The cells: (design, n, rho).
CELLS = (
    ("weak-over", 5000, 20.0),
    ("weak-just", 5000, 20.0),
    ("strong-over", 5000, 20.0),
    ("weak-just", 2000, 1.0),
)
#: The cell where the privacy noise is not small against the sampling error.
NOISY = ("weak-just", 2000, 1.0)


def _draw(design: str, n: int, rng: np.random.Generator) -> tuple[pd.DataFrame, dict]:
    q, mu2 = DESIGNS[design]
    z = rng.standard_normal((n, q))
    u, e = rng.standard_normal((2, n))
    v = ENDOGENEITY * u + math.sqrt(1.0 - ENDOGENEITY**2) * e
    pi = math.sqrt(mu2 / (n * q))
    x = pi * z.sum(axis=1) + v
    y = 1.0 + BETA * x + u
    frame = pd.DataFrame({"y": y, "x": x, **{f"z{j}": z[:, j] for j in range(q)}})
    sd_x = math.sqrt(q * pi**2 + 1.0)
    sd_y = math.sqrt(BETA**2 * sd_x**2 + 1.0 + 2.0 * BETA * ENDOGENEITY)
    bounds = {"x": (-6 * sd_x, 6 * sd_x), **{f"z{j}": (-6.0, 6.0) for j in range(q)}}
    return frame, {"bounds": bounds, "y_bounds": (1.0 - 6 * sd_y, 1.0 + 6 * sd_y)}


def _covers(pieces: list[tuple[float, float]]) -> float:
    return float(any(lo <= BETA <= hi for lo, hi in pieces))


def _trial(params: Mapping[str, Any], seed: int) -> dict[str, float]:
    design, n, rho = str(params["design"]), int(params["n"]), float(params["rho"])
    frame, public = _draw(design, n, np.random.default_rng([seed, 31]))
    instruments = [c for c in frame.columns if c.startswith("z")]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CoverageWarning)
        warnings.simplefilter("always", IdentificationWarning)  # recorded, not a coverage doubt
        warnings.simplefilter("ignore", LargeBudgetWarning)  # rho = 20: a simulation
        warnings.simplefilter("ignore", InsecureRandomnessWarning)  # seeded on purpose
        model = DPIVRegression(rho=rho, random_state=seed, **public)
        res = model.fit(frame[["x"]], frame["y"], Z=frame[instruments]).result_
    messages = [str(w.message) for w in caught if issubclass(w.category, CoverageWarning)]
    lower, upper = res.conf_int(0.05).loc["x"]
    pieces = res.ar_interval(0.05)
    iv = res.identification
    scale = float(iv.scale[1])
    noiseless = dataclasses.replace(iv.moments, noise_std=0.0)
    naive = [(lo * scale, hi * scale) for lo, hi in ar_set(noiseless, 0.05, float(iv.beta[1]))]
    return {
        "wald_covers": float(lower <= BETA <= upper),
        "ar_covers": _covers(pieces),
        "naive_ar_covers": _covers(naive),
        "ar_unbounded": float(any(math.isinf(lo) or math.isinf(hi) for lo, hi in pieces)),
        "weak_warned": float(any("instruments are weak" in m for m in messages)),
        "warned": float(bool(messages)),
        "first_stage_f": float(res.first_stage_f),
    }


def coverage_table(results: pd.DataFrame) -> pd.DataFrame:
    """Per cell: coverage of the Wald interval, the AR set and the AR set without the noise
    term, the share of fits warned (weak instruments; any reason), of unbounded AR sets, the
    median first-stage F and the replicates."""
    table, _ = per_cell(
        results,
        reps="ar_covers",
        wald=("wald_covers", "mean"),
        ar=("ar_covers", "mean"),
        naive_ar=("naive_ar_covers", "mean"),
        weak_warned=("weak_warned", "mean"),
        warned=("warned", "mean"),
        unbounded=("ar_unbounded", "mean"),
        median_f=("first_stage_f", "median"),
    )
    return table.reset_index()


def _cells(results: pd.DataFrame) -> dict[tuple[str, int, float], pd.Series]:
    return {
        (r["design"], int(r["n"]), float(r["rho"])): r
        for _, r in coverage_table(results).iterrows()
    }


def _ar_covers(results: pd.DataFrame) -> ClaimResult:
    """AR coverage at least 0.93 in every cell."""
    cells = _cells(results)
    numbers = {f"{d} n={n} rho={r:g} AR": float(c["ar"]) for (d, n, r), c in cells.items()}
    failed = [k for k, c in cells.items() if not c["ar"] >= AR_LEVEL]
    return ClaimResult(
        passed=bool(cells) and not failed,
        numbers=numbers,
        detail="below 0.93: " + (", ".join(f"{d} n={n} rho={r:g}" for d, n, r in failed) or "none"),
    )


def _wald_misses(results: pd.DataFrame) -> ClaimResult:
    """Wald coverage below 0.90 in the weak over-identified cell with little noise."""
    cell = _cells(results).get(CELLS[0])
    if cell is None:
        return ClaimResult(
            passed=False, numbers={}, detail="the weak over-identified cell is missing"
        )
    numbers = {"Wald": float(cell["wald"]), "AR": float(cell["ar"])}
    return ClaimResult(passed=bool(cell["wald"] < WALD_LEVEL), numbers=numbers)


def _weak_warned(results: pd.DataFrame) -> ClaimResult:
    """Weak-instrument warnings in >= 0.90 of every weak cell's fits, <= 0.05 of the strong's."""
    cells = _cells(results)
    numbers, failed = {}, []
    for (design, n, rho), cell in cells.items():
        share = float(cell["weak_warned"])
        numbers[f"{design} n={n} rho={rho:g} warned"] = share
        weak = design.startswith("weak")
        if (weak and not share >= HITS) or (not weak and not share <= FALSE_ALARMS):
            failed.append(f"{design} n={n} rho={rho:g}")
    return ClaimResult(
        passed=bool(cells) and not failed,
        numbers=numbers,
        detail="failing: " + (", ".join(failed) or "none"),
    )


def _noise_term(results: pd.DataFrame) -> ClaimResult:
    """In the noisy cell the AR set without the noise term covers less than 0.90."""
    cell = _cells(results).get(NOISY)
    if cell is None:
        return ClaimResult(passed=False, numbers={}, detail="the noisy cell is missing")
    numbers = {"AR": float(cell["ar"]), "AR without the noise term": float(cell["naive_ar"])}
    return ClaimResult(passed=bool(cell["naive_ar"] < WALD_LEVEL), numbers=numbers)


#: The least AR coverage of any cell; the coverage below which an interval counts as
#: failing; the least share of weak-cell fits that must warn, the most strong-cell fits that
#: may.
AR_LEVEL = 0.93
WALD_LEVEL = 0.90
HITS = 0.90
FALSE_ALARMS = 0.05

CLAIMS = [
    Claim(
        name="ar-covers",
        statement="In every cell the Anderson-Rubin set (privacy noise included) covers beta* "
        "in at least 0.93 of the fits.",
        evaluate=_ar_covers,
    ),
    Claim(
        name="wald-misses",
        statement="In the weak over-identified cell at n = 5000, rho = 20 the Wald interval "
        "covers beta* in less than 0.90 of the fits.",
        evaluate=_wald_misses,
    ),
    Claim(
        name="weak-warned",
        statement="The fit warns that the instruments are weak in at least 0.90 of the fits of "
        "every weak cell and in at most 0.05 of the strong cell's.",
        evaluate=_weak_warned,
    ),
    Claim(
        name="noise-term",
        statement="At n = 2000, rho = 1 (weak, just identified) the AR set computed without the "
        "privacy noise's variance covers beta* in less than 0.90 of the fits.",
        evaluate=_noise_term,
    ),
]


def _grid(cells: tuple[tuple[str, int, float], ...]) -> list[dict]:
    return [{"design": d, "n": n, "rho": r} for d, n, r in cells]


EXPERIMENT = register(
    Experiment(
        name="weak-iv-coverage",
        paper=(
            "dpfit, beyond the papers: identification diagnostics for private IV "
            "(docs/inference.md)"
        ),
        figure="weak-instrument coverage: Wald vs Anderson-Rubin (docs/inference.md)",
        description=(
            "Coverage of beta* by the default IV fit's Wald interval and its Anderson-Rubin "
            "set (privacy noise in the AR statistic's variance, or not) on fresh data from "
            "weak and strong instrument designs with strong endogeneity; how often the fit "
            "warns that the instruments are weak."
        ),
        grid={"smoke": _grid(CELLS[:1]), "quick": _grid(CELLS), "paper": _grid(CELLS)},
        replicates={"smoke": 2, "quick": 1000, "paper": 4000},
        trial=_trial,
        privacy="Each trial is one fit at rho (replace-one, public n); seeded noise.",
        claims=CLAIMS,
    )
)
