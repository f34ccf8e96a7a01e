"""Coverage of the unit-level fit's cluster-robust population intervals (privacy units).

Each trial draws n_units units of a panel: unit sizes fixed (10 rows, cap K = 10) or varying
uniformly in 1..50 (cap K = 20, so larger units are sampled down), intra-unit correlation c
in both the regressor and the error (x_it = sqrt(c) a_i + sqrt(1 - c) e_it, u_it likewise
with b_i), and y = 1 + 0.5 x + u, or with entity effects y = alpha_i + 0.5 x + u with
alpha_i = a_i (correlated with x, so pooled least squares is biased and only the within fit
covers). theta* is (1, 0.5), or 0.5 with entity effects. It fits
``dpfit.ols(..., privacy_unit="unit")`` with public bounds [-5, 5] for x and [-12, 14] for y
and records per coefficient whether the 95% interval covers theta*, its width over
linearmodels' clustered interval (``PanelOLS``/``PooledOLS`` with ``cov_type="clustered"``)
on the same sample, and whether the fit warned. The negative control fits the row-level
default (AdaSSP's heteroscedasticity-robust population interval, ``method="adassp"``) on the
same sample: with correlated rows it undercovers.

The claims (negative controls in tests/experiments/test_cluster_coverage.py):

* ``cell-coverage``: in every cell, either more than half the fits warn, or the coverage of
  the silent fits (pooled over coefficients) lies in [0.93, 0.97] within 2 Monte Carlo s.e.;
* ``silent-coverage``: pooled over every silent fit, in [0.93, 0.97] within 2 MC s.e.;
* ``row-level-undercovers``: at c = 0.8 the row-level intervals' coverage of the slope is
  below 0.90 in every cell with 5000 units or more (pooled designs: the clustering matters).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..exceptions import (
    CoverageWarning,
    InsecureRandomnessWarning,
    LargeBudgetWarning,
    SideConditionWarning,
)
from ..models import DPLinearRegression, ols
from ._silent_coverage import (
    cell_coverage,
    clustered_coverage,
    coefficient_rows,
    silent_coverage,
)
from .registry import Claim, ClaimResult, Experiment, register

__all__ = ["EXPERIMENT", "cell_table", "panel_sample"]

Z95 = 1.959963984540054
BOUNDS = {"x": (-5.0, 5.0)}
Y_BOUNDS = (-12.0, 14.0)
#: sizes -> (smallest, largest rows per unit, cap K)
SIZES = {"fixed": (10, 10, 10), "vary": (1, 50, 20)}
UNDERCOVER = 0.90
WIDTH_EVERY = 4


def panel_sample(sizes: str, corr: float, entity: bool, n_units: int, seed: int) -> pd.DataFrame:
    """One panel (module docstring): columns unit, x, y."""
    low, high, _ = SIZES[sizes]
    rng = np.random.default_rng([seed, 29])
    m = rng.integers(low, high + 1, n_units)
    unit = np.repeat(np.arange(n_units), m)
    a, b = rng.standard_normal(n_units)[unit], rng.standard_normal(n_units)[unit]
    rows = unit.size
    x = math.sqrt(corr) * a + math.sqrt(1 - corr) * rng.standard_normal(rows)
    u = math.sqrt(corr) * b + math.sqrt(1 - corr) * rng.standard_normal(rows)
    y = (a if entity else 1.0) + 0.5 * x + u
    return pd.DataFrame({"unit": unit, "x": x, "y": y})


def _clustered_width(frame: pd.DataFrame, entity: bool) -> np.ndarray:
    """Widths of linearmodels' clustered 95% intervals (entity effects: PanelOLS)."""
    from linearmodels.panel import PanelOLS, PooledOLS

    panel = frame.assign(t=frame.groupby("unit").cumcount()).set_index(["unit", "t"])
    exog = panel[["x"]] if entity else panel[["x"]].assign(const=1.0)[["const", "x"]]
    model = (
        PanelOLS(panel["y"], exog, entity_effects=True) if entity else PooledOLS(panel["y"], exog)
    )
    fit = model.fit(cov_type="clustered", cluster_entity=True)
    return 2 * Z95 * fit.std_errors.to_numpy()


def _quiet() -> None:
    warnings.simplefilter("always", CoverageWarning)
    for quiet in (LargeBudgetWarning, SideConditionWarning, InsecureRandomnessWarning):
        warnings.simplefilter("ignore", quiet)


def _trial(params: Mapping[str, Any], seed: int) -> dict[str, float]:
    sizes, corr = str(params["sizes"]), float(params["corr"])
    entity, n_units, rho = bool(params["entity"]), int(params["n_units"]), float(params["rho"])
    frame = panel_sample(sizes, corr, entity, n_units, seed)
    formula = "y ~ x + EntityEffects" if entity else "y ~ x"
    with warnings.catch_warnings(record=True) as caught:
        _quiet()
        res = ols(formula, frame, rho=rho, privacy_unit="unit", max_rows_per_unit=SIZES[sizes][2],
                  bounds=BOUNDS, y_bounds=Y_BOUNDS, random_state=seed)  # fmt: skip
    warned = any(issubclass(w.category, CoverageWarning) for w in caught)
    theta = np.array([0.5] if entity else [1.0, 0.5])
    lower, upper = res.conf_int(0.05).to_numpy().T
    # the reference interval on every WIDTH_EVERY-th trial (linearmodels takes longer than
    # the private fit); the width is reported as a median over those
    ref = _clustered_width(frame, entity) if seed % WIDTH_EVERY == 0 else None
    out = {"warned": float(warned), "k": float(theta.size)}
    for j, t in enumerate(theta):
        out[f"covers_{j}"] = float(lower[j] <= t <= upper[j])
        out[f"width_{j}"] = math.nan if ref is None else float((upper[j] - lower[j]) / ref[j])
    if not entity:  # the negative control: the row-level interval on the same sample
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            row = DPLinearRegression(rho=rho, method="adassp", bounds=[BOUNDS["x"]],
                                     y_bounds=Y_BOUNDS, random_state=seed)  # fmt: skip
            row.fit(frame[["x"]].to_numpy(), frame["y"].to_numpy())
        low_r, up_r = row.result_.conf_int(0.05).to_numpy().T
        out["row_covers_slope"] = float(low_r[1] <= 0.5 <= up_r[1])
    return out


def cell_table(results: pd.DataFrame) -> pd.DataFrame:
    """Per cell: fits, share warned, coverage (all and silent fits, with the silent
    coverage's MC s.e.), median width over linearmodels' clustered interval, and the
    row-level slope coverage (pooled designs)."""
    keyed = _keyed(results)
    long = coefficient_rows(keyed)
    rows = []
    for (design, n, rho), cell in long.groupby(["design", "n", "rho"]):
        silent = cell[cell["warned"] == 0]
        coverage, se, _ = clustered_coverage(silent) if len(silent) else (math.nan, math.nan, 0)
        fits = keyed[(keyed["design"] == design) & (keyed["n"] == n) & (keyed["rho"] == rho)]
        row_cov = fits["row_covers_slope"].mean() if "row_covers_slope" in fits else math.nan
        rows.append(
            {
                "design": design, "n_units": n, "rho": rho, "fits": cell["fit"].nunique(),
                "warned": float(cell.groupby("fit")["warned"].first().mean()),
                "coverage": float(cell["covers"].mean()), "silent_coverage": coverage,
                "mc_se": se, "width_clustered": float(cell["width"].median()),
                "row_level_slope_coverage": float(row_cov),
            }
        )  # fmt: skip
    return pd.DataFrame(rows)


def _keyed(results: pd.DataFrame) -> pd.DataFrame:
    design = results["sizes"] + "/c=" + results["corr"].astype(str)
    design = design + results["entity"].map({True: "/fe", False: ""})
    return results.assign(design=design, n=results["n_units"])


def _cell_coverage(results: pd.DataFrame) -> ClaimResult:
    return cell_coverage(cell_table(results), "n_units", "G")


def _silent(results: pd.DataFrame) -> ClaimResult:
    return silent_coverage(_keyed(results))


def _row_level_undercovers(results: pd.DataFrame) -> ClaimResult:
    """At c = 0.8 and n_units >= 5000 the row-level slope coverage is below 0.90."""
    cells = results[(results["corr"] == 0.8) & (results["n_units"] >= 5000) & ~results["entity"]]
    if cells.empty or "row_covers_slope" not in cells:
        return ClaimResult(passed=False, numbers={}, detail="no pooled cell at c = 0.8, G >= 5000")
    cov = cells.groupby(["sizes", "n_units", "rho"])["row_covers_slope"].mean()
    numbers = {f"{s} G={g} rho={r:g}": float(v) for (s, g, r), v in cov.items()}
    return ClaimResult(
        passed=bool((cov < UNDERCOVER).all()),
        numbers=numbers,
        detail=f"largest row-level coverage {cov.max():.3f} (cells: {len(cov)})",
    )


CLAIMS = [
    Claim(
        name="cell-coverage",
        statement=(
            "In every cell, either more than half the unit-level fits emit a CoverageWarning, "
            "or the coverage of theta* by the fits without one (pooled over coefficients) "
            "lies in [0.93, 0.97] within 2 Monte Carlo s.e. (fits as clusters)."
        ),
        evaluate=_cell_coverage,
    ),
    Claim(
        name="silent-coverage",
        statement=(
            "Pooled over every unit-level fit without a CoverageWarning and every "
            "coefficient, coverage of theta* lies in [0.93, 0.97] within 2 MC s.e."
        ),
        evaluate=_silent,
    ),
    Claim(
        name="row-level-undercovers",
        statement=(
            "Negative control: at intra-unit correlation 0.8 and 5000 units or more, the "
            "row-level (AdaSSP, HC0) interval covers the slope in fewer than 90% of fits."
        ),
        evaluate=_row_level_undercovers,
    ),
]


def _grid(
    sizes: tuple[str, ...], corrs: tuple[float, ...], entity: tuple[bool, ...],
    n_units: tuple[int, ...], rhos: tuple[float, ...],
) -> list[dict]:  # fmt: skip
    return [
        {"sizes": s, "corr": c, "entity": e, "n_units": g, "rho": r}
        for s in sizes for c in corrs for e in entity for g in n_units for r in rhos
    ]  # fmt: skip


SIZE_KINDS = tuple(SIZES)
CORRS = (0.0, 0.4, 0.8)
EXPERIMENT = register(
    Experiment(
        name="cluster-coverage",
        paper="beyond the papers: privacy units and clustered intervals (docs/privacy-units.md)",
        figure="Cluster-robust coverage, warnings, width over linearmodels (docs/privacy-units.md)",
        description=(
            "Coverage of theta* by the unit-level fit's cluster-robust 95% intervals "
            "(dpfit.ols with privacy_unit) on simulated panels: unit sizes fixed (10) or "
            "varying (1-50, cap 20), intra-unit correlation 0 to 0.8 in regressor and error, "
            "with and without entity effects, n_units in {500, 5000, 5e4}, rho in {0.1, 1}; "
            "widths over linearmodels' clustered interval; the row-level interval as a "
            "negative control."
        ),
        grid={
            "smoke": _grid(("vary",), (0.4,), (False, True), (500,), (1.0,)),
            "quick": [
                *_grid(SIZE_KINDS, (0.0, 0.8), (False, True), (500, 5000), (0.1, 1.0)),
                *_grid(("fixed",), (0.8,), (False,), (50_000,), (1.0,)),
            ],
            "paper": _grid(SIZE_KINDS, CORRS, (False, True), (500, 5000, 50_000), (0.1, 1.0)),
        },
        replicates={"smoke": 2, "quick": 24, "paper": 200},
        trial=_trial,
        privacy="Each trial is one unit-level fit at rho (replace-one unit, public n_units); "
        "seeded noise.",
        claims=CLAIMS,
    )
)
