"""The release plans of ``DPLinearRegression``'s DP-GD fits and of the bounds check.

:func:`linear_plan` lists, from the public settings of a fit (``_linear_methods.py``), every
release DP-GD makes in the order it makes them, with the share of rho each gets
(:func:`dpfit.algorithms._preconditioned_plan.release_shares` for the preconditioned default), its
query and per-record bound and so its sensitivity and noise
(:func:`dpfit.mechanisms.plan.planned_release`). Releases whose bound comes from earlier
releases (the private clip, the meat's clip, the window of the gap) are "run time": their
share is fixed here. :func:`bounds_check_release` plans the private count of the records
outside the public bounds that :func:`dpfit.ols` adds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..algorithms._preconditioned_plan import release_shares
from ..algorithms.dp_gd import LABEL as GRADIENT_LABEL
from ..inference.preconditioner import ROW_CLIP
from ..mechanisms.plan import PlannedRelease, ReleasePlan, planned_release
from ..privacy import Query, query_sensitivity

__all__ = ["bounds_check_release", "linear_plan"]

_PURPOSE = {
    "gd/xtx": "X'X/n: first stage of the preconditioner",
    "gd/whitened-xtx": "second moment of the whitened rows: second stage of the preconditioner",
    "gd/xty-pilot": "X'y/n: the pilot estimate the private clip is measured at",
    "gd/residual-scale": "mean squared residual at the pilot, capped: the private clip",
    GRADIENT_LABEL: "clipped mean gradient of the squared loss, one per step",
    "gd/huber-hessian": "Huber Hessian at the estimate (whitened): the sandwich's bread",
    "gd/omega": "second moment of the whitened clipped gradients: the sandwich's meat",
    "gd/clipped-excess": "mean clipped excess above the clip: the gap to least squares",
    "gd/far-records": "share of records whose gradient is far beyond the clip",
    "bounds-check/outside-counts": "counts of the records outside the public bounds, and of "
    "the zero records",
}


def _release(
    label: str, rho: float, query: Query, bound: float | None, settings: Mapping[str, Any],
    count: int = 1,
) -> PlannedRelease:  # fmt: skip
    name = label.split("/", 1)[1]
    return planned_release(
        name, rho, query, bound, n=settings["n"], relation=settings["relation"], label=label,
        purpose=_PURPOSE[label], count=count,
    )  # fmt: skip


def linear_plan(settings: Mapping[str, Any], k: int, *, label: str) -> ReleasePlan:
    """The plan of one DP-GD fit with the public ``settings`` of ``_resolve_gd`` on a design
    of ``k`` columns (ones column included)."""
    total = settings["steps"] // settings["runs"] * settings["runs"]
    clip = settings["clip"]
    if not settings["precondition"]:
        releases = [_release(GRADIENT_LABEL, settings["rho"], Query.MEAN, clip, settings, total)]
    else:
        rhos = release_shares(settings["rho"], settings["moment_share"], clip is None)
        bound, row_clip = settings["row_bound"], ROW_CLIP * math.sqrt(k)
        releases = [
            _release("gd/xtx", rhos["xtx"], Query.SECOND_MOMENT, bound, settings),
            _release("gd/whitened-xtx", rhos["whiten"], Query.SECOND_MOMENT, row_clip, settings),
        ]
        if clip is None:
            releases += [
                _release("gd/xty-pilot", rhos["pilot"], Query.MEAN, bound, settings),
                _release("gd/residual-scale", rhos["scale"], Query.BOUNDED_MEAN, 4.0, settings),
            ]
        releases += [
            _release(GRADIENT_LABEL, rhos["gd"], Query.MEAN, clip, settings, total),
            _release("gd/huber-hessian", rhos["hessian"], Query.SECOND_MOMENT, row_clip, settings),
            _release("gd/omega", rhos["omega"], Query.SECOND_MOMENT, clip, settings),
            _release("gd/clipped-excess", rhos["gap"], Query.MEAN, None, settings),
            _release("gd/far-records", rhos["far"], Query.BOUNDED_MEAN, 1.0, settings),
        ]
    return ReleasePlan(
        label=label, rho=settings["rho"], relation=settings["relation"], n=settings["n"],
        releases=tuple(releases),
    )  # fmt: skip


def bounds_check_release(
    rho: float, *, queries: int, n: int, relation: Any
) -> PlannedRelease:
    """The bounds check's one release: ``queries`` counts (one per bounded column, the
    response, the zero records), each moved by at most 1 by one record: L2 sensitivity
    sqrt(queries) under either relation."""
    return planned_release(
        "bounds-check", rho, Query.COUNT, 1.0, n=n, relation=relation,
        label="bounds-check/outside-counts", purpose=_PURPOSE["bounds-check/outside-counts"],
        sensitivity=query_sensitivity(Query.COUNT, columns=queries),
    )  # fmt: skip
