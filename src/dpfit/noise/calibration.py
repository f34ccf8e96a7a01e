"""Noise calibration for a correlated-noise release, and the prefix-error choice of nu.

The whole run is ONE Gaussian mechanism ``C G + Z`` (Choquette-Choo et al. 2024, Thm. 1.1) with
L2 sensitivity

    Delta = Delta_sum x sens(C),   Delta_sum = s x clip + float-rounding allowance,

where s = 2 (replace-one) or 1 (add/remove), the allowance is that of a float64 sum of
``batch_size`` clipped vectors (:func:`dpfit.privacy.sum_sensitivity` with ``n``; Casacuberta
et al. 2022), and sens(C) is the mechanism's participation-aware sensitivity
(:meth:`~dpfit.noise.base.CorrelatedMechanism.sensitivity`): a record moves the computed sum
of each step it joins by at most Delta_sum and leaves the other steps' sums bit for bit equal.
With noise std sigma the release is rho = Delta^2 / (2 sigma^2)-zCDP (Thm. 1.1) and exactly
mu = Delta / sigma Gaussian-DP, so a target (epsilon, delta) is met tightly by
mu = :func:`dpfit.privacy.gaussian_mu` (at epsilon = 8, delta = 1e-5, mu = 1.66603, whereas
the zCDP route would certify only 8.60; ``docs/choquettechoo2024.md``).

:func:`select_nu` picks nu minimising J(nu) = sens_{k,b}(C_nu)^2 x ||A B_nu||_F^2 (eq. 3 paired
with the sensitivity, as in Appendix G.2), a data-free choice.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._validation import (
    check_delta,
    check_epsilon,
    check_int,
    check_positive,
    check_real,
    check_rho,
)
from ..mechanisms import noise_std_for_rho, rho_for_noise_std, rho_within
from ..privacy import Relation, gaussian_mu, sum_sensitivity
from .base import CorrelatedMechanism, check_mechanism
from .toeplitz import nu_dpftrl

__all__ = ["Calibration", "NuSelection", "calibrate", "release_sensitivity", "select_nu"]


def release_sensitivity(
    mechanism: CorrelatedMechanism,
    *,
    clip: float,
    batch_size: int,
    relation: Relation | str = "replace-one",
    participations: int = 1,
    separation: int | None = None,
    order: str = "fixed-epoch",
    sum_excess: float | None = None,
) -> float:
    """L2 sensitivity of the whole release C G: sum_sensitivity(clip, n=batch_size) x sens(C).

    ``batch_size`` is the (largest) public number of clipped vectors summed per step; it
    sets the float64 rounding allowance of each step's sum. A summation routine with another
    rounding behaviour declares its own bound instead: ``sum_excess``, how much further than
    in exact arithmetic one record can move the computed sum (e.g.
    the chunked float32 sums of :mod:`dpfit.torch`); then the per-step sensitivity is
    relation factor x clip + sum_excess.
    """
    mechanism = check_mechanism(mechanism)
    clip = check_positive(clip, "clip")
    if sum_excess is None:
        per_step = sum_sensitivity(clip, relation, n=batch_size)
    else:
        check_int(batch_size, "batch_size", low=1)
        excess = check_real(sum_excess, "sum_excess", low=0.0, low_open=False)
        per_step = sum_sensitivity(clip, relation) + excess
    return per_step * mechanism.sensitivity(participations, separation, order)


@dataclass(frozen=True, slots=True, kw_only=True)
class Calibration:
    """The noise of one correlated-noise release and its privacy, all public.

    Attributes
    ----------
    sensitivity : float
        L2 sensitivity Delta of the whole release.
    noise_std : float
        Standard deviation sigma of each i.i.d. noise entry.
    rho : float
        zCDP cost Delta^2 / (2 sigma^2).
    mu : float
        Gaussian-DP parameter Delta / sigma (exact for this single Gaussian release).
    target : str
        ``"rho"`` or ``"epsilon"``: what the calibration was asked to meet.
    epsilon, delta : float or None
        The (epsilon, delta) target when ``target == "epsilon"``.
    """

    sensitivity: float
    noise_std: float
    rho: float
    mu: float
    target: str
    epsilon: float | None = None
    delta: float | None = None


def calibrate(
    mechanism: CorrelatedMechanism,
    *,
    clip: float,
    batch_size: int,
    sum_excess: float | None = None,
    rho: float | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    participations: int = 1,
    separation: int | None = None,
    order: str = "fixed-epoch",
    relation: Relation | str = "replace-one",
) -> Calibration:
    """Noise std making the whole run rho-zCDP, or exactly (epsilon, delta)-DP.

    Give either ``rho`` or both ``epsilon`` and ``delta``; ``batch_size`` and the other
    keywords are those of :func:`release_sensitivity`.

    Examples
    --------
    >>> from dpfit.noise import dpsgd
    >>> cal = calibrate(dpsgd(10), clip=1.0, batch_size=1, epsilon=8.0, delta=1e-5,
    ...                 relation="add-remove")
    >>> round(cal.mu, 5), round(cal.noise_std, 5)
    (1.66603, 0.60023)
    """
    if (rho is None) == (epsilon is None):
        raise TypeError("give either rho or (epsilon, delta)")
    sens = release_sensitivity(
        mechanism,
        clip=clip,
        batch_size=batch_size,
        sum_excess=sum_excess,
        relation=relation,
        participations=participations,
        separation=separation,
        order=order,
    )
    if rho is not None:
        rho = check_rho(rho)
        # sigma and the ledger's charge each round once: rho_within keeps the charge <= rho.
        sigma = noise_std_for_rho(sens, rho_within(sens, rho))
        return Calibration(
            sensitivity=sens, noise_std=sigma, rho=rho, mu=math.sqrt(2 * rho), target="rho"
        )
    epsilon = check_epsilon(epsilon)
    if delta is None:
        raise TypeError("delta is required with epsilon")
    delta = check_delta(delta)
    mu = gaussian_mu(epsilon, delta)
    sigma = sens / mu
    return Calibration(
        sensitivity=sens,
        noise_std=sigma,
        rho=rho_for_noise_std(sens, sigma),  # what the ledger charges: mu^2 / 2, rounded
        mu=mu,
        target="epsilon",
        epsilon=epsilon,
        delta=delta,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class NuSelection:
    """Result of :func:`select_nu`: the minimiser and the objective on the grid."""

    nu: float
    grid: np.ndarray
    objective: np.ndarray
    sensitivity_squared: np.ndarray


#: Default grid: {0} and 41 log-spaced values in [1e-4, 1] (docs/choquettechoo2024.md).
DEFAULT_NU_GRID = np.concatenate(([0.0], np.logspace(-4, 0, 41)))


def select_nu(
    steps: int,
    *,
    participations: int = 1,
    separation: int | None = None,
    order: str = "fixed-epoch",
    grid: np.ndarray | None = None,
) -> NuSelection:
    """nu minimising sens_{k,b}(C_nu)^2 x ||A B_nu||_F^2 over ``grid`` (eq. 3; Appendix G.2).

    Data-free: uses only T, k and b. With the default grid, CIFAR-10 geometry
    (T = 2000, k = 20, b = 100) gives 10^-2.4 and StackOverflow (2052, 6, 342) 10^-2.8.

    Examples
    --------
    >>> round(select_nu(600, participations=20, separation=30).nu, 4)
    0.0126
    """
    grid = DEFAULT_NU_GRID if grid is None else np.asarray(grid, dtype=np.float64)
    if grid.ndim != 1 or grid.size == 0:
        raise ValueError("grid must be a non-empty 1-D array of nu values in [0, 1]")
    sens2 = np.empty(grid.size)
    objective = np.empty(grid.size)
    for i, nu in enumerate(grid):
        mech = nu_dpftrl(float(nu), steps=steps)
        sens2[i] = mech.sensitivity_squared(participations, separation, order)
        objective[i] = sens2[i] * mech.prefix_error()
    best = int(np.argmin(objective))
    return NuSelection(
        nu=float(grid[best]), grid=grid, objective=objective, sensitivity_squared=sens2
    )
