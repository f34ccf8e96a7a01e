"""Step sizes, contraction, error bound and hyperparameters of DP-2S-GD (Liang et al. 2025).

Every function takes **public** quantities only: n, p, q, the budgets, tau, and user-stated
bounds on two spectra,

* ``zz_bounds`` = (lo, hi) bounding the eigenvalues of Z^T Z / n (the paper's
  ((1 - delta)^2, (1 + delta)^2), eq. 10), and
* ``h_bounds`` = (gund, gbar) bounding those of H = Theta^T Z^T Z Theta / n.

Both come from the user's prior knowledge (e.g. standardised instruments, a known first-stage
strength), or, in simulation only, from the truth or a non-private plug-in (docs/liang2025.md,
Departures and choices);
:func:`concentration_terms` gives the paper's eq. 10 values from assumed constants.

All constants hidden by the paper's "<~" (C0, c0, c1, c2, sigma_z, sigma2) are arguments with
default 1, so every bound here is **heuristic, up to constants**, and meant for choosing T,
not for certifying an error. Notation as in :mod:`dpfit.algorithms.two_stage`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import check_int, check_option, check_positive, check_real

__all__ = [
    "STEP_SIZE_PRESETS",
    "Spectra",
    "bound_based_clips",
    "concentration_terms",
    "contraction_rates",
    "error_bound",
    "heuristic_clip",
    "iteration_regimes",
    "step_sizes",
]

#: ``"max"``: eq. 3 upper bounds; ``"optimal"``: eq. 8; ``"paper"``: half of eq. 3, the
#: steps of every experiment in the paper (Section 4).
STEP_SIZE_PRESETS = ("paper", "optimal", "max")


def _check_pair(value: Any, name: str) -> tuple[float, float]:
    try:
        lo, hi = value
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a (low, high) pair") from exc
    lo, hi = check_positive(lo, f"{name}[0]"), check_positive(hi, f"{name}[1]")
    if not lo <= hi:
        raise ValueError(f"{name} must have low <= high, got ({lo}, {hi})")
    return lo, hi


@dataclass(frozen=True, slots=True, kw_only=True)
class Spectra:
    """Bounds on the spectra the step sizes depend on (eq. 10).

    ``zz`` = ((1 - delta)^2, (1 + delta)^2) bounds eig(Z^T Z / n); ``h`` = (gund, gbar)
    bounds eig(H_hat).
    """

    zz: tuple[float, float]
    h: tuple[float, float]

    def __post_init__(self) -> None:
        object.__setattr__(self, "zz", _check_pair(self.zz, "zz_bounds"))
        object.__setattr__(self, "h", _check_pair(self.h, "h_bounds"))


def concentration_terms(
    n: int,
    p: int,
    q: int,
    *,
    theta_norm: float,
    theta_min_singular: float,
    tau: float = 5.0,
    C0: float = 1.0,
    c0: float = 1.0,
    sigma_z: float = 1.0,
    sigma2: float = 1.0,
) -> Spectra:
    """The paper's eq. 10 spectra from assumed constants and bounds on ||Theta||, sigma_min(Theta).

    delta = C0 sigma_z^2 (sqrt q + sqrt tau) / sqrt n,
    psi = c0 sigma_z sigma2 sqrt(pq) (tau + log 2pq) / (sqrt n (1 - delta)^2),
    gund = (1 - delta)^2 (sigma_min(Theta) - psi)^2, gbar = (1 + delta)^2 (||Theta|| + psi)^2.

    Raises
    ------
    ValueError
        delta >= 1 or sigma_min(Theta) <= psi: eq. 3 is then vacuous (n too small or the
        instruments too weak for the theory; docs/liang2025.md, Departures and choices).
    """
    n, p, q = check_int(n, "n"), check_int(p, "p"), check_int(q, "q")
    tau = check_positive(tau, "tau")
    norm = check_positive(theta_norm, "theta_norm")
    smin = check_positive(theta_min_singular, "theta_min_singular")
    if smin > norm:
        raise ValueError("theta_min_singular must be <= theta_norm")
    C0, c0 = check_positive(C0, "C0"), check_positive(c0, "c0")
    sigma_z, sigma2 = check_positive(sigma_z, "sigma_z"), check_positive(sigma2, "sigma2")
    delta = C0 * sigma_z**2 * (math.sqrt(q) + math.sqrt(tau)) / math.sqrt(n)
    if delta >= 1.0:
        raise ValueError(f"delta = {delta:.3g} >= 1: n is too small for eq. 10")
    psi = c0 * sigma_z * sigma2 * math.sqrt(p * q) * (tau + math.log(2 * p * q))
    psi /= math.sqrt(n) * (1.0 - delta) ** 2
    if smin <= psi:
        raise ValueError(f"theta_min_singular must exceed psi = {psi:.3g} for eq. 3 to hold")
    zz = ((1.0 - delta) ** 2, (1.0 + delta) ** 2)
    return Spectra(zz=zz, h=(zz[0] * (smin - psi) ** 2, zz[1] * (norm + psi) ** 2))


def step_sizes(spectra: Spectra, preset: str = "paper") -> tuple[float, float]:
    """(eta, alpha) from eq. 3 (``"max"``), eq. 8 (``"optimal"``) or half of eq. 3 (``"paper"``).

    eq. 3: eta < 2 / (1 + delta)^2, alpha < 4 / (2 gbar + gund); eq. 8:
    eta* = 2 / ((1 - delta)^2 + (1 + delta)^2), alpha* = 2 / (gbar + gund). ``"max"`` sits on
    the strict-inequality boundary, as the paper's Fig. 7 does.
    """
    preset = check_option(preset, "preset", STEP_SIZE_PRESETS)
    (zlo, zhi), (hlo, hhi) = spectra.zz, spectra.h
    if preset == "optimal":
        return 2.0 / (zlo + zhi), 2.0 / (hhi + hlo)
    scale = 2.0 if preset == "max" else 1.0
    return scale / zhi, scale * 2.0 / (2.0 * hhi + hlo)


def contraction_rates(
    spectra: Spectra, step_size_theta: float, step_size_beta: float
) -> tuple[float, float, float]:
    """(kappa_Theta, kappa_beta, kappa = max) of eq. 10 for the given step sizes."""
    eta = check_positive(step_size_theta, "step_size_theta")
    alpha = check_positive(step_size_beta, "step_size_beta")
    (zlo, zhi), (hlo, hhi) = spectra.zz, spectra.h
    k_theta = max(abs(1.0 - eta * zlo), abs(1.0 - eta * zhi))
    k_beta = max(abs(1.0 - alpha * hlo / 2.0), abs(1.0 - alpha * (2.0 * hhi + hlo) / 2.0))
    return k_theta, k_beta, max(k_theta, k_beta)


def _privacy_factor(p: int, q: int, tau: float, refined: bool) -> float:
    """R(tau) of eq. 29 (refined) or sqrt(p) (sqrt q + sqrt tau)^3 of eq. 7."""
    root = math.sqrt(q) + math.sqrt(tau)
    if refined:
        return root**2 * (math.sqrt(p * q) + math.sqrt(p * (math.log(p) + tau)))
    return math.sqrt(p) * root**3


def error_bound(
    steps: Any,
    *,
    n: int,
    p: int,
    q: int,
    rho_theta: float,
    rho_beta: float,
    kappa_theta: float,
    kappa_beta: float,
    tau: float = 5.0,
    refined: bool = False,
) -> dict[str, np.ndarray]:
    """The three terms of Theorem 3.1's bound on ||beta^(T) - beta_hat|| as functions of T.

    eq. 7: kappa^{T/2} + sqrt(p) (sqrt q + sqrt tau)^3 sqrt(T) / (n sqrt(min rho)) +
    sqrt(pq) (tau + log pq) / sqrt(n). With ``refined=True`` the proof's eq. 29 separates the
    stages: kappa_beta^{T/2} + kappa_Theta^{T/2} + R sqrt(T) / n (1/sqrt(rho1) + 1/sqrt(rho2)).

    Returns
    -------
    dict
        ``"optimisation"``, ``"privacy"``, ``"statistical"`` and their ``"total"``, each an
        array with the shape of ``steps``. Heuristic, up to constants.
    """
    T = np.asarray(steps, dtype=np.float64)
    if not np.all(T >= 1):
        raise ValueError("steps must be >= 1")
    n, p, q = check_int(n, "n"), check_int(p, "p"), check_int(q, "q")
    tau = check_positive(tau, "tau")
    r1, r2 = check_positive(rho_theta, "rho_theta"), check_positive(rho_beta, "rho_beta")
    k_theta = check_real(kappa_theta, "kappa_theta", low=0.0, high=1.0, low_open=False)
    k_beta = check_real(kappa_beta, "kappa_beta", low=0.0, high=1.0, low_open=False)
    R = _privacy_factor(p, q, tau, refined)
    if refined:
        optimisation = k_beta ** (T / 2) + k_theta ** (T / 2)
        privacy = R * np.sqrt(T) / n * (1 / math.sqrt(r1) + 1 / math.sqrt(r2))
    else:
        optimisation = max(k_theta, k_beta) ** (T / 2)
        privacy = R * np.sqrt(T) / (n * math.sqrt(min(r1, r2)))
    statistical = np.full_like(T, math.sqrt(p * q) * (tau + math.log(p * q)) / math.sqrt(n))
    total = optimisation + privacy + statistical
    return {
        "optimisation": optimisation,
        "privacy": privacy,
        "statistical": statistical,
        "total": total,
    }


def iteration_regimes(
    *, n: int, p: int, q: int, rho_theta: float, rho_beta: float, kappa: float, tau: float = 5.0
) -> dict[str, float]:
    """T1 (end of the optimisation regime), T2 (end of the plateau) and Tmax (condition 5).

    T1 = log(n / (pq (tau + log pq)^2)) / log(1 / kappa); T2 = n rmin q (tau + log pq)^2 /
    (sqrt q + sqrt tau)^6; Tmax = rho1 n^2 / (p (sqrt q + sqrt tau)^6) (Remark 3.7 with
    epsilon = 0; the paper labels condition 5 as "(4)"). Heuristic, up to constants.
    """
    n, p, q = check_int(n, "n"), check_int(p, "p"), check_int(q, "q")
    tau = check_positive(tau, "tau")
    r1, r2 = check_positive(rho_theta, "rho_theta"), check_positive(rho_beta, "rho_beta")
    kappa = check_real(kappa, "kappa", low=0.0, high=1.0)
    lg = tau + math.log(p * q)
    root6 = (math.sqrt(q) + math.sqrt(tau)) ** 6
    t1 = max(0.0, math.log(n / (p * q * lg**2))) / math.log(1.0 / kappa)
    return {"T1": t1, "T2": n * min(r1, r2) * q * lg**2 / root6, "Tmax": r1 * n**2 / (p * root6)}


def heuristic_clip(n: int, q: int, steps: int, *, tau: float = 5.0, c0: float = 1.0) -> float:
    """gamma = c0 (sqrt q + sqrt(tau + log(n T)))^2 (Lemma D.1 with unit constants).

    A rough no-clipping level for standardised, sub-Gaussian data; real gradient norms are
    often far larger (docs/liang2025.md, Departures and choices), so prefer
    :func:`bound_based_clips` when bounds exist.
    """
    n, q, steps = check_int(n, "n"), check_int(q, "q"), check_int(steps, "steps")
    tau, c0 = check_positive(tau, "tau"), check_positive(c0, "c0")
    return c0 * (math.sqrt(q) + math.sqrt(tau + math.log(n * steps))) ** 2


def bound_based_clips(
    *, z_norm: float, x_norm: float, y_abs: float, theta_norm: float, beta_norm: float
) -> tuple[float, float]:
    """Clips that never bind when ||z|| <= Bz, ||x|| <= Bx, |y| <= By and the iterates stay in
    ||Theta|| <= BT, ||beta|| <= Bb: gamma1 = Bz (Bz BT + Bx), gamma2 = BT Bz (Bz BT Bb + By).
    """
    bz, bx = check_positive(z_norm, "z_norm"), check_positive(x_norm, "x_norm")
    by = check_positive(y_abs, "y_abs")
    bt, bb = check_positive(theta_norm, "theta_norm"), check_positive(beta_norm, "beta_norm")
    return bz * (bz * bt + bx), bt * bz * (bz * bt * bb + by)
