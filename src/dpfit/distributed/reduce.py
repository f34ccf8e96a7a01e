"""One distributed reduction: the sum over row blocks of a per-block NumPy function.

Every full-batch private algorithm needs, per step, sums over records of clipped
per-example quantities. :func:`row_block_sum` evaluates a block function on every row block
of some Dask arrays **on the workers** and adds the small per-block results with Dask's tree
reduction; only those vectors (a few numbers per block) travel, never a row. The caller adds
the privacy noise afterwards, on the driver, through :func:`dpfit.mechanisms.gaussian`.

Each block is cast to float64 (as the in-memory checks do) and every record with a NaN or
infinite value in any of the arrays becomes the zero record before the block function sees
it: the values of lazy data cannot be checked before the run without reading them, and
raising mid-run would make an error depend on the data (docs/threat-model.md). The map is fixed
and per record, so neighbouring datasets stay neighbours (the rule of
:mod:`dpfit.algorithms.onepass` for lazy arrays).

A reduction on a ``distributed`` cluster that has lost every worker raises
:class:`WorkersLostError` instead of waiting forever (:mod:`dpfit.distributed._compute`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ._compute import WorkersLostError, compute
from .arrays import require_dask

__all__ = ["WorkersLostError", "row_block_sum", "zero_nonfinite_records"]


def _nonfinite_rows(a: np.ndarray) -> np.ndarray:
    """Rows of a 2-D array with a NaN or infinite entry: a sum of squares flags candidates
    (one fast pass; it is also non-finite when finite squares overflow), checked exactly."""
    with np.errstate(over="ignore", invalid="ignore"):
        bad = ~np.isfinite(np.einsum("ij,ij->i", a, a))
    if bad.any():
        bad[bad] = ~np.isfinite(a[bad]).all(axis=1)
    return bad


def zero_nonfinite_records(*blocks: np.ndarray) -> list[np.ndarray]:
    """float64 arrays (copies where changed) of aligned row blocks in which every record with a
    non-finite value in any block is zero."""
    arrays = [np.asarray(b, dtype=np.float64) for b in blocks]
    rows = arrays[0].shape[0]
    if any(a.shape[0] != rows for a in arrays):
        raise ValueError("row blocks of the inputs are not aligned (different block lengths)")
    bad = np.zeros(rows, dtype=bool)
    for a in arrays:
        bad |= _nonfinite_rows(a.reshape(rows, -1))
    if not bad.any():
        return arrays
    out = [a.copy() for a in arrays]
    for a in out:
        a[bad] = 0.0
    return out


def _apply(*blocks: np.ndarray, block_fn: Callable[..., np.ndarray], args: tuple) -> np.ndarray:
    return np.asarray(block_fn(*zero_nonfinite_records(*blocks), *args), dtype=np.float64)[None]


def row_block_sum(
    block_fn: Callable[..., np.ndarray],
    arrays: Sequence[Any],
    args: tuple = (),
    *,
    width: int,
) -> np.ndarray:
    """sum over row blocks b of ``block_fn(*arrays_b, *args)``: one Dask computation.

    Parameters
    ----------
    block_fn : callable
        ``block_fn(*blocks, *args) -> ndarray of shape (width,)``; runs on the workers.
    arrays : sequence of dask.array.Array
        Row-aligned arrays with one column block each (see
        :func:`~dpfit.distributed.check_dask_rows`).
    args : tuple
        Public arguments (the current iterate, the clip), sent to every block.
    width : int
        Length of each block's result.

    Returns
    -------
    numpy.ndarray of shape (width,)
        The sum, computed with the active scheduler (a ``distributed.Client`` when one is
        set, e.g. connected to an existing cluster).
    """
    da = require_dask()
    pairs: list[Any] = []
    for j, array in enumerate(arrays):
        pairs += [array, "i" + "abcdefgh"[j] * (array.ndim - 1)]
    parts = da.blockwise(
        _apply,
        "iz",
        *pairs,
        new_axes={"z": width},
        adjust_chunks={"i": 1},
        concatenate=True,
        dtype=np.float64,
        meta=np.empty((0, 0)),
        block_fn=block_fn,
        args=args,
    )
    return np.asarray(compute(parts.sum(axis=0)), dtype=np.float64)
