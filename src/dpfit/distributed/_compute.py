"""Compute on Dask without hanging on a cluster that has lost, or stopped hearing, a worker.

A computation on a ``distributed`` cluster waits for its workers, and a private fit waiting
part-way has its releases before that point already charged. Two ways to wait forever are
cut short:

* **no worker left**: the scheduler keeps the tasks for workers that may join. Once the
  cluster has had no worker for ``dpfit.lost-workers-timeout`` seconds (Dask configuration,
  default 60), the wait raises :class:`WorkersLostError`.
* **a worker that stopped answering** (stopped with SIGSTOP, swapped out, a hung host): the
  scheduler removes it only after ``distributed.scheduler.worker-ttl`` (5 minutes by
  default), and a call to the row-block holder on it (:mod:`dpfit.distributed.holders`, a
  Dask actor, called directly) is never answered at all. While dpfit waits, it watches each
  worker's last heartbeat as the scheduler saw it; a worker whose heartbeat has not changed
  for ``dpfit.unresponsive-worker-timeout`` seconds (default 120; a busy worker keeps
  sending heartbeats from its event loop, twice a second on a small cluster) is treated as
  lost: the wait raises :class:`WorkersUnresponsiveError`, a :class:`WorkersLostError`.

Every wait of dpfit on the cluster, for task futures (:func:`wait`, :func:`gather`,
:func:`compute`) and for holder calls (:func:`actor_results`), goes through the one loop of
:func:`_wait_until`. A fit that fails so keeps spent exactly the releases it drew and gets
the rest back (``docs/threat-model.md``, "A failed fit keeps spent only the releases it
drew"; :meth:`dpfit.mechanisms.GaussianReleases.__exit__`).

Every result comes back through the record boundary (:func:`dpfit._records.read_records`): a
task that raises (a reader that cannot parse a value, a user's ``map_blocks`` function) is
re-raised as a :class:`~dpfit.exceptions.DataError` with a fixed message, since the task's
own message can quote the record it failed on. Every input is read once before the first
charge (:func:`dpfit.distributed.arrays.read_pass`), so a reader fails there.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from .._records import read_records
from ..exceptions import DPFitError

__all__ = [
    "LOST_WORKERS_TIMEOUT",
    "UNRESPONSIVE_WORKER_TIMEOUT",
    "WorkersLostError",
    "WorkersUnresponsiveError",
    "actor_results",
    "compute",
    "compute_all",
    "distributed_client",
    "gather",
    "wait",
]

#: Dask configuration key: seconds without any worker before a computation gives up.
LOST_WORKERS_TIMEOUT = "dpfit.lost-workers-timeout"
#: Dask configuration key: seconds a worker's heartbeat may stay unchanged while dpfit waits
#: before the worker is treated as lost.
UNRESPONSIVE_WORKER_TIMEOUT = "dpfit.unresponsive-worker-timeout"
_DEFAULTS = {LOST_WORKERS_TIMEOUT: 60.0, UNRESPONSIVE_WORKER_TIMEOUT: 120.0}
_POLL_SECONDS = 0.5

_WHAT = "computing on the Dask data"
_HINT = (
    "compute the data yourself, e.g. X.compute(), to see it; a text value in a column that "
    "Dask inferred as numbers fails so: with dpfit.ols, read that column as text, "
    "dd.read_csv(..., dtype={'column': 'object'}), and each value is read on its own"
)


class WorkersLostError(DPFitError, RuntimeError):
    """A distributed computation had no worker left to run on (see the module docstring)."""


class WorkersUnresponsiveError(WorkersLostError):
    """A worker stopped answering while dpfit waited on it, and was treated as lost (see the
    module docstring)."""


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


def _seconds(key: str) -> float:
    """The Dask configuration ``key`` in seconds: finite and > 0."""
    import dask

    value = dask.config.get(key, _DEFAULTS[key])
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"{key} (Dask configuration) must be finite and > 0, got {value!r}")
    return seconds


class _Heartbeats:
    """Each worker's last heartbeat as the scheduler saw it, and since when (on this clock:
    the scheduler's own clock is compared only with itself) it has not changed."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._seen: dict[str, tuple[Any, float]] = {}

    def silent(self, seconds: float) -> list[str]:
        """The workers whose heartbeat has not changed for ``seconds``."""
        workers = self._client.scheduler_info(n_workers=-1)["workers"]
        now = time.monotonic()
        out = []
        for address, worker in workers.items():
            stamp = worker.get("last_seen")
            seen = self._seen.get(address)
            if seen is None or seen[0] != stamp:
                self._seen[address] = (stamp, now)
            elif now - seen[1] >= seconds:
                out.append(address)
        return out


def _wait_until(client: Any, done: Callable[[float], bool], cancel: Callable[[], None]) -> None:
    """Call ``done(timeout)`` (True once what is awaited has finished; it may wait up to
    ``timeout`` seconds) until it returns True; raise :class:`WorkersLostError` after
    ``dpfit.lost-workers-timeout`` seconds without any worker and
    :class:`WorkersUnresponsiveError` once a worker has been silent for
    ``dpfit.unresponsive-worker-timeout`` seconds, after ``cancel()`` (module docstring)."""
    patience = _seconds(LOST_WORKERS_TIMEOUT)
    silence = _seconds(UNRESPONSIVE_WORKER_TIMEOUT)
    heartbeats = _Heartbeats(client)
    alone_since = None
    while not done(_POLL_SECONDS):
        if client.nthreads():
            alone_since = None
            silent = heartbeats.silent(silence)
            if silent:
                cancel()
                raise WorkersUnresponsiveError(
                    f"{len(silent)} Dask worker(s) sent no heartbeat for {silence:g} s while a "
                    "private fit waited on them, so they were treated as lost and the fit "
                    "stopped: the releases it drew stay spent and the rest of a budget comes "
                    "back; restart or remove the workers and fit again (Dask config "
                    f"{UNRESPONSIVE_WORKER_TIMEOUT!r} sets the wait)"
                )
            continue
        alone_since = time.monotonic() if alone_since is None else alone_since
        if time.monotonic() - alone_since >= patience:
            cancel()
            raise WorkersLostError(
                f"the Dask cluster has had no worker for {patience:g} s during a private "
                "reduction, so the fit stopped: the releases it drew stay spent and the rest "
                "of a budget comes back; restart workers and fit again (Dask config "
                f"{LOST_WORKERS_TIMEOUT!r} sets the wait)"
            )


def wait(client: Any, futures: list[Any]) -> None:
    """Wait until ``futures`` are done, raising instead of waiting forever for lost or
    unresponsive workers (module docstring). Nothing is fetched."""
    from distributed import wait as wait_for

    def done(timeout: float) -> bool:
        try:
            wait_for(futures, timeout=timeout)
        except (FutureTimeout, TimeoutError):
            return False
        return True

    _wait_until(client, done, lambda: client.cancel(futures))


def actor_results(client: Any, calls: list[Any]) -> list[Any]:
    """The results of actor method calls (``ActorFuture``\\s), in order, waited for as
    :func:`wait` waits; a call that failed raises its error.

    All calls are awaited in one coroutine on the client's event loop, so a step that calls
    every worker's holder crosses from this thread to the loop and back once (each
    ``ActorFuture.result()`` would cross once per call, and again to fetch a result already
    there: on a busy machine each crossing waits for the loop thread to be scheduled).
    """
    results: list[Any] = []

    async def every_result() -> list[Any]:
        return [await call for call in calls]

    def done(timeout: float) -> bool:
        try:
            results[:] = client.sync(every_result, callback_timeout=timeout)
        except (FutureTimeout, TimeoutError):
            return False
        return True

    _wait_until(client, done, lambda: None)  # an actor call cannot be cancelled
    return results


def gather(client: Any, futures: list[Any]) -> list[Any]:
    """``client.gather(futures)`` after :func:`wait` (no endless wait for lost or unresponsive
    workers); a failed task raises the fixed :class:`~dpfit.exceptions.DataError` (module
    docstring)."""
    wait(client, futures)
    return read_records(client.gather, futures, what=_WHAT, hint=_HINT)


def compute_all(collections: list[Any]) -> list[Any]:
    """``dask.compute(*collections)`` with the active scheduler, as a list; on a
    ``distributed`` cluster through :func:`gather` (no endless wait for lost or unresponsive
    workers)."""
    client = distributed_client()
    if client is None:
        import dask

        return list(read_records(dask.compute, *collections, what=_WHAT, hint=_HINT))
    return gather(client, list(client.compute(list(collections))))


def compute(collection: Any) -> Any:
    """``collection.compute()``: :func:`compute_all` of one collection."""
    return compute_all([collection])[0]
