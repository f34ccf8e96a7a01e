"""Huber regression loss: quadratic for residuals within ``delta``, linear beyond.

phi(r) = r^2/2 for |r| <= delta, else delta (|r| - delta/2), with r = <theta, x> - y.
|phi'| = |clip(r, -delta, delta)| <= delta, so L0 = delta B holds on all of R^p (no radius
needed) and L1 = B^2; convex.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_positive
from .glm import GLMLoss, public_bounds

__all__ = ["HuberLoss"]


class HuberLoss(GLMLoss):
    """Huber loss with threshold ``delta`` (globally Lipschitz).

    Parameters
    ----------
    delta : float, default=1
        Residual threshold between the quadratic and the linear part.
    x_bound : float, default=1
        Public bound on ||x||.
    l2 : float, default=0
        Ridge coefficient; its L0 term uses ``radius``.
    radius : float, default=1
        Region radius (only for the ridge term).
    """

    def __init__(
        self, *, delta: float = 1.0, x_bound: float = 1.0, l2: float = 0.0, radius: float = 1.0
    ) -> None:
        self.delta = check_positive(delta, "delta")
        B, _, R = public_bounds(x_bound, 0.0, radius)
        super().__init__(
            l2=l2, radius=R, lipschitz=self.delta * B, smoothness=B * B, weak_convexity=0.0
        )

    def _phi(self, z, y):
        r = np.abs(z - y)
        return np.where(r <= self.delta, 0.5 * r * r, self.delta * (r - 0.5 * self.delta))

    def _dphi(self, z, y):
        return np.clip(z - y, -self.delta, self.delta)
