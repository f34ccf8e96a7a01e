"""Losses of generalised-linear form f(theta; x, y) = phi(<theta, x>, y) + (l2/2)||theta||^2.

Their per-example gradients are phi'(z_i, y_i) x_i + l2 theta with z_i = <theta, x_i>, so one
matrix product gives all n of them. Constants are derived from public bounds (never from the
data): ``x_bound`` >= ||x||, ``y_bound`` >= |y| and ``radius`` >= ||theta|| on the region
the optimiser explores, so |z| <= radius * x_bound.
"""

from __future__ import annotations

import abc

import numpy as np

from .._validation import check_positive, check_real
from .base import Loss

__all__ = ["GLMLoss", "public_bounds"]


def public_bounds(x_bound: float, y_bound: float, radius: float) -> tuple[float, float, float]:
    """Validate the public bounds (x_bound > 0, y_bound >= 0, radius > 0) and return them."""
    return (
        check_positive(x_bound, "x_bound"),
        check_real(y_bound, "y_bound", low=0.0, low_open=False, high=np.inf),
        check_positive(radius, "radius"),
    )


class GLMLoss(Loss):
    """Base class: subclasses define ``_phi(z, y)`` and its derivative ``_dphi(z, y)`` in z.

    Parameters
    ----------
    l2 : float, default=0
        Ridge coefficient lambda >= 0; adds lambda * radius to L0 and lambda to L1.
    lipschitz, smoothness, weak_convexity : float
        Constants of the unregularised part phi (the l2 term is added here).
    radius : float
        Region radius, used for the l2 term's contribution to L0.
    """

    def __init__(
        self,
        *,
        l2: float = 0.0,
        radius: float,
        lipschitz: float,
        smoothness: float | None,
        weak_convexity: float | None,
    ) -> None:
        self.l2 = check_real(l2, "l2", low=0.0, low_open=False, high=np.inf)
        super().__init__(
            lipschitz=lipschitz + self.l2 * radius,
            smoothness=None if smoothness is None else smoothness + self.l2,
            weak_convexity=weak_convexity,
        )

    @abc.abstractmethod
    def _phi(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Per-example loss as a function of the margin z = <theta, x>."""

    @abc.abstractmethod
    def _dphi(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Derivative of ``_phi`` in z."""

    def per_example_values(self, theta, X, y):
        z = X @ theta
        return self._phi(z, y) + 0.5 * self.l2 * float(theta @ theta)

    def per_example_grads(self, theta, X, y):
        z = X @ theta
        G = self._dphi(z, y)[:, None] * X
        if self.l2:
            G += self.l2 * theta
        return G
