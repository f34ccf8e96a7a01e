"""What the coverage claims can detect: how often they pass at a given true coverage.

The coverage claims of the linear studies (``inference-coverage`` and its ``-extremes`` and
``-rho-ends`` grids) and of ``inference-coverage-iv`` accept a cell without warnings whose
coverage lies in [0.93, 0.97] within 2 Monte Carlo s.e. At the studies' replicate counts
that band is wide, so a cell whose intervals truly cover 0.90 or 0.99 can still pass. This
module measures the pass rate: it simulates one unwarned cell whose coefficients each cover
independently with probability ``level`` (4 coefficients for the linear designs, 3 for IV)
and hands it to the **registered** claim, ``sims`` times with a seeded generator. Coefficients
that cover together (correlated errors) spread the pooled coverage more, widen the band and
raise these rates away from 0.95. Run ``python -c "from dpfit.experiments.inference_coverage_power
import power_table; print(power_table().to_string())"`` (docs/inference.md).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .registry import get

__all__ = ["LEVELS", "coverage_cell", "pass_rate", "power_table"]

#: True coverage levels of the table in docs/inference.md.
LEVELS = (0.88, 0.90, 0.92, 0.95, 0.98, 0.99)
#: (experiment, claim, coefficients a fit, replicates at quick and paper scale)
STUDIES = (
    ("inference-coverage", "population-coverage", 4, (100, 400)),
    ("inference-coverage-iv", "population-coverage-iv", 3, (100, 200)),
)


def coverage_cell(experiment: str, covers: np.ndarray, **columns: object) -> pd.DataFrame:
    """One cell of ``experiment``'s results table whose fits cover as ``covers`` (replicates x
    coefficients, the endogenous coefficient last for IV); unwarned, with nominal widths.
    ``columns`` overrides any column (design, n, rho, warned, ...)."""
    if experiment == "inference-coverage-iv":
        table = {
            "design": "over-strong",
            "n": 20000,
            "rho": 0.5,
            "covers_x": covers[:, -1],
            "covers_all": covers.mean(axis=1),
            "width_ratio_x": 1.0,
            "error_x": 0.0,
            "se_2sls_x": 1.0,
            "gd_covers_x": np.nan,
            "gd_width_ratio_x": np.nan,
            "gd_error_x": np.nan,
            "warned": 0.0,
        }
    else:
        table = {
            "design": "isotropic",
            "n": 2000,
            "rho": 0.5,
            "covers": covers.mean(axis=1),
            "width_ratio": 1.0,
            "nss_covers": 1.0,
            "nss_width_ratio": 2.0,
            "warned": 0.0,
        }
    return pd.DataFrame({**table, **columns})


def pass_rate(
    experiment: str,
    claim: str,
    level: float,
    reps: int,
    coefficients: int,
    *,
    sims: int = 400,
    seed: int = 2026,
) -> float:
    """Share of ``sims`` simulated cells (``reps`` fits of ``coefficients`` independent
    intervals, each covering with probability ``level``) on which the registered ``claim``
    of ``experiment`` passes."""
    (evaluate,) = [c.evaluate for c in get(experiment).claims if c.name == claim]
    rng = np.random.default_rng([seed, reps, round(level * 1e4)])
    passed = 0
    for _ in range(sims):
        covers = (rng.random((reps, coefficients)) < level).astype(float)
        passed += evaluate(coverage_cell(experiment, covers)).passed
    return passed / sims


def power_table(
    levels: tuple[float, ...] = LEVELS, *, sims: int = 400, seed: int = 2026
) -> pd.DataFrame:
    """Pass rates of the linear and IV coverage claims at quick and paper replicate counts,
    one row per (claim, replicates), one column per true coverage level."""
    rows = []
    for experiment, claim, k, counts in STUDIES:
        for reps in counts:
            rates = {
                f"{level:.2f}": pass_rate(experiment, claim, level, reps, k, sims=sims, seed=seed)
                for level in levels
            }
            rows.append({"claim": claim, "replicates": reps, **rates})
    return pd.DataFrame(rows)
