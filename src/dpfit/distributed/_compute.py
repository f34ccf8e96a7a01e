"""Compute on Dask without hanging on a cluster that has lost every worker.

A computation on a ``distributed`` cluster with no worker left waits forever (the scheduler
keeps the tasks for workers that may join), and a private fit would hang part-way with the
releases before it already charged. :func:`wait` (and :func:`gather` and :func:`compute`,
built on it) therefore polls the cluster while it waits and raises
:class:`WorkersLostError` once it has had no worker for ``dpfit.lost-workers-timeout``
seconds (Dask configuration, default 60). A fit's budget keeps exactly what was charged
before the failure (``docs/dask.md``).

Every result comes back through the record boundary (:func:`dpfit._records.read_records`): a
task that raises (a reader that cannot parse a value, a user's ``map_blocks`` function) is
re-raised as a :class:`~dpfit.exceptions.DataError` with a fixed message, since the task's
own message can quote the record it failed on. Every input is read once before the first
charge (:func:`dpfit.distributed.arrays.read_pass`), so a reader fails there.
"""

from __future__ import annotations

import time
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from .._records import read_records
from ..exceptions import DPFitError

__all__ = [
    "LOST_WORKERS_TIMEOUT",
    "WorkersLostError",
    "compute",
    "compute_all",
    "distributed_client",
    "gather",
    "wait",
]

#: Dask configuration key: seconds without any worker before a computation gives up.
LOST_WORKERS_TIMEOUT = "dpfit.lost-workers-timeout"
_DEFAULT_PATIENCE = 60.0
_POLL_SECONDS = 0.5

_WHAT = "computing on the Dask data"
_HINT = (
    "compute the data yourself, e.g. X.compute(), to see it; a text value in a column that "
    "Dask inferred as numbers fails so: with dpfit.ols, read that column as text, "
    "dd.read_csv(..., dtype={'column': 'object'}), and each value is read on its own"
)


class WorkersLostError(DPFitError, RuntimeError):
    """A distributed computation had no worker left to run on (see the module docstring)."""


def distributed_client() -> Any:
    """The ``distributed.Client`` that Dask would compute with now, or None."""
    import dask

    scheduler = dask.base.get_scheduler()
    client = getattr(scheduler, "__self__", None)
    try:
        from distributed import Client
    except ImportError:  # pragma: no cover - depends on the optional extra
        return None
    return client if isinstance(client, Client) else None


def wait(client: Any, futures: list[Any]) -> None:
    """Wait until ``futures`` are done, raising :class:`WorkersLostError` instead of waiting
    forever when the cluster stays without workers (module docstring). Nothing is fetched."""
    import dask
    from distributed import wait as wait_for

    patience = float(dask.config.get(LOST_WORKERS_TIMEOUT, _DEFAULT_PATIENCE))
    alone_since = None
    while True:
        try:
            wait_for(futures, timeout=_POLL_SECONDS)
            return
        except (FutureTimeout, TimeoutError):
            pass
        if client.nthreads():
            alone_since = None
            continue
        alone_since = time.monotonic() if alone_since is None else alone_since
        if time.monotonic() - alone_since >= patience:
            client.cancel(futures)
            raise WorkersLostError(
                f"the Dask cluster has had no worker for {patience:g} s during a private "
                "reduction, so the fit stopped: releases charged before it stay spent and the "
                "rest of a budget is available; restart workers and fit again (Dask config "
                f"{LOST_WORKERS_TIMEOUT!r} sets the wait)"
            )


def gather(client: Any, futures: list[Any]) -> list[Any]:
    """``client.gather(futures)`` after :func:`wait` (no endless wait for lost workers); a
    failed task raises the fixed :class:`~dpfit.exceptions.DataError` (module docstring)."""
    wait(client, futures)
    return read_records(client.gather, futures, what=_WHAT, hint=_HINT)


def compute_all(collections: list[Any]) -> list[Any]:
    """``dask.compute(*collections)`` with the active scheduler, as a list; on a
    ``distributed`` cluster through :func:`gather` (no endless wait for lost workers)."""
    client = distributed_client()
    if client is None:
        import dask

        return list(read_records(dask.compute, *collections, what=_WHAT, hint=_HINT))
    return gather(client, list(client.compute(list(collections))))


def compute(collection: Any) -> Any:
    """``collection.compute()``: :func:`compute_all` of one collection."""
    return compute_all([collection])[0]
