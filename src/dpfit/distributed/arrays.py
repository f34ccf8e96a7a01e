"""Dask inputs: detection, shape-only validation, the public-n rule and row-wise maps.

Nothing here reads a value of the data: every check uses metadata that Dask knows without
computing (dtype, number of dimensions and columns, and the row chunk sizes when they are
known), so every check runs before any charge or draw, like the in-memory checks. The
checked arrays are rechunked to whole records and aligned once, and persisted on the
workers when they fit (:mod:`dpfit.distributed.persist`), so the steps that follow neither
merge column chunks nor rebuild the arrays again.

The public-n rule
-----------------
A full-batch algorithm divides each clipped sum by the number of records n, so n must be
public (dividing by the actual n would reveal it under add/remove; ``docs/dask.md``). For
Dask inputs the caller **must declare it** (``n_public``). What happens next depends on the
neighbouring relation:

* ``replace-one``: n is public by definition of the relation, so the declared n is checked
  against the actual row count before anything is charged, and a mismatch is an error. The
  count comes from metadata when Dask has it (all row chunk sizes known, e.g. Zarr or
  NumPy-backed arrays); otherwise (a data frame, a formula's design, an array with unknown
  chunk sizes) the rows are counted by the read pass below, still before any charge.
* ``add-remove``: the row count is the private quantity the relation protects, from
  metadata or not (Parquet footers count the same records), so it is never compared or
  used (the read pass below computes it and discards it); the declared n normalises the
  sums as is.

The read pass
-------------
Whatever the relation, every block of every input is computed once before anything is
charged (:func:`read_pass`; under replace-one the same pass counts the rows when metadata do
not). Values are not checked there, only read: a reader that fails on one record's value
(Dask's CSV reader on a text cell in a column it inferred as float64) fails in this pass,
before any charge, and its message, which quotes the value, is replaced by a fixed one
(:func:`dpfit._records.read_records`). A reader that raised during the fit instead would
raise after a charge, at the first step, with the value in its message. The pass costs one
read of the data: nothing extra when the arrays are persisted (it is the persist), one pass
more than the algorithm's own otherwise (T + 1 for DP-GD's T steps; two for the one-pass
algorithms). Values that are read but not numbers (a block whose values are not those its
metadata declared) are converted value by value on the workers, and a value that is not a
number makes its record the zero record (:func:`dpfit._records.float_values`).

Why this is safe: whatever n is declared, one record moves the clipped *sum* by at most
2 * clip (replace-one) or clip (add/remove), so the sum divided by the declared n has the
declared sensitivity. A wrong n only rescales the gradient (like another step size); it
never weakens the guarantee, but a tenfold error wrecks the estimate, hence the check where
the relation allows it.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np

from .._records import dtype_kind, float_values
from .._validation import check_int
from ..privacy import Relation
from ._compute import compute
from .blocks import RowMap, map_blocks
from .persist import persist_rows
from .small import warn_if_small

__all__ = ["check_dask_rows", "is_dask", "map_rows", "read_pass", "require_dask"]


def is_dask(obj: Any) -> bool:
    """Whether ``obj`` is a Dask collection (array or data frame); never imports Dask."""
    return type(obj).__module__.partition(".")[0] == "dask"


def require_dask() -> Any:
    """Return ``dask.array``, or raise ImportError naming the optional extra."""
    try:
        import dask.array as da
    except ImportError as exc:  # pragma: no cover - depends on the optional extra
        raise ImportError("Dask inputs need the optional extra: pip install 'dpfit[dask]'") from exc
    return da


def _known_rows(array: Any) -> int | None:
    """The number of rows when every row chunk size is known (metadata only), else None."""
    sizes = array.chunks[0]
    if any(math.isnan(size) for size in sizes):
        return None
    return int(sum(sizes))


def read_pass(arrays: list[Any]) -> int:
    """Compute every block of every array once (module docstring, "The read pass") and return
    the number of rows of the first; another library's error becomes the fixed
    :class:`~dpfit.exceptions.DataError` of :func:`~dpfit.distributed._compute.compute`.
    Nothing computed is kept."""
    da = require_dask()
    lengths = [
        array.map_blocks(
            _block_rows,
            chunks=((1,) * array.numblocks[0],),
            drop_axis=list(range(1, array.ndim)),
            dtype=np.int64,
        ).sum()
        for array in arrays
    ]
    return int(compute(da.stack(lengths))[0])


def _block_rows(block: Any) -> np.ndarray:
    return np.array([np.shape(block)[0]], dtype=np.int64)


def _check_one(name: str, array: Any, ndim: int) -> Any:
    da = require_dask()
    if is_dask(array) and hasattr(array, "to_dask_array"):
        array = array.to_dask_array()  # a Dask DataFrame or Series; unknown row chunks
    if not isinstance(array, da.Array):
        raise TypeError(
            f"{name} must be a Dask array, DataFrame or Series when the data are on Dask, "
            f"got {type(array).__name__}"
        )
    if np.dtype(array.dtype).kind not in "biuf":
        raise TypeError(
            f"{name} must have a numeric (bool, int or float) dtype, got {dtype_kind(array.dtype)}"
        )
    if array.ndim != ndim:
        hint = " (use y.ravel())" if ndim == 1 and array.ndim == 2 else ""
        raise ValueError(f"{name} must be {ndim}-dimensional, got {array.ndim} dimensions{hint}")
    if ndim == 2:
        columns = array.shape[1]
        if math.isnan(columns) or columns == 0:
            raise ValueError(f"{name} must have a known, non-zero number of columns")
        if array.numblocks[1] > 1:
            array = array.rechunk({1: -1})  # one column block: a row block holds whole records
    return array


def check_dask_rows(
    arrays: dict[str, tuple[Any, int]],
    *,
    n_public: Any,
    relation: Relation,
    persist: Any = None,
    intermediate: bool = False,
) -> tuple[list[Any], int]:
    """Validate Dask arrays that share their rows and return them aligned, with the public n.

    Parameters
    ----------
    arrays : dict
        ``name -> (array, ndim)`` in order; the first array's row chunks are the reference.
        Dask DataFrames and Series are converted with ``to_dask_array()`` (no computation;
        their row chunk sizes are then unknown).
    n_public : int
        The declared, public number of records (required; see the module docstring).
    relation : Relation
        Under replace-one, n_public is checked against the row count of the first array
        (from metadata, or counted in one pass); under add/remove never.
    persist : {"auto", True, False}, optional
        Whether to persist the aligned arrays on the workers; None (default) follows the Dask
        configuration ``dpfit.persist`` (:mod:`dpfit.distributed.persist`).
    intermediate : bool, default=False
        True for arrays that are transformed before an algorithm receives them (a model's
        design, rescaled by public bounds): they are then neither counted against n_public
        nor persisted here; the algorithm runs this check on what it receives, before any
        charge.

    Returns
    -------
    arrays : list of dask.array.Array
        Each with a single column block and the row chunks of the first one, persisted on
        the workers when ``persist`` says so.
    n : int
        ``n_public``.

    Raises
    ------
    TypeError
        A non-Dask or non-numeric array, or ``n_public`` missing.
    ValueError
        Wrong dimensions, mismatched row counts, or n_public contradicting the row count
        under replace-one.
    """
    checked = [(name, _check_one(name, a, ndim)) for name, (a, ndim) in arrays.items()]
    if n_public is None:
        raise TypeError(
            "n_public is required for Dask inputs: the number of records that divides the "
            "clipped sums is a declared public input and is never counted from the data"
        )
    n = check_int(n_public, "n_public", low=1)
    (first_name, first), rest = checked[0], checked[1:]
    rows = _known_rows(first)
    aligned = [first]
    for name, array in rest:
        other = _known_rows(array)
        if rows is not None and other is not None:
            if other != rows:
                raise ValueError(f"{first_name} and {name} must have the same number of rows")
            if array.chunks[0] != first.chunks[0]:
                array = array.rechunk({0: first.chunks[0]})
        elif array.numblocks[0] != first.numblocks[0]:
            raise ValueError(
                f"{first_name} and {name} have unknown row chunk sizes and different numbers of "
                "row blocks: build them from the same partitions (or compute their chunk sizes)"
            )
        aligned.append(array)
    if intermediate:
        return aligned, n
    warn_if_small(n, sum(1 if a.ndim == 1 else int(a.shape[1]) for a in aligned))
    if relation is Relation.REPLACE_ONE and rows is not None:
        _check_n(n, rows, first_name)  # from metadata: before anything is persisted
    aligned = persist_rows(aligned, n=n, persist=persist)
    counted = read_pass(aligned)  # every block read once, before anything is charged
    if relation is Relation.REPLACE_ONE and rows is None:
        _check_n(n, counted, first_name)  # under add/remove the count is never compared
    return aligned, n


def _check_n(n: int, rows: int, name: str) -> None:
    if rows != n:
        raise ValueError(
            f"n_public={n} does not match the {rows} rows of {name}; under "
            "relation='replace-one' the number of records is public and must be declared "
            "exactly"
        )


def _finite_or_nan(block: Any) -> np.ndarray:
    """float64 ``block`` with every non-finite entry NaN (so no map can make it finite); a
    value that is not a number is NaN too (:func:`dpfit._records.float_values`)."""
    block = float_values(block)
    return np.where(np.isfinite(block), block, np.nan)


def _map_block(block: Any, row_map: Any) -> np.ndarray:
    return np.asarray(row_map(_finite_or_nan(block)), dtype=np.float64)


def map_rows(func: Any, array: Any, *, columns: int | None, lazy: bool = False) -> Any:
    """Apply a row-wise NumPy map to every row block: lazily on Dask, block by block in memory.

    ``func`` must transform each row on its own (e.g. clipping into public bounds), so the
    result equals ``func`` applied to the whole array. ``columns`` is the output width
    (None for a 1-D output). In memory the map runs one row block at a time
    (:func:`dpfit.distributed.blocks.map_blocks`: no temporary larger than a block), on an
    array or a :class:`~dpfit.distributed.blocks.RowMap`; ``lazy=True`` returns the
    :class:`~dpfit.distributed.blocks.RowMap` itself, computed block by block whenever it is
    read, so the mapped array is never held whole.

    The zero-record rule: a row with a non-finite entry is sent to ``func`` with that entry
    NaN, so ``func`` cannot turn it into a finite row (clipping would map +inf to the upper
    bound); it stays non-finite and the reduction makes the record the zero record
    (:func:`~dpfit.distributed.zero_nonfinite_records`). In memory, where only a formula's
    zero records can be non-finite (other data were refused), such output rows are zeroed
    here.
    """
    if not is_dask(array):
        if lazy and not isinstance(array, RowMap):
            return RowMap(array, func, columns)
        return map_blocks(partial(_map_block, row_map=func), array)
    chunks = (array.chunks[0],) if columns is None else (array.chunks[0], (columns,))
    drop = None if columns is not None or array.ndim == 1 else 1
    return array.map_blocks(
        _map_block, row_map=func, chunks=chunks, drop_axis=drop, dtype=np.float64
    )
