"""When DP-GD clips, what it then targets, and how to choose its hyperparameters.

* :func:`no_clipping_condition`: Condition 2.4 of Brown et al. (2024), reported as the
  smallest c0 for which the data satisfy it (a **non-private** diagnostic).
* :func:`lemma_2_6_c0` and :func:`certified_clip`: the constants of Lemmas 2.5/2.6, with
  the corrections listed in docs/brown2024.md (Departures). They are extremely conservative
  (c0 ~ 830 at n = 1e4), so they certify, they do not recommend (Condition 2.4).
* :func:`huber_target`: the minimiser of the clipped (Huber) loss, the centre of DP-GD and
  of its intervals under clipping (Section 2.5). Non-private.
* :func:`recommend_dp_gd`: clip, step size and steps from public quantities only (the rule
  in docs/brown2024.md).

Notation as in :mod:`dpfit.theory.dp_gd`; gamma = ``clip``, c0 the constant of Cond. 2.4.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import check_int, check_positive, check_real, check_rho, check_X_y
from ..mechanisms import clip_factors, row_norms
from ..privacy import mean_sensitivity

__all__ = [
    "DPGDRecommendation",
    "NoClippingCondition",
    "certified_clip",
    "huber_target",
    "lemma_2_6_c0",
    "no_clipping_condition",
    "recommend_dp_gd",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class NoClippingCondition:
    """Condition 2.4 on a dataset, for a reference parameter theta (non-private).

    Attributes
    ----------
    eigen_ok : bool
        (i): 0.5 I <= Sigma <= 2 I and ||I - eta Sigma|| <= 7/8.
    row_norm, residual, signal, cross : float
        The smallest c0 satisfying (ii) max ||x_i|| / sqrt(p), (iii) max |y_i - x_i theta| /
        sigma, (iv) max_{i,t} |x_i^T M^t theta| and (v) max_{i,t} |x_i^T A_t X^T r| /
        (sigma sqrt(n p)), with A_t = (I - M^t) Sigma^{-1}.
    c0 : float
        The smallest c0 for which the condition holds (inf when (i) fails).
    """

    eigen_ok: bool
    row_norm: float
    residual: float
    signal: float
    cross: float

    @property
    def c0(self) -> float:
        """max of the four ratios when (i) holds, else inf."""
        if not self.eigen_ok:
            return math.inf
        return max(self.row_norm, self.residual, self.signal, self.cross)


def no_clipping_condition(
    X: Any, y: Any, theta: Any, *, sigma: float, step_size: float, steps: int
) -> NoClippingCondition:
    """Evaluate Condition 2.4 with (sigma, eta, c0, T) on (X, y) at ``theta`` (e.g. theta*).

    Costs O(n p T). **Non-private**: it reads the data; use it in simulations only.
    """
    X, y = check_X_y(X, y)
    n, p = X.shape
    theta = np.asarray(theta, dtype=np.float64).reshape(p)
    sigma = check_positive(sigma, "sigma")
    step_size = check_positive(step_size, "step_size")
    steps = check_int(steps, "steps", low=1)
    mu, U = np.linalg.eigh(X.T @ X / n)
    phi = 1.0 - step_size * mu
    eigen_ok = bool(mu.min() >= 0.5 and mu.max() <= 2.0 and np.abs(phi).max() <= 7 / 8)
    residual = y - X @ theta
    XU = X @ U
    coeff_theta = U.T @ theta
    coeff_cross = U.T @ (X.T @ residual)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv_mu = np.where(mu > 0, 1.0 / mu, np.inf)
    signal = cross = 0.0
    for t in range(1, steps + 1):
        power = phi**t
        signal = max(signal, float(np.abs(XU @ (power * coeff_theta)).max()))
        a_t = np.where(mu > 0, (1.0 - power) * inv_mu, t * step_size)  # (I - M^t) Sigma^-1
        cross = max(cross, float(np.abs(XU @ (a_t * coeff_cross)).max()))
    return NoClippingCondition(
        eigen_ok=eigen_ok,
        row_norm=float(row_norms(X).max() / math.sqrt(p)),
        residual=float(np.abs(residual).max() / sigma),
        signal=signal,
        cross=cross / (sigma * math.sqrt(n * p)),
    )


def lemma_2_6_c0(n: int, steps: int, beta: float) -> float:
    """c0 = 12 ln^1.5(5 n T / beta), with which Gaussian data satisfy Cond. 2.4 (Lemma 2.6).

    Examples
    --------
    >>> round(lemma_2_6_c0(10_000, 20, 0.05))
    827
    """
    n = check_int(n, "n", low=1)
    steps = check_int(steps, "steps", low=1)
    beta = check_real(beta, "beta", low=0.0, high=1.0)
    return 12.0 * math.log(5.0 * n * steps / beta) ** 1.5


def certified_clip(
    n: int,
    p: int,
    *,
    rho: float,
    steps: int,
    step_size: float,
    sigma: float,
    c0: float,
    beta: float,
) -> tuple[float, bool]:
    """Lemma 2.5's guarantee that nothing is clipped (probability >= 1 - beta), made explicit.

    Returns
    -------
    clip : float
        The smallest certified gamma, 4 c0^2 max(sigma, 1) sqrt(p) (the signal term
        in the proof of Lemma 2.5, ||theta*|| <= 1 needs max(sigma, 1), not sigma).
    n_suffices : bool
        Whether n >= 64 c0^2 p eta sqrt(2 T ln(2 n T / beta) / rho), the second condition
        gamma / (eta lambda) >= 64 c0^2 p sqrt(ln(2 n T / beta)) after substituting the
        calibrated lambda (the printed Thm 2.7 condition is wrong; docs/brown2024.md,
        Departures).
    """
    n = check_int(n, "n", low=1)
    p = check_int(p, "p", low=1)
    rho = check_rho(rho)
    steps = check_int(steps, "steps", low=1)
    step_size = check_positive(step_size, "step_size")
    sigma = check_positive(sigma, "sigma")
    c0 = check_positive(c0, "c0")
    beta = check_real(beta, "beta", low=0.0, high=1.0)
    clip = 4.0 * c0**2 * max(sigma, 1.0) * math.sqrt(p)
    log_term = math.log(2.0 * n * steps / beta)
    needed = 64.0 * c0**2 * p * step_size * math.sqrt(2.0 * steps * log_term / rho)
    return clip, bool(n >= needed)


def huber_target(
    X: Any, y: Any, *, clip: float, tol: float = 1e-12, max_iter: int = 500
) -> np.ndarray:
    """argmin_theta sum_i l_{B_i}(y_i - x_i^T theta), B_i = clip / ||x_i|| (Section 2.5).

    l_B(r) = r^2 / 2 for |r| <= B, B (|r| - B/2) otherwise: the loss whose gradient is the
    clipped per-example gradient, so noiseless clipped GD converges to this point and DP-GD's
    intervals centre on it. Computed by iteratively reweighted least squares with weights
    min(1, B_i / |r_i|) (the clip factors) from the OLS start. **Non-private.**

    Examples
    --------
    >>> import numpy as np
    >>> X = np.ones((4, 1))
    >>> huber_target(X, [0.0, 0.0, 0.0, 10.0], clip=1.0).round(6).tolist()  # mean would be 2.5
    [0.333333]
    """
    X, y = check_X_y(X, y)
    clip = check_positive(clip, "clip")
    tol = check_positive(tol, "tol")
    max_iter = check_int(max_iter, "max_iter", low=1)
    x_norms = row_norms(X)
    theta = np.linalg.lstsq(X, y, rcond=None)[0]
    for _ in range(max_iter):
        weights = clip_factors(np.abs(y - X @ theta) * x_norms, clip)
        Xw = X * weights[:, None]
        new = np.linalg.lstsq(Xw.T @ X, Xw.T @ y, rcond=None)[0]
        done = np.max(np.abs(new - theta)) <= tol * (1.0 + np.max(np.abs(new)))
        theta = new
        if done:
            break
    return theta


@dataclass(frozen=True, slots=True, kw_only=True)
class DPGDRecommendation:
    """Hyperparameters for :func:`dpfit.algorithms.dp_gd` from public quantities.

    ``predicted_error`` is the predicted sqrt E||theta_T - theta_hat||^2 of the final
    iterate without clipping (isotropic approximation at mu_min).
    """

    clip: float
    step_size: float
    steps: int
    predicted_error: float


def recommend_dp_gd(
    n: int,
    p: int,
    *,
    rho: float,
    sigma: float = 1.0,
    feature_norm: float | None = None,
    mu_min: float = 1.0,
    mu_max: float = 2.0,
    theta_norm: float = 1.0,
    clip_multiplier: float = 5.0,
    max_steps: int = 10_000,
) -> DPGDRecommendation:
    """Choose clip, step size and steps for DP-GD from **public** knowledge (docs/brown2024.md).

    * clip = ``clip_multiplier`` * sigma * ``feature_norm``: the per-example gradient norm
      is |r_i| ||x_i|| with |r_i| ~ sigma at the optimum, so a multiplier of 5 makes
      clipping rare after burn-in (2(1 - Phi(5)) ~ 6e-7 for Gaussian residuals). The paper
      uses 5 sqrt(p) with unit-variance features (``feature_norm`` defaults to sqrt(p)).
    * step_size = 1 / (2 mu_max), with mu_max a public bound on the largest eigenvalue of
      X^T X / n (the theory's 1/4 for Sigma <= 2 I).
    * steps minimises E||theta_T - theta_hat||^2 for Sigma = mu_min I and ||theta_hat|| =
      R = ``theta_norm`` (Lemma 2.3): (1 - eta mu_min)^(2T) R^2 + eta^2 lambda_T^2 p
      (1 - (1 - eta mu_min)^(2T)) / (eta mu_min (2 - eta mu_min)), with lambda_T^2 =
      2 T clip^2 / (rho n^2) calibrated to T steps. This rule is dpfit's, not the
      paper's (which has T = c log(n rho / p) with an unspecified constant).

    Every input must be public (known without looking at the data); tuning any of them on
    the private data is itself a release that costs privacy.

    Examples
    --------
    >>> rec = recommend_dp_gd(10_000, 10, rho=0.015)
    >>> round(rec.clip, 3), rec.step_size, rec.steps
    (15.811, 0.25, 12)
    """
    n = check_int(n, "n", low=1)
    p = check_int(p, "p", low=1)
    rho = check_rho(rho)
    sigma = check_positive(sigma, "sigma")
    feature_norm = (
        math.sqrt(p) if feature_norm is None else check_positive(feature_norm, "feature_norm")
    )
    mu_min = check_positive(mu_min, "mu_min")
    mu_max = check_real(mu_max, "mu_max", low=mu_min, low_open=False, high=math.inf)
    theta_norm = check_real(theta_norm, "theta_norm", low=0.0, low_open=False, high=math.inf)
    clip_multiplier = check_positive(clip_multiplier, "clip_multiplier")
    max_steps = check_int(max_steps, "max_steps", low=1)
    clip = clip_multiplier * sigma * feature_norm
    step_size = 1.0 / (2.0 * mu_max)
    rate = step_size * mu_min
    T = np.arange(1, max_steps + 1)
    contraction = (1.0 - rate) ** (2 * T)
    # eta^2 lambda_T^2 with lambda_T^2 = T Delta^2 / (2 rho), Delta = mean_sensitivity (2 clip / n
    # plus its float-rounding relaxation), the calibration dp_gd itself uses.
    noise_var = step_size**2 * T * mean_sensitivity(clip, n) ** 2 / (2.0 * rho)
    noise = noise_var * p * (1.0 - contraction) / (rate * (2.0 - rate))
    bias = contraction * theta_norm**2
    best = int(np.argmin(bias + noise))
    return DPGDRecommendation(
        clip=clip,
        step_size=step_size,
        steps=int(T[best]),
        predicted_error=float(math.sqrt(bias[best] + noise[best])),
    )
