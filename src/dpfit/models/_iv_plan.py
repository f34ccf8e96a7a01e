"""The release plans of ``DPIVRegression``'s fits: noisy-moment 2SLS and DP-2S-GD.

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
from ..mechanisms.plan import PlannedRounds, ReleasePlan, planned_release
from ..privacy import Query, Relation, split
from ._fit_checks import bounds_check_shares, outside_queries
from ._iv_config import settings_from
from ._iv_moments import moment_shares
from ._iv_scaling import scaling_release
from ._linear_plan import bounds_check_release

__all__ = ["formula_plan", "iv_plan"]

_PURPOSE = {
    "iv/moments": "second moment of the clipped rows (design, instruments, y): 2SLS",
    "iv/omega": "second moment of the clipped 2SLS scores: the sandwich's meat",
    "iv/far-rows": "share of rows far beyond the row clip",
    "two_stage/theta-gradient": "first stage's clipped mean gradient, one per step",
    "two_stage/beta-gradient": "second stage's clipped mean gradient, one per step",
    "steps": "DP-2S-GD: each step releases both stages' gradients, in turn",
}


def iv_plan(
    cfg: Any, *, n: int, columns: int, bounded: bool, label: str, settings: Any = None
) -> ReleasePlan:
    """The plan of one IV fit of ``n`` records with ``columns`` columns (regressors,
    excluded instruments, response): when ``bounded``, their private standardisation; then
    noisy-moment 2SLS, or DP-2S-GD (``cfg.method == "2s-gd"``, with the public ``settings``
    of :func:`~dpfit.models._iv_config.settings_from`)."""
    relation = Relation.REPLACE_ONE
    common = {"n": n, "relation": relation}
    releases: list[Any] = []
    rho_fit = cfg.rho
    if bounded:  # the same exact split as the fit's (models/_iv_scaling.py, standardise)
        rho_scale, rho_fit = split(cfg.rho, [cfg.scale_fraction, 1.0 - cfg.scale_fraction])
        releases.append(scaling_release(rho_scale, n=n, k=columns, relation=relation))
    if cfg.method == "2s-gd":
        releases.append(_two_stage_rounds(cfg, settings["algorithm"], rho_fit, n))
        return ReleasePlan(label=label, rho=cfg.rho, relation=relation, n=n,
                           releases=tuple(releases))  # fmt: skip
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


def _two_stage_rounds(cfg: Any, alg: dict, rho: float, n: int) -> PlannedRounds:
    """DP-2S-GD's releases (Liang et al. 2025, Alg. 1): at every step of every run, the
    first stage's then the second stage's clipped mean gradient; the stages' exact shares
    of ``rho`` as the fit splits them, each spent whole (``"exact"`` calibration) or half
    (``"paper"``, Prop. 3.1) by its ``runs * steps`` releases."""
    count = alg["runs"] * alg["steps"]
    shares = split(rho, [cfg.rho_split, 1.0 - cfg.rho_split])  # as models/_iv_methods.py
    stages = []
    for stage, share in zip(("theta", "beta"), shares, strict=True):
        spent = share if cfg.noise_calibration == "exact" else share / 2.0
        stages.append(planned_release(
            f"{stage}-gradient", spent, Query.MEAN, alg[f"clip_{stage}"], count=count, n=n,
            relation=Relation.REPLACE_ONE, label=f"two_stage/{stage}-gradient",
            purpose=_PURPOSE[f"two_stage/{stage}-gradient"],
        ))  # fmt: skip
    return PlannedRounds(name="steps", pattern=tuple(stages), purpose=_PURPOSE["steps"])


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
    instruments = [c for c in Z.columns if c not in X.columns]
    columns = X.join(Z[instruments]) if instruments else X
    settings = settings_from(cfg, X.shape[1] + intercept, Z.shape[1] + intercept)
    plan = iv_plan(cfg, n=len(mats.y), columns=columns.shape[1] + 1,
                   bounded=bounds is not None, label="dpfit.iv", settings=settings)  # fmt: skip
    check = []
    if share:
        queries = outside_queries(columns, bounds, y_bounds, tuple(mats.indicators))
        check = [bounds_check_release(rho_check, queries=queries, n=len(mats.y),
                                      relation=Relation.REPLACE_ONE)]  # fmt: skip
    return plan.then(*check, label="dpfit.iv", rho=rho)
