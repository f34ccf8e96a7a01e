"""Rates and theorem bounds of DP optimisation under the KL condition (Menart et al. 2024).

KL condition (paper eq. 1): F(w) - F* <= gamma^kappa ||grad F(w)||^kappa; PL is kappa = 2.
The O-tilde rates (Thms 1, 2, 4, 5) in terms of the effective sample size n sqrt(rho):

* KL-Spider (Thm 1, kappa in [1, 2]) and the proximal point method (Thm 2, kappa >= 2):
  (sqrt(d) / (n sqrt rho))^kappa;
* adaptive noisy GD (Thm 4, kappa in [1, 2]):
  (sqrt(d) / (n sqrt rho))^(2 kappa/(4 - kappa)) + (1 / (n sqrt rho))^(kappa/2);
* stationarity without KL (Thm 5): min{sqrt(F0 L1/T), (L0 sqrt(F0 L1 d)/(n sqrt rho))^(1/2)}
  + L0 sqrt(ell) / (sqrt(n) rho^(1/4)).

Where the paper hides constants (Thms 2, 4, 5) they are reported as 1 ("up to constant").
"""

from __future__ import annotations

import math

from .._validation import check_int, check_positive, check_real
from .kl import ProximalSchedule, SpiderSchedule

__all__ = [
    "adaptive_gd_bound",
    "gamma_from_pl",
    "kl_rate",
    "noisy_gd_steps",
    "proximal_bound",
    "spider_bound",
    "stationarity_bound",
]


def gamma_from_pl(mu: float) -> float:
    """gamma of the (gamma, 2)-KL form of mu-PL, (1/2)||grad F||^2 >= mu (F - F*): 1/sqrt(2 mu)."""
    return 1.0 / math.sqrt(2.0 * check_positive(mu, "mu"))


def kl_rate(method: str, *, n: int, dim: int, rho: float, kappa: float) -> float:
    """The O-tilde excess-risk rate of ``method`` ("spider", "proximal" or "adaptive").

    Examples
    --------
    >>> kl_rate("spider", n=1000, dim=10, rho=1.0, kappa=2.0)
    1e-05
    """
    n = check_int(n, "n", low=1)
    dim = check_int(dim, "dim", low=1)
    eff = n * math.sqrt(check_positive(rho, "rho"))
    kappa = check_real(kappa, "kappa", low=1.0, high=math.inf, low_open=False)
    if method in ("spider", "proximal"):
        return (math.sqrt(dim) / eff) ** kappa
    if method == "adaptive":
        return (math.sqrt(dim) / eff) ** (2 * kappa / (4 - kappa)) + (1.0 / eff) ** (kappa / 2)
    raise ValueError(f"method must be one of ['adaptive', 'proximal', 'spider'], got {method!r}")


def spider_bound(schedule: SpiderSchedule) -> float:
    """Thm 1: excess <= Phi_K = the schedule's floor, w.p. 1 - beta (explicit constants).

    Valid for the ``"theory"`` preset; for ``"practical"`` the floor still bounds the noise
    (Laurent-Massart), but c_K < 64 may outrun the guaranteed descent (docs/menart2024.md,
    Departures).
    """
    return schedule.floor


def proximal_bound(schedule: ProximalSchedule, *, gamma: float, kappa: float, lipschitz: float):
    """Thm 2 (constant 1, "up to constant"):
    (gamma L0 sqrt(T d ln(n^2 ln^2(1/beta') / (d beta'))) / (n sqrt rho))^kappa, capped at F0."""
    s = schedule
    b = s.fail_prob_step
    log_term = max(math.log(s.n**2 * math.log(1.0 / b) ** 2 / (s.dim * b)), 1.0)
    base = gamma * lipschitz * math.sqrt(max(s.T, 1) * s.dim * log_term)
    return min((base / (s.n * math.sqrt(s.rho))) ** kappa, s.loss_bound)


def adaptive_gd_bound(
    *,
    n: int,
    dim: int,
    rho: float,
    gamma: float,
    kappa: float,
    lipschitz: float,
    smoothness: float,
    loss_bound: float,
    fail_prob: float = 0.05,
) -> float:
    """Thm 4 (constants 1, "up to constant"), kappa in [1, 2], w.p. 1 - 2 beta.

    p_max = (1 + 8 gamma^2 L1)[ln F0 + (2 kappa/(4-kappa)) ln(n sqrt(rho)/(gamma L0))];
    bound = (gamma L0 sqrt(d ell p_max)/(n sqrt rho))^(2 kappa/(4-kappa))
          + (max(gamma^2, 1) L0^2 ell / (min(L1, 1) n sqrt rho))^(kappa/2)
          + (p_max / (n sqrt rho))^(kappa/(2-kappa))   [0 for kappa = 2 if p_max < n sqrt rho].
    """
    n, dim = check_int(n, "n", low=1), check_int(dim, "dim", low=1)
    rho, gamma = check_positive(rho, "rho"), check_positive(gamma, "gamma")
    kappa = check_real(kappa, "kappa", low=1.0, high=2.0, low_open=False, high_open=False)
    L0, L1 = check_positive(lipschitz, "lipschitz"), check_positive(smoothness, "smoothness")
    F0 = check_positive(loss_bound, "loss_bound")
    beta = check_real(fail_prob, "fail_prob", low=0.0, high=1.0)
    eff = n * math.sqrt(rho)
    ell = max(math.log(eff / beta), 1.0)
    e = 2 * kappa / (4 - kappa)
    p_max = max((1 + 8 * gamma**2 * L1) * (math.log(F0) + e * math.log(eff / (gamma * L0))), 1.0)
    first = (gamma * L0 * math.sqrt(dim * ell * p_max) / eff) ** e
    second = (max(gamma**2, 1.0) * L0**2 * ell / (min(L1, 1.0) * eff)) ** (kappa / 2)
    if kappa < 2:
        third = (p_max / eff) ** (kappa / (2 - kappa))
    else:
        third = 0.0 if p_max < eff else math.inf
    return first + second + third


def stationarity_bound(
    *,
    n: int,
    dim: int,
    rho: float,
    lipschitz: float,
    smoothness: float,
    loss_bound: float,
    steps: int,
    fail_prob: float = 0.05,
) -> float:
    """Thm 5 (constant 1): gradient-norm bound of adaptive GD with index selection.

    min{sqrt(F0 L1 / T), (L0 sqrt(F0 L1 d) / (n sqrt rho))^(1/2)}
    + L0 sqrt(ell) / (sqrt(n) rho^(1/4)), with T the realised number of steps and
    ell = max(ln(n sqrt(rho)/beta), 1).
    """
    n, dim = check_int(n, "n", low=1), check_int(dim, "dim", low=1)
    rho = check_positive(rho, "rho")
    L0, L1 = check_positive(lipschitz, "lipschitz"), check_positive(smoothness, "smoothness")
    F0 = check_positive(loss_bound, "loss_bound")
    T = check_int(steps, "steps", low=1)
    beta = check_real(fail_prob, "fail_prob", low=0.0, high=1.0)
    eff = n * math.sqrt(rho)
    ell = max(math.log(eff / beta), 1.0)
    first = min(math.sqrt(F0 * L1 / T), math.sqrt(L0 * math.sqrt(F0 * L1 * dim) / eff))
    return first + L0 * math.sqrt(ell) / (math.sqrt(n) * rho**0.25)


def noisy_gd_steps(*, smoothness: float, strong_convexity: float, n: int) -> int:
    """The baseline's step count T = ceil((L1/mu) ln n); mu is an oracle constant.

    The noisy-GD baseline of the benchmarks in docs/menart2024.md.
    """
    L1 = check_positive(smoothness, "smoothness")
    mu = check_positive(strong_convexity, "strong_convexity")
    return max(1, math.ceil(L1 / mu * math.log(check_int(n, "n", low=2))))
