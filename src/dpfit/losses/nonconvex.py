"""Non-convex losses with benign geometry (Menart et al. 2024; benchmarks B1, B3, B7).

* :class:`KarimiPLLoss`: f(theta; x) = sum_j h(theta_j - x_j), h(z) = z^2 + a sin^2 z
  (Karimi, Nutini & Schmidt 2016). Non-convex for a > 1 but PL: for a = 3 the 1-D constant
  is min h'^2/(2h) = 0.1755 (gamma = 1.69). h'' = 2 + 2a cos 2z lies in [2 - 2a, 2 + 2a].
* :class:`SineLinkLoss`: f = (1/2)(psi(<theta, x>) - y)^2 with psi(z) = z + a sin z, a < 1
  (psi' in [1-a, 1+a]); PL* in the over-parameterised regime d > n.
* :class:`WelschLoss`: f = 1 - exp(-(r/c)^2/2), bounded and smooth, for robust regression;
  no KL condition is claimed (stationarity only, Thm 5).
"""

from __future__ import annotations

import math

import numpy as np

from .._validation import check_int, check_positive, check_real
from .base import Loss
from .glm import GLMLoss, public_bounds

__all__ = ["KarimiPLLoss", "SineLinkLoss", "WelschLoss"]


def _max_abs_on_interval(func, half_width: float, derivative_bound: float) -> float:
    """A certified upper bound of max |func| on [-w, w]: grid maximum + L * spacing."""
    grid = np.linspace(-half_width, half_width, 200_001)
    return float(np.max(np.abs(func(grid)))) + derivative_bound * (grid[1] - grid[0])


class KarimiPLLoss(Loss):
    """f(theta; x) = sum_j [ (theta_j - x_j)^2 + a sin^2(theta_j - x_j) ] (no response).

    Parameters
    ----------
    dim : int
        Dimension d (L0 grows like sqrt(d)).
    amplitude : float, default=3
        a > 0; the loss is non-convex for a > 1.
    radius_inf, x_bound_inf : float, default=2 and 1.3
        Region ||theta||_inf <= radius_inf and data |x_j| <= x_bound_inf, so every coordinate
        argument z satisfies |z| <= radius_inf + x_bound_inf; L0 = sqrt(d) max |h'| there.
    """

    supervised = False

    def __init__(
        self,
        *,
        dim: int,
        amplitude: float = 3.0,
        radius_inf: float = 2.0,
        x_bound_inf: float = 1.3,
    ) -> None:
        self.dim = check_int(dim, "dim", low=1)
        self.amplitude = a = check_positive(amplitude, "amplitude")
        width = check_positive(radius_inf, "radius_inf") + check_positive(
            x_bound_inf, "x_bound_inf"
        )
        per_coord = _max_abs_on_interval(self._dh, width, 2.0 + 2.0 * a)
        super().__init__(
            lipschitz=math.sqrt(self.dim) * per_coord,
            smoothness=2.0 + 2.0 * a,
            weak_convexity=max(0.0, 2.0 * a - 2.0),
        )

    def _dh(self, z):
        return 2.0 * z + self.amplitude * np.sin(2.0 * z)

    def n_params(self, n_features: int) -> int:
        if int(n_features) != self.dim:
            raise ValueError(f"X must have dim = {self.dim} columns, got {n_features}")
        return self.dim

    def per_example_values(self, theta, X, y=None):
        Z = theta - X
        return np.sum(Z * Z + self.amplitude * np.sin(Z) ** 2, axis=1)

    def per_example_grads(self, theta, X, y=None):
        return self._dh(theta - X)


class SineLinkLoss(GLMLoss):
    """f = (1/2)(psi(<theta, x>) - y)^2 with the monotone link psi(z) = z + a sin z.

    With r_max = R B + a + Y bounding the residual on the region: L0 = (1+a) r_max B,
    L1 = ((1+a)^2 + a r_max) B^2 and weak convexity a r_max B^2 (the Hessian is
    (psi'^2 + (psi - y) psi'') x x^T).

    Parameters
    ----------
    amplitude : float, default=0.5
        a in (0, 1).
    x_bound, y_bound, radius : float
        Public bounds, as for :class:`~dpfit.losses.SquaredLoss`.
    """

    def __init__(
        self,
        *,
        amplitude: float = 0.5,
        x_bound: float = 1.0,
        y_bound: float = 1.5,
        radius: float = 1.0,
    ) -> None:
        self.amplitude = a = check_real(amplitude, "amplitude", low=0.0, high=1.0)
        B, Y, R = public_bounds(x_bound, y_bound, radius)
        r_max = R * B + a + Y
        super().__init__(
            radius=R,
            lipschitz=(1.0 + a) * r_max * B,
            smoothness=((1.0 + a) ** 2 + a * r_max) * B * B,
            weak_convexity=a * r_max * B * B,
        )

    def _phi(self, z, y):
        return 0.5 * (z + self.amplitude * np.sin(z) - y) ** 2

    def _dphi(self, z, y):
        return (z + self.amplitude * np.sin(z) - y) * (1.0 + self.amplitude * np.cos(z))


class WelschLoss(GLMLoss):
    """Bounded robust loss f = 1 - exp(-(r/c)^2 / 2), r = <theta, x> - y (values in [0, 1]).

    |phi'| <= exp(-1/2)/c and phi'' in [-2 exp(-3/2)/c^2, 1/c^2], so L0 = exp(-1/2) B / c
    (on all of R^p), L1 = B^2/c^2 and weak convexity 2 exp(-3/2) B^2/c^2.

    Parameters
    ----------
    scale : float, default=1
        c > 0.
    x_bound : float, default=1
        Public bound on ||x||.
    """

    def __init__(self, *, scale: float = 1.0, x_bound: float = 1.0) -> None:
        self.scale = c = check_positive(scale, "scale")
        B, _, _ = public_bounds(x_bound, 0.0, 1.0)
        super().__init__(
            radius=1.0,
            lipschitz=math.exp(-0.5) * B / c,
            smoothness=B * B / (c * c),
            weak_convexity=2.0 * math.exp(-1.5) * B * B / (c * c),
        )

    def _phi(self, z, y):
        return 1.0 - np.exp(-0.5 * ((z - y) / self.scale) ** 2)

    def _dphi(self, z, y):
        u = (z - y) / self.scale
        return u * np.exp(-0.5 * u * u) / self.scale
