"""The Gaussian mechanism's calibration: a noise std from a zCDP share, and back.

sigma = Delta / sqrt(2 rho) makes one release of L2 sensitivity Delta rho-zCDP (Bun &
Steinke 2016, Prop. 1.6). A budget's limit is exact (:mod:`dpfit.privacy.budget`), while
sigma and the charge Delta^2 / (2 sigma^2) are rounded floats, so :func:`rho_within` and
:func:`noise_std_within` move a share or a std by the few ulps that keep the exact charge
within the request. Every noise std in dpfit comes from these functions; nothing divides by
sqrt(2 rho) by hand.
"""

from __future__ import annotations

import math

from .._validation import check_int, check_positive, check_rho
from ..privacy.budget import exact_units
from ..privacy.ledger import GaussianEntry

__all__ = [
    "noise_multiplier_for_rho",
    "noise_std_for_rho",
    "noise_std_within",
    "rho_for_noise_std",
    "rho_within",
]


def noise_multiplier_for_rho(rho: float) -> float:
    """alpha = 1 / sqrt(2 rho): the noise std per unit of sensitivity of a rho-zCDP release.

    For algorithms that state their noise as a multiplier of the sensitivity (DP-SSGD's
    alpha, Opacus' ``noise_multiplier``); the std is then ``alpha * Delta``, which
    :func:`noise_std_within` raises by an ulp where that rounds below the share.
    """
    return 1.0 / math.sqrt(2.0 * check_positive(rho, "rho"))


def noise_std_for_rho(sensitivity: float, rho: float) -> float:
    """sigma = Delta / sqrt(2 rho): the std that makes one release rho-zCDP (exact)."""
    sensitivity = check_positive(sensitivity, "sensitivity")
    rho = check_rho(rho, warn=False)  # a conversion: the fit warns about its whole budget
    sigma = sensitivity / math.sqrt(2.0 * rho)
    if not (math.isfinite(sigma) and sigma > 0):
        raise ValueError("noise scale not finite: rho is too small for this sensitivity")
    return sigma


def rho_for_noise_std(sensitivity: float, noise_std: float) -> float:
    """rho = Delta^2 / (2 sigma^2), the zCDP cost of one Gaussian release (exact)."""
    return GaussianEntry(label="query", sensitivity=sensitivity, noise_std=noise_std).rho


def rho_within(sensitivity: float, rho: float, count: int = 1) -> float:
    """A share rho' (``rho / count``, or the few ulps below it needed) whose ``count``
    releases with ``noise_std_for_rho(sensitivity, rho')`` are charged at most ``rho`` in all.

    sigma = Delta / sqrt(2 rho) and the charge Delta^2 / (2 sigma^2) each round once, so one
    release's charge can exceed its share by an ulp, and ``count`` of them (the ledger adds
    them exactly, :attr:`~dpfit.privacy.GaussianEntry.rho_units`) exceed ``rho`` whenever
    rho / count rounded up: 39 DP-GD steps with noise from
    ``noise_std_for_rho(Delta, 0.9 / 39)`` are charged 2.8e-17 above rho = 0.9
    (``tests/privacy/test_attacks_review3.py``). A share computed this way keeps the
    ledger's exact total within the request (rho' is rho / count, or a few ulps below it).
    """
    rho = check_rho(rho, warn=False)  # a share of a budget the caller warned about
    count = check_int(count, "count", low=1)
    limit = exact_units(rho)
    share = rho / count
    while (
        exact_units(rho_for_noise_std(sensitivity, noise_std_for_rho(sensitivity, share))) * count
        > limit
    ):
        share = math.nextafter(share, 0.0)
    return share


def noise_std_within(sensitivity: float, noise_std: float, rho: float) -> float:
    """``noise_std``, or the few ulps above it needed for one release of ``sensitivity`` to be
    charged at most ``rho``.

    A noise std set as a multiplier times the sensitivity (alpha * Delta, with alpha from
    rho) is charged Delta^2 / (2 sigma^2) after three roundings, which can land an ulp above
    the share it was meant to cost; a budget's limit is exact, so the std is raised by
    ulps until the charge fits (it is unchanged whenever it already did).
    """
    limit = exact_units(check_positive(rho, "rho"))
    noise_std = check_positive(noise_std, "noise_std")
    while exact_units(rho_for_noise_std(sensitivity, noise_std)) > limit:
        noise_std = math.nextafter(noise_std, math.inf)
    return noise_std
