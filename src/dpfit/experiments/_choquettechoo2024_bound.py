"""The bound (10) of Theorem 3.1 (Choquette-Choo et al. 2024) as a second-order cone program.

For a mu-strongly convex, L-smooth F, G-Lipschitz losses and sigma_sgd = 0, Theorem 3.1 bounds
the asymptotic suboptimality of noisy gradient descent with step eta and noise coefficients B by

    F_inf <= inf_{psi in C(eta, mu, L)} (L d / 2 pi rho) int G^2 gamma_inf(B)^2 |B(w)|^2 psi(w) dw,

where gamma_inf(B)^2 = (1 / 2 pi) int |B(w)|^-2 dw is the limiting single-participation
sensitivity (eq. 5; Parseval on the coefficients of B^-1). Theorem E.1 describes C: psi >= 0 is
feasible when a Zames-Falb multiplier Lambda makes the 2 x 2 Hermitian matrix

    N(w) = diag(-eta^2, psi(w)) - A(w)^* Mt(w) A(w),  A = [[eta, 0], [1 - e^{iw}, -eta]],
    Mt = [[-mu L (Lambda + Lambda^*), mu Lambda + L Lambda^*],
          [mu Lambda^* + L Lambda, -(Lambda + Lambda^*)]]

positive semidefinite at every w (eq. 93). Following Heath & Wills (2005), whom the proof cites,
the multiplier is Lambda(w) = lambda_0 - sum_{0 < |t| <= T_max} lambda_t e^{-iwt} with all
lambda >= 0 and sum_{t != 0} lambda_t <= lambda_0 (the paper's sum_t lambda_t <= 2 lambda_0).
The off-diagonal weights enter with a minus sign: that is the multiplier for which the integral
quadratic constraint holds for gradients of convex functions (a rearrangement inequality); with
a plus sign it fails for some non-quadratic F. A 2 x 2 matrix [[a, c], [c^*, b]] is PSD iff
||(2 Re c, 2 Im c, a - b)|| <= a + b, so on a frequency grid the feasibility set is a
second-order cone (the paper's discretisation, Section 3). B, psi and the multiplier have real
coefficients, so N(-w) is the conjugate of N(w): the grid covers [0, pi] only.

The grid is geometric in w from eta mu / 100 to pi (cell midpoints, cell widths as quadrature
weights) rather than uniform: the optimal psi peaks at w = 0 with width eta mu = 1 / kappa, and
a uniform grid of a few hundred points misses that peak for kappa above about 100 (DP-SGD's
bound then stops growing; docs/choquettechoo2024.md shows the effect). Each psi and the second
row and column of N are rescaled by the DP-SGD profile eta^4 / |e^{iw} - (1 - eta mu)|^2 (a
congruence, so feasibility is unchanged), which keeps the cone program well conditioned up to
kappa = 1000.

"Optimized" alternates the two convex steps of Section 3: psi for fixed B (this program) and B
for fixed psi, where Cauchy-Schwarz gives |B|^2 proportional to psi^{-1/2} and the value
(L d / pi^2 rho) (int_0^pi psi^{1/2})^2 (both integrals over [0, pi]).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..theory.ftrl import gamma_inf_squared

__all__: list[str] = []

#: Stop the alternation when one round improves the bound by less than this fraction.
RELATIVE_IMPROVEMENT = 1e-4
MAX_ROUNDS = 50
#: A solve CLARABEL reports as only "almost solved" (cvxpy's ``optimal_inaccurate``: its
#: reduced tolerances met, the full ones not) is accepted when every constraint of the program
#: holds to this absolute violation, checked here with cvxpy's ``Constraint.violation``. The
#: program is scaled so that its matrices' entries are of order one, and the bound it feeds
#: is compared at tolerances of 1e-3 and wider; any psi that is feasible gives a valid bound
#: (the bound is an infimum over feasible psi), so feasibility is what must be checked.
FEASIBILITY_TOLERANCE = 1e-3


def _cvxpy() -> Any:
    try:
        import cvxpy
    except ImportError as exc:  # pragma: no cover - depends on the optional extra
        raise ImportError(
            "the Theorem 3.1 bound (Figure 3) is a cone program solved with cvxpy and CLARABEL: "
            "pip install 'dpfit[convex]'"
        ) from exc
    return cvxpy


def frequency_grid(points: int, eta_mu: float) -> tuple[np.ndarray, np.ndarray]:
    """Midpoints and widths of ``points`` cells covering [0, pi], geometric from eta mu / 100."""
    edges = np.concatenate(([0.0], np.geomspace(eta_mu / 100.0, math.pi, points)))
    return 0.5 * (edges[1:] + edges[:-1]), np.diff(edges)


@dataclass(frozen=True, slots=True)
class _PsiProgram:
    """min_psi sum_j weight_j psi_j over the discretised C(eta, mu, L); weights a parameter."""

    problem: Any
    psi: Any
    weight: Any
    profile: np.ndarray

    def solve(self, weights: np.ndarray) -> tuple[np.ndarray, float]:
        """The optimal psi on the grid and sum_j weights_j psi_j."""
        cp = _cvxpy()
        self.weight.value = weights * self.profile
        with warnings.catch_warnings():  # cvxpy's "may be inaccurate": checked by _accepted
            warnings.filterwarnings("ignore", "Solution may be inaccurate", UserWarning)
            self.problem.solve(solver=cp.CLARABEL)
        if not _accepted(self.problem, cp):
            raise RuntimeError(f"CLARABEL did not solve the psi program: {self.problem.status}")
        psi = np.maximum(self.psi.value, 0.0) * self.profile
        return psi, float(self.problem.value)


def _accepted(problem: Any, cp: Any) -> bool:
    """Whether a solve is usable: optimal, or almost optimal with every constraint checked to
    :data:`FEASIBILITY_TOLERANCE` (CLARABEL 0.11 reports the kappa = 1 program almost solved,
    0.10 solved it; the two values differ by 3e-5 relative)."""
    if problem.status == cp.OPTIMAL:
        return True
    if problem.status != cp.OPTIMAL_INACCURATE:
        return False
    worst = max(float(np.max(c.violation())) for c in problem.constraints)
    return worst <= FEASIBILITY_TOLERANCE


def _psi_program(eta: float, mu: float, smooth: float, w: np.ndarray, t_max: int) -> _PsiProgram:
    """The cone program of eq. (93) on the grid ``w`` with multiplier taps |t| <= t_max."""
    cp = _cvxpy()
    t = np.arange(1, t_max + 1)
    cos, sin = np.cos(np.outer(w, t)), np.sin(np.outer(w, t))
    lam0 = cp.Variable(nonneg=True)
    ahead, behind = cp.Variable(t_max, nonneg=True), cp.Variable(t_max, nonneg=True)
    psi = cp.Variable(w.size, nonneg=True)
    weight = cp.Parameter(w.size, nonneg=True)
    # Lambda = lam0 - sum_t (ahead_t e^{-iwt} + behind_t e^{iwt}), scaled by 1 / (mu L) (its
    # size where N11 >= 0 binds at w = 0).
    scale = 1.0 / (mu * smooth)
    re_lam = scale * (lam0 - cos @ ahead - cos @ behind)
    im_lam = scale * (sin @ ahead - sin @ behind)
    profile = eta**4 / np.abs(np.exp(1j * w) - (1.0 - eta * mu)) ** 2
    # Mt = [[p, q], [q^*, s]] with p = -2 mu L Re Lambda, s = -2 Re Lambda, q = mu Lambda + L
    # Lambda^*; a = 1 - e^{iw}. Then N11 = -eta^2 - eta^2 p - 2 eta Re(q a) - s |a|^2,
    # N22 = psi - eta^2 s and N12 = eta^2 q + eta s a^*.
    re_q, im_q = (mu + smooth) * re_lam, (mu - smooth) * im_lam
    re_a, im_a = 1.0 - np.cos(w), -np.sin(w)
    s = -2.0 * re_lam
    n11 = (
        -(eta**2)
        + 2.0 * eta**2 * mu * smooth * re_lam
        - 2.0 * eta * (cp.multiply(re_a, re_q) - cp.multiply(im_a, im_q))
        - cp.multiply(re_a**2 + im_a**2, s)
    )
    root = 1.0 / np.sqrt(profile)  # congruence diag(1, profile^-1/2): psi is in profile units
    n22 = psi - cp.multiply(eta**2 / profile, s)
    re12 = cp.multiply(root, eta**2 * re_q + eta * cp.multiply(re_a, s))
    im12 = cp.multiply(root, eta**2 * im_q - eta * cp.multiply(im_a, s))
    constraints = [
        cp.SOC(n11 + n22, cp.vstack([2.0 * re12, 2.0 * im12, n11 - n22]), axis=0),
        cp.sum(ahead) + cp.sum(behind) <= lam0,
    ]
    problem = cp.Problem(cp.Minimize(weight @ psi), constraints)
    return _PsiProgram(problem=problem, psi=psi, weight=weight, profile=profile)


def theorem31_bounds(
    kappa: float,
    *,
    points: int,
    t_max: int,
    smooth: float = 1.0,
    rho: float = 1.0,
    nu: float | None = None,
) -> dict[str, float]:
    """Bound (10) at L = ``smooth``, mu = L / kappa, eta = 1 / L, G = 1, d = 1, sigma_sgd = 0.

    Returns the bound for DP-SGD (B = 1), nu-DP-FTRL (|B|^2 = |1 - (1 - nu) e^{iw}|, exact
    gamma_inf^2 = (2 / pi) K(1 - nu); ``nu`` defaults to eta mu = 1 / kappa, the damping the
    paper pairs with the step size for linear regression) and "Optimized" (the alternation
    started from nu-DP-FTRL's psi; the best value it reached), the number of
    alternation rounds, and ``quadratic``: (L / 2) E||theta - theta*||^2 of DP-SGD on the
    1-D quadratic with curvature mu, which the proof's chain F_inf <= (L / 2) E||theta -
    theta*||^2 <= bound must stay above (a validity check of the program).
    """
    mu, eta = smooth / kappa, 1.0 / smooth
    nu = eta * mu if nu is None else nu
    w, width = frequency_grid(points, eta * mu)
    program = _psi_program(eta, mu, smooth, w, t_max)
    const = smooth / (math.pi * rho)  # (L d / 2 pi) x 2: the grid covers half of [-pi, pi]

    _, dpsgd = program.solve(width)
    b2 = np.sqrt(1.0 + (1.0 - nu) ** 2 - 2.0 * (1.0 - nu) * np.cos(w))
    psi, nu_value = program.solve(width * gamma_inf_squared(nu) * b2)
    best, rounds = nu_value, 0
    while rounds < MAX_ROUNDS:
        rounds += 1
        b2 = 1.0 / np.sqrt(np.maximum(psi, psi.max() * 1e-14))  # |B|^2 ~ psi^{-1/2}
        gamma2 = float(width @ (1.0 / b2)) / math.pi
        psi, value = program.solve(width * gamma2 * b2)
        improved = best - value
        best = min(best, value)
        if improved < RELATIVE_IMPROVEMENT * best:
            break
    return {
        "dpsgd": const * dpsgd,
        "nu_dpftrl": const * nu_value,
        "optimized": const * best,
        "rounds": float(rounds),
        "nu": nu,
        "quadratic": smooth / 2.0 * eta / (mu * (2.0 - eta * mu)) / rho,
    }
