"""The coverage studies' references: robust OLS and a noisy-sufficient-statistics interval.

:func:`robust_ols` is the non-private OLS with its HC0 (heteroscedasticity-robust) standard
errors, the interval a private one is compared with; :func:`nss_interval` is the private
competitor at the same rho: OLS from a noisy X'X and X'y with the sandwich from a noisy Omega
and the NSS noise law added (Sheffet 2017; Evans et al. 2024).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..inference.population import release_second_moment
from ..mechanisms import gaussian, make_noise_source, noise_std_for_rho
from ..privacy import PrivacyLedger, mean_sensitivity

__all__ = ["nss_interval", "robust_ols", "scaled"]


def robust_ols(D: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Non-private OLS and its HC0 standard errors (the reference interval)."""
    theta, *_ = np.linalg.lstsq(D, y, rcond=None)
    e = y - D @ theta
    Hinv = np.linalg.inv(D.T @ D / len(y))
    meat = (D * e[:, None] ** 2).T @ D / len(y)
    return theta, np.sqrt(np.diag(Hinv @ meat @ Hinv) / len(y))


def scaled(data: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Design [1, x'] and y' mapped to [-1, 1] by the public bounds, and the map back J, c."""
    b = np.asarray(
        list(data["bounds"].values()) if isinstance(data["bounds"], dict) else data["bounds"],
        dtype=float,
    )
    c, h = b.mean(axis=1), (b[:, 1] - b[:, 0]) / 2
    yl, yh = data["y_bounds"]
    cy, hy = (yl + yh) / 2, (yh - yl) / 2
    Xs = (np.clip(data["X"], b[:, 0], b[:, 1]) - c) / h
    D = np.column_stack([np.ones(len(Xs)), Xs])
    ys = (np.clip(data["y"], yl, yh) - cy) / hy
    k = D.shape[1]
    J = np.zeros((k, k))  # theta_original = J theta' + offset
    J[0, 0] = hy
    J[0, 1:] = -hy * c / h
    J[1:, 1:] = np.diag(hy / h)
    return D, ys, J, np.r_[cy, np.zeros(k - 1)]


def nss_interval(data: Mapping[str, Any], rho: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Noisy-sufficient-statistics OLS with a population interval, at zCDP ``rho``.

    Releases X'X/n (40% of rho), X'y/n (40%) and Omega = mean of e_i^2 d_i d_i' at the NSS
    estimate with |e| clipped to 2 (20%); theta = Hp^-1 b~. Covariance: the sandwich
    Hp^-1 Omega~ Hp^-1 / n plus the NSS noise law Hp^-1 (s_b^2 I + s_H^2 (|theta|^2 I +
    theta theta')) Hp^-1 (first order in the noise). Returns (estimate, s.e.) in original units.
    """
    D, ys, J, offset = scaled(data)
    n, k = D.shape
    ledger = PrivacyLedger()
    with warnings.catch_warnings():  # seeded on purpose: a reproducible study
        warnings.simplefilter("ignore")
        source = make_noise_source(seed)
    bound = math.sqrt(k)
    H = release_second_moment(
        D, bound=bound, rho=0.4 * rho, n=n, ledger=ledger, rng=source, label="nss/xtx"
    )
    sens_b = mean_sensitivity(bound, n, ledger.relation)
    s_b = noise_std_for_rho(sens_b, 0.4 * rho)
    b = gaussian(
        D.T @ ys / n, sensitivity=sens_b, noise_std=s_b, ledger=ledger, rng=source, label="nss/xty"
    )
    Hp = H.psd()
    theta = np.linalg.solve(Hp, b)
    e = np.clip(ys - D @ theta, -2.0, 2.0)
    Omega = release_second_moment(
        D * e[:, None],
        bound=2.0 * bound,
        rho=0.2 * rho,
        n=n,
        ledger=ledger,
        rng=source,
        label="nss/omega",
    )
    Hinv = np.linalg.inv(Hp)
    noise = s_b**2 * np.eye(k) + H.noise_std**2 * (
        theta @ theta * np.eye(k) + np.outer(theta, theta)
    )
    cov = Hinv @ (Omega.psd() / n + noise) @ Hinv
    return J @ theta + offset, np.sqrt(np.diag(J @ cov @ J.T))
