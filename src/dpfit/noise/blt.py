"""Buffered-linear-Toeplitz (BLT) correlated noise: streaming in O(buffers x d) memory and time.

A BLT (Dvijotham, McMahan, Pillutla, Steinke & Thakurta 2024, arXiv 2404.16706, Def. 3.1)
is a lower-triangular Toeplitz encoder C whose first column is a sum of ``buffers``
geometric sequences. Its reciprocal B = C^{-1} (the noise decoder) is again Toeplitz, and
B z is computed step by step with ``buffers`` running sums (McMahan, Xu & Zhang 2024,
arXiv 2408.08868, Alg. 3), so step t costs one fresh noise row plus O(buffers x d) work,
whatever t is -- where exact nu-DP-FTRL needs t + 1 rows at step t.

Notation:

================  ==========  ==============================================================
API name          symbol      meaning
================  ==========  ==============================================================
``buf_decay``     theta_i     decay of buffer i, in (0, 1)
``output_scale``  omega_i     weight of buffer i; c_0 = 1, c_t = sum_i omega_i theta_i^{t-1}
``buffers``       m           number of buffers (running sums of d floats)
``inverse``       c           first column of the encoder C (generating function
                              1 + sum_i omega_i x / (1 - theta_i x))
``beta``          beta        first column of the decoder B = C^{-1}
================  ==========  ==============================================================

Streaming the decoder (Alg. 3 of arXiv 2408.08868): with buffers S_i = 0,

    x_t = z_t - sum_i omega_i S_i,    S_i <- theta_i S_i + x_t,

gives x = B z exactly (C x = z row by row). ``beta`` is this recurrence run on z = e_0.

Sensitivity: with theta_i in (0, 1) and omega_i > 0, c is positive and decreasing for t >= 1;
with sum_i omega_i <= 1 also c_1 <= c_0, so c is non-negative and non-increasing and the
multi-participation sensitivity of :mod:`dpfit.noise.sensitivity` is exact under both
participation orders (arXiv 2405.13763, Thm. 2). :func:`optimal_blt` keeps
sum_i omega_i / theta_i < 1 (the "Pillutla score" of arXiv 2504.21413, Thm. 1), which also
makes every decay of B real and in (0, 1).

:func:`optimal_blt` minimises the paper's objective sens_{k,b}(C)^2 x ||A B||_F^2 (prefix-sum
workload A, Choquette-Choo et al. 2024, eq. 3), the expected squared error of all noisy
prefix sums at equal privacy, over the 2m parameters (L-BFGS on an unconstrained
reparametrisation that satisfies the constraints above by construction).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize, signal, special
from threadpoolctl import threadpool_limits

from .._validation import check_int, check_option
from .sensitivity import ORDERS, resolve_participation
from .toeplitz import ToeplitzMechanism

__all__ = ["BLTMechanism", "BLTNoise", "blt", "optimal_blt"]

#: Default largest number of buffers tried by :func:`optimal_blt`.
MAX_BUFFERS = 8
#: :func:`optimal_blt` keeps the fewest buffers whose objective is within this factor of the best.
BUFFER_RTOL = 1.005


@dataclass(frozen=True, eq=False, repr=False)
class BLTMechanism(ToeplitzMechanism):
    """A Toeplitz mechanism whose encoder is a BLT; build it with :func:`blt`.

    Attributes
    ----------
    buf_decay, output_scale : ndarray of shape (buffers,)
        theta and omega of the encoder C (module notation), read-only.
    beta, inverse, name
        As for :class:`~dpfit.noise.ToeplitzMechanism` (materialised over ``steps``).
    """

    buf_decay: np.ndarray = field(default=None)  # type: ignore[assignment]
    output_scale: np.ndarray = field(default=None)  # type: ignore[assignment]

    @property
    def buffers(self) -> int:
        """Number of buffers m: the stream keeps m vectors of d floats."""
        return int(self.buf_decay.size)

    @property
    def cache_rows(self) -> int:
        # A recurrence reads each row once: nothing to buffer, nothing to redraw.
        return 1


class BLTNoise:
    """The running state of B z for one stream: ``buffers`` vectors of ``dim`` floats.

    :meth:`next` turns row z_t into x_t = (B z)_t in place (module recurrence). The buffers
    hold combinations of past secret rows: never log, store or release them.
    """

    __slots__ = ("_decay", "_mix", "_scale", "_state")

    def __init__(self, mechanism: BLTMechanism, dim: int) -> None:
        self._decay = np.asarray(mechanism.buf_decay)[:, None]
        self._scale = np.asarray(mechanism.output_scale)
        self._state = np.zeros((mechanism.buffers, dim))
        self._mix = np.empty(dim)  # omega . S, in a buffer reused at every step

    def next(self, z: np.ndarray) -> np.ndarray:
        """x = z - omega . S; then S <- theta S + x. Overwrites and returns ``z``."""
        S = self._state
        z -= np.matmul(self._scale, S, out=self._mix)
        S *= self._decay
        S += z
        return z


def _encoder_column(theta: np.ndarray, omega: np.ndarray, steps: int) -> np.ndarray:
    """c_0 = 1, c_t = sum_i omega_i theta_i^{t-1} (closed form)."""
    t = np.arange(steps - 1, dtype=np.float64)
    powers = np.exp(np.outer(t, np.log(theta)))
    return np.concatenate(([1.0], powers @ omega))


def _decoder_column(theta: np.ndarray, omega: np.ndarray, steps: int) -> np.ndarray:
    """beta = B e_0 by the streaming recurrence itself (so it is what the stream computes)."""
    beta = np.empty(steps)
    S = np.zeros(theta.size)
    x = 1.0
    for t in range(steps):
        x = (1.0 if t == 0 else 0.0) - float(omega @ S)
        S = theta * S + x
        beta[t] = x
    return beta


def blt(
    buf_decay: np.ndarray, output_scale: np.ndarray, *, steps: int, name: str | None = None
) -> BLTMechanism:
    """A BLT mechanism over ``steps`` steps with encoder parameters (theta, omega).

    Parameters
    ----------
    buf_decay : array-like of shape (m,)
        theta_i in (0, 1).
    output_scale : array-like of shape (m,)
        omega_i, finite. With omega_i > 0 and sum omega_i <= 1 the encoder column is
        non-negative and non-increasing and the multi-participation sensitivity is exact;
        otherwise the general (upper-bound) routes of :mod:`dpfit.noise.sensitivity` apply.
    steps : int
        Number of steps T.
    name : str, optional
        Label; by default ``"blt(m buffers)"``.

    Examples
    --------
    >>> mech = blt([0.9], [0.5], steps=4)
    >>> mech.inverse.tolist()
    [1.0, 0.5, 0.45, 0.405]
    >>> np.round(mech.beta, 4).tolist()
    [1.0, -0.5, -0.2, -0.08]
    """
    steps = check_int(steps, "steps", low=1)
    theta = np.array(buf_decay, dtype=np.float64, ndmin=1)
    omega = np.array(output_scale, dtype=np.float64, ndmin=1)
    if theta.ndim != 1 or theta.shape != omega.shape or theta.size == 0:
        raise ValueError("buf_decay and output_scale must be non-empty 1-D arrays of one length")
    if not (np.isfinite(omega).all() and ((theta > 0) & (theta < 1)).all()):
        raise ValueError("buf_decay must lie in (0, 1) and output_scale must be finite")
    theta.flags.writeable = omega.flags.writeable = False
    return BLTMechanism(
        beta=_decoder_column(theta, omega, steps),
        inverse=_encoder_column(theta, omega, steps),
        name=name or f"blt({theta.size} buffers)",
        buf_decay=theta,
        output_scale=omega,
    )


# ---------------------------------------------------------------- optimisation


def _unpack(u: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """theta = expit(a); omega = theta p with p = softmax over (b, 0): sum omega/theta < 1."""
    a, b = u[:m], u[m:]
    theta = special.expit(a)
    top = max(0.0, float(b.max()))
    e = np.exp(b - top)
    p = e / (math.exp(-top) + e.sum())
    return theta, theta * p


def _decoder_poles(theta: np.ndarray, omega: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Decays lambda_j and weights w_j of B = C^{-1}: beta_t = sum_j w_j lambda_j^{t-1}.

    The decoder recurrence of :func:`_decoder_column` is S_t = D S_{t-1} with
    D = diag(theta) - 1 omega^T and beta_t = -omega^T D^{t-1} 1 for t >= 1, so with
    D = V diag(lambda) V^{-1}: w = -(omega^T V) * (V^{-1} 1). Unlike the residue formula
    -1 / sum_i omega_i / (lambda_j - theta_i)^2, this has no division by lambda_j - theta_i,
    which is exactly zero when a weight omega_i underflows to 0 in the optimiser (the decay
    theta_i is then an eigenvalue with eigenvector e_i and weight 0). A defective D (merged
    decays) raises ``numpy.linalg.LinAlgError``.
    """
    lam, vecs = np.linalg.eig(np.diag(theta) - np.outer(np.ones_like(theta), omega))
    w = -(omega @ vecs) * np.linalg.solve(vecs, np.ones_like(theta))
    return lam.real, w.real


def _log_objective(u: np.ndarray, m: int, steps: int, k: int, b: int) -> tuple[float, np.ndarray]:
    """log(sens_{k,b}(C)^2 x ||A B||_F^2) and its gradient in u (for the optimiser).

    With col = M c (M adds the k shifted copies of c) and s = cumsum(beta):
    d sens^2 / dc = 2 M^T col, and since c * beta = e_0 gives d beta = -(beta * beta * dc),
    d ||A B||_F^2 / dc = -corr(r, beta * beta) with r = reverse-cumsum(2 (T - t) s).
    """
    theta, omega = _unpack(u, m)
    T = steps
    t = np.arange(T - 1, dtype=np.float64)
    powers = np.exp(np.outer(t, np.log(theta)))  # theta_i^{t-1} for t = 1 .. T-1
    c = np.concatenate(([1.0], powers @ omega))
    try:
        lam, w = _decoder_poles(theta, omega)
    except np.linalg.LinAlgError:
        return math.inf, np.zeros_like(u)
    if not (
        np.isfinite(lam).all() and np.isfinite(w).all() and (0 < lam).all() and (lam < 1).all()
    ):
        return math.inf, np.zeros_like(u)
    beta = np.concatenate(([1.0], np.exp(np.outer(t, np.log(lam))) @ w))
    col = c.copy()
    for j in range(1, k):
        col[j * b :] += c[: T - j * b]
    sens2 = float(col @ col)
    back = col.copy()  # M^T col
    for j in range(1, k):
        back[: T - j * b] += col[j * b :]
    s = np.cumsum(beta)
    weights = T - np.arange(T, dtype=np.float64)
    prefix = float((weights * s * s).sum())
    if not (sens2 > 0 and prefix > 0 and math.isfinite(sens2 * prefix)):
        return math.inf, np.zeros_like(u)
    r = np.cumsum((2.0 * weights * s)[::-1])[::-1]
    q = signal.fftconvolve(beta, beta)[:T]
    grad_c = 2.0 * back / sens2 - signal.fftconvolve(r[::-1], q)[:T][::-1] / prefix
    g = grad_c[1:]
    d_omega = g @ powers  # dc_t / d omega_i = theta_i^{t-1}
    d_theta = omega * ((g * t)[1:] @ powers[:-1])  # dc_t / d theta_i = omega_i (t-1) theta_i^{t-2}
    sig = theta * (1.0 - theta)
    p = omega / theta
    grad_a = (d_theta + d_omega * p) * sig
    wg = theta * p * d_omega
    grad_b = wg - p * wg.sum()
    return math.log(sens2 * prefix), np.concatenate((grad_a, grad_b))


def _initial(m: int, steps: int, shift: float) -> np.ndarray:
    """Decays log-spaced in 1 - theta over [shift / T, 1/2]; equal weights summing to 0.9."""
    gaps = np.geomspace(shift / steps, 0.5, m) if m > 1 else np.array([shift / steps])
    a = special.logit(1.0 - np.minimum(gaps, 0.5))
    b = np.full(m, math.log(9.0 / m))  # p_i = (9/m) / (1 + 9) = 0.9 / m
    return np.concatenate((a, b))


def _fit(m: int, steps: int, k: int, b: int, starts: list[np.ndarray]) -> tuple[float, np.ndarray]:
    best = (math.inf, starts[0])
    for u0 in starts:  # one BLAS thread: threading a 2m-dimensional L-BFGS only adds overhead
        res = optimize.minimize(
            _log_objective,
            u0,
            args=(m, steps, k, b),
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": 3000, "maxfun": 60000},
        )
        if res.fun < best[0]:
            best = (float(res.fun), res.x)
    return best


@functools.lru_cache(maxsize=64)
def _optimal_parameters(
    steps: int, k: int, b: int, buffers: int | None, max_buffers: int
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    sizes = [buffers] if buffers is not None else list(range(1, max_buffers + 1))
    fits: dict[int, tuple[float, np.ndarray]] = {}
    previous = None
    for m in sizes:
        starts = [_initial(m, steps, 1.0), _initial(m, steps, 4.0)]
        if previous is not None:  # warm start: the (m - 1)-buffer optimum plus a fast buffer
            a, w = previous[: m - 1], previous[m - 1 :]
            starts.append(np.concatenate((a, [special.logit(0.1)], w, [w.min() - 2.0])))
        fits[m] = _fit(m, steps, k, b, starts)
        previous = fits[m][1]
        if buffers is None and m >= 3 and fits[m][0] > min(f for f, _ in fits.values()) - 1e-4:
            break  # two more buffers gained < 0.01 %: the optimum is reached
    best = min(f for f, _ in fits.values())
    m = min(m for m, (f, _) in fits.items() if f <= best + math.log(BUFFER_RTOL))
    theta, omega = _unpack(fits[m][1], m)
    order = np.argsort(theta)[::-1]
    return tuple(theta[order].tolist()), tuple(omega[order].tolist())


def optimal_blt(
    steps: int,
    *,
    participations: int = 1,
    separation: int | None = None,
    order: str = "fixed-epoch",
    buffers: int | None = None,
    max_buffers: int = MAX_BUFFERS,
) -> BLTMechanism:
    """The BLT minimising sens_{k,b}(C)^2 x ||A B||_F^2 for T steps (prefix-sum workload).

    Parameters
    ----------
    steps : int
        Number of steps T.
    participations, separation, order
        The participation pattern (k, b) the sensitivity is computed for (see
        :meth:`~dpfit.noise.CorrelatedMechanism.sensitivity_squared`); the optimum is exact
        for both orders, since its encoder column is non-negative and non-increasing.
    buffers : int, optional
        Number of buffers m. By default the fewest buffers (at most ``max_buffers``) whose
        objective is within 0.5 % of the best found.
    max_buffers : int, default=8
        Largest m tried when ``buffers`` is None.

    Returns
    -------
    BLTMechanism
        Deterministic for given inputs (results are cached per process).

    Notes
    -----
    The objective is the mean squared error of the T noisy prefix sums at equal privacy
    (Choquette-Choo et al. 2024, eq. 3, with the participation-aware sensitivity of their
    App. A.2), optimised as in McMahan, Xu & Zhang (2024, arXiv 2408.08868, §4) over BLTs of
    Dvijotham et al. (2024). Everything here is public: the result depends on (T, k, b) only.
    At the CIFAR-10 geometry (T = 2000, k = 20, b = 100) two buffers give 0.918 x the
    objective of nu-DP-FTRL at the nu of :func:`~dpfit.noise.select_nu`
    (``benchmarks/bench_ftrl_streams.py``).

    Examples
    --------
    >>> mech = optimal_blt(200, participations=4, separation=50)
    >>> mech.buffers <= 3, mech.monotone
    (True, True)
    """
    order = check_option(order, "order", ORDERS)
    k, b, order = resolve_participation(steps, participations, separation, order)
    max_buffers = check_int(max_buffers, "max_buffers", low=1, high=32)
    if buffers is not None:
        buffers = check_int(buffers, "buffers", low=1, high=32)
    with threadpool_limits(limits=1):
        theta, omega = _optimal_parameters(steps, k, b, buffers, max_buffers)
    return blt(np.array(theta), np.array(omega), steps=steps, name=f"blt({len(theta)} buffers)")
