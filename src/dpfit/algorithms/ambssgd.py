"""DP-AMBSSGD: one-pass private linear regression with private adaptive clipping.

Varshney, Thakurta & Jain (2022), Alg. 2, with the departures D1-D19 listed in
``docs/varshney2022.md`` ("Departures from the paper"; cited below as D<k>). The records
are read once, in blocks of ``s + b`` consecutive records of a data-independent order; in
block t,

1. DP-STAT (:class:`dpfit.mechanisms.DoublingSearch`) on the first s records privately finds
   the scale gamma_t of the residuals ``|<x, w_t> - y|`` (n_q noisy counts, sensitivity 1);
2. the clip is zeta_t = ``clip_multiplier`` * gamma_t (paper: R_x (ln N)^a);
3. the next b records give the mean of per-example gradients ``x (<x, w_t> - y)`` clipped to
   zeta_t, released with noise std alpha * 2 zeta_t / b (its replacement sensitivity times
   alpha) and w_{t+1} = w_t - eta * (noisy mean);

and the estimate is the tail average of w_{T/2+1..T}.

Notation (public names -> paper symbols): ``feature_scale`` R_x, ``residual_bound`` B,
``hessian_norm`` ||H||_2, ``condition_number`` kappa, ``steps`` T, ``steps_factor`` c1,
``step_size`` eta, ``n_levels`` K, ``stat_failure`` beta_stat, ``tail_exponent`` a; alpha
is the noise multiplier derived from ``rho`` and ``accounting``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._deprecation import renamed_keyword
from .._floats import quiet_floats
from ..mechanisms import check_descent_scale, gaussian, make_noise_source, noise_std_within
from ..mechanisms.limits import NOISE_SIGMAS
from ..privacy import Query, Relation, mean_sensitivity
from ..privacy.ledger import prepare_ledger
from ..privacy.queries import query_peak
from ._ambssgd_plan import (
    ACCOUNTING_MODES,
    GRADIENT_LABEL,
    LABEL,
    STAT_LABEL,
    THRESHOLDS,
    AmbssgdPlan,
    build_plan,
    check_inputs,
    plan_ambssgd,
    replace_one_only,
)
from ._kernels import Rows, least_squares_sum, level_counts
from .onepass import OnePassData, one_pass_data, tail_average
from .trajectory import Trajectory

__all__ = [
    "ACCOUNTING_MODES",
    "THRESHOLDS",
    "AmbssgdPlan",
    "dp_ambssgd",
    "plan_ambssgd",
    "replace_one_only",
    "run_ambssgd_plan",
]


@quiet_floats()
def dp_ambssgd(
    X: Any,
    y: Any = None,
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
    shuffle: bool | None = None,
    relation: Relation | str = "replace-one",
    n_public: int | None = None,
    ledger: Any = None,
    rng: Any = None,
    diagnostics: bool = False,
    n: int | None = None,
) -> Trajectory:
    """One pass of DP-AMBSSGD; returns every iterate and the tail average.

    Parameters
    ----------
    X : array-like of shape (n, d), lazy array, or iterator of (X_chunk, y_chunk)
        Covariates (see :func:`dpfit.algorithms.onepass.one_pass_data` for lazy arrays and
        streams). Data are never standardised by their own statistics.
    y : array-like of shape (n,), optional
        Responses (None for a stream).
    rho : float
        zCDP budget of the whole run (finite, > 0). Use
        :func:`dpfit.theory.ambssgd.rho_for_epsilon` for a target (epsilon, delta).
    feature_scale : float
        R_x, a public bound with E[||x||^2 x x^T] <= R_x^2 H (for x ~ N(0, H):
        sqrt(Tr H + 2 ||H||)). Sets the step size and the default clip multiplier.
    residual_bound : float
        B, a public upper bound on |<x, w_t> - y| at every iterate: the top of DP-STAT's grid.
        Too small only means more clipping (less accuracy), never less privacy.
    hessian_norm : float, default=1.0
        ||H||_2, a public bound on the largest eigenvalue of E[x x^T].
    condition_number : float, default=1.0
        kappa, public; sets the default number of steps T = c1 kappa ln N.
    steps : int, optional
        T, even; default max(2, 2 ceil(steps_factor * kappa * ln(n) / 2)).
    steps_factor : float, default=1.0
        c1 in the default T (D6; use 2 at high signal-to-noise).
    stat_fraction : float, default=1/11
        Share of each block given to DP-STAT (s = b/10 as in Thm. 3.7).
    step_size : float, optional
        eta; default b / (R_x^2 + (b - 1) ||H||_2) (Thm. 3.7).
    clip_multiplier : float, optional
        zeta_t / gamma_t; default R_x (ln n)^a (the paper). A public high-probability bound on
        ||x|| (:func:`dpfit.theory.ambssgd.gaussian_norm_bound`) clips less noise in (D14).
    tail_exponent : float, default=0.5
        a in the default clip multiplier (1/2 for sub-Gaussian data).
    n_levels : int, default=32
        K: DP-STAT's grid is B 2^(i-K), i = 0..K (D4), at most 1074 (float64 range; the
        paper's K = ceil(200 log2 N) is not representable and is refused); above 64 it warns.
    threshold : {"margin", "literal"}, default="margin"
        DP-STAT's threshold: s - Gamma' (D3) or the paper-literal s (kept to reproduce
        its failure; not recommended).
    stat_failure : float, default=0.01
        beta_stat of the margin: all T (K + 1) count noises stay within it w.p. 1 - beta_stat.
    accounting : {"paper", "parallel"}, default="paper"
        How rho maps to the noise multiplier alpha: ``"paper"`` alpha = 1/sqrt(rho) (the
        paper's 1/alpha^2 per block); ``"parallel"`` alpha = 1/sqrt(2 rho), valid because the
        DP-STAT and gradient records of a block are disjoint (D13).
    n_public : int, optional
        The public number of records; required for a stream (as ``n_public`` of every
        algorithm: a count that is public, never read off private data).
    shuffle : bool, optional
        Read arrays in a uniformly random order (default True; streams: False).
    relation : {"replace-one"}, default="replace-one"
        Only replace-one is supported (under add/remove n and the blocks change).
    ledger : PrivacyLedger, optional
        Charged with one parallel composition of cost rho; default a new ledger with a
        budget of rho.
    rng : None, int, numpy.random.Generator or NoiseSource, optional
        Source of the noise and of the permutation.
    diagnostics : bool, default=False
        Also compute NON-PRIVATE diagnostics (fraction of clipped gradients and the true
        largest DP-STAT residual per step). For simulations only.
    n : int, optional
        Deprecated name of ``n_public`` (DeprecationWarning).

    Returns
    -------
    Trajectory
        ``iterates`` w_1..w_T (T x d), ``estimate`` the tail average, ``releases`` with
        ``"residual_scale"`` (gamma_t), ``"clip"`` (zeta_t) and ``"stat_counts"``
        (T x (K + 1) noisy counts), ``config`` with the schedule and alpha.

    Raises
    ------
    TypeError, ValueError
        Invalid inputs, before anything is charged or drawn.
    BudgetExceededError
        ``ledger``'s budget cannot afford rho; nothing was drawn.

    Warns
    -----
    SideConditionWarning
        DP-STAT's stat set is smaller than four margins (s < 4 Gamma', D7), so the clip
        is unreliable; b < 10 R_x^2 / ||H|| (docs/varshney2022.md), so the step size is small; or
        n_levels > 64.

    Notes
    -----
    Privacy (replace-one, public n; Thm. 3.6 with fixes D1, D2, D13). The order is a
    data-independent permutation, so each record lies in exactly one block, and within it
    either in the DP-STAT set or in the gradient batch. Given the past releases (hence public
    w_t and zeta_t), DP-STAT's K + 1 counts each have sensitivity 1 and noise std
    sqrt(K + 1) alpha (together 1/(2 alpha^2)-zCDP), and the clipped mean has sensitivity
    2 zeta_t / b and noise std alpha 2 zeta_t / b (1/(2 alpha^2)-zCDP). By parallel
    composition the whole transcript (every gamma_t and w_t) costs 1/alpha^2 when a block is
    charged for both (``"paper"``) or 1/(2 alpha^2) when the two disjoint sets are separate
    blocks (``"parallel"``); both equal ``rho``. The ledger records it as one
    :class:`~dpfit.privacy.ParallelEntry`. Shuffling is not needed for privacy, only for the
    i.i.d. analysis; every hyperparameter must be public.

    The run is a plan, then a loop: :func:`plan_ambssgd` (same parameters, plus ``n``) returns
    the frozen :class:`AmbssgdPlan` -- schedule, alpha, DP-STAT's grid and threshold, the cost
    charged -- from public inputs alone, and :func:`run_ambssgd_plan` runs it (the same run for
    the same seed). Inspect the plan before spending the budget.

    Examples
    --------
    >>> import warnings
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((60_000, 4))
    >>> y = X @ np.array([1.0, -1.0, 0.5, 0.0]) + 0.1 * rng.standard_normal(60_000)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     traj = dp_ambssgd(X, y, rho=0.5, feature_scale=np.sqrt(6), residual_bound=40.0,
    ...                       accounting="parallel", rng=1)
    >>> np.round(traj.estimate, 2)
    array([ 1. , -1. ,  0.5, -0. ])
    >>> round(traj.ledger.rho, 12), traj.iterates.shape
    (0.5, (12, 4))
    """
    inputs = check_inputs(
        rho=rho,
        relation=relation,
        accounting=accounting,
        threshold=threshold,
        diagnostics=diagnostics,
        residual_bound=residual_bound,
        feature_scale=feature_scale,
        hessian_norm=hessian_norm,
        tail_exponent=tail_exponent,
        stat_failure=stat_failure,
        n_levels=n_levels,
    )
    n_public = renamed_keyword(n_public, n, new="n_public", old="n")
    data = one_pass_data(X, y, n=n_public, shuffle=shuffle, norms=True)
    plan = build_plan(
        data.n,
        inputs,
        condition_number=condition_number,
        steps=steps,
        steps_factor=steps_factor,
        stat_fraction=stat_fraction,
        step_size=step_size,
        clip_multiplier=clip_multiplier,
    )
    plan.warn()
    return _run(plan, data, ledger=ledger, rng=rng, diagnostics=diagnostics)


def run_ambssgd_plan(
    plan: AmbssgdPlan,
    X: Any,
    y: Any = None,
    *,
    shuffle: bool | None = None,
    ledger: Any = None,
    rng: Any = None,
) -> Trajectory:
    """Run a plan from :func:`plan_ambssgd` on data of exactly ``plan.n`` records.

    The same run as :func:`dp_ambssgd` with the plan's parameters (same seed, same result);
    the plan's side conditions are warned about again.
    """
    if not isinstance(plan, AmbssgdPlan):
        raise TypeError(f"plan must be an AmbssgdPlan, got {type(plan).__name__}")
    data = one_pass_data(X, y, n=plan.n, shuffle=shuffle, norms=True)  # refuses another n
    plan.warn()
    return _run(plan, data, ledger=ledger, rng=rng, diagnostics=False)


def _check_scales(plan: AmbssgdPlan) -> None:
    """Refuse, before any charge, a residual bound whose clipped gradient sums or iterates
    could overflow: the clip zeta_t is at most clip_multiplier x residual_bound (the search's
    ceiling), each release a mean of b gradients clipped to it plus noise of std
    noise_multiplier x its sensitivity (:mod:`dpfit.mechanisms.limits`)."""
    b, alpha, relation = plan.batch_size, plan.noise_multiplier, plan.relation

    def gradient(bound: float) -> tuple[float, float]:
        zeta = plan.clip_multiplier * bound
        peak = query_peak(Query.MEAN, bound=zeta, n=b)
        return peak, peak / b + NOISE_SIGMAS * alpha * mean_sensitivity(zeta, b, relation)

    check_descent_scale(
        plan.residual_bound,
        gradient,
        step_size=plan.step_size,
        steps=plan.steps,
        what=f"the clipped gradient sum of b = {b} records (clip up to clip_multiplier x it) "
        "and its noise",
        name="residual_bound",
    )


@quiet_floats()
def _run(
    plan: AmbssgdPlan, data: OnePassData, *, ledger: Any, rng: Any, diagnostics: bool
) -> Trajectory:
    """The loop: T blocks of DP-STAT then one noisy clipped gradient step, as planned."""
    T, s, b, search = plan.steps, plan.stat_size, plan.batch_size, plan.search
    _check_scales(plan)
    source = make_noise_source(rng)
    ledger = prepare_ledger(ledger, plan.relation, plan.rho, name=LABEL)
    w = np.zeros(data.d)
    iterates = np.empty((T, data.d))
    gammas, clips = np.empty(T), np.empty(T)
    counts = np.empty((T, plan.n_levels + 1))
    clipped, max_residual = np.full(T, np.nan), np.full(T, np.nan)
    with ledger.parallel(LABEL, rho_per_block=plan.rho) as blocks:
        parts = data.segments([s, b] * T, source.generator, lazy=True)
        for t in range(T):
            Xs, ys = next(parts)  # on Dask: unevaluated selections, reduced on the workers
            Xb, yb = next(parts)
            stat_ledger = blocks.block()
            found = search.release(
                level_counts(Xs, ys, w, search),  # counts of |<x, w> - y| per level
                ledger=stat_ledger,
                rng=source,
                label=STAT_LABEL,
            )
            if diagnostics:  # NON-PRIVATE: the true largest DP-STAT residual at w_t
                Xd, yd = (v.gather() if isinstance(v, Rows) else v for v in (Xs, ys))
                max_residual[t] = float(np.abs(Xd @ w - yd).max())
            zeta = plan.clip_multiplier * found.value
            total, n_clipped = least_squares_sum(Xb, yb, w, zeta)
            sens = mean_sensitivity(zeta, b, plan.relation)
            noisy = gaussian(
                total / b,
                sensitivity=sens,
                noise_std=noise_std_within(sens, plan.noise_multiplier * sens, plan.release_rho),
                ledger=blocks.block() if plan.accounting == "parallel" else stat_ledger,
                rng=source,
                label=GRADIENT_LABEL,
            )
            w = w - plan.step_size * noisy
            iterates[t], gammas[t], clips[t], counts[t] = w, found.value, zeta, found.noisy_counts
            if diagnostics:
                clipped[t] = n_clipped / b
    config = {
        "n": plan.n,
        "d": data.d,
        "steps": T,
        "stat_size": s,
        "batch_size": b,
        "leftover": plan.leftover,
        "step_size": plan.step_size,
        "noise_multiplier": plan.noise_multiplier,
        "clip_multiplier": plan.clip_multiplier,
        "residual_bound": plan.residual_bound,
        "n_levels": plan.n_levels,
        "threshold": plan.threshold,
        "threshold_value": plan.threshold_value,
        "accounting": plan.accounting,
        "shuffle": data.shuffle,
        "data_kind": data.kind,
        "relation": plan.relation.value,
        "rho": plan.rho,
    }
    diag = {"fraction_clipped": clipped, "max_stat_residual": max_residual} if diagnostics else {}
    return Trajectory(
        algorithm=LABEL,
        iterates=iterates,
        estimate=tail_average(iterates),
        ledger=ledger,
        config=config,
        noise_backend=source.backend,
        seeded=source.seeded,
        releases={"residual_scale": gammas, "clip": clips, "stat_counts": counts},
        diagnostics=diag,
    )
