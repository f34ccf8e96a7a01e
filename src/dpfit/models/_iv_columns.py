"""The columns of a :class:`~dpfit.DPIVRegression` fit and their public bounds.

An IV fit works on one matrix of columns: the regressors, the instruments that are not
regressors, then the response. Here are their names (a frame's, else ``x0..``, ``z0..``, the
keys of ``bounds``) and the checked public bounds of each, read from public inputs only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ._scaling import bounds_in_order, check_bounds

__all__ = ["NO_INSTRUMENTS", "column_names", "iv_bounds"]

#: The note of a fit without instruments.
NO_INSTRUMENTS = (
    "No instruments were given (Z=None): every regressor is its own instrument, so this is "
    "least squares from private moments, not an IV estimate."
)


def column_names(data: Any, prefix: str, k: int) -> list[str]:
    """Column names of a frame, else ``prefix`` 0.. k-1 (the keys of ``bounds``)."""
    if isinstance(data, pd.DataFrame):
        return [str(c) for c in data.columns]
    return [f"{prefix}{j}" for j in range(k)]


def iv_bounds(
    bounds: Mapping[str, Any] | None,
    y_bounds: Any,
    x_names: list[str],
    z_names: list[str],
    y_name: str,
) -> tuple[list[str], np.ndarray | None]:
    """The columns (X's, Z's not in X, the response) and their checked public bounds
    (None without bounds); public inputs only."""
    design = list(dict.fromkeys([*x_names, *z_names]))
    columns = [*design, y_name]
    if bounds is None and y_bounds is None:
        return columns, None
    if bounds is None or y_bounds is None:
        given, needed = ("bounds", "y_bounds") if y_bounds is None else ("y_bounds", "bounds")
        raise ValueError(
            f"{needed} is required with {given}: the private standardisation needs public "
            "bounds of every column of X and Z (bounds) and of the response (y_bounds)"
        )
    if y_name in bounds and y_name not in design:
        raise ValueError(
            f"bounds has the response {y_name!r}: give its bounds as y_bounds=(low, high) "
            "(dpfit's one convention: bounds for the design, y_bounds for the response)"
        )
    pairs = [
        *bounds_in_order(bounds, design, "for every column of X and Z"),
        check_bounds(y_bounds, "y_bounds", size=1)[0],
    ]
    return columns, check_bounds(pairs, "bounds", size=len(columns))
