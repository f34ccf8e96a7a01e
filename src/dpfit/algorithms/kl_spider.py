"""KL-Spider: variance-reduced normalised noisy GD under the (gamma, kappa)-KL condition.

Menart et al. 2024, Algorithm 1, for kappa in [1, 2] and L0-Lipschitz, L1-smooth losses,
implemented as dpfit's "calibrated KL-Spider" (docs/menart2024.md, Privacy). Each phase k starts
from a noisy anchor gradient, then alternates a normalised step of length s_k with a noisy
gradient *difference* (SPIDER estimator), and stops early when the estimate's norm drops below
the phase threshold. The schedule is public (:func:`dpfit.theory.kl.spider_schedule`); the only
data-dependent control flow is the early stop, a function of released vectors.
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
from ..privacy import PrivacyLedger, Relation, privacy_filter
from ..theory.kl import spider_schedule
from ._loss_queries import finish, prepare, refuse_clip_keyword
from .trajectory import Trajectory

__all__ = ["kl_spider"]


@refuse_clip_keyword
@quiet_floats()
def kl_spider(
    loss: Loss,
    X: ArrayLike,
    y: ArrayLike | None = None,
    *,
    rho: float,
    gamma: float,
    kappa: float,
    loss_bound: float,
    theta0: ArrayLike | None = None,
    fail_prob: float = 0.05,
    preset: str = "practical",
    anchor_share: float = 0.5,
    max_steps: int = 1_000_000,
    clipping: bool = True,
    relation: Relation | str = "replace-one",
    n_public: int | None = None,
    ledger: PrivacyLedger | None = None,
    rng: Any = None,
) -> Trajectory:
    """Minimise a KL loss privately with calibrated KL-Spider (Alg. 1).

    Parameters
    ----------
    loss : Loss
        Per-example loss with public ``lipschitz`` (L0) and ``smoothness`` (L1).
    X : array-like of shape (n, d)
        Private features.
    y : array-like of shape (n,), optional
        Private responses (omit for losses without a response).
    rho : float
        zCDP budget of the whole run. The guarantee is the public schedule's worst case (no
        early stop), rho itself unless no phase queries a difference; early stops spend
        less, but only on some datasets, so that is no guarantee.
    gamma, kappa : float
        Public KL parameters, F - F* <= gamma^kappa ||grad F||^kappa, kappa in [1, 2]
        (PL with constant mu: kappa = 2, gamma = 1/sqrt(2 mu)). Never estimate them from
        the private data; an over-estimate of gamma keeps the guarantees at a worse rate.
    loss_bound : float
        Public F0 >= F(theta0) - F*; clamped to (gamma L0)^kappa.
    theta0 : array-like of shape (p,), optional
        Public start (zeros by default).
    fail_prob : float, default=0.05
        beta: affects the schedule's floor only, never privacy.
    preset : {"practical", "theory"}, default="practical"
        Schedule constants (:data:`dpfit.theory.kl.PRESETS`).
    anchor_share : float, default=0.5
        Share of rho spent on anchors when differences can occur (kappa < 2).
    max_steps : int, default=1_000_000
        Refuse longer schedules with a ``ValueError``.
    clipping : bool, default=True
        Per-example gradients are clipped at L0 (anchors) and per-example gradient
        differences at L1 s_k **whatever this says**, so privacy holds even when L0 or L1 is
        wrong for some record: the declared bounds are enforced, not trusted (where they
        hold, clipping changes nothing). ``False`` states that the constants hold for every
        record and only drops the (non-private) clipped-fraction diagnostic. (Formerly
        ``clip``: ``clip=`` now raises a ``TypeError``, since ``clip`` is a norm elsewhere.)
    relation : {"replace-one", "add-remove"}, default="replace-one"
    n_public : int, optional
        Public record count (required under add/remove).
    ledger : PrivacyLedger, optional
        Defaults to a new ledger with a Budget of ``rho``.
    rng : None, int, Generator or NoiseSource, optional

    Returns
    -------
    Trajectory
        ``iterates``: every normalised step's point (possibly none); ``estimate``: the last
        iterate; ``releases["phase_steps"]``: steps taken per phase; ``config`` holds the
        schedule summary (K, floor, radius, ``is_nontrivial``). The ledger holds one
        :class:`~dpfit.privacy.FilterEntry`: ``Trajectory.rho`` is the worst-case bound (the
        guarantee), ``Trajectory.rho_spent`` the realised spend (data-dependent, a function
        of ``phase_steps``; not a guarantee). When the schedule is trivial
        (floor >= F0, or n sqrt(rho) too small) nothing is released, ``theta0`` is returned
        and a :class:`~dpfit.exceptions.SideConditionWarning` is emitted.

    Raises
    ------
    TypeError, ValueError
        Invalid inputs, a loss without smoothness, a wrong-shape gradient or a schedule
        longer than ``max_steps``; before any charge.
    BudgetExceededError
        The ledger's budget cannot afford ``rho``; nothing charged or drawn.

    Notes
    -----
    Privacy (docs/menart2024.md, Privacy; recomputed under replace-one with Delta^2/(2
    sigma^2)): an anchor is a mean of gradients clipped at L0, Delta = 2 L0/n, with noise for
    rho_A/K; a difference at the public points w, w - s_k g/||g|| is a mean of per-example
    differences bounded by L1 s_k, Delta = 2 L1 s_k/n, with noise for rho_D/(K' (T_k - 1)), K'
    the number of phases with T_k > 1. The worst case spends rho_A + rho_D = rho exactly; the
    paper's Lemma 8 sigmas would spend about 2.1-2.25 rho. Departures from the paper
    (docs/menart2024.md): at most T_k steps and T_k - 1 differences per phase, and the next
    phase starts from the last iterate.
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
        prefix="kl_spider",
    )
    if run.queries.loss.smoothness is None:
        raise ValueError("kl_spider needs a smooth loss (loss.smoothness is None)")
    L1 = run.queries.loss.smoothness
    sched = spider_schedule(
        n=run.n,
        dim=run.p,
        rho=run.rho,
        gamma=gamma,
        kappa=kappa,
        lipschitz=run.queries.loss.lipschitz,
        smoothness=L1,
        loss_bound=loss_bound,
        fail_prob=fail_prob,
        preset=preset,
        relation=run.ledger.relation,
        anchor_share=anchor_share,
        max_steps=max_steps,
    )
    config = {
        "preset": preset,
        "gamma": gamma,
        "kappa": kappa,
        "loss_bound": sched.loss_bound,
        "fail_prob": fail_prob,
        "K": sched.K,
        "floor": sched.floor,
        "radius": sched.radius,
        "max_schedule_steps": sched.max_steps,
        "anchor_noise": sched.anchor_noise,
        "is_nontrivial": sched.is_nontrivial,
    }
    q, w = run.queries, run.theta0.copy()
    iterates: list[np.ndarray] = []
    phase_steps = np.zeros(len(sched.steps), dtype=np.int64)
    if not sched.is_nontrivial:  # decided by public inputs only, so the warning is no release
        warnings.warn(
            f"kl_spider: the schedule is trivial (target floor {sched.floor:.3g} >= F0 = "
            f"{sched.loss_bound:.3g}; n sqrt(rho) is too small for gamma, L0 and d): nothing is "
            "released and theta0 is returned; use more data, a larger rho, or adaptive-gd",
            SideConditionWarning,
            stacklevel=user_stacklevel(),
        )
        return finish(run, iterates, w, config=config, releases={"phase_steps": phase_steps})
    # Early stops make the releases data-dependent: the guarantee is the worst case of the
    # public schedule (no phase stops early), enforced and stated by a privacy filter.
    bound = sched.rho_anchor + sched.rho_difference
    phases = zip(sched.steps, sched.step_lengths, sched.thresholds, strict=True)
    q.gradient(w)  # not released: a malformed loss fails here, before the filter reserves
    with privacy_filter(run.ledger, label="kl_spider", rho=bound) as filt:
        q.ledger = filt.ledger  # every release below is charged inside the filter
        for k, (T_k, s_k, thr) in enumerate(phases):
            g = q.noisy_gradient(w, sched.anchor_noise, label="anchor")
            t = 0
            while t < T_k:
                norm = float(np.linalg.norm(g))
                if not norm >= thr:
                    break
                w_new = w - s_k * (g / norm)
                t += 1
                if t < T_k:
                    g = g + q.noisy_difference(
                        w_new, w, bound=L1 * s_k, noise_std=sched.difference_noise[k]
                    )
                w = w_new
                iterates.append(w)
            phase_steps[k] = t
    return finish(run, iterates, w, config=config, releases={"phase_steps": phase_steps})
