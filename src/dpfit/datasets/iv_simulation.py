"""The synthetic confounded IV design of Liang et al. (2025, Section 4.1).

Parameters, drawn once per design:

    beta ~ N(0, I_p),   Theta = 5 I_{q x p} + E (E_jk ~ N(0, 1)),   Phi_jk ~ N(0, 1) (r x p),
    phi ~ N(0, I_r)

(I_{q x p} is the rectangular identity.) Records, drawn per dataset:

    z ~ N(0, I_q), u ~ N(0, I_r), eps_x ~ N(0, I_p), eps_y ~ N(0, 1),
    x = Theta^T z + Phi^T u + eps_x,   y = beta^T x + phi^T u + eps_y.

The confounder u enters both x and y, so OLS of y on x is biased and z is a valid
instrument. (The paper's prose swaps the labels eps1 / eps2; these equations are the
explicit ones.) Data generation uses the numpy Generator it is given, never privacy noise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._arrays import readonly
from .._validation import check_int

__all__ = ["IVDesign", "draw_iv_design"]


@dataclass(frozen=True, kw_only=True)
class IVDesign:
    """Fixed parameters (beta, Theta, Phi, phi) of a confounded linear IV model.

    Attributes
    ----------
    beta : ndarray of shape (p,)
        Structural coefficients.
    theta : ndarray of shape (q, p)
        First-stage coefficients.
    confounding_x : ndarray of shape (r, p)
        Phi, the confounder's effect on x.
    confounding_y : ndarray of shape (r,)
        phi, the confounder's effect on y.
    """

    beta: np.ndarray
    theta: np.ndarray
    confounding_x: np.ndarray
    confounding_y: np.ndarray

    def __post_init__(self) -> None:
        for name in ("beta", "theta", "confounding_x", "confounding_y"):
            object.__setattr__(self, name, readonly(getattr(self, name)))

    @property
    def shape(self) -> tuple[int, int, int]:
        """(p, q, r)."""
        return self.beta.shape[0], self.theta.shape[0], self.confounding_y.shape[0]

    def sample(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Draw n records; returns (X (n x p), y (n,), Z (n x q))."""
        n = check_int(n, "n", low=1)
        p, q, r = self.shape
        Z = rng.standard_normal((n, q))
        U = rng.standard_normal((n, r))
        X = Z @ self.theta + U @ self.confounding_x + rng.standard_normal((n, p))
        y = X @ self.beta + U @ self.confounding_y + rng.standard_normal(n)
        return X, y, Z


def draw_iv_design(
    p: int, q: int | None = None, r: int | None = None, *, rng: np.random.Generator
) -> IVDesign:
    """Draw (beta, Theta, Phi, phi) as in Liang et al. (2025, Section 4.1); q = r = p by default.

    Examples
    --------
    >>> import numpy as np
    >>> design = draw_iv_design(5, rng=np.random.default_rng(0))
    >>> X, y, Z = design.sample(100, np.random.default_rng(1))
    >>> X.shape, y.shape, Z.shape
    ((100, 5), (100,), (100, 5))
    """
    p = check_int(p, "p", low=1)
    q = p if q is None else check_int(q, "q", low=p)
    r = p if r is None else check_int(r, "r", low=1)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    beta = rng.standard_normal(p)
    eye = np.zeros((q, p))
    k = min(p, q)
    eye[np.arange(k), np.arange(k)] = 1.0
    theta = 5.0 * eye + rng.standard_normal((q, p))
    return IVDesign(
        beta=beta,
        theta=theta,
        confounding_x=rng.standard_normal((r, p)),
        confounding_y=rng.standard_normal(r),
    )
