"""Theory of DP-SSGD (Varshney, Thakurta & Jain 2022, Alg. 1): Thm. 3.2 settings, Lemma 3.5.

Same notation as :mod:`dpfit.theory.ambssgd`; ``signal_norm`` is the Euclidean ||w*|| here.
Everything is a function of public inputs only.
"""

from __future__ import annotations

import math

from numpy.typing import ArrayLike

from .._validation import check_int, check_option, check_positive
from .ambssgd import _nonnegative, _spectrum

__all__ = ["SSGD_C1", "SSGD_C2", "ssgd_clip", "ssgd_risk_bound", "ssgd_step_size"]

#: Explicit constants of the DP-SSGD step size, Lemma A.9 eq. (30): 1/(64*210), 1/(4*1050).
SSGD_C1 = 1.0 / 13440.0
SSGD_C2 = 1.0 / 4200.0


def ssgd_step_size(
    n: int,
    *,
    feature_scale: float,
    dimension: int,
    noise_multiplier: float,
    condition_number: float = 1.0,
    tail_exponent: float = 0.5,
    tail_constant: float = 1.0,
    rule: str = "theory",
) -> float:
    """DP-SSGD's step size: Thm. 3.2 (``"theory"``) or Cor. 3.3's 1/(4d) (``"corollary"``).

    Thm. 3.2: eta = min{1/(2 R_x^2), c1/((ln N)^{4a+2} K2^2 R_x^2 kappa d alpha^2), c2/((ln
    N)^{2a+2} R_x^2)} with c1 = 1/13440 and c2 = 1/4200 (Lemma A.9, eq. 30). It is so small that the
    bias barely decays at realistic N (docs/varshney2022.md, fix D8); Cor. 3.3's value breaks the
    theorem's constraint. Experiments tune eta on a grid, which is oracle tuning.
    """
    rule = check_option(rule, "rule", ("theory", "corollary"))
    d = check_int(dimension, "dimension", low=1)
    if rule == "corollary":
        return 1.0 / (4.0 * d)
    r2 = check_positive(feature_scale, "feature_scale") ** 2
    a = check_positive(tail_exponent, "tail_exponent")
    log_n = math.log(check_int(n, "n", low=2))
    return min(
        1.0 / (2.0 * r2),
        SSGD_C1
        / (
            log_n ** (4.0 * a + 2.0)
            * check_positive(tail_constant, "tail_constant") ** 2
            * r2
            * check_positive(condition_number, "condition_number")
            * d
            * check_positive(noise_multiplier, "noise_multiplier") ** 2
        ),
        SSGD_C2 / (log_n ** (2.0 * a + 2.0) * r2),
    )


def ssgd_clip(
    n: int,
    *,
    feature_scale: float,
    signal_norm: float,
    noise_std: float,
    hessian_norm: float = 1.0,
    condition_number: float = 1.0,
    tail_exponent: float = 0.5,
    tail_constant: float = 1.0,
) -> float:
    """DP-SSGD's fixed clip of Thm. 3.2.

    zeta = 4 K2 R_x (ln N)^{2a} (sqrt(||H||) ||w*|| + sqrt(kappa) sigma), where
    ``signal_norm`` is the Euclidean ||w*||; it and sigma are public upper bounds.
    """
    scale = math.sqrt(check_positive(hessian_norm, "hessian_norm")) * _nonnegative(
        signal_norm, "signal_norm"
    ) + math.sqrt(check_positive(condition_number, "condition_number")) * _nonnegative(
        noise_std, "noise_std"
    )
    if not scale > 0:
        raise ValueError("signal_norm + noise_std must be > 0")
    return (
        4.0
        * check_positive(tail_constant, "tail_constant")
        * check_positive(feature_scale, "feature_scale")
        * math.log(check_int(n, "n", low=2)) ** (2.0 * check_positive(tail_exponent, "a"))
        * scale
    )


def ssgd_risk_bound(
    n: int,
    *,
    step_size: float,
    clip: float,
    noise_multiplier: float,
    feature_scale: float,
    eigenvalues: ArrayLike,
    signal_norm: float,
    noise_std: float,
) -> float:
    """Lemma 3.5's bound on DP-SSGD's excess risk (no clipping, eta <= 1/(2 R_x^2)).

    (R_x^2/2) e^{-eta mu (N/2+1)} ||w*||^2 + (1/N) (eta R_x^2/(1 - eta R_x^2)) d
    ||Sigma + 4 zeta^2 alpha^2 I||_H + (1/N) Tr(H^-1 (Sigma + 4 zeta^2 alpha^2 I)), where
    Sigma = sigma^2 H gives ||.||_H = sigma^2 + 4 zeta^2 alpha^2 / mu and
    Tr(H^-1 .) = sigma^2 d + 4 zeta^2 alpha^2 Tr(H^-1). ``signal_norm`` is the Euclidean ||w*||.
    """
    lam = _spectrum(eigenvalues)
    n = check_int(n, "n", low=2)
    eta = check_positive(step_size, "step_size")
    r2 = check_positive(feature_scale, "feature_scale") ** 2
    if not eta * r2 < 1.0:
        raise ValueError("Lemma 3.5 needs step_size * feature_scale**2 < 1")
    priv = 4.0 * (check_positive(clip, "clip") * check_positive(noise_multiplier, "alpha")) ** 2
    s2 = _nonnegative(noise_std, "noise_std") ** 2
    w2 = _nonnegative(signal_norm, "signal_norm") ** 2
    mu, d = lam.min(), lam.size
    bias = 0.5 * r2 * math.exp(-eta * lam.min() * (n / 2.0 + 1.0)) * w2
    middle = (eta * r2 / (1.0 - eta * r2)) * d * (s2 + priv / mu) / n
    last = (s2 * d + priv * (1.0 / lam).sum()) / n
    return float(bias + middle + last)
