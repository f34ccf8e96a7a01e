"""l_p regression f = (1/p)|<theta, x> - y|^p, p > 1 (convex).

On realisable data (y = <theta*, x>) the empirical loss satisfies the KL condition with
kappa = p/(p-1) and gamma = p^(-(p-1)/p) m_p^(-1/p), m_p = min_{||u||=1} mean_i |<u, x_i>|^p
(Menart et al. 2024; benchmarks B5 (p > 2, kappa < 2) and B6 (p < 2, kappa > 2)).
With residuals bounded by r = R B + Y on the region: L0 = B r^(p-1) and, for p >= 2,
L1 = (p-1) B^2 r^(p-2); for p < 2 the gradient is only Hoelder, so ``smoothness`` is None.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_real
from .glm import GLMLoss, public_bounds

__all__ = ["LpLoss"]


class LpLoss(GLMLoss):
    """(1/p)|residual|^p with exponent p > 1.

    Parameters
    ----------
    p : float
        Exponent, > 1.
    x_bound, y_bound, radius : float, default=1
        Public bounds ||x|| <= x_bound, |y| <= y_bound and ||theta|| <= radius on the region.
    """

    def __init__(
        self, p: float, *, x_bound: float = 1.0, y_bound: float = 1.0, radius: float = 1.0
    ) -> None:
        self.p = check_real(p, "p", low=1.0, high=np.inf)
        B, Y, R = public_bounds(x_bound, y_bound, radius)
        r = R * B + Y
        smooth = (self.p - 1.0) * B * B * r ** (self.p - 2.0) if self.p >= 2 else None
        super().__init__(
            radius=R, lipschitz=B * r ** (self.p - 1.0), smoothness=smooth, weak_convexity=0.0
        )

    def _phi(self, z, y):
        return np.abs(z - y) ** self.p / self.p

    def _dphi(self, z, y):
        r = z - y
        return np.sign(r) * np.abs(r) ** (self.p - 1.0)
