"""Toeplitz correlated noise: DP-SGD, nu-DP-FTRL, Fichtenberger, mean-estimation optimum, anti-PGD.

Notation (Choquette-Choo et al. 2024, Sections 1.1 and 2):

===============  ======  ==================================================================
API name         symbol  meaning
===============  ======  ==================================================================
``beta``         beta    first column of the lower-triangular Toeplitz decoder B: the noise
                         of step t is sum_tau beta_tau w_{t - tau}
``inverse``      c       first column of the encoder C = B^{-1} (power-series reciprocal:
                         (beta * c)_t = 1[t = 0])
``steps``        T       number of steps
``nu``           nu      damping of nu-DP-FTRL, in [0, 1]
``step_size``    eta     learning rate (for the mean-estimation optimum)
===============  ======  ==================================================================

Coefficients are generated in float64 by stable recursions, never through binomials or gamma
functions (which overflow):

* nu-DP-FTRL (eq. 7): beta_t = beta_{t-1} (t - 3/2)/t (1 - nu), c_t = c_{t-1} (t - 1/2)/t (1 - nu);
  c is non-negative and non-increasing, so the multi-participation sensitivity is exact.
* nu = 0 is Fichtenberger et al. 2023 (A = C C); nu = 1 is DP-SGD (0^0 = 1).
* The mean-estimation optimum (Thm. 2.1) is the same family with 1 - nu = 1 - eta.
* Anti-PGD (Orvieto et al. 2022): beta = (1, -(1 - nu)), c_t = (1 - nu)^t.
* :func:`banded` truncates any beta to its first ``bands`` terms: a different mechanism whose
  inverse is recomputed by forward substitution and may be non-monotone (general bound).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np
from scipy import linalg, signal

from .._arrays import readonly
from .._validation import check_int, check_real
from .base import DENSE_LIMIT, CorrelatedMechanism, RowSource
from .sensitivity import monotone_toeplitz_sensitivity_squared

__all__ = [
    "EncoderRecurrence",
    "ToeplitzMechanism",
    "anti_pgd",
    "banded",
    "banded_encoder",
    "check_reciprocal",
    "dpsgd",
    "fichtenberger",
    "inverse_coefficients",
    "nu_dpftrl",
    "nu_dpftrl_coefficients",
    "optimal_mean_estimation",
    "toeplitz",
]


def _half_binomial_series(steps: int, ratio: float, shift: float) -> np.ndarray:
    """a_0 = 1, a_t = a_{t-1} (t - shift)/t * ratio (shift 3/2: beta, shift 1/2: c)."""
    t = np.arange(1, steps, dtype=np.float64)
    factors = (t - shift) / t * ratio
    return np.concatenate(([1.0], np.cumprod(factors)))


def nu_dpftrl_coefficients(nu: float, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """(beta, c) of nu-DP-FTRL: beta_t = (-1)^t binom(1/2, t)(1-nu)^t and its reciprocal.

    Examples
    --------
    >>> beta, c = nu_dpftrl_coefficients(0.0, 5)
    >>> beta.tolist()
    [1.0, -0.5, -0.125, -0.0625, -0.0390625]
    >>> c.tolist()
    [1.0, 0.5, 0.375, 0.3125, 0.2734375]
    """
    nu = check_real(nu, "nu", low=0.0, high=1.0, low_open=False, high_open=False)
    steps = check_int(steps, "steps", low=1)
    ratio = 1.0 - nu
    return _half_binomial_series(steps, ratio, 1.5), _half_binomial_series(steps, ratio, 0.5)


def inverse_coefficients(beta: np.ndarray, steps: int | None = None) -> np.ndarray:
    """Power-series reciprocal c of beta (beta_0 != 0) by forward substitution, O(T x bands)."""
    beta = np.asarray(beta, dtype=np.float64)
    T = beta.size if steps is None else steps
    nz = np.flatnonzero(beta[:T])
    bands = int(nz[-1]) + 1 if nz.size else 0
    if bands == 0 or beta[0] == 0.0:
        raise ValueError("beta_0 must be non-zero for B to be invertible")
    tail = beta[1:bands]
    c = np.zeros(T)
    c[0] = 1.0 / beta[0]
    for t in range(1, T):
        m = min(t, bands - 1)
        c[t] = -float(tail[:m] @ c[t - 1 :: -1][:m]) / beta[0]  # sum_j beta_j c_{t-j}
    return c


#: Relative tolerance of the check beta * c = e_0 (scaled by ||beta||_1 max|c|): float64
#: convolutions of the paper's coefficients are exact to ~1e-15 of that scale.
RECIPROCAL_RTOL = 1e-9


def check_reciprocal(beta: np.ndarray, inverse: np.ndarray) -> None:
    """Raise ``ValueError`` unless B C = I, i.e. (beta * c)_t = 1[t = 0] for t < T.

    The sensitivity is computed from c and the noise from beta, so a c that is not the
    power-series reciprocal of beta would calibrate the noise for another mechanism (a
    c ten times too large makes the noise ten times too small). Checked by FFT convolution,
    O(T log T), to :data:`RECIPROCAL_RTOL` x ||beta||_1 max|c|.
    """
    T = beta.size
    conv = signal.fftconvolve(beta, inverse)[:T] if T > 64 else np.convolve(beta, inverse)[:T]
    conv[0] -= 1.0
    scale = max(1.0, float(np.abs(beta).sum() * np.abs(inverse).max()))
    err = float(np.abs(conv).max())
    if not err <= RECIPROCAL_RTOL * scale:
        raise ValueError(
            f"inverse is not the reciprocal of beta: max |(beta * inverse)_t - 1[t = 0]| = "
            f"{err:.3g} exceeds {RECIPROCAL_RTOL:g} x {scale:.3g}; omit inverse to compute it"
        )


@dataclass(frozen=True, eq=False, repr=False)
class ToeplitzMechanism(CorrelatedMechanism):
    """A lower-triangular Toeplitz decoder B (first column ``beta``) over ``len(beta)`` steps.

    Attributes
    ----------
    beta : ndarray of shape (T,)
        Noise coefficients, read-only.
    inverse : ndarray of shape (T,)
        Encoder coefficients c (C = B^{-1}), read-only.
    name : str
        A label for reports (``"nu-dpftrl(nu=0.01)"``, ``"dp-sgd"``, ...).
    """

    beta: np.ndarray
    name: str = "toeplitz"
    inverse: np.ndarray = field(default=None)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        beta = np.asarray(self.beta, dtype=np.float64)
        if beta.ndim != 1 or beta.size == 0 or not np.isfinite(beta).all():
            raise ValueError("beta must be a non-empty finite 1-D array")
        inverse = inverse_coefficients(beta) if self.inverse is None else self.inverse
        inverse = np.asarray(inverse, dtype=np.float64)
        if inverse.shape != beta.shape or not np.isfinite(inverse).all():
            raise ValueError("inverse must be finite with the shape of beta")
        check_reciprocal(beta, inverse)
        object.__setattr__(self, "beta", readonly(beta))
        object.__setattr__(self, "inverse", readonly(inverse))

    @property
    def steps(self) -> int:
        return int(self.beta.size)

    @property
    def noise_rows(self) -> int:
        return self.steps

    @property
    def bands(self) -> int:
        """Number of leading coefficients of beta up to the last non-zero one."""
        return int(np.flatnonzero(self.beta)[-1]) + 1

    @property
    def cache_rows(self) -> int:
        return self.bands

    @property
    def encoder_bands(self) -> int:
        """Number of leading coefficients of c up to the last non-zero one (C's bands)."""
        return int(np.flatnonzero(self.inverse)[-1]) + 1

    @property
    def monotone(self) -> bool:
        """Whether c is non-negative and non-increasing (exact multi-participation formula)."""
        c = self.inverse
        return bool((c >= 0).all() and (np.diff(c) <= 0).all())

    def gram(self, patterns: np.ndarray) -> np.ndarray:
        """X_pq = sum_{s < T - max(p, q)} c_s c_{s + |p - q|}, from lag-wise cumulative sums."""
        P = np.asarray(patterns)
        valid = P >= 0
        Pc = np.where(valid, P, 0)
        lag = np.abs(Pc[:, :, None] - Pc[:, None, :])
        top = np.maximum(Pc[:, :, None], Pc[:, None, :])
        lags, index = np.unique(lag, return_inverse=True)
        c, T = self.inverse, self.steps
        table = np.zeros((lags.size, T))
        for i, ell in enumerate(lags):
            table[i, : T - ell] = np.cumsum(c[: T - ell] * c[ell:])
        X = table[index.reshape(lag.shape), T - 1 - top]
        return X * (valid[:, :, None] & valid[:, None, :])

    def _sensitivity_squared(self, k: int, b: int, order: str) -> float:
        if self.monotone:  # exact under both orders (arXiv 2405.13763, Thm. 2)
            return monotone_toeplitz_sensitivity_squared(self.inverse, k, b)
        if order == "min-separation" and k > 1 and self.steps > DENSE_LIMIT:
            # Projection onto non-negative non-increasing c bounds |X| entrywise.
            proj = np.maximum.accumulate(np.abs(self.inverse)[::-1])[::-1]
            return monotone_toeplitz_sensitivity_squared(proj, k, b)
        return super()._sensitivity_squared(k, b, order)

    def step_noise(self, step: int, rows: RowSource) -> np.ndarray:
        """sum_{tau} beta_tau z_{step - tau}, accumulated over globally aligned row blocks.

        The block layout depends only on (step, d), so every row source (cached or
        regenerated) yields the same floating-point operations, hence the same bits.
        """
        lo = max(0, step - self.bands + 1)
        first = rows.block(step, step + 1)
        acc = self.beta[0] * first[0]
        d = acc.size
        size = _block_rows(d)
        hi = step  # rows [lo, step) remain, newest first in blocks aligned to ``size``
        while hi > lo:
            start = max(lo, ((hi - 1) // size) * size)
            acc += self.beta[step - np.arange(start, hi)] @ rows.block(start, hi)
            hi = start
        return acc

    def max_decoder_row_norm(self) -> float:
        """||beta||: row t of the lower-triangular Toeplitz B holds beta_0..beta_t."""
        return math.sqrt(math.fsum(self.beta**2))

    def decoder_matrix(self) -> np.ndarray:
        return linalg.toeplitz(self.beta, np.zeros(self.steps))

    def encoder_matrix(self) -> np.ndarray:
        return linalg.toeplitz(self.inverse, np.zeros(self.steps))

    def prefix_error(self) -> float:
        """||A B||_F^2 = sum_t (T - t) s_t^2 with s = cumsum(beta) (A B is Toeplitz)."""
        s = np.cumsum(self.beta)
        return math.fsum((self.steps - np.arange(self.steps)) * s * s)


class EncoderRecurrence:
    """Running state of B z for a Toeplitz C with few bands: the last bands - 1 outputs.

    C x = z row by row gives x_t = (z_t - sum_{j=1}^{bands-1} c_j x_{t-j}) / c_0, so B z
    costs O(bands x d) per step although B itself has T bands. Stable for c_0 >= c_1 >= ...
    >= c_{bands-1} > 0 (then C(x) has no zero in the unit disc, by the Enestrom-Kakeya
    theorem). The ring holds combinations of secret rows: never log, store or release it.
    """

    __slots__ = ("_c", "_count", "_ring")

    def __init__(self, mechanism: ToeplitzMechanism, dim: int) -> None:
        self._c = np.asarray(mechanism.inverse[: mechanism.encoder_bands])
        self._ring = np.zeros((max(self._c.size - 1, 1), dim))
        self._count = 0

    def next(self, z: np.ndarray) -> np.ndarray:
        """x_t from row z_t (overwritten and returned); the ring keeps x_{t-1}, x_{t-2}, ..."""
        m = self._c.size - 1
        t = self._count
        for j in range(1, min(m, t) + 1):
            z -= self._c[j] * self._ring[(t - j) % m]
        z /= self._c[0]
        if m:
            self._ring[t % m] = z
        self._count = t + 1
        return z


def _block_rows(dim: int) -> int:
    """Rows per accumulation block: at most 2^18 floats (2 MiB) and 256 rows."""
    return max(1, min(256, (1 << 18) // dim))


def toeplitz(beta: np.ndarray, *, name: str = "toeplitz") -> ToeplitzMechanism:
    """A Toeplitz mechanism from arbitrary coefficients (beta_0 != 0)."""
    return ToeplitzMechanism(beta=np.asarray(beta, dtype=np.float64), name=name)


def dpsgd(steps: int) -> ToeplitzMechanism:
    """Independent noise, B = I (DP-SGD / Noisy-SGD)."""
    return dataclasses.replace(nu_dpftrl(1.0, steps=steps), name="dp-sgd")


def nu_dpftrl(nu: float, *, steps: int) -> ToeplitzMechanism:
    """nu-DP-FTRL (Choquette-Choo et al. 2024, eq. 7): beta_t = (-1)^t binom(1/2, t)(1-nu)^t.

    Examples
    --------
    >>> mech = nu_dpftrl(0.01, steps=600)
    >>> round(mech.sensitivity_squared(participations=20, separation=30), 3)
    81.256
    """
    beta, c = nu_dpftrl_coefficients(nu, steps)
    return ToeplitzMechanism(beta=beta, inverse=c, name=f"nu-dpftrl(nu={nu:g})")


def fichtenberger(steps: int) -> ToeplitzMechanism:
    """nu = 0 (Fichtenberger et al. 2023, "Optimal CC"): the square root of the prefix sums."""
    return dataclasses.replace(nu_dpftrl(0.0, steps=steps), name="fichtenberger")


def optimal_mean_estimation(step_size: float, *, steps: int) -> ToeplitzMechanism:
    """beta*_t = (-1)^t binom(1/2, t)(1 - eta)^t, optimal for 1-D mean estimation (Thm. 2.1).

    ``step_size`` eta lies in (0, 2); for eta > 1 the coefficients alternate in sign.
    """
    eta = check_real(step_size, "step_size", low=0.0, high=2.0)
    ratio = 1.0 - eta
    beta = _half_binomial_series(check_int(steps, "steps", low=1), ratio, 1.5)
    c = _half_binomial_series(steps, ratio, 0.5)
    return ToeplitzMechanism(beta=beta, inverse=c, name=f"mean-optimal(eta={eta:g})")


def anti_pgd(steps: int, *, damping: float = 0.0) -> ToeplitzMechanism:
    """Anti-PGD beta = (1, -(1 - nu)) with damping nu in [0, 1]; c_t = (1 - nu)^t."""
    nu = check_real(damping, "damping", low=0.0, high=1.0, low_open=False, high_open=False)
    steps = check_int(steps, "steps", low=1)
    beta = np.zeros(steps)
    beta[0] = 1.0
    if steps > 1:
        beta[1] = -(1.0 - nu)
    c = (1.0 - nu) ** np.arange(steps, dtype=np.float64)
    return ToeplitzMechanism(beta=beta, inverse=c, name=f"anti-pgd(damping={nu:g})")


def banded_encoder(mechanism: ToeplitzMechanism, bands: int) -> ToeplitzMechanism:
    """Keep c_0 .. c_{bands-1} of the ENCODER: a banded C (Choquette-Choo et al. 2023).

    The decoder beta = C^{-1} is recomputed exactly; its noise streams in O(bands x d) by
    :class:`EncoderRecurrence`. A banded C with bands <= b is what amplification by cyclic
    Poisson sampling over b groups needs (arXiv 2306.08153, Thm. 4; see
    :func:`dpfit.noise.amplified_noise`). A non-negative non-increasing c stays so, so the
    multi-participation sensitivity stays exact.
    """
    if not isinstance(mechanism, ToeplitzMechanism):
        raise TypeError("mechanism must be a ToeplitzMechanism")
    bands = check_int(bands, "bands", low=1, high=mechanism.steps)
    c = np.array(mechanism.inverse)
    c[bands:] = 0.0
    return ToeplitzMechanism(
        beta=inverse_coefficients(c),
        inverse=c,
        name=f"banded-encoder-{mechanism.name}(bands={bands})",
    )


def banded(mechanism: ToeplitzMechanism, bands: int) -> ToeplitzMechanism:
    """Keep beta_0 .. beta_{bands-1}: a separate mechanism with O(bands x d) noise memory.

    The inverse is recomputed exactly from the truncated beta, and its sensitivity uses the
    general |C^T C| bound when that inverse is not monotone (docs/choquettechoo2024.md).
    """
    if not isinstance(mechanism, ToeplitzMechanism):
        raise TypeError("mechanism must be a ToeplitzMechanism")
    bands = check_int(bands, "bands", low=1, high=mechanism.steps)
    beta = np.array(mechanism.beta)
    beta[bands:] = 0.0
    return ToeplitzMechanism(beta=beta, name=f"banded-{mechanism.name}(bands={bands})")
