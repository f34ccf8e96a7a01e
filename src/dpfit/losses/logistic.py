"""Regularised logistic loss f = log(1 + exp(-y <theta, x>)) + (l2/2)||theta||^2.

Labels are +-1 (any y in [-1, 1] keeps the constants). |phi'| <= 1 and phi'' <= 1/4, so
L0 = B + l2 R and L1 = B^2/4 + l2; with l2 > 0 it is l2-strongly convex, hence PL with
gamma = 1/sqrt(2 l2) (Menart et al. 2024; benchmark B4).
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from .glm import GLMLoss, public_bounds

__all__ = ["LogisticLoss"]


class LogisticLoss(GLMLoss):
    """Logistic loss with labels in {-1, +1} and an optional ridge term.

    Parameters
    ----------
    l2 : float, default=0
        Ridge coefficient lambda (the loss is then lambda-strongly convex).
    x_bound : float, default=1
        Public bound on ||x||.
    radius : float, default=1
        Region radius for the ridge term's gradient (irrelevant when l2 = 0).
    """

    def __init__(self, *, l2: float = 0.0, x_bound: float = 1.0, radius: float = 1.0) -> None:
        B, _, R = public_bounds(x_bound, 1.0, radius)
        super().__init__(l2=l2, radius=R, lipschitz=B, smoothness=B * B / 4.0, weak_convexity=0.0)

    def _phi(self, z, y):
        return np.logaddexp(0.0, -y * z)

    def _dphi(self, z, y):
        return -y * expit(-y * z)
