"""Keep a fit's rows on the workers: built and persisted once, then every step reads memory.

A full-batch algorithm makes one pass over the data per step. Lazy Dask inputs would be
rebuilt for every pass: read from storage again, a formula's design matrix built again
(:func:`dpfit.ols`), column chunks merged into whole records again and the public rescaling
applied again. :func:`persist_rows` therefore computes the validated, row-aligned arrays once
and keeps their row blocks in the workers' memory (``distributed.Client.persist``); each step
then runs one task per row block on the persisted blocks (:func:`persisted_blocks`,
:func:`dpfit.distributed.row_block_sum`). Nothing of size n comes to the driver.

Whether to persist is the Dask configuration key ``dpfit.persist``:

* ``"auto"`` (default): persist when a ``distributed`` client is active and the arrays (their
  public size: ``n_public`` rows of float64 in the declared columns) take at most half of the
  memory the cluster's workers have left below their limits; otherwise every step reads the
  data again (data larger than the cluster's memory, or a local scheduler, where persisting
  would load the data into this process).
* ``True``: always persist (with a local scheduler: into this process's memory).
* ``False``: never; every step recomputes the arrays from their source.

Arrays whose row blocks are already persisted (``X = X.persist()`` before the call) are used
as they are. The choice changes only where the rows are read from, never a result: the
per-block sums are the same numbers (``docs/dask.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._compute import distributed_client

__all__ = ["PERSIST", "persist_rows", "persisted_blocks"]

#: Dask configuration key: "auto" (default), True or False (module docstring).
PERSIST = "dpfit.persist"
_OPTIONS = ("auto", True, False)
#: Under "auto", the share of the workers' free memory the persisted arrays may take: the
#: rest is left for each step's task results and for Dask's spill thresholds (60%, 70%).
_MEMORY_SHARE = 0.5


def _setting(persist: Any) -> Any:
    """``persist``, or the configured ``dpfit.persist`` when it is None; checked."""
    import dask

    value = dask.config.get(PERSIST, "auto") if persist is None else persist
    if isinstance(value, str):
        value = value.strip().lower()
    for option in _OPTIONS:  # True == 1: compare by identity for the booleans
        if value is option or (isinstance(value, str) and value == option):
            return option
    raise ValueError(f"{PERSIST} (Dask configuration) must be 'auto', True or False, got {value!r}")


def persisted_blocks(arrays: Sequence[Any]) -> list[list[Any]] | None:
    """Per array, the ``distributed`` futures of its row blocks in row order, when every
    block of every array is persisted and the arrays have one column block; else None."""
    try:
        from distributed import Future
    except ImportError:  # pragma: no cover - dask without the distributed extra
        return None

    out = []
    for array in arrays:
        if array.ndim == 2 and array.numblocks[1] != 1:
            return None
        graph = array.__dask_graph__()
        blocks = []
        for key in array.__dask_keys__():
            block = graph.get(key[0] if isinstance(key, list) else key)
            if not isinstance(block, Future):  # a task: the array is (partly) lazy
                return None
            blocks.append(block)
        out.append(blocks)
    return out


def _fits(client: Any, nbytes: float) -> bool:
    """Whether ``nbytes`` is at most :data:`_MEMORY_SHARE` of the workers' free memory (the
    sum over workers of the memory limit minus the data they hold); False when a worker
    declares no limit or there is no worker."""
    workers = client.scheduler_info(n_workers=-1)["workers"].values()
    limits = [w.get("memory_limit") or 0 for w in workers]
    if not limits or min(limits) <= 0:
        return False
    held = sum(w.get("metrics", {}).get("managed_bytes", 0) for w in workers)
    return nbytes <= _MEMORY_SHARE * (sum(limits) - held)


def persist_rows(arrays: list[Any], *, n: int, persist: Any = None) -> list[Any]:
    """The arrays persisted on the workers, or as they are (module docstring).

    ``n`` is the public number of records: under ``"auto"`` the size is estimated as ``n``
    rows of float64 in the arrays' columns, never from the data. ``persist`` overrides the
    ``dpfit.persist`` setting (None: use it). The persist is started, not awaited: the first
    computation on the arrays waits for it.
    """
    setting = _setting(persist)
    if setting is False:
        return arrays
    client = distributed_client()
    if client is not None and persisted_blocks(arrays) is not None:
        return arrays  # already in the workers' memory
    if setting == "auto":
        columns = sum(1 if a.ndim == 1 else int(a.shape[1]) for a in arrays)
        if client is None or not _fits(client, 8.0 * n * columns):
            return arrays
    if client is None:
        import dask

        return list(dask.persist(*arrays))
    return list(client.persist(arrays))
