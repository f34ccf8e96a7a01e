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
reads X from memory once and allocates nothing of size n; an X that fits in cache is one block,
on a column-major copy of X (faster matrix-vector products at few columns). Only summation
order (of the blocks' gradient sums, or of each dot product's terms) differs from the
whole-array block function.

The least-squares kernels live here; the two-stage ones in :mod:`._iv_kernels`, the
per-example loss ones in :mod:`._loss_kernels` (both re-exported here), and how a block
function is run (whole arrays, Dask, :class:`Rows`) in :mod:`._kernel_runs`.

Every block function runs under :func:`dpfit._floats.quiet_floats` (on the driver and on Dask
workers alike), so no record's values make numpy warn or raise, whatever ``np.seterr`` says.

Notation: r_i = x_i.theta - y_i (least squares), c_i = min(1, clip / ||g_i||) the clip
factor of the per-example gradient g_i (0 for a non-finite g_i, see
:func:`dpfit.mechanisms.clip_factors`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .._floats import quiet_floats
from .._validation import check_identified, check_int, check_iv_data, not_finite_error
from .._validation import check_X_y as _check_X_y
from ..distributed import check_dask_rows, is_dask
from ..distributed.holders import BlockState, register_block_state
from ..mechanisms import (
    clip_factors,
    clip_residuals,
    residual_thresholds,
    row_norms,
    scale_rows,
)
from ..mechanisms.clipping import CLIP_MARGIN
from ..privacy import Relation
from ._iv_kernels import clipped_outer_sum, two_stage_sums
from ._kernel_runs import Rows, cache_block_rows, row_blocks, run
from ._loss_kernels import clipped_row_sum, loss_sums

__all__ = [
    "LeastSquaresSums",
    "Rows",
    "check_data",
    "check_iv",
    "clipped_outer_sum",
    "clipped_row_sum",
    "finite_row_norms",
    "least_squares_sum",
    "least_squares_sums",
    "level_counts",
    "loss_sums",
    "two_stage_sums",
]

#: :class:`LeastSquaresSums` treats an X of at most this many bytes as one block: it stays in
#: the last-level cache between the two passes anyway, and one block has the least overhead
#: (measured: splitting a 1e5 x 10 X into blocks of 16384 rows costs 15% more per step).
#: Otherwise its blocks are cache-sized (:func:`~._kernel_runs.cache_block_rows`).
#: Column-major passes only up to this many columns (measured: faster at p = 10, not at
#: p = 100; benchmarks/README.md).
_COLUMN_MAJOR_MAX_P = 32
_ONE_BLOCK_BYTES = 2**23


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
def finite_row_norms(X: np.ndarray, name: str) -> np.ndarray:
    """||x_i|| for every row of a float64 X, and the proof that every entry of X is finite.

    :func:`~dpfit.mechanisms.row_norms` gives inf for a row with a NaN or infinite entry and
    a finite norm for every other row except those whose norm overflows (entries near
    1.8e308), so the rows with a non-finite norm are checked exactly. Raises
    :func:`~dpfit._validation.not_finite_error` (naming ``name``, never a row) otherwise.
    One pass over X, as the plain finiteness check's sum, which it replaces.
    """
    norms = row_norms(X)  # n-vectors only: no temporary of the size of X
    if not math.isfinite(np.add.reduce(norms)):  # norms >= 0: a finite sum proves all finite
        suspect = ~np.isfinite(norms)
        if suspect.any() and not np.isfinite(X[suspect]).all():
            raise not_finite_error(name)
    return norms


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


class LeastSquaresSums:
    """``sums(theta) -> (sum_i c_i (x_i.theta - y_i) x_i, number clipped)`` for X in memory.

    The arithmetic of :func:`least_squares_block` in buffers allocated once, with the row
    norms of X computed once, here: r = X theta - y, clipped in place
    (:func:`dpfit.mechanisms.clip_residuals`: :func:`~dpfit.mechanisms.clip_factors`'
    factor, exactly), then X^T r.

    * X of at most 8 MiB (it stays in the last-level cache between the two passes): one
      block; with at most 32 columns, on a column-major (Fortran-order) copy of X made once
      here (at p = 100 the copy was not faster on a quiet machine). Both passes
      (X theta and X^T r) are matrix-vector products over the n-long columns, which BLAS
      runs about twice as fast as over the rows of a row-major X with few columns
      (``benchmarks/bench_gemv_layout.py``). The copy is the one extra memory of the kernel
      (at most 8 MiB, none if X is already column-major); whether it is made depends on the
      public shape of X only. The arithmetic is :func:`least_squares_block`'s on that copy,
      bit for bit: against the row-major X only the order of each dot product's terms
      differs (a few ulp);
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
        self._x_norms = None if clip is None else row_norms(X)
        thresholds = None if clip is None else residual_thresholds(self._x_norms, clip)
        if block_rows is None and X.nbytes <= _ONE_BLOCK_BYTES and p <= _COLUMN_MAJOR_MAX_P:
            X, block_rows = np.asfortranarray(X), n  # column-major passes (class docstring)
        elif block_rows is None and X.nbytes <= _ONE_BLOCK_BYTES:
            block_rows = n
        elif block_rows is None:
            block_rows = cache_block_rows(p)
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
        finite = math.isfinite(np.vdot(total, total))  # also False if the sum is huge
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
    if isinstance(X, Rows):
        return _rows_least_squares_sum(X, y, theta, clip)
    p = theta.shape[0]
    out = run(least_squares_block, (X, y), (theta, clip), p + 1)
    return out[:p], int(out[p])


@quiet_floats()
def _rows_least_squares_sum(
    X: Rows, y: Rows, theta: np.ndarray, clip: float | None
) -> tuple[np.ndarray, int]:
    """:func:`least_squares_block`'s sums over cache-sized blocks of selected rows
    (:func:`~._kernel_runs.row_blocks`), operation for operation, in buffers allocated once.

    Per block: r = X_b theta - y_b; g = |r| ||x_i|| (the row norms of ``X.norms`` when given,
    else computed here); if some g_i exceeds bound = clip x CLIP_MARGIN, r <- r min(1,
    bound / g) (for finite g the factor and product of :func:`~dpfit.mechanisms.clip_factors`
    and :func:`~dpfit.mechanisms.scale_rows`, the same float operations, without their
    masks); then X_b^T r while X_b is still in cache. A block with a non-finite g_i or sum
    (some non-finite per-example gradient) is recomputed by the block function, which zeroes
    such records.
    """
    p = theta.shape[0]
    size = cache_block_rows(p)
    arrays = (X, y) if X.norms is None else (X, y, Rows(X.norms, X.rows))
    bound = None if clip is None else clip * CLIP_MARGIN
    total, part, clipped = np.zeros(p), np.empty(p), 0
    r, g, mask = np.empty(size), np.empty(size), np.empty(size, dtype=bool)
    for parts in row_blocks(arrays, size):
        Xb, yb = parts[0], parts[1]
        k = Xb.shape[0]
        rb, gb, mb = r[:k], g[:k], mask[:k]
        np.matmul(Xb, theta, out=rb)
        np.subtract(rb, yb, out=rb)
        norms, count, finite = None, 0, True
        if bound is not None:
            norms = parts[2] if len(parts) > 2 else row_norms(Xb)
            np.abs(rb, out=gb)
            np.multiply(gb, norms, out=gb)  # ||g_i|| = |r_i| ||x_i||
            top = gb.max()
            finite = math.isfinite(top)  # else the block function zeroes the non-finite
            if finite and top > bound:
                np.greater(gb, bound, out=mb)
                count = int(np.count_nonzero(mb))
                # min(1, bound / ||g_i||) is clip_factors' factor for every finite ||g_i||
                np.divide(bound, gb, out=gb)
                np.minimum(gb, 1.0, out=gb)
                np.multiply(rb, gb, out=rb)
        if finite:
            np.matmul(Xb.T, rb, out=part)
        if not (finite and math.isfinite(np.vdot(part, part))):  # also False for a huge sum
            out = least_squares_block(Xb, yb, theta, clip, norms)
            part[:], count = out[:-1], int(out[-1])
        np.add(total, part, out=total)
        clipped += count
    return total, clipped


def least_squares_sums(
    X: Any, y: Any, clip: float | None
) -> Callable[[np.ndarray], tuple[np.ndarray, int]]:
    """``sums(theta) -> (sum_i c_i (x_i.theta - y_i) x_i, number clipped)`` for X in memory
    (:class:`LeastSquaresSums`) or on Dask (one reduction per call)."""
    if not is_dask(X):
        return LeastSquaresSums(X, y, clip)
    return lambda theta: least_squares_sum(X, y, theta, clip)


# On a Dask cluster with row-block holders (dpfit.distributed.holders), each holder runs the
# in-memory kernel above on its row blocks, with their row norms computed once.
def _least_squares_clip(args: tuple) -> Any:
    """The static part of ``least_squares_block``'s arguments ``(theta, clip)``: the clip."""
    return args[1]


def _least_squares_state(X: np.ndarray, y: np.ndarray, theta: np.ndarray, clip: Any) -> Any:
    return least_squares_sums(X, y, clip)


def _least_squares_call(sums: Any, theta: np.ndarray, clip: Any) -> np.ndarray:
    total, clipped = sums(theta)
    return np.append(total, clipped)


register_block_state(
    least_squares_block,
    BlockState(static=_least_squares_clip, make=_least_squares_state, call=_least_squares_call),
)


def level_counts(X: Any, y: Any, theta: np.ndarray, search: Any) -> np.ndarray:
    """``search.count(|X theta - y|)``: DP-STAT's exact per-level counts of the residuals
    (:class:`dpfit.mechanisms.DoublingSearch`), summed over row blocks on Dask."""
    return run(_level_block, (X, y), (theta, search), search.n_queries).astype(np.int64)


@quiet_floats()
def _level_block(X: np.ndarray, y: np.ndarray, theta: np.ndarray, search: Any) -> np.ndarray:
    return np.asarray(search.count(np.abs(X @ theta - y)), dtype=np.float64)
