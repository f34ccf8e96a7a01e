"""Privacy units: the guarantee protects all rows of one person, not one row.

Real microdata rarely has one row per person (a worker observed every year, a patient with
40 visits). A row-level guarantee then lets one person's 40 rows move a release 40 times
further than its noise was calibrated for. With a privacy unit ``privacy_unit="person_id"``
the neighbouring relation becomes

* **replace-one unit** (default): the same public number of units n_units; all rows of one
  unit replaced by any other rows (any number up to the cap);
* **add/remove unit**: all rows of one unit added or removed, so n_units itself is private
  (a public bound is needed for the rounding allowance, and the count is released with
  noise where it is used).

"1 unit = all rows with the same person_id": the ledger, the privacy statement and the
summary say so (:meth:`PrivacyUnit.describe`).

**Contribution bounding** (public inputs only, as Google's differential-privacy libraries
bound ``max_contributions_per_partition``, Wilson et al. 2020, and Tumult Analytics'
``AddRowsWithID``):

* a public cap K = ``max_rows_per_unit``: a unit with more rows keeps K of them, chosen
  uniformly at random by a child of the fit's noise source
  (:func:`dpfit.algorithms._unit_sums.cap_rows`), never by
  position or data order; the number of rows dropped is not released;
* sensitivities through the one helper :func:`dpfit.privacy.query_sensitivity` with
  ``rows_per_unit=K`` for sums of per-row clipped terms (the bound K B is exact: K rows can
  all move by B), or with ``rows_per_unit=1`` for terms clipped per unit (a unit's *summed*
  contribution clipped to C: the bound C does not grow with the unit's rows). Which one a
  release uses is chosen by what it needs: sums of moments that define the estimate (X'X,
  X'y) take the row cap, since clipping a unit's moments would reweight units and move the
  estimand; the clustered meat clips each unit's summed score
  (:mod:`dpfit.inference._cluster`), as a clipped gradient does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import check_int

__all__ = [
    "CAP_REQUIRED",
    "IN_MEMORY",
    "PrivacyUnit",
    "UnitRows",
    "grouped_unit",
    "refuse_unit",
    "unit_codes",
]

#: The keywords that declare a privacy unit, at any entry point.
UNIT_KEYWORDS = frozenset({"privacy_unit", "max_rows_per_unit", "groups"})

#: What a fit with a privacy unit but no ``max_rows_per_unit`` is told.
CAP_REQUIRED = (
    "max_rows_per_unit is required with a privacy unit: a public cap on the rows one unit "
    "contributes (more are sampled away at random), never read off the data"
)
#: What a fit with a privacy unit on Dask data is told (no value, no count).
IN_MEMORY = (
    "a privacy unit needs in-memory data: per-unit sums over Dask blocks are not supported "
    "yet; fit the same data in memory (X.compute(), a NumPy array or a pandas frame) with "
    "the unit"
)


@dataclass(frozen=True)
class PrivacyUnit:
    """The unit a guarantee protects: all rows sharing a value of ``column``, at most
    ``max_rows`` of them used (public)."""

    column: str
    max_rows: int

    def __post_init__(self) -> None:
        if not isinstance(self.column, str) or not self.column:
            raise TypeError("privacy_unit must name a column (a non-empty string)")
        object.__setattr__(
            self, "max_rows", check_int(self.max_rows, "max_rows_per_unit", low=1, high=2**31)
        )

    def describe(self) -> str:
        """The sentence every output repeats: ``1 unit = all rows with the same <column>``."""
        return (
            f"1 unit = all rows with the same {self.column} (at most {self.max_rows} rows "
            "used per unit; rows beyond that sampled uniformly at random)"
        )


def grouped_unit(groups: Any, max_rows: Any) -> PrivacyUnit | None:
    """The unit of an estimator's ``fit(X, y, groups=...)``: named after the labels' name
    (a pandas Series) or "groups"; None without groups. Raises ValueError for a cap without
    groups or groups without a cap (public inputs only)."""
    if groups is None:
        if max_rows is not None:
            raise ValueError(
                "max_rows_per_unit needs a privacy unit: pass fit(X, y, groups=unit_labels)"
            )
        return None
    if max_rows is None:
        raise ValueError(CAP_REQUIRED)
    name = getattr(groups, "name", None)
    return PrivacyUnit(str(name) if name is not None else "groups", max_rows)


def refuse_unit(entry: str, params: Any) -> None:
    """Refuse a privacy unit at an entry point that does not take one yet, naming the
    keywords given (public names only) and what to do instead."""
    given = sorted(UNIT_KEYWORDS.intersection(params))
    if given:
        raise TypeError(
            f"{entry} does not take a privacy unit yet ({', '.join(given)}): bound each "
            "person's contribution before the fit (one row per person, or a per-person "
            "aggregate), or fit with dpfit.ols, dpfit.glm, dpfit.logit, dpfit.probit or "
            "dpfit.poisson, which take privacy_unit=, or with dpfit.minimize (method "
            "'adaptive-gd' or 'noisy-gd'), which takes groups= and max_rows_per_unit= "
            "(docs/privacy-units.md)"
        )


@dataclass(frozen=True)
class UnitRows:
    """The rows a unit-level fit reads: ``rows`` (indices into the data, grouped by unit),
    ``codes`` (each kept row's unit, 0 .. n_units - 1) and ``n_units``."""

    rows: np.ndarray
    codes: np.ndarray
    n_units: int


def unit_codes(groups: Any, n_rows: int) -> tuple[np.ndarray, int]:
    """Integer unit codes 0 .. n_units - 1 for ``groups`` (one label per row) and n_units.

    Raises ValueError, naming no value and no count, when the length differs from the
    data's or a row has no unit (a missing label).
    """
    labels = np.asarray(groups.to_numpy() if hasattr(groups, "to_numpy") else groups)
    if labels.ndim != 1 or labels.shape[0] != n_rows:
        raise ValueError(  # no row count: under a unit it is not public
            "groups must be one-dimensional with one unit label per row of X"
        )
    import pandas as pd  # lazy: the privacy layer (and `dpfit privacy`) does not need it

    codes, uniques = pd.factorize(labels, sort=False)
    if (codes < 0).any():
        raise ValueError(
            "groups (the privacy unit) has missing labels: every row must belong to a unit"
        )
    return codes.astype(np.int64), len(uniques)
