"""Plain full-batch noisy gradient descent on a per-example loss (fixed schedule).

The standard baseline of Menart et al. 2024 (docs/menart2024.md, Methods): T steps of size eta
on the mean gradient (per-example gradients clipped at L0) plus Gaussian noise calibrated so
that the T releases cost rho in total. The usual PL choice is eta = 1/L1 and T = ceil((L1/mu) ln
n) (:func:`dpfit.theory.kl_rates.noisy_gd_steps`); mu is then an oracle constant unless known.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._floats import quiet_floats
from .._validation import check_int, check_positive
from ..losses.base import Loss
from ..mechanisms import noise_std_for_rho, rho_within
from ..privacy import PrivacyLedger, Relation
from ._loss_queries import finish, prepare, refuse_clip_keyword
from .trajectory import Trajectory

__all__ = ["noisy_gd"]


@refuse_clip_keyword
@quiet_floats()
def noisy_gd(
    loss: Loss,
    X: ArrayLike,
    y: ArrayLike | None = None,
    *,
    rho: float,
    steps: int,
    step_size: float | None = None,
    theta0: ArrayLike | None = None,
    clipping: bool = True,
    relation: Relation | str = "replace-one",
    n_public: int | None = None,
    ledger: PrivacyLedger | None = None,
    rng: Any = None,
    groups: ArrayLike | None = None,
    max_rows_per_unit: int | None = None,
) -> Trajectory:
    """Run ``steps`` noisy full-batch gradient steps and release every iterate.

    Parameters
    ----------
    loss : Loss
        Per-example loss with a public ``lipschitz`` constant L0.
    X, y : array-like
        Private data (``y`` omitted for losses without a response).
    rho : float
        zCDP cost of the whole run (exact).
    steps : int
        Number of noisy steps T >= 1 (public).
    step_size : float, optional
        eta; defaults to 1/L1 (requires ``loss.smoothness``), 1/(K L1) with a privacy unit.
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
        ``iterates`` (T x p); ``estimate`` is the last iterate.

    Notes
    -----
    Privacy: each release is the mean of per-example gradients clipped at L0, sensitivity
    Delta = 2 L0/n (replace-one), with noise_std = Delta sqrt(T/(2 rho)); T releases cost
    rho (zCDP composition), at most rho in the ledger's exact sum (the share is
    :func:`~dpfit.mechanisms.rho_within`'s, a few ulps below rho / T where that rounds up).
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
        prefix="noisy_gd",
        groups=groups,
        max_rows_per_unit=max_rows_per_unit,
    )
    steps = check_int(steps, "steps", low=1)
    if step_size is None:
        if run.queries.loss.smoothness is None:
            raise ValueError("step_size is required for a loss without smoothness")
        # a unit's summed loss is at most rows_per_unit times as smooth as one row's
        step_size = 1.0 / (run.queries.rows_per_unit * run.queries.loss.smoothness)
    eta = check_positive(step_size, "step_size")
    sensitivity = run.queries.sensitivity(run.queries.loss.lipschitz)
    # rho_within: the ledger adds the steps charges exactly, and run.rho / steps can round up
    noise_std = noise_std_for_rho(sensitivity, rho_within(sensitivity, run.rho, count=steps))
    w = run.theta0.copy()
    iterates = np.empty((steps, run.p))
    for t in range(steps):
        w = w - eta * run.queries.noisy_gradient(w, noise_std)
        iterates[t] = w
    config = {"steps": steps, "step_size": eta, "noise_std": noise_std}
    return finish(run, iterates, w, config=config)
