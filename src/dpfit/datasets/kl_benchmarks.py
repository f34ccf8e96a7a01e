"""Synthetic benchmarks B0-B7 for DP optimisation under the KL condition (Menart et al. 2024).

The paper has no experiments; these are dpfit's suite (docs/menart2024.md). Each generator returns a
:class:`KLBenchmark` with the data, the per-example loss with its public constants, the optimum F*
(computed non-privately to ~1e-12) and the KL parameters. Constants computed from the private data
(mu = lambda_min, m_p) are **oracle constants**: fine for benchmarking, flagged ``oracle=True``,
never acceptable in a private run (docs/menart2024.md, Privacy).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from ..losses import (
    KarimiPLLoss,
    LogisticLoss,
    Loss,
    LpLoss,
    SineLinkLoss,
    SquaredDistanceLoss,
    SquaredLoss,
    WelschLoss,
)

__all__ = [
    "KLBenchmark",
    "b0_mean",
    "b1_karimi",
    "b2_least_squares",
    "b3_overparameterised",
    "b4_logistic",
    "b5_lp",
    "b7_robust",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class KLBenchmark:
    """One benchmark instance: data, loss, optimum and KL parameters (gamma, kappa, F0).

    ``mu`` is the PL constant where kappa = 2 (else None); ``oracle`` says whether gamma was
    computed from the data (benchmarking only).
    """

    X: np.ndarray
    y: np.ndarray | None
    loss: Loss
    f_star: float
    gamma: float
    kappa: float
    loss_bound: float
    oracle: bool
    mu: float | None = None

    @property
    def data(self):
        """``(X, y)`` or ``X``, as :func:`dpfit.minimize` takes it."""
        return self.X if self.y is None else (self.X, self.y)

    def excess(self, theta: np.ndarray) -> float:
        """F(theta) - F* (non-private evaluation)."""
        return self.loss.value(theta, self.X, self.y) - self.f_star


def _sphere(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    Z = rng.standard_normal((n, d))
    return Z / np.linalg.norm(Z, axis=1, keepdims=True)


def _unit(rng: np.random.Generator, d: int, norm: float) -> np.ndarray:
    return norm * _sphere(rng, 1, d)[0]


def b0_mean(n: int, d: int, seed: int) -> KLBenchmark:
    """B0: x = c + z, ||c|| = 0.6, z uniform in the ball of radius 0.4; f = ||w - x||^2/2.

    1-strongly convex (mu = 1, gamma = 1/sqrt 2, kappa = 2); R = 2: L0 = 3, L1 = 1; F0 = 1/2.
    """
    rng = np.random.default_rng(seed)
    Z = _sphere(rng, n, d) * 0.4 * rng.uniform(size=(n, 1)) ** (1.0 / d)
    X = _unit(rng, d, 0.6) + Z
    f_star = 0.5 * float(np.mean(np.sum((X - X.mean(axis=0)) ** 2, axis=1)))
    loss = SquaredDistanceLoss(x_bound=1.0, radius=2.0)
    return KLBenchmark(
        X=X,
        y=None,
        loss=loss,
        f_star=f_star,
        gamma=1 / math.sqrt(2),
        kappa=2.0,
        loss_bound=0.5,
        oracle=False,
        mu=1.0,
    )


def _karimi_coordinate(x: np.ndarray, a: float) -> tuple[float, float]:
    """(min, PL constant) of F_j(w) = mean_i h(w - x_i), h = z^2 + a sin^2 z, on a fine grid.

    Closed form F_j(w) = (w - xbar)^2 + var + a/2 - (a/2) A cos(2(w - phi)) (benchmark B1).
    """
    xbar, var = float(x.mean()), float(x.var())
    m = np.mean(np.exp(2j * x))
    A, phi = float(abs(m)), float(np.angle(m) / 2)
    grid = np.linspace(xbar - 12, xbar + 12, 200_001)

    def f(w):
        return (w - xbar) ** 2 + var + a / 2 - (a / 2) * A * np.cos(2 * (w - phi))

    def df(w):
        return 2 * (w - xbar) + a * A * np.sin(2 * (w - phi))

    w0 = grid[np.argmin(f(grid))]
    w_star = optimize.brentq(df, w0 - 1e-3, w0 + 1e-3) if df(w0 - 1e-3) < 0 < df(w0 + 1e-3) else w0
    f_star = float(f(w_star))
    gap = f(grid) - f_star
    keep = gap > 1e-9
    mu = float(np.min(df(grid[keep]) ** 2 / (2 * gap[keep])))
    return f_star, mu


def b1_karimi(n: int, d: int, seed: int) -> KLBenchmark:
    """B1: Karimi-type non-convex PL loss sum_j h(w_j - x_j), x_ij = theta_j + 0.3 u_ij.

    mu is certified per coordinate on a grid from the data (an **oracle** constant); the
    region ||w||_inf <= 2 with |x| <= 1.3 gives L0 = 7.53 sqrt(d), L1 = 8, F0 = d h(1.3).
    """
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, d) + 0.3 * rng.uniform(-1, 1, (n, d))
    loss = KarimiPLLoss(dim=d)
    parts = [_karimi_coordinate(X[:, j], 3.0) for j in range(d)]
    f_star = math.fsum(p[0] for p in parts)
    mu = min(p[1] for p in parts)
    F0 = d * (1.3**2 + 3 * math.sin(1.3) ** 2)
    return KLBenchmark(
        X=X,
        y=None,
        loss=loss,
        f_star=f_star,
        gamma=1 / math.sqrt(2 * mu),
        kappa=2.0,
        loss_bound=F0,
        oracle=True,
        mu=mu,
    )


def _linear_data(n: int, d: int, rng: np.random.Generator):
    X = _sphere(rng, n, d)
    w_true = _unit(rng, d, 1.0)
    return X, w_true


def b2_least_squares(n: int, d: int, seed: int) -> KLBenchmark:
    """B2: least squares, x on the sphere, y = <w, x> + clip(N(0, 0.1^2), +-0.3), ||w|| = 1.

    R = 2: L0 = 3.3, L1 = 1; mu = lambda_min(X^T X/n) (**oracle**); F0 = 1.3^2/2.
    """
    rng = np.random.default_rng(seed)
    X, w = _linear_data(n, d, rng)
    y = X @ w + np.clip(0.1 * rng.standard_normal(n), -0.3, 0.3)
    w_hat = np.linalg.lstsq(X, y, rcond=None)[0]
    mu = float(np.linalg.eigvalsh(X.T @ X / n)[0])
    loss = SquaredLoss(x_bound=1.0, y_bound=1.3, radius=2.0)
    return KLBenchmark(
        X=X,
        y=y,
        loss=loss,
        f_star=loss.value(w_hat, X, y),
        gamma=1 / math.sqrt(2 * mu),
        kappa=2.0,
        loss_bound=1.3**2 / 2,
        oracle=True,
        mu=mu,
    )


def b3_overparameterised(n: int, d: int, seed: int) -> KLBenchmark:
    """B3: f = (psi(<w,x>) - y)^2/2, psi(z) = z + 0.5 sin z, d > n, y = psi(<w_true, x>).

    Interpolation: F* = 0. PL* with mu = 0.25 lambda_min(X X^T)/n (**oracle**, a valid lower
    bound); R = 1: r_max = R + 2 gives L0 = 4.5, L1 = 3.75; F0 = sup y^2/2 <= 1.125.
    """
    rng = np.random.default_rng(seed)
    X, w = _linear_data(n, d, rng)
    z = X @ w
    y = z + 0.5 * np.sin(z)
    mu = 0.25 * float(np.linalg.eigvalsh(X @ X.T)[0]) / n
    loss = SineLinkLoss(amplitude=0.5, x_bound=1.0, y_bound=1.5, radius=1.0)
    return KLBenchmark(
        X=X,
        y=y,
        loss=loss,
        f_star=0.0,
        gamma=1 / math.sqrt(2 * mu),
        kappa=2.0,
        loss_bound=1.125,
        oracle=True,
        mu=mu,
    )


def b4_logistic(n: int, d: int, seed: int, *, l2: float, radius: float = 2.0) -> KLBenchmark:
    """B4: ridge logistic regression, y = sign(<w_true, x>) flipped w.p. 0.1.

    lam-strongly convex: mu = lam, gamma = 1/sqrt(2 lam); L1 = 1/4 + lam, L0 = 1 + lam R;
    F0 = ln 2 (public: F(0) = ln 2 and F* >= 0).
    """
    rng = np.random.default_rng(seed)
    X, w = _linear_data(n, d, rng)
    y = np.sign(X @ w)
    y[y == 0] = 1.0
    y[rng.uniform(size=n) < 0.1] *= -1
    loss = LogisticLoss(l2=l2, x_bound=1.0, radius=radius)
    res = optimize.minimize(
        lambda t: loss.value(t, X, y),
        np.zeros(d),
        jac=lambda t: loss.grad(t, X, y),
        method="L-BFGS-B",
        options={"ftol": 1e-15, "gtol": 1e-13, "maxiter": 10_000},
    )
    return KLBenchmark(
        X=X,
        y=y,
        loss=loss,
        f_star=float(res.fun),
        gamma=1 / math.sqrt(2 * l2),
        kappa=2.0,
        loss_bound=math.log(2),
        oracle=False,
        mu=l2,
    )


def b5_lp(n: int, d: int, seed: int, *, p: float) -> KLBenchmark:
    """B5/B6: realisable l_p regression, y = <w*, x>, ||w*|| = 0.5, x on the sphere.

    KL with kappa = p/(p-1) and gamma = p^(-(p-1)/p) m_p^(-1/p), m_p = min_u mean |<u,x>|^p,
    lower-bounded by the certificate lambda_min(X^T X/n)^(p/2) (p >= 2) or lambda_min (p <= 2)
    (**oracle**; an under-estimate of m_p only over-estimates gamma). R = 1: L0 = 1.5^(p-1);
    F0 = 0.5^p / p; F* = 0.
    """
    rng = np.random.default_rng(seed)
    X = _sphere(rng, n, d)
    y = X @ _unit(rng, d, 0.5)
    lam = float(np.linalg.eigvalsh(X.T @ X / n)[0])
    m_p = lam ** (p / 2) if p >= 2 else lam
    loss = LpLoss(p, x_bound=1.0, y_bound=0.5, radius=1.0)
    return KLBenchmark(
        X=X,
        y=y,
        loss=loss,
        f_star=0.0,
        gamma=p ** (-(p - 1) / p) * m_p ** (-1 / p),
        kappa=p / (p - 1),
        loss_bound=0.5**p / p,
        oracle=True,
    )


def b7_robust(n: int, d: int, seed: int, *, outliers: float = 0.2) -> KLBenchmark:
    """B7: Welsch loss 1 - exp(-r^2/2) on B2's data with 20% labels replaced by U[-10, 10].

    No KL condition (stationarity only): gamma/kappa are placeholders (NaN), F* unknown (NaN);
    L0 = exp(-1/2), L1 = 1, F0 = 1.
    """
    rng = np.random.default_rng(seed)
    X, w = _linear_data(n, d, rng)
    y = X @ w + np.clip(0.1 * rng.standard_normal(n), -0.3, 0.3)
    bad = rng.uniform(size=n) < outliers
    y[bad] = rng.uniform(-10, 10, int(bad.sum()))
    return KLBenchmark(
        X=X,
        y=y,
        loss=WelschLoss(scale=1.0),
        f_star=math.nan,
        gamma=math.nan,
        kappa=math.nan,
        loss_bound=1.0,
        oracle=False,
    )
