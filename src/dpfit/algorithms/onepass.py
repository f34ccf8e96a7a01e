"""One pass over a dataset in consecutive segments, for the one-pass algorithms.

DP-AMBSSGD, DP-SSGD and their non-private twin read every record at most once, in
consecutive segments of a data-independent order. :func:`one_pass_data` accepts

* in-memory arrays ``X`` (n, d) and ``y`` (n,): validated up front (shape, dtype, finite)
  and, by default, read in the order of one uniformly random permutation of all n records;
* lazy arrays (``numpy.memmap``, or array objects such as a Dask or Zarr array, with
  ``shape``, ``ndim``, ``dtype`` and slicing): only the shapes are checked up front, segments
  are read on demand, so data larger than memory work. Each segment is read with its indices
  sorted (sequential I/O) and put back into the permutation's order in memory, so a lazy
  array yields exactly the records, in exactly the order, of the same array in memory. Dask
  arrays need the public ``n`` declared and known chunk sizes; an algorithm that only sums
  over each segment may ask for ``lazy`` segments: unevaluated Dask selections of the
  segment's records (in index order, which a sum does not see), reduced on the workers, and,
  for shuffled in-memory arrays, the segment's rows not yet gathered
  (:class:`dpfit.algorithms._kernels.Rows`, summed a cache-sized block at a time);
* a stream: an iterator of ``(X_chunk, y_chunk)`` pairs of any sizes, with ``y=None`` and the
  public number of records ``n`` declared. It is read in its own order (a stream cannot be
  shuffled), so that order must not depend on the records' values.

Privacy. Neighbouring datasets replace one record at one position of this order; the
permutation is drawn from the noise source's generator, independent of the data, and the
records are processed in its order: record i is the pi(i)-th record read, with pi uniform
over all n! orders (not only over the segment it falls in). Amplification by shuffling
(:mod:`dpfit.privacy.shuffling`) relies on exactly this (docs/threat-model.md). For lazy
arrays and streams, whose values cannot be checked before the pass, a record with a NaN or
infinite value is replaced by the zero record (x = 0, y = 0): a fixed per-record map, so
neighbours stay neighbours (the zero-out rule of :mod:`dpfit.mechanisms.clipping`). Records
after the last segment are never read.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from .._records import dtype_kind, float_values, read_records
from .._validation import check_array, check_int, check_X_y, reject_sparse
from ..distributed import check_dask_rows, is_dask, zero_nonfinite_records
from ..privacy import Relation
from ._kernels import Rows, finite_row_norms

__all__ = ["OnePassData", "one_pass_data", "tail_average"]


def tail_average(iterates: np.ndarray) -> np.ndarray:
    """Mean of the last half of the rows, w_{T/2+1..T} (Varshney et al. 2022, Alg. 1-2)."""
    steps = iterates.shape[0]
    return iterates[steps - steps // 2 :].mean(axis=0)


def _is_lazy(X: Any) -> bool:
    if isinstance(X, np.memmap):
        return True
    if isinstance(X, np.ndarray) or type(X).__module__.startswith("pandas"):
        return False
    return all(hasattr(X, a) for a in ("shape", "ndim", "dtype", "__getitem__"))


def _check_numeric(dtype: Any, name: str) -> None:
    if np.dtype(dtype).kind not in "biuf":
        raise TypeError(
            f"{name} must have a numeric (bool, int or float) dtype, got {dtype_kind(dtype)}"
        )


def _check_chunk(X: Any, y: Any, d: int | None) -> tuple[np.ndarray, np.ndarray]:
    """A stream chunk as float64. The first (``d`` None, read before any charge) must be
    numeric; a later one is read value by value (:func:`dpfit._records.float_values`: a value
    that is not a number makes its record the zero record), since a chunk's dtype is a
    function of its values and an error then would come after a charge."""
    X, y = (read_records(np.asarray, v, what="reading a stream chunk") for v in (X, y))
    if d is None:
        _check_numeric(X.dtype, "X chunk")
        _check_numeric(y.dtype, "y chunk")
    if X.ndim != 2 or y.ndim != 1 or X.shape[0] != y.shape[0]:
        raise ValueError("each stream chunk must be (X of shape (m, d), y of shape (m,))")
    if d is not None and X.shape[1] != d:
        raise ValueError(f"every stream chunk must have {d} columns, like the first one")
    return float_values(X), float_values(y)


def _read(array: Any, rows: Any) -> np.ndarray:
    """``array[rows]`` of a lazy array as float64, behind the record boundary."""
    return float_values(read_records(array.__getitem__, rows, what="reading the lazy data"))


def _read_in_order(X: Any, y: Any, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``rows`` of a lazy X and y, in that order: read sorted, reordered in memory."""
    sorter = np.argsort(rows, kind="stable")
    Xs, ys = _read(X, rows[sorter]), _read(y, rows[sorter])
    Xo, yo = np.empty_like(Xs), np.empty_like(ys)
    Xo[sorter], yo[sorter] = Xs, ys  # the j-th smallest index sits at position sorter[j]
    return Xo, yo


class OnePassData:
    """A validated dataset to be read once, in segments; build it with :func:`one_pass_data`."""

    __slots__ = ("_X", "_chunks", "_head", "_norms", "_used", "_y", "d", "kind", "n", "shuffle")

    def __init__(
        self,
        *,
        X: Any,
        y: Any,
        n: int,
        d: int,
        kind: str,
        shuffle: bool,
        norms: np.ndarray | None = None,
    ) -> None:
        self._X, self._y, self._norms = X, y, norms
        self.n, self.d, self.kind, self.shuffle = n, d, kind, shuffle
        self._chunks: Iterator[Any] | None = None
        self._head: tuple[np.ndarray, np.ndarray] | None = None
        self._used = False

    def segments(
        self, sizes: Sequence[int], rng: np.random.Generator, *, lazy: bool = False
    ) -> Iterator[tuple[Any, Any]]:
        """Yield ``(X_seg, y_seg)`` float64 arrays of the given sizes, consecutive in the order.

        ``rng`` draws the permutation of all n records when ``shuffle`` is set (the noise
        source's generator, so the order is independent of the data); the rows of every
        segment come in that order. Each dataset can be passed over once (a stream cannot be
        rewound). With ``lazy=True`` (for callers that only sum over a segment), a Dask
        dataset yields unevaluated Dask selections of each segment's records in index order
        (nothing is read on the driver), and in-memory arrays yield
        :class:`~dpfit.algorithms._kernels.Rows` (the kernels read them block by block:
        gathered when shuffled, as views otherwise), with the row norms of X when
        :func:`one_pass_data` computed them.
        """
        if sum(sizes) > self.n:
            raise ValueError("segments ask for more records than n")
        if self._used:
            raise RuntimeError("this dataset was already passed over once")
        self._used = True
        if self.kind == "stream":
            return self._stream_segments(sizes)
        order = rng.permutation(self.n) if self.shuffle else None
        return self._array_segments(sizes, order, lazy)

    def _array_segments(
        self, sizes: Sequence[int], order: np.ndarray | None, lazy: bool
    ) -> Iterator[tuple[Any, Any]]:
        stop = 0
        for size in sizes:
            start, stop = stop, stop + size
            rows: Any = slice(start, stop) if order is None else order[start:stop]
            if lazy and self.kind == "dask":  # unevaluated; index order is enough for a sum
                rows = rows if order is None else np.sort(rows)
                yield self._X[rows], self._y[rows]
            elif lazy and self.kind == "array":  # read block by block by the kernels
                yield Rows(self._X, rows, self._norms), Rows(self._y, rows)
            elif order is None and self.kind == "array":  # views (validated float64)
                yield self._X[rows], self._y[rows]
            elif order is None:  # lazy: one read
                yield tuple(zero_nonfinite_records(_read(self._X, rows), _read(self._y, rows)))
            elif self.kind == "array":  # one gather each, in the permutation's order
                yield np.take(self._X, rows, axis=0), np.take(self._y, rows)
            else:
                yield tuple(zero_nonfinite_records(*_read_in_order(self._X, self._y, rows)))

    def _stream_segments(self, sizes: Sequence[int]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        buf_X: list[np.ndarray] = []
        buf_y: list[np.ndarray] = []
        have = 0
        pending = [self._head] if self._head is not None else []
        for size in sizes:
            while have < size:
                if pending:
                    Xc, yc = pending.pop()
                else:
                    chunk = read_records(next, self._chunks, None, what="reading the stream")
                    if chunk is None:
                        raise ValueError(
                            "the stream ended before the declared n_public records were read; "
                            "n_public must be the true (public) number of records"
                        )
                    Xc, yc = _check_chunk(*chunk, self.d)
                buf_X.append(Xc)
                buf_y.append(yc)
                have += Xc.shape[0]
            X, y = np.concatenate(buf_X), np.concatenate(buf_y)
            buf_X, buf_y, have = [X[size:]], [y[size:]], have - size
            yield tuple(zero_nonfinite_records(X[:size], y[:size]))


def one_pass_data(
    X: Any,
    y: Any = None,
    *,
    n: int | None = None,
    shuffle: bool | None = None,
    norms: bool = False,
) -> OnePassData:
    """Validate data for a one-pass algorithm (see the module docstring for accepted kinds).

    Parameters
    ----------
    X : array-like of shape (n, d), lazy array, or iterator of (X_chunk, y_chunk)
        The covariates, or a stream of chunks.
    y : array-like of shape (n,), lazy array, or None
        The responses; None for a stream.
    n : int, optional
        The public number of records: required for a stream and for Dask arrays (whose
        chunk sizes must be known), checked against arrays.
    shuffle : bool, optional
        Read in the order of a uniformly random permutation. Default: True for arrays,
        False for a stream (which cannot be shuffled; ``shuffle=True`` is an error).
    norms : bool, default=False
        For in-memory arrays: check X's values by computing its row norms (one pass that
        proves every entry finite, :func:`~dpfit.algorithms._kernels.finite_row_norms`) and
        hand them to the kernels with each lazy segment, so a clipping kernel does not
        compute them again. Same errors as the plain check.

    Raises
    ------
    TypeError, ValueError
        Wrong kinds, shapes or dtypes, non-finite in-memory data, a missing or mismatched n.
    """
    if shuffle is not None and not isinstance(shuffle, bool):
        raise TypeError(f"shuffle must be a bool or None, got {type(shuffle).__name__}")
    reject_sparse(X, "X")  # before the lazy-array check, which a sparse matrix would pass
    if isinstance(X, Iterator):
        if y is not None:
            raise TypeError("with a stream of (X, y) chunks, y must be None")
        if n is None:
            raise TypeError("n_public is required for a stream: the public number of records")
        if shuffle:
            raise ValueError(
                "a stream cannot be shuffled: pass shuffle=False (its order must not depend "
                "on the data) or pass arrays"
            )
        n = check_int(n, "n_public", low=1)
        first = read_records(next, X, None, what="reading the stream")
        if first is None:
            raise ValueError("the stream is empty")
        head = _check_chunk(*first, None)
        if head[0].shape[1] == 0:
            raise ValueError("X chunk has no columns")
        data = OnePassData(X=None, y=None, n=n, d=head[0].shape[1], kind="stream", shuffle=False)
        data._chunks, data._head = X, head
        return data
    if y is None:
        raise TypeError("y is required unless X is a stream of (X, y) chunks")
    if is_dask(X) or is_dask(y):
        (X, y), n = check_dask_rows(
            {"X": (X, 2), "y": (y, 1)}, n_public=n, relation=Relation.REPLACE_ONE
        )
        if any(np.isnan(X.chunks[0])):
            raise ValueError(
                "a one-pass algorithm selects records by position: the Dask arrays need known "
                "chunk sizes (e.g. X.compute_chunk_sizes(); n is public under replace-one)"
            )
        shuffle = True if shuffle is None else shuffle
        return OnePassData(X=X, y=y, n=n, d=int(X.shape[1]), kind="dask", shuffle=shuffle)
    if _is_lazy(X):
        if X.ndim != 2 or y.ndim != 1:
            raise ValueError("a lazy X must be 2-dimensional and y 1-dimensional")
        _check_numeric(X.dtype, "X")
        _check_numeric(y.dtype, "y")
        rows, d = int(X.shape[0]), int(X.shape[1])
        if int(y.shape[0]) != rows:
            raise ValueError("X and y must have the same number of rows")
        if rows == 0 or d == 0:
            raise ValueError("X has no rows or no columns")
        kind = "lazy"
    elif norms:
        X = check_array(X, "X", ndim=2, finite=False)
        row_norms = finite_row_norms(X, "X")  # the finiteness check of X, and the norms
        y = check_array(y, "y", ndim=1)
        if X.shape[0] != y.shape[0]:
            raise ValueError("X and y must have the same number of rows")
        rows, d = X.shape
        kind = "array"
    else:
        X, y = check_X_y(X, y)
        rows, d = X.shape
        kind = "array"
    if n is not None and check_int(n, "n", low=1) != rows:
        raise ValueError(f"n={n} does not match the {rows} rows of X")
    shuffle = True if shuffle is None else shuffle
    if kind == "array" and norms:
        return OnePassData(X=X, y=y, n=rows, d=d, kind=kind, shuffle=shuffle, norms=row_norms)
    return OnePassData(X=X, y=y, n=rows, d=d, kind=kind, shuffle=shuffle)
