"""The per-cell coverage table of the coverage studies, written once.

Each study stores one row per fit (a replicate) with the cell's ``design``, ``n`` and
``rho`` and 0/1 or numeric outcomes. Its table has one row per cell: the outcomes averaged
(or another aggregate), the number of replicates, and a Monte Carlo s.e. of a coverage that
is never below the binomial s.e. at the nominal 0.95, so that a cell whose replicates happen
to agree is not judged with a zero s.e.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["CELL", "grid", "mc_se", "per_cell"]

#: The columns that name a cell of the coverage studies' grids.
CELL = ("design", "n", "rho")

#: p (1 - p) of a 95% interval's coverage, the binomial floor of the Monte Carlo s.e.
_NOMINAL_VARIANCE = 0.95 * 0.05


def per_cell(
    results: pd.DataFrame,
    *,
    reps: str,
    by: Sequence[str] = CELL,
    **columns: tuple[str, str],
) -> tuple[pd.DataFrame, Any]:
    """Per cell: each ``name=(column, aggregate)`` of ``columns`` and ``reps`` replicates
    (the size of column ``reps``); returns the table (cells as its index) and the grouping,
    for a study's own s.e. columns (:func:`mc_se`)."""
    groups = results.groupby(list(by))
    return groups.agg(**columns, reps=(reps, "size")), groups


def mc_se(spread: Any, reps: Any, terms: int = 1) -> np.ndarray:
    """Monte Carlo s.e. of a mean coverage over ``reps`` replicates, from the replicates'
    ``spread`` (s.d.; NaN for one replicate), floored at the binomial s.e. of 0.95 over
    ``terms`` independent coefficients a replicate."""
    root = np.sqrt(reps)
    floor = math.sqrt(_NOMINAL_VARIANCE / terms) / root
    return np.maximum(np.nan_to_num(spread) / root, floor)


def grid(designs: Sequence[str], ns: Sequence[int], rhos: Sequence[float]) -> list[dict]:
    """The cells of a study: every design at every n and rho."""
    return [{"design": d, "n": n, "rho": r} for d in designs for n in ns for r in rhos]
