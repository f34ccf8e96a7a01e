"""How a kernel's block function is run: on whole arrays, on Dask row blocks, or on gathered rows.

A *block function* (:mod:`dpfit.algorithms._kernels`) maps arrays of records to one flat
vector of sums. :func:`run` applies it once to in-memory arrays, on every Dask row block
through :func:`dpfit.distributed.row_block_sum` (only block results travel to the driver),
or, for :class:`Rows` (a one-pass algorithm's segment in a random order), on cache-sized
blocks of those rows gathered one at a time into a buffer. The three differ only in the
order in which block sums are added.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ..distributed import is_dask, row_block_sum

__all__ = ["Rows", "cache_block_rows", "run"]

#: The target bytes of one row block (about a core's L2 on current x86 servers), and the
#: bounds on its rows: fewer rows make the per-block call overhead count, more no longer
#: stay in cache between X_b theta and X_b^T r.
_BLOCK_BYTES = 2**21
_BLOCK_ROWS = (2048, 16384)


def cache_block_rows(p: int) -> int:
    """Rows of a cache-sized block of a float64 array with ``p`` columns."""
    low, high = _BLOCK_ROWS
    return max(low, min(high, _BLOCK_BYTES // (8 * p)))


class Rows(NamedTuple):
    """The rows ``rows`` of an in-memory array, in that order, not yet gathered.

    A kernel given :class:`Rows` (for every one of its arrays, with the same ``rows``) gathers
    them a block at a time into one buffer (:func:`run`).
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

    A block of :func:`cache_block_rows` rows stays in a core's cache while ``block_fn`` reads it
    (twice or more: row norms, residuals, X^T r), so the selected rows are read from memory
    once. ``mode="clip"`` lets ``np.take`` write into the buffer directly (the rows come from
    a permutation, so none is out of range); with the default mode it copies through a
    second buffer.
    """
    rows = arrays[0].rows
    size = max(1, min(len(rows), cache_block_rows(arrays[0].array.shape[1])))  # no rows: zeros
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


def run(block_fn: Callable[..., np.ndarray], arrays: tuple, args: tuple, width: int):
    """The block function on whole NumPy arrays, summed over the row blocks on Dask, or
    summed over gathered blocks of :class:`Rows`."""
    if is_dask(arrays[0]):
        return row_block_sum(block_fn, arrays, args, width=width)
    if isinstance(arrays[0], Rows):
        return _gathered_sum(block_fn, arrays, args, width)
    return block_fn(*arrays, *args)
