"""The synthetic design of the DP-AMBSSGD experiments (docs/varshney2022.md, predictions).

x ~ N(0, H) with H = diag(lambda_1..lambda_d), lambda_j = kappa^{-(j-1)/(d-1)} (geometric from
1 down to 1/kappa), so ||H|| = 1, mu = 1/kappa and R_x^2 = Tr H + 2; w* = u/||u|| with
u ~ N(0, I_d); y = <x, w*> + z with z ~ N(0, sigma^2) independent of x. The excess risk of w
is exact: 0.5 (w - w*)^T H (w - w*), so no test set is needed.

Records can be generated block by block (:meth:`OnePassDesign.stream`) from a seed, so a data
set of any size is read in one pass without being held in memory, and the same seed gives
the same records again (to run several methods on the same data).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._arrays import readonly
from .._validation import check_int, check_positive

__all__ = ["OnePassDesign", "draw_onepass_design"]


@dataclass(frozen=True, kw_only=True)
class OnePassDesign:
    """The truth of one design: H's diagonal, w* and sigma (all public in a simulation)."""

    eigenvalues: np.ndarray
    w_star: np.ndarray
    noise_std: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "eigenvalues", readonly(self.eigenvalues))
        object.__setattr__(self, "w_star", readonly(self.w_star))

    @property
    def dimension(self) -> int:
        """d."""
        return int(self.w_star.shape[0])

    @property
    def trace(self) -> float:
        """Tr H."""
        return float(self.eigenvalues.sum())

    @property
    def feature_scale(self) -> float:
        """R_x = sqrt(Tr H + 2 ||H||), exact for Gaussian x (Def. 2.1)."""
        return math.sqrt(self.trace + 2.0 * float(self.eigenvalues.max()))

    @property
    def signal_norm(self) -> float:
        """||w*||_H."""
        return float(np.sqrt(np.sum(self.eigenvalues * self.w_star**2)))

    def excess_risk(self, w: np.ndarray) -> float:
        """0.5 (w - w*)^T H (w - w*)."""
        e = np.asarray(w, dtype=np.float64) - self.w_star
        return float(0.5 * np.sum(self.eigenvalues * e * e))

    def arrays(self, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """n records in memory (the concatenation of :meth:`stream`'s chunks)."""
        chunks = list(self.stream(n, seed))
        return np.concatenate([c[0] for c in chunks]), np.concatenate([c[1] for c in chunks])

    def stream(
        self, n: int, seed: int, *, chunk: int = 1 << 16
    ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """n records as chunks of at most ``chunk`` rows, determined by ``seed`` alone."""
        n, chunk = check_int(n, "n", low=1), check_int(chunk, "chunk", low=1)
        # separate streams for x and z: the records do not depend on the chunk size
        x_rng, z_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
        root = np.sqrt(self.eigenvalues)
        for start in range(0, n, chunk):
            m = min(chunk, n - start)
            X = x_rng.standard_normal((m, self.dimension)) * root
            y = X @ self.w_star + self.noise_std * z_rng.standard_normal(m)
            yield X, y


def draw_onepass_design(
    dimension: int, *, condition_number: float = 1.0, noise_std: float = 1.0, rng: Any = None
) -> OnePassDesign:
    """Draw w* (uniform on the unit sphere) for the design of docs/varshney2022.md.

    Examples
    --------
    >>> design = draw_onepass_design(4, condition_number=10.0, rng=0)
    >>> design.eigenvalues.round(3).tolist(), round(design.feature_scale**2, 3)
    ([1.0, 0.464, 0.215, 0.1], 3.78)
    """
    d = check_int(dimension, "dimension", low=1)
    kappa = check_positive(condition_number, "condition_number")
    sigma = float(noise_std)
    if not (sigma >= 0 and math.isfinite(sigma)):
        raise ValueError(f"noise_std must be finite and >= 0, got {noise_std!r}")
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    u = rng.standard_normal(d)
    exponents = np.arange(d) / (d - 1) if d > 1 else np.zeros(1)
    return OnePassDesign(
        eigenvalues=kappa**-exponents, w_star=u / np.linalg.norm(u), noise_std=sigma
    )
