"""The plan of a DP-AMBSSGD run: everything fixed before a record is read.

:func:`plan_ambssgd` turns the public inputs (n, rho, R_x, B, ...) into a frozen
:class:`AmbssgdPlan`: the block schedule T, s, b, eta (Varshney et al. 2022, Thm. 3.7), the
noise multiplier alpha of the chosen accounting, the clip multiplier, DP-STAT's grid and
threshold (:class:`~dpfit.mechanisms.DoublingSearch`), the cost charged to the ledger, and the
side conditions that the run warns about. None of it depends on the data, so a user can inspect
it (or refuse it) before spending any budget; :func:`dpfit.algorithms.dp_ambssgd` builds the same
plan and then only runs its loop. Departures D<k> are those of ``docs/varshney2022.md``.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from .._validation import (
    check_int,
    check_option,
    check_positive,
    check_real,
    check_rho,
    user_stacklevel,
)
from ..exceptions import SideConditionWarning
from ..mechanisms import DoublingSearch, margin_threshold, rho_for_noise_std
from ..mechanisms.counts import literal_threshold  # the paper's threshold='literal'
from ..mechanisms.plan import PlannedParallel, PlannedRelease, ReleasePlan, planned_release
from ..privacy import Query, Relation, parse_relation, split
from ..privacy.budget import exact_units
from ..theory.ambssgd import ambssgd_schedule

__all__ = ["ACCOUNTING_MODES", "THRESHOLDS", "AmbssgdPlan", "plan_ambssgd", "replace_one_only"]

#: ``"paper"``: rho = 1/alpha^2 (Thm. 3.6); ``"parallel"``: rho = 1/(2 alpha^2) (D13).
ACCOUNTING_MODES = ("paper", "parallel")
#: DP-STAT thresholds: ``"margin"`` s - Gamma' (D3, default) or ``"literal"`` s.
THRESHOLDS = ("margin", "literal")
#: The ledger labels of a run: its parallel composition and each block's releases
#: (:func:`dpfit.algorithms.dp_ambssgd` charges them).
LABEL = "dp_ambssgd"
STAT_LABEL = "dp_ambssgd/dp_stat"
GRADIENT_LABEL = "dp_ambssgd/gradient"
#: Grids finer than this are warned against (D4: 24-48 levels are reasonable).
_MANY_LEVELS = 64


def replace_one_only(relation: Any, name: str) -> Relation:
    """The relation of a one-pass algorithm: replace-one only (docs/varshney2022.md)."""
    rel = parse_relation(relation)
    if rel is not Relation.REPLACE_ONE:
        raise ValueError(
            f"{name} supports relation='replace-one' only: under add/remove the public n, "
            "and with it every block boundary, would change"
        )
    return rel


@dataclass(frozen=True, kw_only=True)
class AmbssgdPlan:
    """The public, data-independent part of one DP-AMBSSGD run (from :func:`plan_ambssgd`).

    Attributes
    ----------
    n, steps, stat_size, batch_size, leftover : int
        N records; T blocks of s DP-STAT records and b gradient records; the N - T (s + b)
        records of the order that are never read.
    step_size, noise_multiplier, clip_multiplier : float
        eta; alpha (noise std / sensitivity of every release); zeta_t / gamma_t.
    residual_bound, n_levels, threshold, threshold_value : float, int, str, float
        DP-STAT's grid B 2^(i-K), i = 0..K, and its count threshold (D3, D4).
    accounting, relation, rho :
        How rho maps to alpha (D13); the neighbour relation; the zCDP cost charged to the
        ledger as one parallel composition.
    search : DoublingSearch
        The DP-STAT mechanism every block releases.
    side_conditions : tuple of str
        The :class:`~dpfit.exceptions.SideConditionWarning` messages the run emits.
    """

    n: int
    steps: int
    stat_size: int
    batch_size: int
    leftover: int
    step_size: float
    noise_multiplier: float
    clip_multiplier: float
    residual_bound: float
    n_levels: int
    threshold: str
    threshold_value: float
    accounting: str
    relation: Relation
    rho: float
    search: DoublingSearch
    side_conditions: tuple[str, ...]

    @property
    def release_rho(self) -> float:
        """What each of a block's releases may be charged: half of rho under ``"paper"``
        accounting (DP-STAT and the gradient share a block), all of it under ``"parallel"``
        (each has its own block); exact shares, so a block never costs more than rho."""
        return split(self.rho, 2)[0] if self.accounting == "paper" else self.rho

    @property
    def stat_margin(self) -> float | None:
        """Gamma' = s - theta, DP-STAT's noise margin (None for the literal threshold)."""
        return self.stat_size - self.threshold_value if self.threshold == "margin" else None

    def release_plan(self, *, label: str) -> ReleasePlan:
        """The run's releases as a release plan (:mod:`dpfit.mechanisms.plan`): one parallel
        composition of T blocks of DP-STAT's counts and a clipped mean gradient (``"paper"``
        accounting: both in one block; ``"parallel"``: each its own block), under ``label``.

        DP-STAT's counts have their noise now (the search's); the gradient's bound is the
        clip zeta_t set at run time from the block's search, so its share is reserved. A
        run of this plan inside :func:`~dpfit.mechanisms.plan.charge_plan` is charged as one
        entry before its first draw, and each block's releases are matched to these.
        """
        share = self.release_rho
        stat = PlannedRelease(
            name="dp_stat", label=STAT_LABEL, query=Query.COUNT, rho=share, count=1,
            bound=1.0, sensitivity=self.search.count_sensitivity,
            noise_std=self.search.count_noise_std,
            purpose=f"DP-STAT: {self.n_levels + 1} counts of residuals per level, the clip's scale",
        )  # fmt: skip
        gradient = planned_release(  # its bound, the clip, is set at run time
            "gradient", share, Query.MEAN, None, n=self.batch_size, relation=self.relation,
            label=GRADIENT_LABEL,
            purpose=f"mean gradient of b = {self.batch_size} records, clipped to the block's clip",
        )  # fmt: skip
        pattern = ((stat, gradient),) if self.accounting == "paper" else ((stat,), (gradient,))
        blocks = PlannedParallel(
            name="blocks", label=LABEL, rho=self.rho, pattern=pattern, repeats=self.steps,
            purpose="disjoint blocks of records (parallel composition: the largest block's "
            "cost)",
        )  # fmt: skip
        return ReleasePlan(
            label=label, rho=self.rho, relation=self.relation, n=self.n, releases=(blocks,)
        )

    def warn(self) -> None:
        """Emit :attr:`side_conditions` as :class:`SideConditionWarning`, in order, at the
        user's line."""
        for message in self.side_conditions:
            warnings.warn(message, SideConditionWarning, stacklevel=user_stacklevel())


class CheckedInputs(NamedTuple):
    """The scalar inputs of DP-AMBSSGD after validation, before n is known."""

    rho: float
    relation: Relation
    accounting: str
    threshold: str
    residual_bound: float
    feature_scale: float
    hessian_norm: float
    tail_exponent: float
    stat_failure: float
    n_levels: int


def check_inputs(
    *,
    rho: Any,
    relation: Any,
    accounting: Any,
    threshold: Any,
    diagnostics: Any,
    residual_bound: Any,
    feature_scale: Any,
    hessian_norm: Any,
    tail_exponent: Any,
    stat_failure: Any,
    n_levels: Any,
    name: str = "dp_ambssgd",
) -> CheckedInputs:
    """Validate the scalar inputs (in the order :func:`dp_ambssgd` documents its errors)."""
    rho = check_rho(rho)
    relation = replace_one_only(relation, name)
    accounting = check_option(accounting, "accounting", ACCOUNTING_MODES)
    threshold = check_option(threshold, "threshold", THRESHOLDS)
    if not isinstance(diagnostics, bool):
        raise TypeError(f"diagnostics must be a bool, got {type(diagnostics).__name__}")
    return CheckedInputs(
        rho=rho,
        relation=relation,
        accounting=accounting,
        threshold=threshold,
        residual_bound=check_positive(residual_bound, "residual_bound"),
        feature_scale=check_positive(feature_scale, "feature_scale"),
        hessian_norm=check_positive(hessian_norm, "hessian_norm"),
        tail_exponent=check_positive(tail_exponent, "tail_exponent"),
        stat_failure=check_real(stat_failure, "stat_failure", low=0.0, high=1.0),
        n_levels=check_int(n_levels, "n_levels", low=1, high=1074),
    )


def build_plan(
    n: int,
    inputs: CheckedInputs,
    *,
    condition_number: float,
    steps: int | None,
    steps_factor: float,
    stat_fraction: float,
    step_size: float | None,
    clip_multiplier: float | None,
) -> AmbssgdPlan:
    """The plan for ``n`` records from validated inputs; raises, never warns."""
    sched = ambssgd_schedule(
        n,
        feature_scale=inputs.feature_scale,
        hessian_norm=inputs.hessian_norm,
        condition_number=condition_number,
        steps=steps,
        steps_factor=steps_factor,
        stat_fraction=stat_fraction,
        step_size=step_size,
    )
    T, s, b = sched.steps, sched.stat_size, sched.batch_size
    rho = inputs.rho
    alpha = 1.0 / math.sqrt(rho if inputs.accounting == "paper" else 2.0 * rho)
    multiplier = (
        inputs.feature_scale * math.log(n) ** inputs.tail_exponent
        if clip_multiplier is None
        else check_positive(clip_multiplier, "clip_multiplier")
    )
    theta = (
        margin_threshold(
            s,
            n_queries=inputs.n_levels + 1,
            noise_multiplier=alpha,
            searches=T,
            failure_prob=inputs.stat_failure,
        )
        if inputs.threshold == "margin"
        else literal_threshold(s)
    )
    share = split(rho, 2)[0] if inputs.accounting == "paper" else rho
    search = DoublingSearch(
        ceiling=inputs.residual_bound,
        noise_multiplier=_search_multiplier(alpha, inputs.n_levels + 1, share),
        threshold=theta,
        n_levels=inputs.n_levels,
    )
    _check_finite_noise(search, multiplier, b, alpha)
    return AmbssgdPlan(
        n=n,
        steps=T,
        stat_size=s,
        batch_size=b,
        leftover=sched.leftover,
        step_size=sched.step_size,
        noise_multiplier=alpha,
        clip_multiplier=multiplier,
        residual_bound=inputs.residual_bound,
        n_levels=inputs.n_levels,
        threshold=inputs.threshold,
        threshold_value=theta,
        accounting=inputs.accounting,
        relation=inputs.relation,
        rho=rho,
        search=search,
        side_conditions=_side_conditions(search, s, b, inputs),
    )


def plan_ambssgd(
    n: int,
    *,
    rho: float,
    feature_scale: float,
    residual_bound: float,
    hessian_norm: float = 1.0,
    condition_number: float = 1.0,
    steps: int | None = None,
    steps_factor: float = 1.0,
    stat_fraction: float = 1.0 / 11.0,
    step_size: float | None = None,
    clip_multiplier: float | None = None,
    tail_exponent: float = 0.5,
    n_levels: int = 32,
    threshold: str = "margin",
    stat_failure: float = 0.01,
    accounting: str = "paper",
    relation: Relation | str = "replace-one",
) -> AmbssgdPlan:
    """The plan :func:`dpfit.algorithms.dp_ambssgd` would run on ``n`` records, from public
    inputs only (same parameters, same errors and warnings); nothing is charged or drawn.

    Examples
    --------
    >>> plan = plan_ambssgd(60_000, rho=0.5, feature_scale=6 ** 0.5, residual_bound=40.0,
    ...                     accounting="parallel")
    >>> plan.steps, plan.stat_size, plan.batch_size, round(plan.noise_multiplier, 6)
    (12, 454, 4546, 1.0)
    """
    inputs = check_inputs(
        rho=rho,
        relation=relation,
        accounting=accounting,
        threshold=threshold,
        diagnostics=False,
        residual_bound=residual_bound,
        feature_scale=feature_scale,
        hessian_norm=hessian_norm,
        tail_exponent=tail_exponent,
        stat_failure=stat_failure,
        n_levels=n_levels,
        name="plan_ambssgd",
    )
    plan = build_plan(
        n,
        inputs,
        condition_number=condition_number,
        steps=steps,
        steps_factor=steps_factor,
        stat_fraction=stat_fraction,
        step_size=step_size,
        clip_multiplier=clip_multiplier,
    )
    plan.warn()
    return plan


def _search_multiplier(alpha: float, n_queries: int, share: float) -> float:
    """alpha, or the few ulps above it that keep one DP-STAT search (n_q counts, L2
    sensitivity sqrt(n_q), noise std sqrt(n_q) alpha) charged at most ``share``."""
    sens, limit = math.sqrt(n_queries), exact_units(share)
    while exact_units(rho_for_noise_std(sens, sens * alpha)) > limit:
        alpha = math.nextafter(alpha, math.inf)
    return alpha


def _check_finite_noise(search: DoublingSearch, multiplier: float, b: int, alpha: float) -> None:
    """Reject settings whose noise is not finite and > 0 on the whole clip grid."""
    tiny = np.finfo(np.float64).tiny  # below it, rounding would change the charged rho
    for zeta in (multiplier * search.floor, multiplier * search.ceiling):
        sens = 2.0 * zeta / b
        if not (tiny <= min(sens, alpha * sens) and math.isfinite(alpha * sens)):
            raise ValueError(
                "clip_multiplier * residual_bound * 2**-n_levels gives a clip whose noise is "
                "not finite and > 0; change residual_bound, n_levels or clip_multiplier"
            )


def _side_conditions(
    search: DoublingSearch, s: int, b: int, inputs: CheckedInputs
) -> tuple[str, ...]:
    """The side conditions of docs/varshney2022.md that the plan breaks, as warning texts."""
    found = []
    if search.n_levels > _MANY_LEVELS:
        found.append(
            f"n_levels={search.n_levels}: each of the n_levels + 1 counts gets noise std "
            f"sqrt(n_levels + 1) * alpha, so DP-STAT needs many more records; 24-48 levels "
            "are enough for any practical residual range (docs/varshney2022.md, D4)"
        )
    margin = s - search.threshold if inputs.threshold == "margin" else None
    if margin is not None and s < 4.0 * margin:
        found.append(
            f"DP-STAT's stat set (s={s}) is below four noise margins (4 Gamma' = "
            f"{4.0 * margin:.4g}): the private clip is unreliable. Use more records per block "
            "(fewer steps), a larger rho or accounting='parallel'"
        )
    r_x, h_norm = inputs.feature_scale, inputs.hessian_norm
    if b < 10.0 * r_x * r_x / h_norm:
        found.append(
            f"batch size b={b} is below 10 R_x^2/||H|| = {10.0 * r_x * r_x / h_norm:.4g}: the "
            "step size is small and T steps may not remove the bias"
        )
    return tuple(found)
