"""How the private GLM clips, and a released check of what clipping still moves.

The logit link needs no clip beyond the row bound (:mod:`dpfit.algorithms.glm_family`); the
probit and Poisson scores are clipped. This module holds that policy, written once:

* :func:`mean_level`: the released mean response, kept inside the link's range (the
  descent's start and the preconditioner's scale);
* :func:`release_scale` and :func:`glm_clips`: the Poisson clips, set from the released mean
  count and a released residual scale (post-processing), and the probit's planned bounds;
* :func:`release_gap`: for the clipped families, the released first-order gap between the
  maximum-likelihood fit and the clipped fit, theta_ml - theta_C = H^-1 e, with e the mean
  clipped excess of the per-record gradients between the clip and a window above it, and the
  share of records whose gradient exceeds :data:`~dpfit.inference.clipping_bias.FAR` x the
  clip, as the linear default releases for least squares
  (:mod:`dpfit.inference.clipping_bias`; docs/inference.md, "Clipping bias"). The score
  equation is linear in theta to first order, so the same argument holds: at the clipped
  fit the clipped gradients average to zero, and the unclipped ones average to e.

Every release goes through :func:`dpfit.mechanisms.gaussian` (via
:func:`~dpfit.inference.whitened.release_mean` and
:func:`~dpfit.inference.clipping_bias.release_excess`) with a declared sensitivity, charged
before the draw.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..inference.clipping_bias import (
    FAR,
    GAP_NOISE,
    MEAT_NOISE,
    excess_window,
    growing_clip,
    release_excess,
    second_moment_clip,
)
from ..inference.population import NoisyMoment
from ..inference.preconditioner import record_sum
from ..inference.whitened import release_mean
from ._glm_plan import GLMPlan
from ._glm_sums import excess_sums, scale_sum
from .glm_family import Family

__all__ = ["glm_clips", "mean_level", "release_gap", "release_scale"]

#: The Poisson gradient clips the score residual at this many released residual scales at
#: small n (more as n grows, at most K).
CLIP_BASE = 4.0
#: ... and at most this many (CLIP_CAP / CLIP_BASE times the small-n clip, where the
#: linear default grows to 8 times): the scale is the counts' marginal s.d., so a count
#: CLIP_CAP of them from its mean is far in any count distribution's tail, and a larger clip
#: would only add privacy noise (the clip that grows with n would reach K at n = 2e4).
CLIP_CAP = 12.0
#: The Poisson residual scale caps each squared residual at (SCALE_CAP sqrt(y~))^2, about
#: SCALE_CAP Poisson s.d. at the released mean count y~ (its noise grows with the cap).
SCALE_CAP = 8.0
#: The Poisson bread caps each record's weight mu_i at this multiple of the released mean
#: count (and at K): a larger weight only lowers the bread, which widens the interval, and
#: the release's noise grows with the cap.
WEIGHT_GROWTH = 4.0
#: The Poisson meat clips whitened scores at this many sqrt(k) Poisson s.d. at the released
#: mean count at small n (more as n grows:
#: :func:`~dpfit.inference.clipping_bias.second_moment_clip`).
MEAT_BASE = 3.0
#: ... and at most this many sqrt(k) scales at large n (the clip that grows with n would keep
#: the meat's noise at MEAT_NOISE of its entries at every n).
MEAT_CAP = 8.0


def mean_level(family: Family, mean: float, noise_std: float, cap: float, n: int) -> float:
    """The released mean response, kept two noise s.d. (and 1/n of the range) inside the
    range where the link and the Fisher weight are finite: for binomial in [f, 1 - f] with
    f at most 1/4, for Poisson at least f (post-processing)."""
    floor = max(2.0 * noise_std, cap / n)
    if family.name == "binomial":
        floor = min(floor, 0.25 * cap)
        return float(min(max(mean, floor), cap - floor))
    return float(min(max(mean, floor), cap))


def release_scale(
    plan: GLMPlan, rows: list[Any], theta0: np.ndarray, level: float, moment: dict[str, Any],
    per_unit: float = 1.0,
) -> float | None:  # fmt: skip
    """Poisson: s~ = sqrt of the released mean of min(r_i^2, (SCALE_CAP sqrt(y~))^2) at the
    start (the intercept-only fit, so s~ is about the marginal s.d. of the counts, which
    overdispersion and the features' effects raise: a conservative scale for the clips),
    raised to its noise; None for the binomial family (its clips need no scale). With a
    privacy unit the mean over units is divided by ``per_unit``, the released mean number of
    rows per unit (post-processing)."""
    if "scale" not in plan.names:
        return None
    cap = min(plan.count_bound, SCALE_CAP * math.sqrt(level)) ** 2
    planned = plan.bound("scale", cap)
    value, noise_std = release_mean(
        record_sum(scale_sum, rows, (theta0, plan.family, cap), width=1),
        cap=cap, rho=planned.rho, label=planned.label, **moment,
    )  # fmt: skip
    return math.sqrt(max(value / per_unit, 2.0 * noise_std / per_unit, level))


def glm_clips(plan: GLMPlan, level: float, scale: float | None, H: NoisyMoment) -> dict[str, float]:
    """The gradient clip, the bread's weight cap and the meat's clip (post-processing).

    Binomial: the planned bounds (the logit clip is exact). Poisson, from the released mean
    count y~ and scale s~: the residual clip c = min(K, CLIP_CAP s~, max(CLIP_BASE s~,
    growing)), where
    growing keeps the privacy variance of the estimate at a quarter of its sampling variance
    along the least-identified direction of X'X/n
    (:func:`~dpfit.inference.clipping_bias.growing_clip`, with the scale
    s~ sqrt(lambda_min) / sqrt(k)), and the gradient clip c sqrt(k); the bread caps weights at
    min(K, WEIGHT_GROWTH y~); the meat clips whitened scores at MEAT_BASE sqrt(k) s~, grown
    with n so that its noise stays at MEAT_NOISE of its entries, at most MEAT_CAP sqrt(k) s~
    and K x the row clip. With a privacy unit the meat is clustered and clips each unit's
    summed score at a clip of its own (:mod:`dpfit.inference._cluster`): no "meat" here.
    """
    family = plan.family
    if family.name != "poisson":
        clips = {"gradient": plan.clip, "weight": family.weight_bound(None)}
        return clips if plan.clustered else {**clips, "meat": plan.release("meat").bound}
    K, k = plan.count_bound, plan.k
    kept = plan.steps - plan.burn_in
    smallest = max(float(np.linalg.eigvalsh(H.preconditioner())[0]), 0.0)
    residual = growing_clip(
        CLIP_BASE * scale, scale * math.sqrt(smallest / k), n=plan.n,
        rho=plan.share("gradient"), releases=plan.steps, averaged=max(kept, 1),
    )  # fmt: skip
    clips = {
        "gradient": min(K, residual, CLIP_CAP * scale) * plan.row_bound,
        "weight": min(K, WEIGHT_GROWTH * level),
    }
    if plan.clustered:
        return clips
    meat = second_moment_clip(
        MEAT_BASE * math.sqrt(k) * scale, scale, n=plan.n, rho=plan.share("meat"),
        noise=MEAT_NOISE,
    )  # fmt: skip
    return {**clips, "meat": min(K * plan.row_clip, meat, MEAT_CAP * math.sqrt(k) * scale)}


def release_gap(
    plan: GLMPlan,
    rows: list[Any],
    estimate: np.ndarray,
    clip: float,
    to_theta: np.ndarray,
    se: np.ndarray,
    moment: dict[str, Any],
) -> dict[str, Any]:
    """The released clipped excess and far-record share at ``estimate`` (module docstring).

    ``to_theta`` is H^-1 in the design's coordinates (from the released bread) and ``se``
    the interval's standard errors so far: the window w above ``clip`` makes the gap's noise
    s.d. at most GAP_NOISE x the smallest standard error over the map's reach (as the linear
    default does). Returns the excess (k,), its noise s.d., the window, the far share and its
    noise s.d. (releases, or post-processing of them).
    """
    reach = np.linalg.norm(to_theta, axis=1)
    noise = GAP_NOISE * float(np.min(se / np.maximum(reach, 1e-300)))
    planned = plan.release("gap")
    window = excess_window(
        noise, n=plan.n, rho=planned.rho, relation=plan.relation,
        rows_per_unit=plan.rows_per_unit,
    )  # fmt: skip
    sums = record_sum(
        excess_sums, rows, (estimate, plan.family, clip, window, FAR * clip), width=plan.k + 1
    )
    excess, excess_std = release_excess(
        sums[:-1], window=window, rho=planned.rho, label=planned.label, **moment
    )
    far_release = plan.release("far")
    far, far_std = release_mean(
        sums[-1:], cap=1.0, rho=far_release.rho, label=far_release.label, **moment
    )
    return {
        "excess": excess, "excess_noise_std": excess_std, "window": window,
        "far": far, "far_noise_std": far_std,
    }  # fmt: skip
