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

import math
import warnings
from typing import Any

import numpy as np

from .._floats import quiet_floats
from .._validation import check_int, check_option, check_positive, check_real, check_rho
from ..exceptions import SideConditionWarning
from ..mechanisms import (
    DoublingSearch,
    gaussian,
    literal_threshold,
    make_noise_source,
    margin_threshold,
)
from ..privacy import Relation, mean_sensitivity, parse_relation
from ..privacy.ledger import prepare_ledger
from ..theory.ambssgd import ambssgd_schedule
from ._kernels import Rows, least_squares_sum, level_counts
from .onepass import one_pass_data, tail_average
from .trajectory import Trajectory

__all__ = ["ACCOUNTING_MODES", "THRESHOLDS", "dp_ambssgd", "replace_one_only"]

#: ``"paper"``: rho = 1/alpha^2 (Thm. 3.6); ``"parallel"``: rho = 1/(2 alpha^2) (D13).
ACCOUNTING_MODES = ("paper", "parallel")
#: DP-STAT thresholds: ``"margin"`` s - Gamma' (D3, default) or ``"literal"`` s.
THRESHOLDS = ("margin", "literal")
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
    n: int | None = None,
    shuffle: bool | None = None,
    relation: Relation | str = "replace-one",
    ledger: Any = None,
    rng: Any = None,
    diagnostics: bool = False,
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
    n : int, optional
        The public number of records; required for a stream.
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
    rho = check_rho(rho)
    relation = replace_one_only(relation, "dp_ambssgd")
    accounting = check_option(accounting, "accounting", ACCOUNTING_MODES)
    threshold = check_option(threshold, "threshold", THRESHOLDS)
    if not isinstance(diagnostics, bool):
        raise TypeError(f"diagnostics must be a bool, got {type(diagnostics).__name__}")
    B = check_positive(residual_bound, "residual_bound")
    r_x = check_positive(feature_scale, "feature_scale")
    h_norm = check_positive(hessian_norm, "hessian_norm")
    a = check_positive(tail_exponent, "tail_exponent")
    beta = check_real(stat_failure, "stat_failure", low=0.0, high=1.0)
    n_levels = check_int(n_levels, "n_levels", low=1, high=1074)
    data = one_pass_data(X, y, n=n, shuffle=shuffle)
    sched = ambssgd_schedule(
        data.n,
        feature_scale=r_x,
        hessian_norm=h_norm,
        condition_number=condition_number,
        steps=steps,
        steps_factor=steps_factor,
        stat_fraction=stat_fraction,
        step_size=step_size,
    )
    T, s, b, eta = sched.steps, sched.stat_size, sched.batch_size, sched.step_size
    alpha = 1.0 / math.sqrt(rho if accounting == "paper" else 2.0 * rho)
    multiplier = (
        r_x * math.log(data.n) ** a
        if clip_multiplier is None
        else check_positive(clip_multiplier, "clip_multiplier")
    )
    n_queries = n_levels + 1
    theta = (
        margin_threshold(
            s, n_queries=n_queries, noise_multiplier=alpha, searches=T, failure_prob=beta
        )
        if threshold == "margin"
        else literal_threshold(s)
    )
    search = DoublingSearch(ceiling=B, noise_multiplier=alpha, threshold=theta, n_levels=n_levels)
    _check_public_settings(search, multiplier, s, b, alpha, r_x, h_norm, threshold)
    source = make_noise_source(rng)
    ledger = prepare_ledger(ledger, relation, rho, name="dp_ambssgd")

    d = data.d
    w = np.zeros(d)
    iterates = np.empty((T, d))
    gammas, clips = np.empty(T), np.empty(T)
    counts = np.empty((T, n_queries))
    clipped, max_residual = np.full(T, np.nan), np.full(T, np.nan)
    with ledger.parallel("dp_ambssgd", rho_per_block=rho) as blocks:
        parts = data.segments([s, b] * T, source.generator, lazy=True)
        for t in range(T):
            Xs, ys = next(parts)  # on Dask: unevaluated selections, reduced on the workers
            Xb, yb = next(parts)
            stat_ledger = blocks.block()
            found = search.release(
                level_counts(Xs, ys, w, search),  # counts of |<x, w> - y| per level
                ledger=stat_ledger,
                rng=source,
                label="dp_ambssgd/dp_stat",
            )
            if diagnostics:  # NON-PRIVATE: the true largest DP-STAT residual at w_t
                Xd, yd = (v.gather() if isinstance(v, Rows) else v for v in (Xs, ys))
                max_residual[t] = float(np.abs(Xd @ w - yd).max())
            zeta = multiplier * found.value
            total, n_clipped = least_squares_sum(Xb, yb, w, zeta)
            mean = total / b
            sens = mean_sensitivity(zeta, b, relation)
            noisy = gaussian(
                mean,
                sensitivity=sens,
                noise_std=alpha * sens,
                ledger=blocks.block() if accounting == "parallel" else stat_ledger,
                rng=source,
                label="dp_ambssgd/gradient",
            )
            w = w - eta * noisy
            iterates[t], gammas[t], clips[t], counts[t] = w, found.value, zeta, found.noisy_counts
            if diagnostics:
                clipped[t] = n_clipped / b
    config = {
        "n": data.n,
        "d": d,
        "steps": T,
        "stat_size": s,
        "batch_size": b,
        "leftover": sched.leftover,
        "step_size": eta,
        "noise_multiplier": alpha,
        "clip_multiplier": multiplier,
        "residual_bound": B,
        "n_levels": n_levels,
        "threshold": threshold,
        "threshold_value": theta,
        "accounting": accounting,
        "shuffle": data.shuffle,
        "data_kind": data.kind,
        "relation": relation.value,
        "rho": rho,
    }
    diag = {"fraction_clipped": clipped, "max_stat_residual": max_residual} if diagnostics else {}
    return Trajectory(
        algorithm="dp_ambssgd",
        iterates=iterates,
        estimate=tail_average(iterates),
        ledger=ledger,
        config=config,
        noise_backend=source.backend,
        seeded=source.seeded,
        releases={"residual_scale": gammas, "clip": clips, "stat_counts": counts},
        diagnostics=diag,
    )


def _check_public_settings(
    search: DoublingSearch,
    multiplier: float,
    s: int,
    b: int,
    alpha: float,
    r_x: float,
    h_norm: float,
    threshold: str,
) -> None:
    """Reject settings whose noise is not finite on the whole clip grid; warn on the side
    conditions of docs/varshney2022.md."""
    tiny = np.finfo(np.float64).tiny  # below it, rounding would change the charged rho
    for zeta in (multiplier * search.floor, multiplier * search.ceiling):
        sens = 2.0 * zeta / b
        if not (tiny <= min(sens, alpha * sens) and math.isfinite(alpha * sens)):
            raise ValueError(
                "clip_multiplier * residual_bound * 2**-n_levels gives a clip whose noise is "
                "not finite and > 0; change residual_bound, n_levels or clip_multiplier"
            )
    if search.n_levels > _MANY_LEVELS:
        warnings.warn(
            f"n_levels={search.n_levels}: each of the n_levels + 1 counts gets noise std "
            f"sqrt(n_levels + 1) * alpha, so DP-STAT needs many more records; 24-48 levels "
            "are enough for any practical residual range (docs/varshney2022.md, D4)",
            SideConditionWarning,
            stacklevel=3,
        )
    margin = s - search.threshold if threshold == "margin" else None
    if margin is not None and s < 4.0 * margin:
        warnings.warn(
            f"DP-STAT's stat set (s={s}) is below four noise margins (4 Gamma' = "
            f"{4.0 * margin:.4g}): the private clip is unreliable. Use more records per block "
            "(fewer steps), a larger rho or accounting='parallel'",
            SideConditionWarning,
            stacklevel=3,
        )
    if b < 10.0 * r_x * r_x / h_norm:
        warnings.warn(
            f"batch size b={b} is below 10 R_x^2/||H|| = {10.0 * r_x * r_x / h_norm:.4g}: the "
            "step size is small and T steps may not remove the bias",
            SideConditionWarning,
            stacklevel=3,
        )
