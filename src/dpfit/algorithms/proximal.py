"""Private proximal point method for kappa >= 2 (Menart et al. 2024, Algorithms 2 and 4).

Each outer step t approximately minimises the L1w-strongly convex subproblem
F_t(w) = F(w) + L1w ||w - w_{t-1}||^2 with projected noisy GD (Alg. 4): step 1/(L1w s),
projection on the ball of radius L0/(2 L1w) around w_{t-1} (it contains the subproblem's
minimiser), output the s-weighted average of w_1..w_{T_in}. The loss only needs to be
Lipschitz and weakly convex (possibly non-smooth); the schedule is public
(:func:`dpfit.theory.kl.proximal_schedule`).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._floats import quiet_floats
from .._validation import user_stacklevel
from ..exceptions import SideConditionWarning
from ..losses.base import Loss
from ..privacy import PrivacyLedger, Relation
from ..theory.kl import ProximalSchedule, proximal_schedule
from ._loss_queries import LossQueries, finish, prepare, refuse_clip_keyword
from .trajectory import Trajectory

__all__ = ["proximal_point"]


def _prox_step(q: LossQueries, center: np.ndarray, s: ProximalSchedule) -> np.ndarray:
    """Alg. 4 on F(w) + L1w ||w - center||^2: T_in - 1 noisy projected steps, weighted mean."""
    L1w, T_in = s.weak_convexity, s.inner_steps
    w, total = center.copy(), center.copy()
    for t in range(1, T_in):
        g = q.noisy_gradient(w, s.inner_noise, label="inner-gradient")
        w = w - (g + 2.0 * L1w * (w - center)) / (L1w * t)  # the prox term is public
        dist = float(np.linalg.norm(w - center))
        if dist > s.prox_radius:
            w = center + (w - center) * (s.prox_radius / dist)
        total += (t + 1) * w
    return total * (2.0 / (T_in * (T_in + 1)))


@refuse_clip_keyword
@quiet_floats()
def proximal_point(
    loss: Loss,
    X: ArrayLike,
    y: ArrayLike | None = None,
    *,
    rho: float,
    gamma: float,
    kappa: float,
    loss_bound: float,
    weak_convexity: float | None = None,
    theta0: ArrayLike | None = None,
    fail_prob: float = 0.05,
    inner_cap: int = 200,
    max_steps: int = 1_000_000,
    clipping: bool = True,
    relation: Relation | str = "replace-one",
    n_public: int | None = None,
    ledger: PrivacyLedger | None = None,
    rng: Any = None,
) -> Trajectory:
    """Minimise a (gamma, kappa)-KL loss with kappa >= 2 by the private proximal point method.

    Parameters
    ----------
    loss : Loss
        Per-example loss with a public ``lipschitz`` constant L0 (smoothness not needed).
    X, y : array-like
        Private data (``y`` omitted for losses without a response).
    rho : float
        zCDP cost of the whole run (exact).
    gamma, kappa : float
        Public KL parameters, kappa >= 2.
    loss_bound : float
        Public F0 >= F(theta0) - F*; clamped to (gamma L0)^kappa.
    weak_convexity : float, optional
        L1w > 0; defaults to ``loss.weak_convexity`` and, for a convex loss, to dpfit's choice
        F0^((2-kappa)/kappa) / (32 gamma^2).
    inner_cap : int, default=200
        Cap on the inner iterations T_in (Thm 9 asks for about n^2 rho / (T d), i.e. O(n^3)
        work in all; docs/menart2024.md). Privacy holds for any cap: the noise uses the T_in run.
    theta0, fail_prob, max_steps, clipping, relation, n_public, ledger, rng
        As in :func:`~dpfit.algorithms.kl_spider`.

    Returns
    -------
    Trajectory
        ``iterates``: the T outer points w_1..w_T; ``estimate``: w_T; ``config`` holds T,
        T_in (and the uncapped value), L1w and the deterministic radius T L0/(2 L1w). With
        T = 0 nothing is released and a :class:`~dpfit.exceptions.SideConditionWarning` is emitted.

    Notes
    -----
    Privacy (docs/menart2024.md, Privacy): every inner release is the mean of per-example gradients
    clipped at L0 (Delta = 2 L0/n; the prox term is data-independent), with noise for
    (rho/T)/(T_in - 1); T outer calls of T_in - 1 releases cost exactly rho. The paper's
    sigma^2 = 4 L0^2 T_in/(n^2 rho_in) spends less than half of it.
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
        prefix="proximal_point",
    )
    if weak_convexity is None:
        weak_convexity = run.queries.loss.weak_convexity
    sched = proximal_schedule(
        n=run.n,
        dim=run.p,
        rho=run.rho,
        gamma=gamma,
        kappa=kappa,
        lipschitz=run.queries.loss.lipschitz,
        loss_bound=loss_bound,
        weak_convexity=weak_convexity,
        fail_prob=fail_prob,
        relation=run.ledger.relation,
        inner_cap=inner_cap,
        max_steps=max_steps,
    )
    config = {
        "gamma": gamma,
        "kappa": kappa,
        "loss_bound": sched.loss_bound,
        "fail_prob": fail_prob,
        "T": sched.T,
        "inner_steps": sched.inner_steps,
        "inner_steps_uncapped": sched.inner_steps_uncapped,
        "inner_noise": sched.inner_noise,
        "weak_convexity": sched.weak_convexity,
        "radius": sched.radius,
        "is_nontrivial": sched.is_nontrivial,
    }
    if not sched.is_nontrivial:  # decided by public inputs only
        warnings.warn(
            "proximal_point: T = 0 (n sqrt(rho) <= gamma L0 sqrt(d) / F0^(1/kappa)): nothing is "
            "released and theta0 is returned",
            SideConditionWarning,
            stacklevel=user_stacklevel(),
        )
    w = run.theta0.copy()
    iterates = np.empty((sched.T, run.p))
    for t in range(sched.T):
        w = _prox_step(run.queries, w, sched)
        iterates[t] = w
    return finish(run, iterates, w, config=config)
