"""Panel models under a privacy unit: entity effects by the within transformation, time
effects as public period indicators.

Entity fixed effects (one intercept per unit) are removed by the within transformation:
each unit's rows of the design and the response are centred at the unit's own means
(Wooldridge 2010, Econometric Analysis of Cross Section and Panel Data, 2nd ed., 10.5).
Unlike a stateful transform across records (a formula's ``center(x)``), this is a per-unit
map: a unit's transformed rows depend only on its own rows, so replacing one unit changes
only that unit's transformed rows, and it never increases the unit's sums of squares
(sum_i |d_i - d_bar|^2 = sum_i |d_i|^2 - m |d_bar|^2), so the per-unit bounds of the
untransformed rows (:mod:`dpfit.privacy.unit_level`) still hold: a unit's X'X term has
trace at most K B^2 and its X'y term norm at most K B (Cauchy-Schwarz with
sum_i (y_i - y_bar)^2 <= K). :func:`bound_units` enforces both on the computed values.

Time effects (one intercept per period) are indicators of **public** period levels, written
into the formula as a categorical term with declared levels; after the within
transformation they give the two-way fixed-effects estimate (Frisch-Waugh-Lovell: the
entity indicators are partialled out of every column, the period indicators included).

What the interval covers: the within (fixed-effects) coefficients of the population of
units, i.e. the effect of within-unit variation in x; the unit effects themselves are not
estimated (they are nuisance parameters) and time-invariant regressors are not identified.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..algorithms._unit_sums import unit_means, unit_sums

__all__ = ["bound_units", "panel_formula", "within"]

#: Relative margin kept below the bounds by :func:`bound_units` (as the clipping of
#: :mod:`dpfit.mechanisms.clipping` keeps its bound for the computed values).
_MARGIN = 2.0**-40
_ENTITY = "EntityEffects"
_TIME = "TimeEffects"


def panel_formula(
    formula: str, *, time: str | None, time_levels: Sequence[Any] | None
) -> tuple[str, bool]:
    """The formula without ``EntityEffects`` (returned as a flag) and with ``TimeEffects``
    written as ``C(time, levels=[...])`` (the public period levels).

    Raises ValueError when ``TimeEffects`` is used without ``time`` and ``time_levels``.
    """
    lhs, sep, rhs = formula.partition("~")
    entity = re.search(rf"\b{_ENTITY}\b", rhs) is not None
    if re.search(rf"\b{_TIME}\b", rhs):
        if time is None or time_levels is None:
            raise ValueError(
                "TimeEffects needs the period column (time='year') and its public levels "
                "(time_levels=[...]): the periods are never read off the data"
            )
        levels = ", ".join(repr(v.item() if hasattr(v, "item") else v) for v in time_levels)
        rhs = re.sub(rf"\b{_TIME}\b", f"C({time}, levels=[{levels}])", rhs)
    if entity:  # the term removed; the estimator drops the intercept the effects absorb
        rhs = re.sub(rf"(\+\s*)?\b{_ENTITY}\b(\s*\+)?", "+", rhs).strip().strip("+") or "1"
    return f"{lhs}{sep} {rhs.strip()}", entity


def within(
    design: np.ndarray, response: np.ndarray, codes: np.ndarray, n_units: int
) -> tuple[np.ndarray, np.ndarray]:
    """Each unit's rows centred at the unit's own means (design and response)."""
    with np.errstate(all="ignore"):
        return (
            design - unit_means(design, codes, n_units),
            response - unit_means(response, codes, n_units),
        )


def bound_units(
    design: np.ndarray,
    response: np.ndarray,
    codes: np.ndarray,
    n_units: int,
    *,
    max_rows: int,
    x_bound: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Rescale any unit whose computed sum_i |d_i|^2 exceeds K B^2 (or sum_i y_i^2 exceeds
    K) to just below it: the per-unit bounds the releases assume then hold for the
    computed values, whatever the rounding of the within transformation."""
    limit = (1.0 - _MARGIN) * max_rows
    with np.errstate(all="ignore"):
        sx = unit_sums(np.einsum("ij,ij->i", design, design), codes, n_units) / x_bound**2
        sy = unit_sums(response * response, codes, n_units)
        fx = np.sqrt(np.minimum(1.0, limit / np.maximum(sx, 1e-300)))
        fy = np.sqrt(np.minimum(1.0, limit / np.maximum(sy, 1e-300)))
    return design * fx[codes, None], response * fy[codes]
