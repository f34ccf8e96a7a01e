"""Squared losses: least squares and the squared distance to a point (private mean).

* :class:`SquaredLoss`: f = (1/2)(<theta, x> - y)^2 (+ ridge), convex; L0 = B (R B + Y), L1 = B^2
  (Menart et al. 2024, benchmark B2 of docs/menart2024.md: R = 2, B = 1, Y = 1.3 gives 3.3).
* :class:`SquaredDistanceLoss`: f = (1/2)||theta - x||^2, 1-strongly convex (PL with
  gamma = 1/sqrt 2), minimised by the mean of x; L0 = R + B, L1 = 1 (benchmark B0).
"""

from __future__ import annotations

import numpy as np

from .._validation import check_positive
from .base import Loss
from .glm import GLMLoss, public_bounds

__all__ = ["SquaredDistanceLoss", "SquaredLoss"]


class SquaredLoss(GLMLoss):
    """Least squares f(theta; x, y) = (1/2)(<theta, x> - y)^2 + (l2/2)||theta||^2.

    Parameters
    ----------
    x_bound, y_bound, radius : float, default=1
        Public bounds ||x|| <= x_bound, |y| <= y_bound and ||theta|| <= radius on the region.
    l2 : float, default=0
        Ridge coefficient.
    """

    def __init__(
        self,
        *,
        x_bound: float = 1.0,
        y_bound: float = 1.0,
        radius: float = 1.0,
        l2: float = 0.0,
    ) -> None:
        B, Y, R = public_bounds(x_bound, y_bound, radius)
        super().__init__(
            l2=l2, radius=R, lipschitz=B * (R * B + Y), smoothness=B * B, weak_convexity=0.0
        )

    def _phi(self, z, y):
        return 0.5 * (z - y) ** 2

    def _dphi(self, z, y):
        return z - y


class SquaredDistanceLoss(Loss):
    """f(theta; x) = (1/2)||theta - x||^2 (no response): private mean estimation.

    Parameters
    ----------
    x_bound : float, default=1
        Public bound on ||x||.
    radius : float, default=2
        Region radius around 0 on which L0 = radius + x_bound holds.
    """

    supervised = False

    def __init__(self, *, x_bound: float = 1.0, radius: float = 2.0) -> None:
        B, R = check_positive(x_bound, "x_bound"), check_positive(radius, "radius")
        super().__init__(lipschitz=R + B, smoothness=1.0, weak_convexity=0.0)

    def per_example_values(self, theta, X, y=None):
        return 0.5 * np.sum((theta - X) ** 2, axis=1)

    def per_example_grads(self, theta, X, y=None):
        return theta - X
