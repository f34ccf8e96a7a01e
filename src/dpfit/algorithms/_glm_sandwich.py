"""The sandwich's releases of the private GLM at its estimate: the bread and the meat.

The bread is (1/n) sum_i w_i c_i c_i' (the observed Fisher information, rows whitened by the
released P and clipped, weights capped); the meat is the second moment of the whitened
scores, per record (:func:`dpfit.algorithms._glm_sums.sandwich_sums`) or, with a privacy
unit, the clustered meat of each unit's summed score
(:func:`dpfit.algorithms._glm_units.clustered_meat`). Both are released through
:func:`~dpfit.inference.population.release_moment_sum` with the plan's shares.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..inference.population import NoisyMoment, release_moment_sum
from ..inference.preconditioner import record_sum, triangle
from ._glm_plan import GLMPlan
from ._glm_sums import bread_sum, sandwich_sums
from ._glm_units import UnitCodes, clustered_meat

__all__ = ["release_sandwich"]


def release_sandwich(
    plan: GLMPlan, rows: list[Any], units: UnitCodes | None, P: np.ndarray,
    estimate: np.ndarray, clips: dict[str, float], moment: dict[str, Any],
) -> tuple[NoisyMoment, NoisyMoment]:  # fmt: skip
    """The released bread and meat at the estimate (whitened); with a privacy unit the meat
    is the clustered one, and ``clips["meat"]`` is set to its per-unit clip."""
    k, weight_cap = plan.k, clips["weight"]
    bread_bound = math.sqrt(weight_cap) * plan.row_clip
    args = (P, estimate, plan.family, plan.row_clip, weight_cap)
    if units is not None:
        bread = release_moment_sum(
            record_sum(bread_sum, rows, args, width=triangle(k)), bound=bread_bound,
            rho=plan.share("bread"), label="glm/bread", **moment,
        )  # fmt: skip
        meat, clips["meat"] = clustered_meat(plan, rows, units, P, estimate, moment)
        return bread, meat
    sums = record_sum(sandwich_sums, rows, (*args, clips["meat"]), width=2 * triangle(k))
    bread = release_moment_sum(
        sums[: triangle(k)], bound=bread_bound, rho=plan.share("bread"), label="glm/bread",
        **moment,
    )  # fmt: skip
    meat = release_moment_sum(
        sums[triangle(k) :], bound=clips["meat"], rho=plan.share("meat"), label="glm/meat",
        **moment,
    )  # fmt: skip
    return bread, meat
