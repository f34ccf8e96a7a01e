"""Data larger than memory: the full-batch private algorithms on Dask (extra ``dpfit[dask]``).

The private algorithms accept ``dask.array`` inputs (and :func:`dpfit.ols` a Dask DataFrame);
the checked arrays are built once and persisted on the workers when they fit
(:mod:`dpfit.distributed.persist`, Dask configuration ``dpfit.persist``), each step's clipped
sums are one distributed reduction, one task per row block (:func:`row_block_sum`), and the
noise is added once, on the driver, through :func:`dpfit.mechanisms.gaussian`. The number of
records is always declared (``n_public``), never counted (:mod:`dpfit.distributed.arrays`).
See ``docs/dask.md``.
"""

from ._compute import (
    LOST_WORKERS_TIMEOUT,
    UNRESPONSIVE_WORKER_TIMEOUT,
    WorkersLostError,
    WorkersUnresponsiveError,
)
from .arrays import check_dask_rows, is_dask, map_rows, require_dask
from .blocks import RowMap
from .persist import PERSIST
from .reduce import row_block_sum, zero_nonfinite_records

__all__ = [
    "LOST_WORKERS_TIMEOUT",
    "PERSIST",
    "UNRESPONSIVE_WORKER_TIMEOUT",
    "RowMap",
    "WorkersLostError",
    "WorkersUnresponsiveError",
    "check_dask_rows",
    "is_dask",
    "map_rows",
    "require_dask",
    "row_block_sum",
    "zero_nonfinite_records",
]
