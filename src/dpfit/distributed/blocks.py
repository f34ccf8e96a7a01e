"""In-memory data row block by row block: row-wise maps and per-record sums.

The in-memory counterpart of the row-block reductions of :mod:`dpfit.distributed.reduce`:
a fit that rescales its data through a public row-wise map, whitens it and sums per-record
quantities over it (the moment passes of the preconditioned fits) needs no temporary of the
size of the data beyond one block of :func:`block_rows` rows.

* :class:`RowMap`: a public row-wise map of an array, computed one row block at a time
  whenever it is read (a fit's rescaled design, never held whole);
* :func:`map_blocks`: a row-wise map into one new array, block by block (the temporaries of
  the map stay the size of one block);
* :func:`block_sum`: a per-record block function summed over the row blocks.

A block function sees each row of a block on its own, so a map computed block by block equals
the map of the whole array exactly (element-wise operations; a row block's matrix product
computes each row as the whole product does). A sum over more than one block adds the
blocks' partial sums, which changes the order of floating-point addition (the last bits; as
the Dask reduction does); data of at most one block are summed in one call, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["BLOCK_BYTES", "RowMap", "block_rows", "block_sum", "map_blocks", "row_slices"]

#: Bytes of float64 in one row block of the widest array a pass reads: a block and the few
#: temporaries a moment pass makes of it stay in a core's L2 cache (512 KiB here). Measured
#: on the moment passes at n = 2e5, k = 21 (AMD EPYC): blocks of 1,024 rows (172 KB) take
#: 0.68 x the time of blocks of 1,560-6,241 rows (262 KB-1 MB); 512 rows pay Python's
#: overhead per block (0.9 x).
BLOCK_BYTES = 1 << 17

#: Fewest rows in a block (narrow data would otherwise make many tiny blocks).
_MIN_ROWS = 1024


def block_rows(width: int) -> int:
    """Rows per block for arrays of ``width`` float64 columns (:data:`BLOCK_BYTES`)."""
    return max(_MIN_ROWS, BLOCK_BYTES // (8 * max(int(width), 1)))


def _zero_nonfinite_rows(out: np.ndarray) -> np.ndarray:
    """Rows of ``out`` with a non-finite entry set to 0 (a formula's zero records; in
    memory other data were refused before), in place."""
    bad = ~np.isfinite(out) if out.ndim == 1 else ~np.isfinite(out).all(axis=1)
    if bad.any():
        out[bad] = 0.0
    return out


@dataclass(frozen=True, eq=False)
class RowMap:
    """``func`` applied to every row of ``array``, computed one row block at a time.

    Reading a block (:meth:`block`) maps the block's rows (non-finite entries sent as NaN and
    the rows that stay non-finite zeroed, the zero-record rule of
    :func:`dpfit.distributed.map_rows`); ``np.asarray`` builds the whole mapped array,
    block by block, for a consumer that needs it whole.
    """

    array: np.ndarray
    func: Callable[[np.ndarray], np.ndarray]
    columns: int | None

    @property
    def shape(self) -> tuple[int, ...]:
        n = self.array.shape[0]
        return (n,) if self.columns is None else (n, self.columns)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def block(self, rows: slice) -> np.ndarray:
        """The mapped rows ``rows`` (a new float64 array)."""
        from .arrays import _map_block  # the map of the Dask blocks, row rule included

        return _zero_nonfinite_rows(_map_block(self.array[rows], self.func))

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = map_blocks(lambda block: block, self)
        return out if dtype is None else out.astype(dtype, copy=False)


def _part(array: Any, rows: slice) -> np.ndarray:
    return array.block(rows) if isinstance(array, RowMap) else array[rows]


def _width(arrays: Sequence[Any]) -> int:
    return max(1, *(a.shape[1] if len(a.shape) > 1 else 1 for a in arrays))


def row_slices(n: int, width: int) -> Iterator[slice]:
    """The row blocks of ``n`` rows of ``width`` float64 columns (:func:`block_rows` each)."""
    rows = block_rows(width)
    return (slice(start, min(start + rows, n)) for start in range(0, n, rows))


def map_blocks(func: Callable[[np.ndarray], np.ndarray], array: Any) -> np.ndarray:
    """``func`` of every row of ``array`` (an array or a :class:`RowMap`) as one new C-ordered
    float64 array, filled block by block; rows that come out non-finite are zeroed."""
    n = array.shape[0]
    out: np.ndarray | None = None
    for rows in row_slices(n, _width([array])):
        block = _zero_nonfinite_rows(np.asarray(func(_part(array, rows)), dtype=np.float64))
        if out is None:
            out = np.empty((n, *block.shape[1:]), dtype=np.float64)
        out[rows] = block
    if out is None:  # no rows: the map of the empty array
        return _zero_nonfinite_rows(np.asarray(func(_part(array, slice(0, 0))), np.float64))
    return out


def block_sum(
    block_fn: Callable[..., np.ndarray], arrays: Sequence[Any], args: tuple
) -> np.ndarray:
    """``block_fn(*blocks, *args)`` summed over the row blocks of the row-aligned ``arrays``
    (arrays or :class:`RowMap`); one call when the data are one block. The result is
    private (un-noised), as the per-record sums it adds."""
    n = arrays[0].shape[0]
    slices = list(row_slices(n, _width(arrays))) or [slice(0, 0)]
    total = np.zeros(0)
    for i, rows in enumerate(slices):
        part = np.asarray(block_fn(*(_part(a, rows) for a in arrays), *args), dtype=np.float64)
        total = part if i == 0 else total + part
    return total
