"""Per-step kernels: the clipped sums of the full-batch algorithms, in memory or on Dask.

Each step of DP-GD, DP-2S-GD, noisy GD (and the per-block gradient of DP-AMBSSGD) needs
sums over the records of per-example quantities clipped to a public bound. Each kernel's
per-record arithmetic is written once, as a NumPy *block function* returning one flat
vector (the sums, then the number of clipped records); the kernel runs it

* in memory: once, on the whole arrays;
* on Dask: on every row block, on the workers, through
  :func:`dpfit.distributed.row_block_sum`; only the block results travel to the driver,
  where they are added.

* on rows of in-memory arrays not yet gathered (:class:`Rows`, a one-pass algorithm's
  segment in a random order): on blocks of those rows gathered one at a time into a buffer
  that stays in cache, so the segment is never copied out whole and then read again.

The paths differ only in the order in which block sums are added (floating-point
summation order). The caller divides by its public n and adds the noise on the driver.

Least squares in memory (DP-GD, every step) has a faster route, :class:`LeastSquaresSums`:
the same per-record arithmetic on row blocks small enough to stay in cache between the
residuals X_b theta - y_b and the gradient X_b^T w_b, in buffers allocated once, so a step
reads X from memory once and allocates nothing of size n. Only the order in which the blocks'
gradient sums are added differs from the whole-array block function.

Every block function runs under :func:`dpfit._floats.quiet_floats` (on the driver and on Dask
workers alike), so no record's values make numpy warn or raise, whatever ``np.seterr`` says.

Notation: r_i = x_i.theta - y_i (least squares), c_i = min(1, clip / ||g_i||) the clip
factor of the per-example gradient g_i (0 for a non-finite g_i, see
:func:`dpfit.mechanisms.clip_factors`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from .._floats import quiet_floats
from .._validation import check_identified, check_int, check_iv_data
from .._validation import check_X_y as _check_X_y
from ..distributed import check_dask_rows, is_dask, row_block_sum
from ..losses.base import checked_gradients
from ..mechanisms import (
    clip_factors,
    clip_residuals,
    residual_thresholds,
    row_norms,
    scale_rows,
)
from ..privacy import Relation

__all__ = [
    "LeastSquaresSums",
    "Rows",
    "check_data",
    "check_iv",
    "clipped_outer_sum",
    "clipped_row_sum",
    "least_squares_sum",
    "least_squares_sums",
    "level_counts",
    "loss_sums",
    "two_stage_sums",
]

#: Rows per chunk when computing row norms in memory (no temporary of the size of X).
_CHUNK_ROWS = 8192
#: :class:`LeastSquaresSums` treats an X of at most this many bytes as one block: it stays in
#: the last-level cache between the two passes anyway, and one block has the least overhead
#: (measured: splitting a 1e5 x 10 X into blocks of 16384 rows costs 15% more per step).
_ONE_BLOCK_BYTES = 2**23
#: Otherwise, the target bytes of one row block (about a core's L2 on current x86 servers),
#: and the bounds on its rows: fewer rows make the per-block call overhead count, more no
#: longer stay in cache between X_b theta and X_b^T r.
_BLOCK_BYTES = 2**21
_BLOCK_ROWS = (2048, 16384)


# -- data checks: in memory (values) or on Dask (metadata only) ---------------------------------
def check_data(
    X: Any, y: Any, *, n_public: Any = None, relation: Relation = Relation.REPLACE_ONE
) -> tuple[Any, Any, int]:
    """Validated ``(X, y, n)``: NumPy arrays and their row count, or aligned Dask arrays and the
    declared ``n_public`` (required for Dask; :mod:`dpfit.distributed.arrays`)."""
    if is_dask(X) or is_dask(y):
        (X, y), n = check_dask_rows(
            {"X": (X, 2), "y": (y, 1)}, n_public=n_public, relation=relation
        )
        return X, y, n
    X, y = _check_X_y(X, y)
    return X, y, X.shape[0]


def check_iv(X: Any, y: Any, Z: Any, *, n_public: Any = None) -> tuple[Any, Any, Any, int]:
    """:func:`check_data` for IV data (replace-one): ``(X, y, Z, n)``, q >= p checked."""
    if is_dask(X) or is_dask(y) or is_dask(Z):
        (X, y, Z), n = check_dask_rows(
            {"X": (X, 2), "y": (y, 1), "Z": (Z, 2)},
            n_public=n_public,
            relation=Relation.REPLACE_ONE,
        )
        check_identified(X.shape[1], Z.shape[1])
        return X, y, Z, n
    X, y, Z = check_iv_data(X, y, Z)
    if n_public is not None and check_int(n_public, "n_public", low=1) != X.shape[0]:
        raise ValueError("n_public must equal len(X): n is public under replace-one")
    return X, y, Z, X.shape[0]


@quiet_floats()
def _row_norms_chunked(X: np.ndarray) -> np.ndarray:
    """||x_i|| for every row, computed in chunks (overflow-safe, see mechanisms.row_norms)."""
    out = np.empty(X.shape[0])
    for start in range(0, X.shape[0], _CHUNK_ROWS):
        out[start : start + _CHUNK_ROWS] = row_norms(X[start : start + _CHUNK_ROWS])
    return out


class Rows(NamedTuple):
    """The rows ``rows`` of an in-memory array, in that order, not yet gathered.

    A kernel given :class:`Rows` (for every one of its arrays, with the same ``rows``) gathers
    them a block at a time into one buffer (:func:`_gathered_sum`).
    """

    array: np.ndarray
    rows: np.ndarray

    def gather(self) -> np.ndarray:
        """The selected rows as one new array (for a caller that needs them all at once)."""
        return np.take(self.array, self.rows, axis=0)


def _gathered_sum(
    block_fn: Callable[..., np.ndarray], arrays: tuple, args: tuple, width: int
) -> np.ndarray:
    """``block_fn`` summed over blocks of the selected rows, each gathered into a buffer.

    A block of ``_block_rows`` rows stays in a core's cache while ``block_fn`` reads it
    (twice or more: row norms, residuals, X^T r), so the selected rows are read from memory
    once. ``mode="clip"`` lets ``np.take`` write into the buffer directly (the rows come from
    a permutation, so none is out of range); with the default mode it copies through a
    second buffer.
    """
    rows = arrays[0].rows
    size = max(1, min(len(rows), _block_rows(arrays[0].array.shape[1])))  # no rows: zeros
    buffers = [np.empty((size, *a.array.shape[1:]), dtype=a.array.dtype) for a in arrays]
    total = np.zeros(width)
    for start in range(0, len(rows), size):
        block = rows[start : start + size]
        parts = [
            np.take(a.array, block, axis=0, out=buf[: len(block)], mode="clip")
            for a, buf in zip(arrays, buffers, strict=True)
        ]
        np.add(total, block_fn(*parts, *args), out=total)
    return total


def _run(block_fn: Callable[..., np.ndarray], arrays: tuple, args: tuple, width: int):
    """The block function on whole NumPy arrays, summed over the row blocks on Dask, or
    summed over gathered blocks of :class:`Rows`."""
    if is_dask(arrays[0]):
        return row_block_sum(block_fn, arrays, args, width=width)
    if isinstance(arrays[0], Rows):
        return _gathered_sum(block_fn, arrays, args, width)
    return block_fn(*arrays, *args)


# -- least squares (DP-GD, the gradient of DP-AMBSSGD) ----------------------------------------
@quiet_floats()
def least_squares_block(
    X: np.ndarray, y: np.ndarray, theta: np.ndarray, clip: float | None, x_norms=None
) -> np.ndarray:
    """[sum_i c_i r_i x_i, #{c_i < 1}] with r_i = x_i.theta - y_i; ``clip=None``: c_i = 1.

    ||g_i|| = |r_i| ||x_i||, so clipping needs the row norms of X (computed here unless
    given) and the residuals only: two passes over X and nothing of size n x p.
    """
    r = X @ theta - y  # an overflowing row gets factor 0 below (quiet_floats: no warning)
    if clip is None:
        return np.append(X.T @ r, 0.0)
    if x_norms is None:
        x_norms = row_norms(X)
    factors = clip_factors(np.abs(r) * x_norms, clip)
    return np.append(X.T @ scale_rows(r, factors), np.count_nonzero(factors < 1.0))


def _block_rows(p: int) -> int:
    low, high = _BLOCK_ROWS
    return max(low, min(high, _BLOCK_BYTES // (8 * p)))


class LeastSquaresSums:
    """``sums(theta) -> (sum_i c_i (x_i.theta - y_i) x_i, number clipped)`` for X in memory.

    The arithmetic of :func:`least_squares_block` in buffers allocated once, with the row
    norms of X computed once, here: r = X theta - y, clipped in place
    (:func:`dpfit.mechanisms.clip_residuals`: :func:`~dpfit.mechanisms.clip_factors`'
    factor, exactly), then X^T r.

    * X of at most 8 MiB (it stays in the last-level cache between the two passes): one
      block, exactly :func:`least_squares_block`'s arithmetic, bit for bit;
    * larger X: row blocks small enough to stay in a core's cache, X_b^T r_b added up block
      by block while X_b is still there, so a step reads X from memory once instead of
      twice. Only the order in which the block sums are added differs (a few ulp of the
      sum).

    Should any per-example gradient be non-finite (the sum is then non-finite), the step is
    recomputed by :func:`least_squares_block`, which zeroes such records.
    """

    def __init__(self, X: np.ndarray, y: np.ndarray, clip: float | None, block_rows=None):
        n, p = X.shape
        self._X, self._y, self._clip = X, y, clip
        self._x_norms = None if clip is None else _row_norms_chunked(X)
        thresholds = None if clip is None else residual_thresholds(self._x_norms, clip)
        if block_rows is None:
            block_rows = n if X.nbytes <= _ONE_BLOCK_BYTES else _block_rows(p)
        rows = min(n, block_rows)
        r, norms, mask = np.empty(rows), np.empty(rows), np.empty(rows, dtype=bool)
        self._part = np.empty(p)
        # Per block: views of the data and of the buffers, made once (slicing costs per call).
        self._blocks = []
        for a in range(0, n, rows):
            b = min(a + rows, n)
            block = (X[a:b], X[a:b].T, y[a:b], r[: b - a])
            if clip is None:
                block += (None, None, norms[: b - a], mask[: b - a])
            else:
                block += (self._x_norms[a:b], thresholds[a:b], norms[: b - a], mask[: b - a])
            self._blocks.append(block)

    def __call__(self, theta: np.ndarray) -> tuple[np.ndarray, int]:
        with quiet_floats():
            return self.quiet_call(theta)

    def quiet_call(self, theta: np.ndarray) -> tuple[np.ndarray, int]:
        """``self(theta)`` for a caller that already runs inside :func:`quiet_floats` (a loop
        of many steps enters it once instead of at every step)."""
        clip, part = self._clip, self._part
        total, clipped = None, 0
        for Xb, XbT, yb, r, x_norms, thresholds, norms, mask in self._blocks:
            np.matmul(Xb, theta, out=r)
            np.subtract(r, yb, out=r)
            if thresholds is not None:
                # clip_residuals' candidate test, here: most steps of a fit have no
                # candidate, and then the call is not made at all
                np.abs(r, out=norms)
                np.greater(norms, thresholds, out=mask)
                candidates = np.count_nonzero(mask)
                if candidates:
                    clipped += clip_residuals(
                        r,
                        x_norms,
                        clip,
                        thresholds=thresholds,
                        norms=norms,
                        mask=mask,
                        candidates=candidates,
                    )
            if total is None:
                total = XbT @ r
            else:
                np.matmul(XbT, r, out=part)
                np.add(total, part, out=total)
        finite = math.isfinite(total @ total)  # also False if the sum is huge
        if not finite:  # some non-finite per-example gradient (or a huge sum): recompute
            out = least_squares_block(self._X, self._y, theta, clip, self._x_norms)
            return out[:-1], int(out[-1])
        return total, clipped


def least_squares_sum(
    X: Any, y: Any, theta: np.ndarray, clip: float | None
) -> tuple[np.ndarray, int]:
    """``(sum_i c_i (x_i.theta - y_i) x_i, number clipped)`` once: in memory, on :class:`Rows`
    of in-memory arrays, or on Dask.

    For a single query (DP-AMBSSGD's fresh batch per step); repeated queries on the same
    data take :func:`least_squares_sums`, which computes the row norms and buffers once.
    """
    p = theta.shape[0]
    out = _run(least_squares_block, (X, y), (theta, clip), p + 1)
    return out[:p], int(out[p])


def least_squares_sums(
    X: Any, y: Any, clip: float | None
) -> Callable[[np.ndarray], tuple[np.ndarray, int]]:
    """``sums(theta) -> (sum_i c_i (x_i.theta - y_i) x_i, number clipped)`` for X in memory
    (:class:`LeastSquaresSums`) or on Dask (one reduction per call)."""
    if not is_dask(X):
        return LeastSquaresSums(X, y, clip)
    return lambda theta: least_squares_sum(X, y, theta, clip)


def level_counts(X: Any, y: Any, theta: np.ndarray, search: Any) -> np.ndarray:
    """``search.count(|X theta - y|)``: DP-STAT's exact per-level counts of the residuals
    (:class:`dpfit.mechanisms.DoublingSearch`), summed over row blocks on Dask."""
    return _run(_level_block, (X, y), (theta, search), search.n_queries).astype(np.int64)


@quiet_floats()
def _level_block(X: np.ndarray, y: np.ndarray, theta: np.ndarray, search: Any) -> np.ndarray:
    return np.asarray(search.count(np.abs(X @ theta - y)), dtype=np.float64)


# -- two-stage least squares (DP-2S-GD) -------------------------------------------------------
@quiet_floats()
def clipped_outer_sum(
    features: np.ndarray, residuals: np.ndarray, feature_norms: np.ndarray, clip: float | None
) -> tuple[np.ndarray, int]:
    """sum_i CLIP(f_i r_i^T) = F^T (c * R) and the number of rows clipped.

    ``residuals`` is (n, k) or (n,); each per-example gradient is the outer product of a row of
    ``features`` with a row of ``residuals``, whose Frobenius norm is the product of the norms.
    A row whose norm is not finite (a non-finite feature or residual, or a product of norms
    beyond float64) gets factor 0 and contributes exactly 0: its feature row is zeroed too, as
    ``inf * 0`` would be NaN (the zero rule of :mod:`dpfit.mechanisms.clipping`).
    """
    R = residuals if residuals.ndim == 2 else residuals[:, None]
    if clip is None:
        grad = features.T @ R
        return (grad if residuals.ndim == 2 else grad[:, 0]), 0
    factors = clip_factors(feature_norms * row_norms(R), clip)
    if not factors.all():  # some row is zeroed: zero its features as well
        features = scale_rows(features, factors > 0)
    grad = features.T @ scale_rows(R, factors)
    return (grad if residuals.ndim == 2 else grad[:, 0]), int(np.count_nonzero(factors < 1.0))


@quiet_floats()
def two_stage_block(
    X: np.ndarray,
    y: np.ndarray,
    Z: np.ndarray,
    theta: np.ndarray,
    beta: np.ndarray,
    clip_theta: float | None,
    clip_beta: float | None,
    first: bool,
    z_norms=None,
) -> np.ndarray:
    """[G1 (q*p), #clipped1, g2 (p), #clipped2]: both stages' clipped sums at (Theta, beta).

    G1 = sum_i CLIP(z_i (Theta^T z_i - x_i)^T) (skipped, zeros, when ``first`` is False) and
    g2 = sum_i CLIP(w_i (w_i.beta - y_i)) with w_i = Theta^T z_i (Liang et al. 2025, Alg. 1).
    """
    W = Z @ theta  # w_i = Theta^T z_i; an overflowing row gets factor 0 below
    w_norms = row_norms(W)
    s = W @ beta - y
    if first:
        z_norms = row_norms(Z) if z_norms is None else z_norms
        g1, c1 = clipped_outer_sum(Z, W - X, z_norms, clip_theta)
    else:
        g1, c1 = np.zeros(theta.shape), 0
    g2, c2 = clipped_outer_sum(W, s, w_norms, clip_beta)
    return np.concatenate([g1.ravel(), [c1], g2, [c2]])


def two_stage_sums(X: Any, y: Any, Z: Any, *, clip_theta, clip_beta, first: bool):
    """``sums(Theta, beta) -> (G1, clipped1, g2, clipped2)`` in memory or on Dask."""
    p, q = X.shape[1], Z.shape[1]
    z_norms = () if is_dask(Z) else (row_norms(Z),)

    def sums(theta: np.ndarray, beta: np.ndarray):
        args = (theta, beta, clip_theta, clip_beta, first, *z_norms)
        out = _run(two_stage_block, (X, y, Z), args, q * p + p + 2)
        k = q * p
        return out[:k].reshape(q, p), int(out[k]), out[k + 1 : k + 1 + p], int(out[-1])

    return sums


# -- per-example losses (noisy GD and the KL methods) -----------------------------------------
@quiet_floats()
def clipped_row_sum(
    rows: np.ndarray, bound: float, out: np.ndarray | None = None
) -> tuple[np.ndarray, int]:
    """sum_i of the rows, each clipped to ``bound``, non-finite rows zeroed (the rules of
    :mod:`dpfit.mechanisms.clipping`); and #{||row|| > bound}. The bound is always enforced:
    a loss's declared constants are never trusted (:class:`~._loss_queries.LossQueries`).

    ``out`` (the shape and memory layout of ``rows``; may be ``rows`` itself) receives the
    clipped rows, so no temporary of that size is made; the sum is the same, bit for bit.
    """
    norms = row_norms(rows)
    factors = clip_factors(norms, bound)
    if out is None:
        clipped = scale_rows(rows, factors)
    else:
        clipped = np.multiply(rows, factors[:, None], out=out)
        positive = factors > 0
        if not positive.all():  # scale_rows' zero rows (inf * 0 would be NaN)
            clipped[~positive] = 0.0
    return clipped.sum(axis=0), int(np.count_nonzero(norms > bound))


@quiet_floats()
def _loss_rows_sum(X, y, loss, thetas, bound: float) -> np.ndarray:
    """[clipped sum, #clipped] of per-example gradients at ``thetas[0]`` (minus those at
    ``thetas[1]`` when two are given)."""
    rows = checked_gradients(loss, thetas[0], X, y)
    if len(thetas) == 2:
        rows = rows - checked_gradients(loss, thetas[1], X, y)  # inf - inf rows are zeroed
    total, clipped = clipped_row_sum(rows, bound)
    return np.append(total, clipped)


def _supervised_block(X: np.ndarray, y: np.ndarray, *args) -> np.ndarray:
    return _loss_rows_sum(X, y, *args)


def _unsupervised_block(X: np.ndarray, *args) -> np.ndarray:
    return _loss_rows_sum(X, None, *args)


def loss_sums(loss: Any, X: Any, y: Any):
    """``sums(thetas, bound) -> (sum, clipped)`` over Dask row blocks (one reduction); the
    in-memory path of :class:`~dpfit.algorithms._loss_queries.LossQueries` caches gradients
    and calls :func:`clipped_row_sum` directly."""
    block, arrays = (_unsupervised_block, (X,)) if y is None else (_supervised_block, (X, y))

    def sums(thetas: tuple[np.ndarray, ...], bound: float) -> tuple[np.ndarray, int]:
        p = thetas[0].shape[0]
        out = row_block_sum(block, arrays, (loss, thetas, bound), width=p + 1)
        return out[:p], int(out[p])

    return sums
