"""Anderson-Rubin tests and confidence sets from a released second-moment matrix.

Anderson & Rubin (1949) test H0: beta_e = b (the endogenous coefficients) without
estimating them: under H0 the structural error u = y - Xe b - W gamma is uncorrelated with
every instrument, so in the regression of y - Xe b on all instruments the excluded ones
Z2 have zero coefficients, **whatever the strength of the first stage**. Inverting the test
gives a confidence set that keeps its level under weak instruments (Staiger & Stock 1997;
Andrews, Stock & Sun 2019, sec. 5.1), where the Wald interval beta_hat +/- z se does not.

From the moments (:mod:`dpfit.inference.iv_identification`, notation there): with c the
vector that is 1 at y and -b at Xe, r its W-partialled version and g = M_Z2. r, the sampling
law under H0 is g ~ N(0, sigma^2 S / n) (homoskedastic errors; sigma^2 = r'Mr - g'S^-1 g, the
residual second moment after all instruments). The released g~ adds the moment noise,
first order g~ - g = K E_Z. r = A u with Cov = s^2 A A' (exact in closed form), which is
independent of the data and mean zero. The privacy-aware statistic therefore uses the sum
of the two variances:

    AR(b) = n g~' (sigma^2 S + n s^2 A A')^-1 g~,   AR(b) (n - K_z) / (n L) ~ F(L, n - K_z)

(the classical AR F statistic when s = 0, exact under normal errors; with noise the
F law is the normal approximation's small-sample form). Dropping the noise term makes the
set too short whenever the noise is not small against sigma^2 / n: with one weak instrument
at n = 2000 and rho = 1 it covers 0.75 of the time, and 0.944 with the noise term (the
``weak-iv-coverage`` study, docs/inference.md). The confidence set
{b : AR test accepts} is found for one endogenous regressor on the projective line
c(t) = cos t e_y - sin t e_x (b = tan t, both infinities one point), where AR is a smooth
function of t: a grid, refined around the 2SLS estimate and AR's minimiser, and root finding
at each sign change. It is an interval, the union of two rays, the whole line (the data do
not identify b), or empty (the overidentifying restrictions are rejected at every b).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy import optimize, stats

from .iv_identification import HypothesisTest, ReleasedMoments

__all__ = ["ar_set", "ar_statistic", "ar_test"]

#: Points of the uniform grid on the projective line, and of each refined window.
GRID = 2001
WINDOW = 201


def ar_statistic(m: ReleasedMoments, c: np.ndarray) -> float:
    """AR = n g~' (sigma^2 S + n s^2 A A')^-1 g~ for the hypothesis vector ``c`` (k,), which is
    1 at y and -b at the endogenous columns (any nonzero multiple gives the same value)."""
    r = m.partialled(c)
    g = m.matrix[m.excluded] @ r
    S = m.instrument_moment
    sigma2 = float(r @ m.matrix @ r - g @ np.linalg.solve(S, g))
    sigma2 = max(sigma2, _floor(m) * float(r @ r))  # noise can push it below 0
    A = m.noise_map(r)
    V = sigma2 * S + m.n * m.noise_std**2 * (A @ A.T)
    return float(m.n * g @ np.linalg.solve(V, g))


def ar_test(m: ReleasedMoments, b: np.ndarray) -> HypothesisTest:
    """The AR test of beta_e = ``b`` (endogenous coefficients in M's units), F(L, n - K_z)."""
    b = np.atleast_1d(np.asarray(b, dtype=np.float64))
    if b.shape != (len(m.endogenous),):
        raise ValueError(f"b must have one value per endogenous regressor ({len(m.endogenous)})")
    c = m.unit(m.y_idx)
    c[m.endogenous] -= b
    L, dof = len(m.excluded), m.n - len(m.z_idx)
    return HypothesisTest(
        name="Anderson-Rubin",
        statistic=ar_statistic(m, c) * dof / (m.n * L),
        dof=(float(L), float(dof)),
        distribution="F",
        null="the endogenous coefficients equal the values tested",
    )


def ar_set(m: ReleasedMoments, alpha: float, centre: float) -> list[tuple[float, float]]:
    """The level 1 - alpha AR confidence set of the one endogenous coefficient (M's units).

    A list of disjoint (low, high) intervals in increasing order, ends possibly infinite;
    ``centre`` (the 2SLS estimate) refines the grid where the set is narrow (module
    docstring).
    """
    if len(m.endogenous) != 1:
        raise ValueError(
            "the AR confidence set is computed for one endogenous regressor; with several, "
            "test joint values with ar_test"
        )
    L, dof = len(m.excluded), m.n - len(m.z_idx)
    critical = stats.f.isf(alpha, L, dof) * m.n * L / dof
    line = _line(m)

    def excess(t: float) -> float:
        return float(line(np.array([t]))[0]) - critical

    grid = np.linspace(-math.pi / 2, math.pi / 2, GRID)
    values = line(grid) - critical
    best = grid[int(np.argmin(values))]
    step = grid[1] - grid[0]
    lowest = optimize.minimize_scalar(excess, bounds=(best - step, best + step), method="bounded")
    extra = [t + np.linspace(-0.02, 0.02, WINDOW) for t in (math.atan(centre), float(lowest.x))]
    inside = (grid[0] < np.concatenate(extra)) & (np.concatenate(extra) < grid[-1])
    ts = np.concatenate([grid, np.concatenate(extra)[inside]])
    order = np.argsort(ts)
    ts = ts[order]
    values = np.concatenate([values, line(np.concatenate(extra)[inside]) - critical])[order]
    return _accepted(excess, ts, values)


def _line(m: ReleasedMoments) -> Callable[[np.ndarray], np.ndarray]:
    """AR(c) for c = cos t e_y - sin t e_x as a vectorised function of t, every piece
    precomputed: r, g and the noise map are linear in c, so r'Mr, g g' and A A' are
    quadratic forms in w = (cos t, -sin t)."""
    S = m.instrument_moment
    r = np.column_stack([m.partialled(m.unit(m.y_idx)), m.partialled(m.unit(m.endogenous[0]))])
    G = m.matrix[m.excluded] @ r
    total = r.T @ m.matrix @ r - G.T @ np.linalg.solve(S, G)
    floor = _floor(m) * (r.T @ r)
    A = [m.noise_map(r[:, 0]), m.noise_map(r[:, 1])]
    noise = m.n * m.noise_std**2 * np.array([[a @ b.T for b in A] for a in A])

    def statistic(t: np.ndarray) -> np.ndarray:
        w = np.stack([np.cos(t), -np.sin(t)], axis=-1)  # (N, 2)
        g = w @ G.T  # (N, L)
        sigma2 = np.maximum(_quadratic(w, total), _quadratic(w, floor))
        V = sigma2[:, None, None] * S + np.einsum("ni,nj,ijkl->nkl", w, w, noise)
        return m.n * np.einsum("nl,nl->n", g, np.linalg.solve(V, g[..., None])[..., 0])

    return statistic


def _floor(m: ReleasedMoments) -> float:
    """The least residual second moment per unit |r|^2: the noise s.d. (the release cannot
    resolve less), and a relative 1e-12 where there is no noise."""
    return max(m.noise_std, 1e-12)


def _quadratic(w: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """w_n' Q w_n for each row of w."""
    return np.einsum("ni,ij,nj->n", w, Q, w)


def _accepted(
    excess: Callable[[float], float], ts: np.ndarray, values: np.ndarray
) -> list[tuple[float, float]]:
    """The intervals of b = tan t where ``excess`` <= 0, from its values on the sorted grid
    ``ts`` spanning [-pi/2, pi/2] (whose two ends are one point, b = +/- infinity)."""
    accept = values <= 0.0
    if accept.all():
        return [(-math.inf, math.inf)]
    pieces, start = [], (-math.pi / 2 if accept[0] else None)
    for i in np.flatnonzero(accept[1:] != accept[:-1]) + 1:
        root = optimize.brentq(excess, ts[i - 1], ts[i], xtol=1e-12)
        if accept[i]:
            start = root
        else:
            pieces.append((start, root))
            start = None
    if start is not None:
        pieces.append((start, math.pi / 2))
    return [(_tan(a), _tan(b)) for a, b in pieces]


def _tan(t: float) -> float:
    """b = tan t, with the ends of the line infinite."""
    if t <= -math.pi / 2:
        return -math.inf
    if t >= math.pi / 2:
        return math.inf
    return math.tan(t)
