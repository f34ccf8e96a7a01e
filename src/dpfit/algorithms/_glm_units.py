"""The private GLM with a privacy unit: every release bounds what all rows of one unit change.

With a privacy unit (:mod:`dpfit.privacy.unit_level`; ``n`` counts units) the fit of
:mod:`dpfit.algorithms.glm` changes in three places, nothing else:

* **the rows**: each unit keeps at most K = ``max_rows_per_unit`` rows, sampled uniformly
  by a child of the noise source (:func:`~dpfit.algorithms._unit_sums.cap_rows`);
* **the sensitivities**: every release of a sum of per-row terms (X'X, the whitener, the
  mean response, each step's clipped gradient, the bread, the gap) is declared with
  ``rows_per_unit=K`` (:func:`dpfit.privacy.query_sensitivity`): a unit's summed term is
  bounded by K times the row bound, exactly (K rows can all move by it). This is per-unit
  clipping of the summed gradient at K times the row clip, a clip that never binds, so the
  fixed point, and with it the estimand, is the maximum-likelihood fit's, as without a
  unit; a smaller per-unit clip would reweight units;
* **per-row means**: the fit divides its sums by the public number of units G, so the
  means that must be per row (the mean response behind the start and the Fisher weight,
  the Poisson residual scale) are divided by a released mean number of rows per unit
  (:func:`per_row`; post-processing);
* **the meat**: the cluster-robust meat, the mean over units of the outer products of each
  unit's summed whitened score s_u = sum_{i in u} r_i P'd_i, clipped per unit
  (:func:`~dpfit.inference._cluster.release_cluster_meat`; Liang & Zeger 1986), so that
  the interval accounts for correlated rows within a unit
  (:func:`dpfit.inference.population_glm.glm_population` adds the small-cluster factor
  G / (G - 1) and at most G - 1 degrees of freedom).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import check_int
from ..distributed import is_dask
from ..inference._cluster import release_cluster_meat
from ..inference.population import NoisyMoment
from ..inference.whitened import release_mean
from ..mechanisms import NoiseSource
from ..privacy import Relation, public_n
from ..privacy.unit_level import CAP_REQUIRED, IN_MEMORY, unit_codes
from ._glm_plan import GLMPlan
from ._kernels import check_data
from ._unit_sums import cap_rows, unit_sums

__all__ = ["UnitCodes", "cap_units", "clustered_meat", "in_memory", "per_row", "unit_data",
           "unit_n"]  # fmt: skip


def in_memory(*arrays: Any) -> None:
    """Refuse Dask arrays with a privacy unit
    (:data:`~dpfit.privacy.unit_level.IN_MEMORY`), before any check or charge."""
    if any(is_dask(a) for a in arrays):
        raise TypeError(IN_MEMORY)


#: Each kept row's unit (0 .. n_units - 1) and the number of units.
UnitCodes = tuple[np.ndarray, int]


def unit_data(
    X: Any, y: Any, offset: Any, groups: Any, *, max_rows: Any, margins: bool,
    n_public: int | None, relation: Relation,
) -> tuple[np.ndarray, np.ndarray, int]:  # fmt: skip
    """The checked in-memory ``(X, y)`` of a fit with a privacy unit and the public number
    of units (:func:`unit_n`); Dask refused first (:func:`in_memory`)."""
    in_memory(X, y, offset, groups)
    X, y, _ = check_data(X, y, relation=relation)
    n = unit_n(groups, X, max_rows=max_rows, margins=margins, n_public=n_public,
               relation=relation)  # fmt: skip
    return X, y, n


def unit_n(
    groups: Any, X: Any, *, max_rows: Any, margins: bool, n_public: int | None,
    relation: Relation,
) -> int:  # fmt: skip
    """The public number of units that divides the sums (public checks only): the number of
    units under replace-one unit, ``n_public`` under add/remove unit.

    Raises
    ------
    TypeError, ValueError
        Data not in memory, no ``max_rows_per_unit``, ``margins``, a mismatched
        ``n_public``, or labels not one per row; nothing is charged or drawn.
    """
    if max_rows is None:
        raise ValueError(CAP_REQUIRED)
    check_int(max_rows, "max_rows_per_unit", low=1)
    if margins:
        raise ValueError(
            "margins are not released with a privacy unit yet (their means are per row, the "
            "fit's per unit); use margins=False"
        )
    _, n_units = unit_codes(groups, X.shape[0])
    if relation is Relation.REPLACE_ONE and n_public is not None and n_public != n_units:
        raise ValueError(
            "n_public must equal the number of units under relation='replace-one' with a "
            "privacy unit (the number of units is public under replace-one)"
        )
    return public_n(n_units, n_public, relation)


def cap_units(
    plan: GLMPlan, groups: Any, X: Any, y: Any, offset: Any, source: NoiseSource
) -> tuple[Any, Any, Any, UnitCodes | None]:
    """The rows the fit reads: with a privacy unit at most ``plan.rows_per_unit`` per unit
    (module docstring), with their units' codes; else the rows as given and None.

    Raises ValueError when ``groups`` is given without a unit-level plan, or not with one.
    """
    if plan.clustered != (groups is not None):
        raise ValueError("groups (the privacy unit's labels) go with a plan with a privacy unit")
    if groups is None:
        return X, y, offset, None
    kept = cap_rows(groups, X.shape[0], plan.rows_per_unit, source)
    rows = kept.rows
    return X[rows], y[rows], offset[rows], (kept.codes, kept.n_units)


def per_row(
    plan: GLMPlan, units: UnitCodes, mean: float, noise_std: float, moment: dict[str, Any]
) -> tuple[float, float, float]:
    """The mean response per row (and its noise s.d.) from the released mean per unit, and
    r~, the released mean number of rows per unit (1/G) sum_u m_u kept in [1, K] (every
    unit has 1 to K rows; the count is a sum of per-row ones, K per unit at most)."""
    codes, _ = units
    rows, _ = release_mean(
        float(codes.shape[0]), cap=1.0, rho=plan.share("rows"), label="glm/rows", **moment
    )
    r = min(max(rows, 1.0), float(plan.rows_per_unit))
    return mean / r, noise_std / r, r


def clustered_meat(
    plan: GLMPlan,
    rows: list[Any],
    units: UnitCodes,
    P: np.ndarray,
    theta: np.ndarray,
    moment: dict[str, Any],
) -> tuple[NoisyMoment, float]:
    """The clustered meat at ``theta`` in coordinates whitened by P, and its per-unit clip:
    s_u = sum_{i in u} r_i P'd_i, released by
    :func:`~dpfit.inference._cluster.release_cluster_meat` at the plan's two shares."""
    D, y, o = rows
    codes, n_units = units
    with np.errstate(all="ignore"):
        scores = (D @ P) * plan.family.score(D @ theta + o, y)[:, None]
    return release_cluster_meat(
        unit_sums(scores, codes, n_units), max_rows=plan.rows_per_unit,
        rho_scale=plan.share("score-scale"), rho_meat=plan.share("cluster-meat"), n=plan.n,
        ledger=moment["ledger"], rng=moment["rng"],
    )  # fmt: skip
