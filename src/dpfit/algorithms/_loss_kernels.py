"""Per-example loss kernels (noisy GD and the KL methods): clipped sums of loss gradients.

In memory :class:`~dpfit.algorithms._loss_queries.LossQueries` caches the gradients and
calls :func:`clipped_row_sum`; on Dask :func:`loss_sums` runs one reduction per query.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._floats import quiet_floats
from ..distributed import row_block_sum
from ..losses.base import checked_gradients
from ..mechanisms import clip_factors, row_norms, scale_rows

__all__ = ["clipped_row_sum", "loss_sums"]


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
