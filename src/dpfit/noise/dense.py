"""Dense factorisations and the multi-epoch optimal one ("ME", Choquette-Choo et al. 2023b).

The ME mechanism of Choquette-Choo, McMahan, Rush & Thakurta (2023b, "Multi-Epoch Matrix
Factorization Mechanisms for Private Machine Learning", ICML) is the best
factorisation of the prefix-sum workload A (lower-triangular ones, Choquette-Choo et al.
2024, eq. 3) for the fixed-epoch participation of every b-th step. With X = C^T C it solves

    minimise  f(X) = tr(A^T A X^{-1})   over X > 0
    subject to X_ii = 1 and X_ij = 0 for i != j with i = j (mod b),

so that a record's steps i, i + b, i + 2b, ... meet only the unit diagonal of X and
sens^2 = ceil(T / b) exactly under ``order="fixed-epoch"``. f(X) = ||A C^{-1}||_F^2 is the
prefix error, so sens^2 x f is the objective every other family here is compared by.

Solver (ours, not the paper's code): L-BFGS (Nocedal & Wright 2006, Alg. 7.4) on the free
entries of X, with the gradient -X^{-1} A^T A X^{-1} projected onto them (the constraints are
linear, so projecting the gradient keeps every iterate feasible) and an Armijo backtracking
line search that rejects steps leaving the positive-definite cone. It stops on a
*certificate*: for any Lambda > 0 supported on the constrained entries, weak Lagrange
duality gives

    f(X) >= (sum_i sqrt(eig_i(A Lambda A^T)))^2 / tr(Lambda)   for every feasible X

(minimise tr(A^T A X^{-1}) + <Lambda, X> in closed form, then optimise Lambda's scale). At
the optimum Lambda = the constrained entries of X^{-1} A^T A X^{-1} (the KKT conditions), so
evaluating the bound there bounds the relative gap f(X) / f* - 1 <= ``tol``. One iteration
costs about 4 T^3 flops (a Cholesky factorisation, T^3/3; the inverse from it, 2 T^3; one
Gram product, 2 T^3).

The encoder is the lower-triangular C with C^T C = X (the "reversed Cholesky":
C = J chol(J X J)^T J with J the exchange matrix), so row t of C G depends on steps <= t and
adaptively chosen gradients are covered; the decoder is B = C^{-1}.
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy import linalg
from threadpoolctl import threadpool_limits

from .._validation import check_int, check_real
from .base import DENSE_LIMIT, CorrelatedMechanism, RowSource
from .toeplitz import _block_rows

__all__ = ["DenseMechanism", "multi_epoch"]

#: Default relative optimality gap certified by :func:`multi_epoch`.
GAP_TOL = 1e-4
#: Largest max|B C - I| accepted for a dense encoder C and its computed inverse B.
INVERSE_TOL = 1e-9
#: L-BFGS memory (pairs of T x T matrices kept).
MEMORY = 6
#: Iterations between two evaluations of the dual certificate (one T x T eigendecomposition).
CHECK_EVERY = 25


def check_inverse(encoder: np.ndarray, decoder: np.ndarray) -> None:
    """Raise ``ValueError`` unless the computed decoder B inverts the encoder C: max|BC - I|
    <= :data:`INVERSE_TOL`.

    The sensitivity is computed from C but the noise is sigma B z, so the release is private
    for B^{-1} = C (I + E)^{-1} with E = BC - I. Each column norm of B^{-1} is within a factor
    1 + ||E||_2 / (1 - ||E||_2) of C's, and ||E||_2 <= T max|E| <= 4e-6 at T = 4096; an
    ill-conditioned C whose float64 inverse is inaccurate would instead calibrate the noise for
    another mechanism (a random lower-triangular C at T = 60 gives max|E| ~ 5e5 and a true
    sensitivity 4e6 times the declared one).
    """
    residual = decoder @ encoder
    residual[np.diag_indices_from(residual)] -= 1.0
    err = float(np.abs(residual).max())
    if not err <= INVERSE_TOL:
        raise ValueError(
            f"the encoder is too ill-conditioned to invert in float64: max |B C - I| = {err:.3g} "
            f"exceeds {INVERSE_TOL:g} (B = C^-1 computed), so the noise would not be calibrated "
            "to C's sensitivity; use a better-conditioned encoder"
        )


@dataclass(frozen=True, eq=False, repr=False)
class DenseMechanism(CorrelatedMechanism):
    """A mechanism given by a dense lower-triangular encoder C (T x T, non-zero diagonal).

    C must be invertible to float64 accuracy (:func:`check_inverse`).

    Attributes
    ----------
    encoder : ndarray of shape (T, T)
        C, read-only; the decoder B = C^{-1} and the Gram matrix X = C^T C are derived.
    name : str
        A label for reports.
    optimality_gap : float
        For :func:`multi_epoch`: the certified bound on f(X) / f* - 1 (module docstring);
        NaN for a mechanism built from an arbitrary C.
    """

    encoder: np.ndarray
    name: str = "dense"
    optimality_gap: float = math.nan
    _decoder: np.ndarray = field(init=False, repr=False)
    _gram: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        C = np.array(self.encoder, dtype=np.float64)
        if C.ndim != 2 or C.shape[0] != C.shape[1] or C.size == 0 or not np.isfinite(C).all():
            raise ValueError("encoder must be a finite non-empty square matrix")
        if C.shape[0] > DENSE_LIMIT:
            raise ValueError(f"dense mechanisms are supported up to steps = {DENSE_LIMIT}")
        if np.triu(C, 1).any() or not (np.diag(C) != 0).all():
            raise ValueError("encoder must be lower triangular with a non-zero diagonal")
        B = linalg.solve_triangular(C, np.eye(C.shape[0]), lower=True)
        check_inverse(C, B)
        for attr, value in (("encoder", C), ("_decoder", B), ("_gram", C.T @ C)):
            value.flags.writeable = False
            object.__setattr__(self, attr, value)

    @property
    def steps(self) -> int:
        return int(self.encoder.shape[0])

    @property
    def noise_rows(self) -> int:
        return self.steps

    @property
    def cache_rows(self) -> int:
        return self.steps  # step t combines every row z_0 .. z_t

    def gram(self, patterns: np.ndarray) -> np.ndarray:
        P = np.asarray(patterns)
        valid = P >= 0
        Pc = np.where(valid, P, 0)
        X = self._gram[Pc[:, :, None], Pc[:, None, :]]
        return X * (valid[:, :, None] & valid[:, None, :])

    def step_noise(self, step: int, rows: RowSource) -> np.ndarray:
        """sum_{i <= step} B[step, i] z_i over row blocks aligned as for Toeplitz mechanisms."""
        coef = self._decoder[step]
        acc = coef[step] * rows.block(step, step + 1)[0]
        size = _block_rows(acc.size)
        hi = step
        while hi > 0:
            start = ((hi - 1) // size) * size
            acc += coef[start:hi] @ rows.block(start, hi)
            hi = start
        return acc

    def decoder_matrix(self) -> np.ndarray:
        return np.array(self._decoder)

    def encoder_matrix(self) -> np.ndarray:
        return np.array(self.encoder)


def _prefix_gram(steps: int) -> np.ndarray:
    """W = A^T A for the prefix-sum workload: W_ij = T - max(i, j)."""
    i = np.arange(steps)
    return (steps - np.maximum(i[:, None], i[None, :])).astype(np.float64)


def _objective(X: np.ndarray, W: np.ndarray) -> tuple[float, np.ndarray | None]:
    """f(X) = tr(W X^{-1}) and X^{-1} W X^{-1} (minus the gradient); (inf, None) unless X > 0."""
    try:
        L = linalg.cholesky(X, lower=True)
    except linalg.LinAlgError:
        return math.inf, None
    Xinv = linalg.cho_solve((L, True), np.eye(X.shape[0]))
    V = np.cumsum(Xinv, axis=0)  # A X^{-1}
    return float(np.sum(W * Xinv)), V.T @ V


def _dual_bound(H: np.ndarray, free: np.ndarray) -> float:
    """Lower bound on min f from Lambda = H on the constrained entries (module docstring)."""
    Lam = np.where(free, 0.0, H)
    try:
        linalg.cholesky(Lam, lower=True)
    except linalg.LinAlgError:
        return 0.0  # Lambda is not positive definite: no certificate yet
    ALA = np.cumsum(np.cumsum(Lam, axis=0), axis=1)  # A Lambda A^T
    root = float(np.sqrt(np.maximum(linalg.eigvalsh(ALA), 0.0)).sum())
    return root * root / float(np.trace(Lam))


def _gap(f: float, H: np.ndarray, free: np.ndarray) -> float:
    """Certified bound on f / f* - 1 (inf while Lambda is not positive definite)."""
    bound = _dual_bound(H, free)
    return f / bound - 1.0 if bound > 0 else math.inf


def _solve(steps: int, separation: int, tol: float, max_iter: int) -> tuple[np.ndarray, float]:
    """Projected L-BFGS for the ME program; returns (X, certified relative gap)."""
    i = np.arange(steps)
    free = (i[:, None] - i[None, :]) % separation != 0
    W = _prefix_gram(steps)
    X = np.eye(steps)
    f, H = _objective(X, W)
    g = np.where(free, -H, 0.0)  # projected gradient
    history: list[tuple[np.ndarray, np.ndarray, float]] = []
    for it in range(1, max_iter + 1):
        if not g.any():  # single participation with b >= T: nothing is free, X = I
            return X, 0.0
        d = -g
        alphas = []
        for s, y, r in reversed(history):
            a = r * np.vdot(s, d)
            d -= a * y
            alphas.append(a)
        if history:
            s, y, _ = history[-1]
            d *= np.vdot(s, y) / np.vdot(y, y)
        else:
            d *= 0.5 / np.linalg.norm(g)  # ||d||_2 <= 1/2: X = I + d stays positive definite
        for (s, y, r), a in zip(history, reversed(alphas), strict=True):
            d += (a - r * np.vdot(y, d)) * s
        slope = float(np.vdot(g, d))
        if slope >= 0:  # not a descent direction: restart from the gradient
            history.clear()
            d, slope = -g / np.linalg.norm(g), -float(np.linalg.norm(g))
        step = 1.0
        for _ in range(60):
            f_new, H_new = _objective(X + step * d, W)
            if f_new <= f + 1e-4 * step * slope:
                break
            step *= 0.5
        else:
            break  # no decrease representable in float64: stop and certify
        X_new = X + step * d
        g_new = np.where(free, -H_new, 0.0)
        s, y = X_new - X, g_new - g
        sy = float(np.vdot(s, y))
        if sy > 0:
            history.append((s, y, 1.0 / sy))
            del history[:-MEMORY]
        X, f, H, g = X_new, f_new, H_new, g_new
        if it % CHECK_EVERY == 0:
            gap = _gap(f, H, free)
            if gap <= tol:
                return X, gap
    return X, _gap(f, H, free)


def _reversed_cholesky(X: np.ndarray) -> np.ndarray:
    """Lower-triangular C with C^T C = X: C = J chol(J X J)^T J."""
    L = linalg.cholesky(X[::-1, ::-1], lower=True)
    return np.ascontiguousarray(L.T[::-1, ::-1])


@functools.lru_cache(maxsize=8)
def _multi_epoch_encoder(steps: int, separation: int, tol: float, max_iter: int):
    with threadpool_limits(limits=1):  # small dense factorisations: threads only add overhead
        X, gap = _solve(steps, separation, tol, max_iter)
    return _reversed_cholesky(X), gap


def multi_epoch(
    steps: int, *, separation: int | None = None, tol: float = GAP_TOL, max_iter: int = 3000
) -> DenseMechanism:
    """The multi-epoch optimal factorisation (ME) of the prefix sums for T steps, epoch length b.

    Parameters
    ----------
    steps : int
        Number of steps T (dense: O(T^2) memory, O(T^3) work per iteration; meant for
        T <= ~1000, where a solve takes about a minute on one core).
    separation : int, optional
        b, the steps per epoch of the fixed-epoch order; None (single participation) is b = T.
        The optimum does not depend on the number of participations k: its fixed-epoch
        sensitivity is sens^2 = ceil(T / b) for the full pattern.
    tol : float, default=1e-4
        Stop once the dual certificate shows f(X) <= (1 + tol) f*.
    max_iter : int, default=3000
        Iteration limit; a ``RuntimeWarning`` says when it is reached before ``tol``.

    Returns
    -------
    DenseMechanism
        With ``optimality_gap`` the certified relative gap (cached per process).

    Examples
    --------
    >>> mech = multi_epoch(40, separation=10)
    >>> round(mech.sensitivity_squared(participations=4, separation=10), 9)
    4.0
    >>> mech.optimality_gap <= 1e-4
    True
    """
    steps = check_int(steps, "steps", low=1, high=DENSE_LIMIT)
    b = steps if separation is None else min(check_int(separation, "separation", low=1), steps)
    tol = check_real(tol, "tol", low=0.0)
    max_iter = check_int(max_iter, "max_iter", low=1)
    C, gap = _multi_epoch_encoder(steps, b, tol, max_iter)
    if not gap <= tol:
        warnings.warn(
            f"multi_epoch: certified gap {gap:.3g} > tol = {tol:g} after {max_iter} iterations",
            RuntimeWarning,
            stacklevel=2,
        )
    return DenseMechanism(encoder=C, name=f"me(b={b})", optimality_gap=gap)
