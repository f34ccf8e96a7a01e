"""The release plan of ``DPIVRegression``'s default fit, noisy-moment 2SLS.

In the order the fit makes them (:mod:`dpfit.models._iv_scaling`,
:mod:`dpfit.models._iv_moments`): with public bounds, the columns' means and mean squares
that standardise them (a ``scale_fraction`` of rho); then the second-moment matrix of the
clipped rows, the 2SLS scores' second moment (the sandwich's meat) and the count of rows far
beyond the clip, with the shares of :func:`~dpfit.models._iv_moments.moment_shares`. Every
release has a public bound (the moments are released on rows rescaled to norm 1), so every
noise std is known before the data are read.
"""

from __future__ import annotations

from typing import Any

from .._validation import check_rho
from ..mechanisms.plan import ReleasePlan, planned_release
from ..privacy import Query, Relation, split
from ._fit_checks import bounds_check_shares, outside_queries
from ._iv_moments import moment_shares
from ._iv_scaling import LABEL as SCALING_LABEL
from ._iv_scaling import scaling_sensitivity
from ._linear_plan import bounds_check_release

__all__ = ["formula_plan", "iv_plan"]

_PURPOSE = {
    SCALING_LABEL: "the columns' means and mean squares: the private standardisation",
    "iv/moments": "second moment of the clipped rows (design, instruments, y): 2SLS",
    "iv/omega": "second moment of the clipped 2SLS scores: the sandwich's meat",
    "iv/far-rows": "share of rows far beyond the row clip",
}


def iv_plan(cfg: Any, *, n: int, columns: int, bounded: bool, label: str) -> ReleasePlan:
    """The plan of one noisy-moment 2SLS fit of ``n`` records with ``columns`` columns
    (regressors, excluded instruments, response) and, when ``bounded``, their private
    standardisation."""
    relation = Relation.REPLACE_ONE
    common = {"n": n, "relation": relation}
    releases = []
    rho_fit = cfg.rho
    if bounded:  # the same exact split as the fit's (models/iv.py, _scale)
        rho_scale, rho_fit = split(cfg.rho, [cfg.scale_fraction, 1.0 - cfg.scale_fraction])
        joint = scaling_sensitivity(n, columns, relation)  # the means and mean squares
        releases.append(planned_release(
            "column-moments", rho_scale, Query.MEAN, 1.0, label=SCALING_LABEL,
            purpose=_PURPOSE[SCALING_LABEL], sensitivity=joint, **common,
        ))  # fmt: skip
    rhos = moment_shares(rho_fit)
    for name, query, share in (
        ("moments", Query.SECOND_MOMENT, rhos["moments"]),
        ("omega", Query.SECOND_MOMENT, rhos["omega"]),
        ("far-rows", Query.BOUNDED_MEAN, rhos["far"]),
    ):
        releases.append(planned_release(
            name, share, query, 1.0, label=f"iv/{name}", purpose=_PURPOSE[f"iv/{name}"],
            **common,
        ))  # fmt: skip
    return ReleasePlan(label=label, rho=cfg.rho, relation=relation, n=n,
                       releases=tuple(releases))  # fmt: skip


def formula_plan(
    X: Any, Z: Any, mats: Any, rho: float, share: float, intercept: bool, params: dict
) -> ReleasePlan:
    """The plan :func:`dpfit.iv` charges: the moments fit, then its bounds check (public
    inputs only; ``dry_run=True``)."""
    from .iv import DPIVRegression

    bounds, y_bounds = params.get("bounds"), params.get("y_bounds")
    share = share if (bounds is not None or y_bounds is not None) else 0.0
    rho_fit, rho_check = bounds_check_shares(check_rho(rho), share)
    model = DPIVRegression(rho=rho_fit, fit_intercept=intercept, **params)
    cfg = model._config(warn_large_rho=False)
    if cfg.method != "moments":
        raise ValueError(
            f"dry_run: method={cfg.method!r} has no release plan yet (it charges release by "
            "release); use the default method='moments' to see a plan before fitting"
        )
    instruments = [c for c in Z.columns if c not in X.columns]
    columns = X.join(Z[instruments]) if instruments else X
    plan = iv_plan(cfg, n=len(mats.y), columns=columns.shape[1] + 1,
                   bounded=bounds is not None, label="dpfit.iv")  # fmt: skip
    check = []
    if share:
        queries = outside_queries(columns, bounds, y_bounds, tuple(mats.indicators))
        check = [bounds_check_release(rho_check, queries=queries, n=len(mats.y),
                                      relation=Relation.REPLACE_ONE)]  # fmt: skip
    return plan.then(*check, label="dpfit.iv", rho=rho)
