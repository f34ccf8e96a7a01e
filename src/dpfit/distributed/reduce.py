"""One distributed reduction: the sum over row blocks of a per-block NumPy function.

Every full-batch private algorithm needs, per step, sums over records of clipped
per-example quantities. :func:`row_block_sum` evaluates a block function on every row block
of some Dask arrays **on the workers** and brings back one small vector per row block, the
block's sum (a few numbers, never a row); the driver adds them in a pairwise tree in block
order (:func:`tree_sum`). The caller adds the privacy noise afterwards, on the driver,
through :func:`dpfit.mechanisms.gaussian`.

Three routes compute the same per-block vectors, so they give the same sum bit for bit:

* persisted arrays on a ``distributed`` cluster (:mod:`dpfit.distributed.persist`): one
  direct call per worker to the holder of its row blocks (:mod:`dpfit.distributed.holders`),
  no scheduler round trip;
* if a holder fails: one task per persisted row block, through the scheduler;
* otherwise (lazy arrays, or a local scheduler): one Dask graph per step, which reads or
  builds each block and applies the block function (one fused task per row block).

Inside a task the block function runs on consecutive sub-blocks of about
:data:`SUB_BLOCK_BYTES`, so that its passes over the rows (e.g. residuals, row norms, the
gradient sum) read the rows from cache rather than from memory; the block functions return
sums over records, so the sub-block sums add up to the block's.

Each block is cast to float64 (as the in-memory checks do; a value that is not a number, in
a block whose values are not those its metadata declared, becomes NaN:
:func:`dpfit._records.float_values`) and every record with a NaN or infinite value in any of
the arrays becomes the zero record before the block function sees it: the values of lazy
data cannot be checked before the run without reading them, and raising mid-run would make an
error depend on the data (docs/threat-model.md). The map is fixed and per record, so
neighbouring datasets stay neighbours (the rule of :mod:`dpfit.algorithms.onepass` for lazy
arrays).

A reduction on a ``distributed`` cluster that has lost every worker raises
:class:`WorkersLostError` instead of waiting forever (:mod:`dpfit.distributed._compute`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._records import float_values
from ._compute import WorkersLostError, compute, distributed_client, gather
from .arrays import require_dask
from .holders import block_results
from .persist import persisted_blocks

__all__ = [
    "SUB_BLOCK_BYTES",
    "WorkersLostError",
    "aligned",
    "block_sum",
    "row_block_sum",
    "tree_sum",
    "zero_nonfinite_records",
]

#: Bytes of one sub-block of the rows of all arrays (within a core's L2 and the shared L3 of
#: current x86 servers); at least 2048 rows, so the per-call overhead stays small.
SUB_BLOCK_BYTES = 2**21
_MIN_SUB_ROWS = 2048


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
    non-finite value (or a value that is not a number) in any block is zero."""
    arrays = [float_values(b) for b in blocks]
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


def aligned(block: np.ndarray) -> np.ndarray:
    """``block``, or a C-contiguous copy in fresh (aligned) memory if it is not one: a block
    received from another worker can be a misaligned view into the message buffer, on which
    NumPy's BLAS calls run many times slower (see
    :class:`~dpfit.distributed.holders.RowBlockHolder`)."""
    if block.flags.c_contiguous and block.flags.aligned:
        return block
    return np.array(block, order="C")


def block_sum(
    *blocks: np.ndarray,
    block_fn: Callable[..., np.ndarray],
    args: tuple,
    checked: bool = False,
) -> np.ndarray:
    """``block_fn(*blocks, *args)`` as float64, summed over sub-blocks of about
    :data:`SUB_BLOCK_BYTES`, with the zero-record rule applied to each sub-block (module
    docstring) unless ``checked`` (the blocks are float64 and it was applied already)."""
    rows = blocks[0].shape[0]
    columns = sum(1 if b.ndim == 1 else int(np.prod(b.shape[1:])) for b in blocks)
    step = max(_MIN_SUB_ROWS, SUB_BLOCK_BYTES // (8 * columns))
    total = None
    for start in range(0, max(rows, 1), step):
        sub = [aligned(b[start : start + step]) for b in blocks]
        part = block_fn(*(sub if checked else zero_nonfinite_records(*sub)), *args)
        part = np.asarray(part, dtype=np.float64)
        total = part if total is None else total + part
    return total


def tree_sum(parts: np.ndarray) -> np.ndarray:
    """Sum of the rows of ``parts`` (blocks x width), added pairwise in a fixed tree: (0 + 1),
    (2 + 3), ..., then those sums pairwise, and so on (rounding error O(log blocks))."""
    parts = np.asarray(parts, dtype=np.float64)
    while parts.shape[0] > 1:
        pairs = parts.shape[0] // 2
        summed = parts[0 : 2 * pairs : 2] + parts[1 : 2 * pairs : 2]
        parts = np.concatenate([summed, parts[2 * pairs :]])
    return parts[0]


def _blockwise_sum(*blocks: np.ndarray, block_fn: Callable[..., np.ndarray], args: tuple):
    return block_sum(*blocks, block_fn=block_fn, args=args)[None]


def _graph_results(
    arrays: Sequence[Any], block_fn: Callable, args: tuple, width: int
) -> np.ndarray:
    """(row blocks x width) from one Dask graph, computed with the active scheduler."""
    da = require_dask()
    pairs: list[Any] = []
    for j, array in enumerate(arrays):
        pairs += [array, "i" + "abcdefgh"[j] * (array.ndim - 1)]
    parts = da.blockwise(
        _blockwise_sum,
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
    return compute(parts)


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
        ``block_fn(*blocks, *args) -> ndarray of shape (width,)``, a sum over the records of
        the blocks (so that it adds up over any split into sub-blocks); runs on the workers.
    arrays : sequence of dask.array.Array
        Row-aligned arrays with one column block each (see
        :func:`~dpfit.distributed.check_dask_rows`, which also persists them).
    args : tuple
        Public arguments (the current iterate, the clip), sent to every block.
    width : int
        Length of each block's result.

    Returns
    -------
    numpy.ndarray of shape (width,)
        The sum (:func:`tree_sum` of the block sums), computed with the active scheduler (a
        ``distributed.Client`` when one is set, e.g. connected to an existing cluster); the
        same numbers on every route (module docstring).
    """
    client = distributed_client()
    blocks = None if client is None else persisted_blocks(arrays)
    if blocks is None:
        parts = _graph_results(arrays, block_fn, args, width)
    else:
        parts = block_results(client, arrays, blocks, block_fn, args, width)
        if parts is None:  # a holder failed: one task per persisted block
            futures = client.map(block_sum, *blocks, block_fn=block_fn, args=args, pure=False)
            parts = np.stack(gather(client, futures))
    return tree_sum(parts)
