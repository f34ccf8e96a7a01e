"""Coverage of the private GLM's population intervals: simulated designs and real files.

Each trial draws n records *with replacement* from a finite population
(:mod:`dpfit.experiments._glm_populations`: logistic with balanced outcomes, rare events
(4%), an interaction and a misspecified link; probit; Poisson with and without
overdispersion and with an exposure; five real files), whose full-table maximum-likelihood
coefficient is theta*. It fits the library's default (``DPLogisticRegression``, with the
probit link for the probit design, or ``DPPoissonRegressor``) with public bounds that
contain every value of the table, and records per coefficient whether the 95% interval
covers theta* and its width over statsmodels' robust (HC0) interval on the same sample, and
which reasons the fit's ``CoverageWarning`` gave (:func:`glm_kinds`).

The claims (each with a negative control in tests/experiments/test_glm_coverage.py):

* ``cell-coverage``: in every cell, either more than half the fits warn, or the coverage of
  the fits without a warning (pooled over coefficients) lies in [0.93, 0.97] within 2 Monte
  Carlo s.e. (fits as clusters);
* ``silent-coverage``: pooled over every fit without a warning, coverage lies in
  [0.93, 0.97] within 2 MC s.e.;
* ``width-at-scale``: at n = 2e5, rho = 0.5, the median width over the HC0 interval is at
  most 1.3 in every simulated design.

``python -m dpfit.experiments.glm_coverage triage --store STORE [--code-version V]
[--write CSV]`` prints the warning triage of the grid (the rule of
:mod:`dpfit.experiments.realdata_tables`: per reason, the share of the fits in covering
cells that give it, at most 5%) and ``--write`` saves its per-cell summary, the file
tests/experiments/data/glm_warning_cells.csv that the test of the targets reads.
"""

from __future__ import annotations

import argparse
import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..baselines import glm_mle
from ..exceptions import (
    CoverageWarning,
    InsecureRandomnessWarning,
    LargeBudgetWarning,
    SideConditionWarning,
)
from ..models import DPLogisticRegression, DPPoissonRegressor
from ._coverage_table import grid
from ._glm_plots import coverage_figure
from ._glm_populations import GLM_POPULATIONS, REAL_GLM, SIMULATED_GLM, glm_population
from ._silent_coverage import (
    SILENT_COVERAGE,
    cell_coverage,
    clustered_coverage,
    coefficient_rows,
)
from .realdata_tables import markdown, triage_table, warning_cells
from .registry import Claim, ClaimResult, Experiment, register
from .runner import run

__all__ = ["EXPERIMENT", "GLM_KIND_METHODS", "cell_table", "glm_kinds", "main"]

Z95 = 1.959963984540054
#: A phrase of each reason the GLM's CoverageWarning can give -> its kind.
_KINDS = {
    "have not converged": "drift",
    "(quasi-)separated": "separation",
    "Clipping moves the estimate": "clipping",
    "Fisher information (whitened)": "bread",
    "(the sandwich's meat)": "meat",
    "per coefficient": "events",
    "iterates spread": "spread",
}
#: Every reason is a CoverageWarning reason of the one GLM fit (method "gd" in the triage of
#: :mod:`dpfit.experiments.realdata_tables`).
GLM_KIND_METHODS = {kind: ("gd",) for kind in _KINDS.values()}
WIDTH_LIMIT = 1.3


def glm_kinds(messages: list[str]) -> set[str]:
    """The kinds (:data:`_KINDS`) of the reasons in one fit's CoverageWarning messages."""
    found = {kind for text in messages for phrase, kind in _KINDS.items() if phrase in text}
    return found or ({"other"} if messages else set())


def _fit(pop: Any, sample: pd.DataFrame, rho: float, seed: int) -> tuple[Any, list[str]]:
    X = sample[list(pop.x)].to_numpy()
    y = sample[pop.response].to_numpy()
    bounds = [pop.bounds[c] for c in pop.x]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CoverageWarning)
        for quiet in (LargeBudgetWarning, SideConditionWarning, InsecureRandomnessWarning):
            warnings.simplefilter("ignore", quiet)
        if pop.family == "binomial":
            model = DPLogisticRegression(
                rho=rho, link=pop.link, bounds=bounds, random_state=seed
            ).fit(X, y)
        else:
            offset = None if pop.offset is None else sample[pop.offset].to_numpy()
            model = DPPoissonRegressor(
                rho=rho, bounds=bounds, y_bounds=(0, pop.K), random_state=seed
            ).fit(X, y, offset=offset)
    messages = [str(w.message) for w in caught if issubclass(w.category, CoverageWarning)]
    return model.result_, messages


def _hc0(pop: Any, sample: pd.DataFrame) -> np.ndarray:
    """Robust (HC0) standard errors of the non-private MLE on the sample."""
    D = np.column_stack([np.ones(len(sample)), sample[list(pop.x)].to_numpy()])
    offset = None if pop.offset is None else sample[pop.offset].to_numpy()
    with np.errstate(all="ignore"):
        return glm_mle(D, sample[pop.response].to_numpy(), pop.family, offset, pop.link)[1]


def _trial(params: Mapping[str, Any], seed: int) -> dict[str, float]:
    pop, n = glm_population(str(params["design"])), int(params["n"])
    rows = np.random.default_rng([seed, 28]).integers(0, len(pop.frame), n)
    sample = pop.frame.iloc[rows].reset_index(drop=True)
    res, messages = _fit(pop, sample, float(params["rho"]), seed)
    lower, upper = res.conf_int(0.05).to_numpy().T
    ref = 2 * Z95 * _hc0(pop, sample)
    out = {"warned": float(bool(messages)), "k": float(pop.theta.size)}
    out.update({f"warn_{kind}": 1.0 for kind in glm_kinds(messages)})
    for j, theta in enumerate(pop.theta):
        out[f"covers_{j}"] = float(lower[j] <= theta <= upper[j])
        out[f"width_{j}"] = float((upper[j] - lower[j]) / ref[j]) if ref[j] > 0 else math.nan
    return out


def cell_table(results: pd.DataFrame) -> pd.DataFrame:
    """Per cell: fits, share warned, coverage (all fits and silent fits, with the silent
    coverage's MC s.e.), and the median width over HC0."""
    long = coefficient_rows(results)
    rows = []
    for (design, n, rho), cell in long.groupby(["design", "n", "rho"]):
        silent = cell[cell["warned"] == 0]
        coverage, se, _ = clustered_coverage(silent) if len(silent) else (math.nan, math.nan, 0)
        rows.append(
            {
                "design": design, "n": n, "rho": rho, "fits": cell["fit"].nunique(),
                "warned": float(cell.groupby("fit")["warned"].first().mean()),
                "coverage": float(cell["covers"].mean()), "silent_coverage": coverage,
                "mc_se": se, "width_hc0": float(cell["width"].median()),
            }
        )  # fmt: skip
    return pd.DataFrame(rows)


def _cell_coverage(results: pd.DataFrame) -> ClaimResult:
    return cell_coverage(cell_table(results), "n", "n")


def _width_at_scale(results: pd.DataFrame) -> ClaimResult:
    """At n = 2e5, rho = 0.5: median width over HC0 at most 1.3 in every simulated design."""
    cell = results[(results["n"] == 200_000) & (results["rho"] == 0.5)]
    cell = cell[cell["design"].isin(SIMULATED_GLM)]
    if cell.empty:
        return ClaimResult(passed=False, numbers={}, detail="no fit at n = 2e5, rho = 0.5")
    long = coefficient_rows(cell)
    widths = long.groupby("design")["width"].median()
    numbers = {f"{d} width": float(w) for d, w in widths.items()}
    worst = float(widths.max())
    return ClaimResult(
        passed=worst <= WIDTH_LIMIT and len(widths) == len(SIMULATED_GLM),
        numbers=numbers,
        detail=f"largest median width over HC0 {worst:.3f} (designs: {len(widths)})",
    )


CLAIMS = [
    Claim(
        name="cell-coverage",
        statement=(
            "In every cell, either more than half the fits emit a CoverageWarning, or the "
            "coverage of theta* by the fits without one (pooled over coefficients) lies in "
            "[0.93, 0.97] within 2 Monte Carlo s.e. (fits as clusters)."
        ),
        evaluate=_cell_coverage,
    ),
    SILENT_COVERAGE,
    Claim(
        name="width-at-scale",
        statement=(
            "At n = 2e5 and rho = 0.5 the median width of the 95% interval over statsmodels' "
            "robust (HC0) interval is at most 1.3 in every simulated design."
        ),
        evaluate=_width_at_scale,
    ),
]


EXPERIMENT = register(
    Experiment(
        name="glm-coverage",
        paper="dpfit, beyond the papers: private GLMs with population intervals (docs/glm.md)",
        figure="GLM coverage, warnings and width over HC0 (docs/glm.md)",
        description=(
            "Coverage of theta* (the population maximum-likelihood coefficient) by the "
            "default 95% intervals of DPLogisticRegression and DPPoissonRegressor on samples "
            "drawn with replacement from eight simulated populations (balanced and rare "
            "logistic, an interaction, a misspecified link; probit; Poisson with and without "
            "overdispersion and with an exposure) and five real files; public bounds contain "
            "every value; n in {2000, 2e4, 2e5}, rho in {0.1, 0.5, 2}; widths over "
            "statsmodels' HC0 interval."
        ),
        grid={
            "smoke": grid(("logit-balanced", "poisson-exposure"), [2000], [0.5]),
            "quick": [
                *grid(SIMULATED_GLM, [2000, 20_000], [0.1, 0.5, 2.0]),
                *grid(SIMULATED_GLM, [200_000], [0.5]),
                *grid(REAL_GLM, [2000, 20_000], [0.5, 2.0]),
            ],
            "paper": grid(GLM_POPULATIONS, [2000, 20_000, 200_000], [0.1, 0.5, 2.0]),
        },
        replicates={"smoke": 2, "quick": 40, "paper": 200},
        trial=_trial,
        plot=lambda results: [coverage_figure(cell_table(results))],
        privacy="Each trial is one fit at rho (replace-one, public n); seeded noise.",
        claims=CLAIMS,
    )
)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: the warning triage of the grid from a result store (module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m dpfit.experiments.glm_coverage")
    parser.add_argument("table", choices=["triage"])
    parser.add_argument("--store", required=True, help="result store (SQLite)")
    parser.add_argument("--write", default=None, help="save the per-cell summary (CSV)")
    parser.add_argument("--scale", default="quick", choices=["smoke", "quick", "paper"])
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--code-version", default=None, help="dpfit reproduce --code-version")
    args = parser.parse_args(argv)
    done = run([EXPERIMENT], scale=args.scale, store_path=args.store, jobs=args.jobs,
               version=args.code_version)  # fmt: skip
    cells = warning_cells(done.results[EXPERIMENT.name], GLM_KIND_METHODS)
    if args.write:
        cells.to_csv(args.write, index=False, float_format="%.6g")
    print(markdown(triage_table(cells, GLM_KIND_METHODS, {})))
    return 0


if __name__ == "__main__":  # pragma: no cover - the command line
    raise SystemExit(main())
