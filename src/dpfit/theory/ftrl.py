"""Closed forms of Choquette-Choo et al. 2024 for Noisy-FTRL: mean estimation and linear regression.

All results are stationary (T -> infinity) with the noise calibrated to rho-zCDP through the
infinite-horizon sensitivity gamma_inf: sigma^2 = clip^2 gamma_inf^2 / (2 rho) per
coordinate, gamma_inf^2 = 1 for DP-SGD and (2/pi) K(1 - nu) for nu-DP-FTRL (eq. 5). K(k) is the
complete elliptic integral of the first kind with modulus k (``scipy.special.ellipk(k**2)``).

Conventions (docs/choquettechoo2024.md): linear-regression excess risk is
F - F* = (1/2)||theta - theta*||_H^2;
mean estimation reports the stationary variance E[delta^2]. The paper's constants may differ by
a factor 2; slopes and ratios do not. The zero-out relation of the paper corresponds to a
per-step sensitivity of ``clip`` (use 2 clip for replace-one).

=================  =======  ==========================================================
API name           symbol   meaning
=================  =======  ==========================================================
``step_size``      eta      constant learning rate
``eigenvalues``    lambda   eigenvalues of H = E[x x^T]
``nu``             nu       nu-DP-FTRL damping (``None``: DP-SGD, B = I)
``label_std``      sigma    label-noise std (sigma_sgd)
``clip``           G        per-step sensitivity of the gradient
=================  =======  ==========================================================
"""

from __future__ import annotations

import math

import numpy as np
from scipy import integrate, special

from .._validation import check_positive, check_real

__all__ = [
    "effective_dimension",
    "figure1_ratio",
    "figure1_ratio_asymptote",
    "gamma_inf_squared",
    "lti_excess_risk",
    "lti_upper_bound",
    "mean_estimation_variance",
    "power_law_eigenvalues",
    "table1_rates",
]


def _ellipk(modulus: float) -> float:
    return float(special.ellipk(modulus * modulus))


def _nu(nu: float | None) -> float | None:
    if nu is None:
        return None
    return check_real(nu, "nu", low=0.0, high=1.0, high_open=False)


def gamma_inf_squared(nu: float | None) -> float:
    """gamma_inf^2 = ||c||_2^2: 1 for DP-SGD (``None`` or 1), (2/pi) K(1 - nu) for nu-DP-FTRL.

    Examples
    --------
    >>> round(gamma_inf_squared(0.1), 7)
    1.4518427
    """
    nu = _nu(nu)
    if nu is None or nu == 1.0:
        return 1.0
    return 2.0 / math.pi * _ellipk(1.0 - nu)


def figure1_ratio(step_size: float) -> float:
    """Stationary DP variance of the optimal beta* over DP-SGD's: 4 eta (2-eta) K(1-eta)^2 / pi^2.

    Exact (Appendix B, eq. 18); symmetric under eta -> 2 - eta, equal to 1 at eta = 1 (where
    beta* = I; the Figure 1 caption's "eta -> 1" is contradicted by this formula).

    Examples
    --------
    >>> round(figure1_ratio(0.01), 6), figure1_ratio(1.0)
    (0.090868, 1.0)
    """
    eta = check_real(step_size, "step_size", low=0.0, high=2.0)
    return 4.0 * eta * (2.0 - eta) * _ellipk(1.0 - eta) ** 2 / math.pi**2


def figure1_ratio_asymptote(step_size: float) -> float:
    """Small-eta asymptote of :func:`figure1_ratio`: (2/pi^2) eta log^2(8/eta)."""
    eta = check_real(step_size, "step_size", low=0.0, high=2.0)
    return 2.0 / math.pi**2 * eta * math.log(8.0 / eta) ** 2


def mean_estimation_variance(
    step_size: float,
    *,
    rho: float,
    mechanism: str = "optimal",
    clip: float = 1.0,
    label_std: float = 0.0,
) -> float:
    """Stationary E[delta^2] of noisy SGD for 1-D mean estimation (Thm. 2.1).

    ``mechanism="dp-sgd"``: eta G^2 / (2 rho (2 - eta)); ``"optimal"`` (beta*):
    2 eta^2 G^2 K(1-eta)^2 / (pi^2 rho); both plus the sampling part eta sigma^2 / (2 - eta).
    """
    eta = check_real(step_size, "step_size", low=0.0, high=2.0)
    rho = check_positive(rho, "rho")
    clip = check_positive(clip, "clip")
    label_std = check_real(label_std, "label_std", low=0.0, low_open=False)
    sampling = eta * label_std**2 / (2.0 - eta)
    if mechanism == "dp-sgd":
        return eta * clip**2 / (2.0 * rho * (2.0 - eta)) + sampling
    if mechanism == "optimal":
        return 2.0 * eta**2 * clip**2 * _ellipk(1.0 - eta) ** 2 / (math.pi**2 * rho) + sampling
    raise ValueError(f"mechanism must be one of ['dp-sgd', 'optimal'], got {mechanism!r}")


def _eigenvalues(eigenvalues) -> np.ndarray:
    lam = np.asarray(eigenvalues, dtype=np.float64)
    if lam.ndim != 1 or lam.size == 0 or not (np.isfinite(lam).all() and (lam > 0).all()):
        raise ValueError("eigenvalues must be a non-empty 1-D array of finite values > 0")
    return lam


def _spectral_sums(lam: np.ndarray, eta: float, nu: float | None) -> np.ndarray:
    """S_j = (1/2pi) int |B(w)|^2 / |1 - a_j - e^{iw}|^2 dw with a_j = eta lambda_j (eq. 32)."""
    a = eta * lam
    if nu is None or nu == 1.0:
        return 1.0 / (a * (2.0 - a))  # Lemma F.12
    r = 1.0 - nu

    def integrand(w: float, aj: float) -> float:
        b2 = math.sqrt(1.0 + r * r - 2.0 * r * math.cos(w))  # |B(w)|^2 = |1 - r e^{iw}|
        return b2 / ((1.0 - aj) ** 2 + 1.0 - 2.0 * (1.0 - aj) * math.cos(w))

    out = np.empty(a.size)
    for j, aj in enumerate(a):
        points = [p for p in (aj, 10 * aj, nu, 10 * nu, 0.1) if 0 < p < math.pi]
        val, _ = integrate.quad(integrand, 0.0, math.pi, args=(aj,), points=points, limit=400)
        out[j] = val / math.pi  # (1/2pi) * 2 * int_0^pi
    return out


def _check_regression(eigenvalues, step_size, nu, rho, clip):
    lam = _eigenvalues(eigenvalues)
    eta = check_positive(step_size, "step_size")
    if not eta * lam.max() < 2.0:
        raise ValueError("step_size * max(eigenvalues) must be < 2 for a stationary limit")
    return lam, eta, _nu(nu), check_positive(rho, "rho"), check_positive(clip, "clip")


def lti_excess_risk(
    eigenvalues,
    step_size: float,
    *,
    rho: float,
    nu: float | None = None,
    clip: float = 1.0,
    label_std: float = 0.0,
) -> float:
    """Exact stationary excess risk of the LTI surrogate of linear regression (Appendix C).

    F_LTI = (1/2) sum_j lambda_j [eta^2 sigma^2 S_j + eta^2 label_std^2 lambda_j / (a_j (2-a_j))],
    a lower bound on the random-design risk (Thm. C.18). With d = 128, lambda_k = 1/k,
    eta = 0.02, rho = 1/2: 0.64027 (DP-SGD) and 0.0090390 (nu = eta lambda_min).

    Examples
    --------
    >>> lam = 1.0 / np.arange(1, 129)
    >>> round(lti_excess_risk(lam, 0.02, rho=0.5), 5)
    0.64027
    """
    lam, eta, nu, rho, clip = _check_regression(eigenvalues, step_size, nu, rho, clip)
    label_std = check_real(label_std, "label_std", low=0.0, low_open=False)
    sigma2 = clip**2 * gamma_inf_squared(nu) / (2.0 * rho)
    a = eta * lam
    dp = eta**2 * sigma2 * np.sum(lam * _spectral_sums(lam, eta, nu))
    sampling = eta**2 * label_std**2 * np.sum(lam * lam / (a * (2.0 - a)))
    return float(0.5 * (dp + sampling))


def lti_upper_bound(
    eigenvalues,
    step_size: float,
    *,
    rho: float,
    nu: float | None = None,
    clip: float = 1.0,
    label_std: float = 0.0,
    r_squared: float | None = None,
    kurtosis: float = 3.0,
) -> float:
    """Theorem C.15 upper bound on the random-design stationary risk (paper's normalisation).

    (1 + (1 - eta R^2)^-2) eta R^2 sigma_sgd^2
    + (1 + C_kurt (1 - eta R^2)^-2) eta^2 G^2 gamma^2 / (2 pi rho) int |B|^2 h,
    with R^2 = 3 Tr(H) and C_kurt = 3 for Gaussian x by default. Left in the paper's
    normalisation (not halved), so it also bounds (1/2)||.||_H^2.
    """
    lam, eta, nu, rho, clip = _check_regression(eigenvalues, step_size, nu, rho, clip)
    r2 = 3.0 * lam.sum() if r_squared is None else check_positive(r_squared, "r_squared")
    kurt = check_positive(kurtosis, "kurtosis")
    label_std = check_real(label_std, "label_std", low=0.0, low_open=False)
    if not eta * r2 < 1.0:
        raise ValueError("the bound needs step_size * R^2 < 1")
    inv = (1.0 - eta * r2) ** -2
    integral = 2.0 * math.pi * np.sum(lam * _spectral_sums(lam, eta, nu))  # int |B|^2 h dw
    dp = (1.0 + kurt * inv) * eta**2 * clip**2 * gamma_inf_squared(nu) / (2 * math.pi * rho)
    return float((1.0 + inv) * eta * r2 * label_std**2 + dp * integral)


def effective_dimension(eigenvalues) -> float:
    """d_eff = Tr(H) / ||H||_2, the stable rank of H^{1/2}."""
    lam = _eigenvalues(eigenvalues)
    return float(lam.sum() / lam.max())


def power_law_eigenvalues(dim: int, alpha: float) -> np.ndarray:
    """lambda_k = k^-alpha, k = 1..d (Table 4 and Figure 2's spectra)."""
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
        raise ValueError(f"dim must be an integer >= 1, got {dim!r}")
    alpha = check_real(alpha, "alpha", low=0.0, low_open=False)
    return np.arange(1, dim + 1, dtype=np.float64) ** -alpha


def table1_rates(
    eigenvalues, step_size: float, *, rho: float, nu: float | None = None, clip: float = 1.0
) -> dict[str, float]:
    """Big-O shapes of Table 1 / Table 4 (rho-terms; constants unspecified in the paper).

    Returns ``{"dp-sgd": eta d G^2 / rho, "nu-dpftrl": eta^2 G^2 Tr(H) log^2(1/nu) / rho,
    "lower-bound": eta^2 G^2 Tr(H) / rho}`` with nu = eta lambda_min by default (Thm. 2.2).
    Scaling helpers, not certified bounds.
    """
    lam = _eigenvalues(eigenvalues)
    eta = check_positive(step_size, "step_size")
    rho = check_positive(rho, "rho")
    clip = check_positive(clip, "clip")
    nu = eta * lam.min() if nu is None else check_real(nu, "nu", low=0.0, high=1.0)
    trace = float(lam.sum())
    return {
        "dp-sgd": eta * lam.size * clip**2 / rho,
        "nu-dpftrl": eta**2 * clip**2 * trace * math.log(1.0 / nu) ** 2 / rho,
        "lower-bound": eta**2 * clip**2 * trace / rho,
    }
