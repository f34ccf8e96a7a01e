"""How a kernel's block function is run: on whole arrays, on Dask row blocks, or on gathered rows.

A *block function* (:mod:`dpfit.algorithms._kernels`) maps arrays of records to one flat
vector of sums. :func:`run` applies it once to in-memory arrays, on every Dask row block
through :func:`dpfit.distributed.row_block_sum` (only block results travel to the driver),
or, for :class:`Rows` (a one-pass algorithm's segment), on cache-sized blocks of those rows,
gathered one at a time into a buffer or, for consecutive rows, as views. The three differ
only in the order in which block sums are added.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..distributed import is_dask, row_block_sum

__all__ = ["Rows", "cache_block_rows", "row_blocks", "run"]

#: Bytes of one row block, in units of a core's L2 cache, and the least and most rows of a
#: block: fewer rows make the per-block call overhead count (measured: 16 rows at p = 1000
#: cost 1.2x the floor), more than 16384 no longer gain. Measured on an AMD EPYC with 512 KiB
#: of L2 per core (``benchmarks/README.md``, "DP-GD at p = 1000"): DP-GD's kernel is fastest
#: with blocks of 1-2 MiB at p = 10, 100 and 1000 alike (2-4 x L2: the block is read a second
#: time from L2 and the core's share of L3), and 16 MiB blocks (the old floor of 2048 rows at
#: p = 1000) cost 12% more.
_BLOCK_L2_MULTIPLE = 4
_BLOCK_ROWS = (16, 16384)
#: L2 bytes assumed where the machine does not say (Windows, or a Linux without sysfs): the
#: measured machine's, and the size of most x86 cores' L2 since 2017 (256 KiB-2 MiB).
_DEFAULT_L2_BYTES = 2**19
_SYSFS_CACHE = Path("/sys/devices/system/cpu/cpu0/cache")
#: macOS / BSD: a core's share of the L2 of its cluster (Apple silicon), or the L2 (Intel).
_SYSCTL_L2 = (("hw.perflevel0.l2cachesize", "hw.perflevel0.cpusperl2"), ("hw.l2cachesize", None))


def _parse_size(text: str) -> int | None:
    """Bytes of a sysfs cache ``size`` ("512K", "32768K", "1M"), or None."""
    text = text.strip().upper()
    scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
    digits = text[:-1] if text[-1:] in "KMG" else text
    return int(digits) * scale if digits.isdigit() and int(digits) > 0 else None


def _sysfs_l2() -> int | None:
    """A core's L2 (unified or data) in bytes from Linux's sysfs, or None."""
    try:
        for index in sorted(_SYSFS_CACHE.glob("index*")):
            level = (index / "level").read_text().strip()
            kind = (index / "type").read_text().strip()
            if level == "2" and kind in ("Unified", "Data"):
                size = _parse_size((index / "size").read_text())
                if size is not None:
                    return size
    except OSError:
        pass
    return None


def _sysctl(name: str) -> int | None:
    """A positive integer sysctl by name (macOS, BSD: libc's ``sysctlbyname``), or None."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        value, size = ctypes.c_uint64(0), ctypes.c_size_t(8)
        failed = libc.sysctlbyname(name.encode(), ctypes.byref(value), ctypes.byref(size), None, 0)
    except (OSError, AttributeError, TypeError):  # no libc or no sysctlbyname in it
        return None
    return int(value.value) if failed == 0 and 0 < value.value < 2**40 else None


def _sysctl_l2() -> int | None:
    """A core's share of its L2 in bytes from ``sysctl`` (:data:`_SYSCTL_L2`), or None."""
    for size_name, sharers_name in _SYSCTL_L2:
        size = _sysctl(size_name)
        if size is not None:
            return size // ((_sysctl(sharers_name) or 1) if sharers_name else 1)
    return None


@functools.cache
def l2_bytes() -> int:
    """One core's L2 cache in bytes, read once: Linux's sysfs, else ``sysctl`` (macOS, BSD),
    else :data:`_DEFAULT_L2_BYTES` (Windows, or where neither answers).

    A property of the machine, never of the data.
    """
    if sys.platform.startswith("linux"):
        size = _sysfs_l2()
    elif sys.platform == "darwin" or "bsd" in sys.platform:
        size = _sysctl_l2()
    else:
        size = None
    return size or _DEFAULT_L2_BYTES


def cache_block_rows(p: int) -> int:
    """Rows of a cache-sized block of a float64 array with ``p`` columns: about
    ``_BLOCK_L2_MULTIPLE`` x L2 bytes (2 MiB on the measured machine), within
    :data:`_BLOCK_ROWS`. Depends on the public shape and the machine only."""
    low, high = _BLOCK_ROWS
    return max(low, min(high, _BLOCK_L2_MULTIPLE * l2_bytes() // (8 * p)))


class Rows(NamedTuple):
    """The rows ``rows`` of an in-memory array, in that order, not yet gathered.

    ``rows`` is an index array (a one-pass algorithm's segment in a random order) or a slice
    (a segment of consecutive rows). A kernel given :class:`Rows` (for every one of its
    arrays, with the same ``rows``) works on them a cache-sized block at a time: gathered
    into one buffer, or, for a slice, as views of the array (:func:`run`). ``norms`` are the
    row norms of the whole ``array`` when the caller has them (computed once, in the pass
    that checked the array's values), so a kernel need not compute them again.
    """

    array: np.ndarray
    rows: np.ndarray | slice
    norms: np.ndarray | None = None

    def gather(self) -> np.ndarray:
        """The selected rows as one new array (for a caller that needs them all at once)."""
        if isinstance(self.rows, slice):
            return self.array[self.rows].copy()
        return np.take(self.array, self.rows, axis=0)


def row_blocks(arrays: tuple, block: int) -> Iterator[list[np.ndarray]]:
    """The selected rows of ``arrays`` (:class:`Rows` with the same ``rows``), ``block`` rows
    at a time: views for a slice; otherwise gathered into one buffer per array, reused.

    ``mode="clip"`` lets ``np.take`` write into the buffer directly (the rows come from a
    permutation, so none is out of range); with the default mode it copies through a second
    buffer. A yielded block is valid until the next one.
    """
    rows = arrays[0].rows
    if isinstance(rows, slice):
        start, stop, _ = rows.indices(arrays[0].array.shape[0])
        for a in range(start, stop, block):
            yield [r.array[a : min(a + block, stop)] for r in arrays]
        return
    size = max(1, min(len(rows), block))
    buffers = [np.empty((size, *a.array.shape[1:]), dtype=a.array.dtype) for a in arrays]
    for start in range(0, len(rows), size):
        index = rows[start : start + size]
        yield [
            np.take(a.array, index, axis=0, out=buf[: len(index)], mode="clip")
            for a, buf in zip(arrays, buffers, strict=True)
        ]


def _gathered_sum(
    block_fn: Callable[..., np.ndarray], arrays: tuple, args: tuple, width: int
) -> np.ndarray:
    """``block_fn`` summed over cache-sized blocks of the selected rows (:func:`row_blocks`).

    A block of :func:`cache_block_rows` rows stays in a core's cache while ``block_fn`` reads it
    (twice or more: row norms, residuals, X^T r), so the selected rows are read from memory
    once.
    """
    total = np.zeros(width)
    for parts in row_blocks(arrays, cache_block_rows(arrays[0].array.shape[1])):
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
