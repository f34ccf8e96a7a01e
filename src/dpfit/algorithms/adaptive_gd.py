"""Adaptive noisy GD with a privacy filter (Menart et al. 2024, Algorithm 3).

No KL parameters are needed. Each regular step releases a noisy gradient norm N_t, then the
gradient with noise proportional to it, sigma_t = max(N_t / sqrt(d ell), sigma_floor): large
gradients are released cheaply. Per-step costs depend on earlier releases, so the run is
budgeted by a fully adaptive zCDP filter that checks *before* every release that the total
can never exceed rho: a reserve (rho/2 by default) pays for the final floor step.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._floats import quiet_floats
from .._validation import check_int, check_option
from ..losses.base import Loss
from ..mechanisms import rho_for_noise_std
from ..privacy import PrivacyLedger, Relation, privacy_filter
from ..theory.kl_adaptive import adaptive_gd_params
from ._loss_queries import finish, prepare, refuse_clip_keyword
from .trajectory import Trajectory

__all__ = ["adaptive_gd"]

_SELECT = ("last", "min-norm")


@refuse_clip_keyword
@quiet_floats()
def adaptive_gd(
    loss: Loss,
    X: ArrayLike,
    y: ArrayLike | None = None,
    *,
    rho: float,
    fail_prob: float = 0.05,
    reserve_share: float = 0.5,
    norm_cost: float | None = None,
    step_size: float | None = None,
    max_steps: int = 100_000,
    select: str = "last",
    theta0: ArrayLike | None = None,
    clipping: bool = True,
    relation: Relation | str = "replace-one",
    n_public: int | None = None,
    ledger: PrivacyLedger | None = None,
    rng: Any = None,
    groups: ArrayLike | None = None,
    max_rows_per_unit: int | None = None,
) -> Trajectory:
    """Minimise privately with filtered adaptive noisy GD (Alg. 3); the step count is random.

    Parameters
    ----------
    loss : Loss
        Per-example loss with public ``lipschitz`` (L0) and ``smoothness`` (L1).
    X, y : array-like
        Private data (``y`` omitted for losses without a response).
    rho : float
        zCDP budget; the filter guarantees the total spent is <= rho on every path.
    fail_prob : float, default=0.05
        beta in ell = max(ln(n sqrt(rho)/beta), 1) (utility only).
    reserve_share : float, default=0.5
        Share of rho reserved for the final floor step (sigma_floor = Delta/sqrt(2 reserve)).
    norm_cost : float, optional
        zCDP cost of each norm release; default 2 sqrt(rho)/n (the paper's sigma_N).
    step_size : float, optional
        eta; default 1/(2 L1), 1/(2 K L1) with a privacy unit.
    max_steps : int, default=100_000
        Public cap on the number of steps (stopping early only spends less).
    select : {"last", "min-norm"}, default="last"
        Output: the last iterate (Thm 4), or the iterate whose *released* noisy gradient
        norm N_t is smallest (a stationary point without KL, in the spirit of Thm 5; pure
        post-processing, so it costs no extra privacy).
    theta0, clipping, relation, n_public, ledger, rng
        As in :func:`~dpfit.algorithms.kl_spider`.
    groups, max_rows_per_unit : array-like of shape (n,), int, optional
        A privacy unit (in memory): one label per row (a named Series names the unit) and
        the public cap K on a unit's rows (more are sampled away at random). Every release
        then protects all rows of one unit: n counts units, each query sums at most K
        clipped rows per unit (sensitivity K times the row one) and the default step size
        is divided by K (:mod:`dpfit.algorithms._loss_units`).

    Returns
    -------
    Trajectory
        ``iterates``: w_1..w_T; ``releases["gradient_norms"]`` N_0..N_{T-1} (measured at
        theta0, w_1, ..., w_{T-1}) and ``releases["noise_std"]`` sigma_t. The ledger holds
        one :class:`~dpfit.privacy.FilterEntry`: ``rho`` (the guarantee) is the filter's
        bound ``rho``; ``rho_spent`` is the realised, data-dependent spend (not a guarantee).

    Notes
    -----
    Privacy (docs/menart2024.md, Privacy; exact under replace-one): both queries use one exact
    clipped mean gradient G_t (sensitivity Delta = 2 L0/n; the norm by the reverse triangle
    inequality) with independent noise. Before each norm release the filter requires spent + c_N
    <= rho - c_res; a gradient release costs c_g = Delta^2/(2 sigma_t^2) <= c_res, and the step
    is final when sigma_t is the floor or when spent + c_g > rho - c_res. Each cost is fixed
    before its release, so this is a valid zCDP filter (Feldman-Zrnic / Whitehouse et al.) with
    total <= rho on every path: the run is rho-zCDP (and sqrt(2 rho)-GDP, Smith & Thakurta
    2022), which is what the ledger states. The realised total (``Trajectory.rho_spent``) is a
    function of the released N_t and sigma_t, so reporting it costs nothing, but it is no
    guarantee (docs/menart2024.md). The paper's charges are half the replace-one cost and its
    loop can spend 1.5 rho (docs/menart2024.md); "min-norm" replaces the exponential-mechanism
    selection of Thm 5, which would need extra budget.
    """
    run = prepare(
        loss,
        X,
        y,
        rho=rho,
        theta0=theta0,
        clipping=clipping,
        relation=relation,
        n_public=n_public,
        ledger=ledger,
        rng=rng,
        prefix="adaptive_gd",
        groups=groups,
        max_rows_per_unit=max_rows_per_unit,
    )
    L0, L1 = run.queries.loss.lipschitz, run.queries.loss.smoothness
    if L1 is None:
        raise ValueError("adaptive_gd needs a smooth loss (loss.smoothness is None)")
    params = adaptive_gd_params(
        n=run.n,
        dim=run.p,
        rho=run.rho,
        lipschitz=L0,
        smoothness=L1,
        fail_prob=fail_prob,
        relation=run.ledger.relation,
        reserve_share=reserve_share,
        norm_cost=norm_cost,
        step_size=step_size,
        rows_per_unit=run.queries.rows_per_unit,
    )
    max_steps = check_int(max_steps, "max_steps", low=1)
    select = check_option(select, "select", _SELECT)
    delta = params.sensitivity
    c_norm = rho_for_noise_std(delta, params.norm_noise)
    c_res = rho_for_noise_std(delta, params.floor_noise)
    scale = math.sqrt(run.p * params.ell)
    # Exact rational bookkeeping: the filter's test "total <= rho" has no rounding slack.
    limit, spent = Fraction(run.rho) - Fraction(c_res), Fraction(0)
    q, w = run.queries, run.theta0.copy()
    points, iterates, norms, sigmas = [], [], [], []
    q.gradient(w)  # not released: a malformed loss fails here, before the filter reserves
    with privacy_filter(run.ledger, label="adaptive_gd", rho=run.rho) as filt:
        q.ledger = filt.ledger  # every release below is charged inside the filter
        while len(iterates) < max_steps and spent + Fraction(c_norm) <= limit:
            G = q.gradient(w)
            N_t = float(
                q.release(np.linalg.norm(G), bound=L0, noise_std=params.norm_noise, label="norm")
            )
            spent += Fraction(c_norm)
            sigma = max(N_t / scale, params.floor_noise)  # N_t <= 0 gives the floor
            c_grad = rho_for_noise_std(delta, sigma)
            final = sigma == params.floor_noise or spent + Fraction(c_grad) > limit
            noisy = q.release(G, bound=L0, noise_std=sigma, label="gradient")
            spent += Fraction(c_grad)
            points.append(w)
            norms.append(N_t)
            sigmas.append(sigma)
            w = w - params.step_size * noisy
            iterates.append(w)
            if final:
                break
    if select == "min-norm" and norms:
        estimate = points[int(np.argmin(norms))]
    else:
        estimate = w
    config = {
        "select": select,
        "step_size": params.step_size,
        "ell": params.ell,
        "norm_noise": params.norm_noise,
        "floor_noise": params.floor_noise,
        "reserve": c_res,
        "max_steps": max_steps,
    }
    releases = {"gradient_norms": np.asarray(norms), "noise_std": np.asarray(sigmas)}
    return finish(run, iterates, estimate, config=config, releases=releases)
