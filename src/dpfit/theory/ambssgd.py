"""Theory of DP-AMBSSGD (Varshney, Thakurta & Jain 2022): settings and bounds.

Parameter settings of Theorem 3.7, the computable risk bound of Lemma 3.11,
the side condition of Lemma 3.11 (with a warning when it fails), the noise multiplier for a
target (epsilon, delta) (Thm. 3.6; docs/varshney2022.md, "Privacy") and helpers for the
public constants of Gaussian designs. DP-SSGD's (Thm. 3.2, Lemma 3.5) are in
:mod:`dpfit.theory.ssgd`. Everything here is a function of public inputs only.

Notation (data model y = <x, w*> + z, H = E[x x^T], z independent of x, Sigma = sigma^2 H):

=====================  =========  ======================================================
name                   symbol     meaning
=====================  =========  ======================================================
``n``                  N          number of records (public)
``feature_scale``      R_x        smallest R with E[||x||^2 x x^T] <= R^2 H
``hessian_norm``       ||H||_2    largest eigenvalue of H
``min_eigenvalue``     mu         smallest eigenvalue of H
``condition_number``   kappa      ||H||_2 / mu
``eigenvalues``        spec(H)    all eigenvalues of H (for traces)
``signal_norm``        ||w*||_H   (or ||w*|| where stated)
``noise_std``          sigma      standard deviation of z
``tail_exponent``      a          tail condition exponent (1/2 sub-Gaussian)
``tail_constant``      K2         tail condition constant
``noise_multiplier``   alpha      noise std / sensitivity of every release
``steps``              T          iterations (blocks); ``steps_factor`` c1 in T = c1 kappa ln N
``batch_size``         b          gradient points per block
``stat_size``          s          DP-STAT points per block
``step_size``          eta        learning rate
=====================  =========  ======================================================
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike

from .._validation import (
    check_delta,
    check_epsilon,
    check_int,
    check_option,
    check_positive,
    user_stacklevel,
)
from ..exceptions import SideConditionWarning

__all__ = [
    "ALPHA_RULES",
    "AmbssgdSchedule",
    "ambssgd_risk_bound",
    "ambssgd_schedule",
    "ambssgd_side_condition",
    "check_ambssgd_side_condition",
    "gaussian_feature_scale",
    "gaussian_norm_bound",
    "noise_multiplier_for_epsilon",
    "residual_bound",
    "rho_for_epsilon",
]

#: Rules for alpha at a target (epsilon, delta) with rho = 1/alpha^2 (docs/varshney2022.md,
#: Departures, D10).
ALPHA_RULES = ("exact", "2sqrt", "sqrt8")


def noise_multiplier_for_epsilon(epsilon: float, delta: float, *, rule: str = "exact") -> float:
    """alpha such that ``1/alpha^2``-zCDP gives (epsilon, delta)-DP (Thm. 3.6).

    ``"exact"``: alpha = (sqrt(L + eps) + sqrt(L)) / eps, the exact inversion of the
    Bun-Steinke conversion eps = rho + 2 sqrt(rho L), L = ln(1/delta) (default;
    docs/varshney2022.md, D10);
    ``"2sqrt"``: 2 sqrt(L + eps) / eps; ``"sqrt8"``: sqrt(8 L) / eps (Thm. 3.7's value,
    sufficient when eps <= L). All three are valid; the last two are looser.

    Examples
    --------
    >>> round(noise_multiplier_for_epsilon(1.0, 1e-6), 3)
    7.566
    """
    eps = check_epsilon(epsilon)
    big_l = -math.log(check_delta(delta))
    rule = check_option(rule, "rule", ALPHA_RULES)
    if rule == "exact":
        return (math.sqrt(big_l + eps) + math.sqrt(big_l)) / eps
    if rule == "2sqrt":
        return 2.0 * math.sqrt(big_l + eps) / eps
    return math.sqrt(8.0 * big_l) / eps


def rho_for_epsilon(epsilon: float, delta: float, *, rule: str = "exact") -> float:
    """The rho to give DP-AMBSSGD for a target (epsilon, delta): 1 / alpha^2.

    It is the same in both accounting modes: ``"paper"`` (rho = 1/alpha^2) uses this alpha;
    ``"parallel"`` (rho = 1/(2 alpha'^2)) uses alpha' = alpha / sqrt(2) (docs/varshney2022.md,
    D13).
    """
    return 1.0 / noise_multiplier_for_epsilon(epsilon, delta, rule=rule) ** 2


@dataclass(frozen=True, slots=True, kw_only=True)
class AmbssgdSchedule:
    """The one-pass block schedule of DP-AMBSSGD (Thm. 3.7 settings; docs/varshney2022.md,
    Departures D6-D8 and D15).

    Block t holds the shuffled records ``[t (s+b), (t+1)(s+b))``: its first ``stat_size``
    feed DP-STAT, the next ``batch_size`` the gradient; ``leftover`` records are unused.
    """

    n: int
    steps: int
    stat_size: int
    batch_size: int
    step_size: float

    @property
    def block_size(self) -> int:
        """s + b records per block."""
        return self.stat_size + self.batch_size

    @property
    def leftover(self) -> int:
        """Records never read: n - T (s + b) < T."""
        return self.n - self.steps * self.block_size


def ambssgd_schedule(
    n: int,
    *,
    feature_scale: float,
    hessian_norm: float = 1.0,
    condition_number: float = 1.0,
    steps: int | None = None,
    steps_factor: float = 1.0,
    stat_fraction: float = 1.0 / 11.0,
    step_size: float | None = None,
) -> AmbssgdSchedule:
    """T, s, b and eta of DP-AMBSSGD from public inputs (Thm. 3.7; docs/varshney2022.md, D6-D8).

    T = max(2, 2 ceil(c1 kappa ln N / 2)) (even, so the tail average has T/2 iterates) unless
    ``steps`` is given; blk = floor(N / T), s = floor(blk * stat_fraction) (1/11: s = b/10),
    b = blk - s; eta = b / (R_x^2 + (b - 1) ||H||_2), the largest step of mini-batch SGD
    theory (Jain et al. 2018), unless ``step_size`` is given.

    Examples
    --------
    >>> s = ambssgd_schedule(2**20, feature_scale=6.0)
    >>> s.steps, s.stat_size, s.batch_size, s.leftover
    (14, 6808, 68090, 4)
    """
    n = check_int(n, "n", low=4)
    r_x = check_positive(feature_scale, "feature_scale")
    h_norm = check_positive(hessian_norm, "hessian_norm")
    kappa = check_positive(condition_number, "condition_number")
    if kappa < 1.0:
        raise ValueError(f"condition_number must be >= 1, got {kappa!r}")
    if steps is None:
        c1 = check_positive(steps_factor, "steps_factor")
        steps = max(2, 2 * math.ceil(c1 * kappa * math.log(n) / 2.0))
    else:
        steps = check_int(steps, "steps", low=2)
        if steps % 2:
            raise ValueError(f"steps must be even (tail average of T/2 iterates), got {steps}")
    frac = Fraction(check_positive(stat_fraction, "stat_fraction")).limit_denominator(10**6)
    if not frac < 1:
        raise ValueError(f"stat_fraction must be in (0, 1), got {stat_fraction!r}")
    blk = n // steps
    stat = blk * frac.numerator // frac.denominator
    batch = blk - stat
    if stat < 1 or batch < 1:
        raise ValueError(
            f"n={n} is too small for steps={steps} blocks with stat_fraction={stat_fraction!r}: "
            "each block needs at least one DP-STAT and one gradient record"
        )
    if step_size is None:
        step_size = batch / (r_x * r_x + (batch - 1) * h_norm)
    else:
        step_size = check_positive(step_size, "step_size")
    return AmbssgdSchedule(
        n=n, steps=steps, stat_size=stat, batch_size=batch, step_size=float(step_size)
    )


def gaussian_feature_scale(trace: float, hessian_norm: float, *, exact: bool = True) -> float:
    """R_x for x ~ N(0, H): sqrt(Tr H + 2 ||H||) exactly, or the paper's sqrt(Tr H) (D11).

    E[||x||^2 x x^T] = Tr(H) H + 2 H^2 <= (Tr H + 2 ||H||) H for Gaussian x.
    """
    tr = check_positive(trace, "trace")
    h_norm = check_positive(hessian_norm, "hessian_norm")
    return math.sqrt(tr + 2.0 * h_norm) if exact else math.sqrt(tr)


def residual_bound(
    feature_scale: float,
    signal_norm: float,
    noise_std: float,
    n: int,
    *,
    tail_exponent: float = 0.5,
    tail_constant: float = 1.0,
) -> float:
    """The paper's DP-STAT ceiling B = K2 R_x (||w*||_H + sigma) (ln N)^(2a) (Thm. 3.7, D12).

    An over-estimate (residuals do not scale with R_x), which is harmless: B is only the top
    of the search grid. Needs public upper bounds on ||w*||_H and sigma.
    """
    r_x = check_positive(feature_scale, "feature_scale")
    scale = _nonnegative(signal_norm, "signal_norm") + _nonnegative(noise_std, "noise_std")
    if not scale > 0:
        raise ValueError("signal_norm + noise_std must be > 0")
    a = check_positive(tail_exponent, "tail_exponent")
    k2 = check_positive(tail_constant, "tail_constant")
    return k2 * r_x * scale * math.log(check_int(n, "n", low=2)) ** (2.0 * a)


def gaussian_norm_bound(
    trace: float, hessian_norm: float, n: int, *, failure_prob: float = 1.0
) -> float:
    """A public high-probability bound on ||x|| for x ~ N(0, H): the clip multiplier of
    docs/varshney2022.md, D14.

    sqrt(Tr H) + sqrt(2 ||H|| ln(N / beta)) bounds all N norms with probability >= 1 - beta
    (Gaussian concentration of the 1-Lipschitz map x -> ||H^{1/2} g||). With the default
    beta = 1 it is the "practical" multiplier sqrt(d) + sqrt(2 ln N) for H = I.
    """
    tr = check_positive(trace, "trace")
    h_norm = check_positive(hessian_norm, "hessian_norm")
    beta = check_positive(failure_prob, "failure_prob")
    n = check_int(n, "n", low=1)
    return math.sqrt(tr) + math.sqrt(2.0 * h_norm * max(0.0, math.log(n / beta)))


def _nonnegative(value: float, name: str) -> float:
    v = float(value)
    if not (v >= 0 and math.isfinite(v)):
        raise ValueError(f"{name} must be finite and >= 0, got {value!r}")
    return v


def _spectrum(eigenvalues: ArrayLike) -> np.ndarray:
    lam = np.asarray(eigenvalues, dtype=np.float64).ravel()
    if lam.size == 0 or not np.all(np.isfinite(lam)) or not np.all(lam > 0):
        raise ValueError("eigenvalues must be a non-empty array of finite values > 0")
    return lam


def ambssgd_side_condition(
    n: int,
    *,
    steps: int,
    batch_size: int,
    step_size: float,
    noise_multiplier: float,
    feature_scale: float,
    eigenvalues: ArrayLike,
    tail_exponent: float = 0.5,
    tail_constant: float = 1.0,
) -> tuple[float, float]:
    """Both sides of Lemma 3.11's batch condition, b^2 >= 24 eta alpha^2 R_x^2 K2^2 kappa
    (ln N)^(4a) Tr(H) / mu (with b = N/T - s). Returns ``(lhs, rhs)``.

    It keeps the multiplicative noise of the adaptive clip contractive; for Gaussian data it
    reads about b >= 4.9 alpha d ln N.
    """
    lam = _spectrum(eigenvalues)
    mu, kappa = lam.min(), lam.max() / lam.min()
    check_int(steps, "steps", low=1)
    b = check_int(batch_size, "batch_size", low=1)
    log_n = math.log(check_int(n, "n", low=2))
    rhs = (
        24.0
        * check_positive(step_size, "step_size")
        * check_positive(noise_multiplier, "noise_multiplier") ** 2
        * check_positive(feature_scale, "feature_scale") ** 2
        * check_positive(tail_constant, "tail_constant") ** 2
        * kappa
        * log_n ** (4.0 * check_positive(tail_exponent, "tail_exponent"))
        * lam.sum()
        / mu
    )
    return float(b * b), float(rhs)


def check_ambssgd_side_condition(n: int, **settings: object) -> bool:
    """Warn (:class:`~dpfit.SideConditionWarning`) when Lemma 3.11's batch condition fails.

    Takes the arguments of :func:`ambssgd_side_condition`; returns whether it holds. The
    algorithm stays private either way; only the utility guarantee is lost.
    """
    lhs, rhs = ambssgd_side_condition(n, **settings)  # type: ignore[arg-type]
    if lhs < rhs:
        warnings.warn(
            f"Lemma 3.11's batch condition fails (b^2 = {lhs:.4g} < {rhs:.4g}): the adaptive "
            "clip's noise may not contract; use more records per block (smaller steps) or a "
            "larger epsilon",
            SideConditionWarning,
            stacklevel=user_stacklevel(),
        )
    return lhs >= rhs


def ambssgd_risk_bound(
    n: int,
    *,
    steps: int,
    batch_size: int,
    step_size: float,
    noise_multiplier: float,
    feature_scale: float,
    eigenvalues: ArrayLike,
    signal_norm: float,
    noise_std: float,
    tail_exponent: float = 0.5,
    tail_constant: float = 1.0,
) -> float:
    """Lemma 3.11's bound on the excess risk of DP-AMBSSGD's tail average (no clipping).

    [4 e^{-eta mu} / (eta^2 mu^2 T^2) + 96 alpha^2 K2^2 R_x^2 kappa (ln N)^{4a} Tr(H^-1)/(T b^2)]
    * [||w*||_H^2 e^{-eta mu T / 4} + (2 eta/(mu b)) Tr(H Sigma)
       + (24 eta alpha^2/(mu b^2)) K2^2 R_x^2 (ln N)^{4a} (sigma^2 + Delta^2) Tr(H)]
    + (8/(T b)) [Tr(H^-1 Sigma) + (12 alpha^2/b) K2^2 R_x^2 (ln N)^{4a} (sigma^2+Delta^2) Tr(H^-1)]

    with Sigma = sigma^2 H, N^{(eta mu/4) c1 kappa} = e^{eta mu T/4} (T = c1 kappa ln N) and
    Delta = (||w*||_H + sigma) / N^100 (computed in log space). ``signal_norm`` is ||w*||_H.
    Valid when no gradient is clipped and eta <= b / (R_x^2 + (b - 1) ||H||).
    """
    lam = _spectrum(eigenvalues)
    mu, kappa = lam.min(), lam.max() / lam.min()
    t = check_int(steps, "steps", low=1)
    b = check_int(batch_size, "batch_size", low=1)
    eta = check_positive(step_size, "step_size")
    alpha = check_positive(noise_multiplier, "noise_multiplier")
    w_h, sigma = _nonnegative(signal_norm, "signal_norm"), _nonnegative(noise_std, "noise_std")
    log_n = math.log(check_int(n, "n", low=2))
    k2r = (check_positive(tail_constant, "tail_constant") * feature_scale) ** 2
    polylog = log_n ** (4.0 * check_positive(tail_exponent, "tail_exponent"))
    delta_sq = math.exp(2.0 * (math.log(w_h + sigma) - 100.0 * log_n)) if w_h + sigma > 0 else 0.0
    s2 = sigma * sigma
    tr_h, tr_hinv, tr_h2 = lam.sum(), (1.0 / lam).sum(), (lam * lam).sum()
    first = 4.0 * math.exp(-eta * mu) / (eta * mu * t) ** 2 + 96.0 * alpha**2 * k2r * kappa * (
        polylog * tr_hinv / (t * b * b)
    )
    second = (
        w_h * w_h * math.exp(-eta * mu * t / 4.0)
        + 2.0 * eta / (mu * b) * s2 * tr_h2
        + 24.0 * eta * alpha**2 / (mu * b * b) * k2r * polylog * (s2 + delta_sq) * tr_h
    )
    third = (8.0 / (t * b)) * (
        s2 * lam.size + 12.0 * alpha**2 / b * k2r * polylog * (s2 + delta_sq) * tr_hinv
    )
    return float(first * second + third)
