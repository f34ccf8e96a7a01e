"""``DPLinearRegression(method="ambssgd")``: DP-AMBSSGD behind the estimator's method table.

DP-AMBSSGD needs public constants the estimator does not otherwise ask for (R_x, a bound B on
the residuals, ||H||). With public ``bounds`` and ``y_bounds`` every rescaled record has
||x'|| <= M = sqrt(p + 1) (ones column included) and |y'| <= 1, which gives them without
looking at the data:

* R_x = M, since ||x'||^2 <= M^2 surely, so E[||x'||^2 x' x'^T] <= M^2 H;
* the clip multiplier is M, a sure bound on ||x'|| (docs/varshney2022.md, fix D14), so
  zeta_t = M gamma_t;
* B = sqrt(2) M ln n, the paper's K2 R_x (||w*||_H + sigma)(ln n)^(2a) with a = 1/2, K2 = 1
  and ||w*||_H + sigma <= sqrt(2 E[y'^2]) <= sqrt(2) for a well-specified model;
* ||H||_2 <= M^2 for the default step size b / (R_x^2 + (b - 1) ||H||) (safe but slow: pass a
  public ``step_size`` near 1/||H|| when the features' second moments are known).

``steps`` is T, the number of one-pass blocks (even; about 2 ceil(kappa ln(n) / 2), e.g. 14 at
n = 1e6 for well-conditioned features). Accounting is ``"parallel"`` (the tighter valid one,
docs/varshney2022.md, fix D13). The method releases a point estimate and no interval.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..algorithms._ambssgd_plan import build_plan, check_inputs
from ..algorithms.ambssgd import run_ambssgd_plan
from ..mechanisms import NoiseSource
from ..mechanisms.plan import ReleasePlan
from ..privacy import PrivacyLedger, Relation

__all__ = ["ambssgd_plan", "resolve_ambssgd", "run_ambssgd"]

_N_LEVELS = 32


def resolve_ambssgd(config: Any, scaling: Any, n: int, p: int) -> dict[str, Any]:
    """Public settings of DP-AMBSSGD from bounds, n and rho; nothing here reads the data."""
    if scaling.x_bounds is None or scaling.y_bounds is None:
        raise ValueError(
            "method='ambssgd' needs public bounds for every feature (bounds) and for the "
            "response (y_bounds): they give R_x and the residual bound; never read off the data"
        )
    if config.interval is not None:
        raise ValueError(
            "method='ambssgd' releases a point estimate only: its single pass leaves no "
            "iterates to measure the privacy noise from, and it releases no second moments "
            "for a sandwich; set interval=None, or use the default method (or "
            "method='adassp') for population intervals"
        )
    for name in ("clip", "burn_in"):
        if getattr(config, name) is not None:
            raise ValueError(f"{name} does not apply to method='ambssgd'; leave it None")
    if config.relation is not Relation.REPLACE_ONE:
        raise ValueError("method='ambssgd' supports relation='replace-one' only")
    if config.target != "least-squares":
        raise ValueError("target applies to the preconditioned fit's population interval only")
    m = scaling.max_row_norm
    inputs = check_inputs(
        rho=config.rho,
        relation=config.relation,
        accounting="parallel",
        threshold="margin",
        diagnostics=False,
        residual_bound=math.sqrt(2.0) * m * math.log(n),
        feature_scale=m,
        hessian_norm=m * m,
        tail_exponent=0.5,
        stat_failure=0.01,
        n_levels=_N_LEVELS,
    )
    plan = build_plan(
        n,
        inputs,
        condition_number=1.0,
        steps=config.steps,
        steps_factor=1.0,
        stat_fraction=1.0 / 11.0,
        step_size=config.step_size,
        clip_multiplier=m,
    )
    margin = plan.stat_margin
    if plan.stat_size < 4.0 * margin:
        suggested = max(2, 2 * math.ceil(math.log(n) / 2.0))
        raise ValueError(
            f"steps={config.steps} blocks leave {plan.stat_size} records per private clip "
            f"search, fewer than four noise margins ({4.0 * margin:.0f}): "
            f"method='ambssgd' needs few large blocks, e.g. steps={suggested} "
            "(2 ceil(kappa ln(n) / 2) with kappa = 1), or a larger rho"
        )
    return {"plan": plan}


def ambssgd_plan(settings: Mapping[str, Any], k: int, *, label: str) -> ReleasePlan:
    """The release plan of the run :func:`resolve_ambssgd` planned (``k``, the design's
    columns, sets nothing here: the blocks' sensitivities do not depend on it)."""
    return settings["plan"].release_plan(label=label)


def run_ambssgd(
    X: np.ndarray,
    y: np.ndarray,
    settings: Mapping[str, Any],
    ledger: PrivacyLedger,
    source: NoiseSource,
) -> Any:
    """One DP-AMBSSGD pass on the rescaled design; the tail average is the estimate."""
    from ._linear_methods import LinearFit

    plan = settings["plan"]
    traj = run_ambssgd_plan(plan, X, y, ledger=ledger, rng=source)
    public = {
        key: traj.config[key]
        for key in ("steps", "stat_size", "batch_size", "step_size", "noise_multiplier")
    }
    public["residual_bound (rescaled)"] = plan.residual_bound
    return LinearFit(
        estimate=traj.estimate,
        interval_estimates=None,
        interval_method=(
            "DP-AMBSSGD releases a point estimate only (the tail average of one private pass); "
            "no interval."
        ),
        settings=public,
        noise_backend=traj.noise_backend,
        seeded=traj.seeded,
    )
