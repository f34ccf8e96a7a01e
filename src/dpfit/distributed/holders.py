"""Per-worker holders of persisted row blocks: each step calls them directly.

Submitting a step's tasks through the scheduler costs several messages between the driver,
the scheduler and the workers per step, tens of milliseconds on a busy machine, which is more
than the step's arithmetic on a few million records. So, for persisted arrays on a
``distributed`` cluster, dpfit places on every worker one :class:`RowBlockHolder` (a Dask
actor) that keeps references to the row blocks that worker works on. A step is then one
direct call per worker, which returns one vector per row block, the block's sum
(:func:`dpfit.distributed.reduce.block_sum`): only those sums travel.

The row blocks are shared out so that every worker gets rows in proportion to its threads
(Dask may have persisted all blocks of an array on one worker): a block stays with the
worker that holds it while that worker has room, and is otherwise copied once to the worker
with the fewest rows per thread (a block of another array that lives elsewhere is copied
too). Small data get fewer holders: one per :data:`MIN_HOLDER_VALUES` values of the arrays
(at least one, at most one per worker), placed on the workers that hold the most blocks, since
a call to a second worker costs more waiting than its share of the arithmetic saves. A holder
on a worker with several threads works on its blocks in parallel. The
holders are made on the first step and live as long as the arrays they serve (they are
released with them).

Dask marks actors experimental; if a call to a holder fails (its worker left, say),
:func:`block_results` returns None and the caller recomputes the step with ordinary tasks on
the persisted blocks, which Dask reschedules; the results are the same numbers either way
(up to the order of summation when a :class:`BlockState` is registered, below). A call is
never waited for without a deadline: a holder whose worker stopped answering (or a cluster
without workers) ends the fit with :class:`~dpfit.distributed.WorkersLostError`
(:func:`dpfit.distributed._compute.actor_results`), since the tasks on that worker's
persisted blocks would wait for it too.

A holder can also keep, per row block, what a block function computes once per data set and
reuses at every step (:class:`BlockState`, registered with :func:`register_block_state` by
the module that defines the block function, so this package imports nothing above it):
DP-GD's least-squares sums then run the in-memory kernel
(:func:`dpfit.algorithms._kernels.least_squares_sums`: row norms computed once, cache-sized
passes) on each row block instead of
:func:`~dpfit.algorithms._kernels.least_squares_block` from scratch at every step. The sums
then differ from the other routes' only in the order in which floating-point numbers are
added.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._compute import WorkersLostError, actor_results, gather, wait

__all__ = ["BlockState", "RowBlockHolder", "block_results", "register_block_state"]


@dataclass(frozen=True)
class BlockState:
    """A block function's per-block state, built once on the worker and called every step.

    For a block function ``f(*blocks, *args)``: ``make(*blocks, *args)`` builds a row block's
    state (e.g. its row norms and buffers) for the static part ``static(args)`` of the
    arguments (e.g. the clip); ``call(state, *args)`` then returns what ``f`` returns for that
    block, up to the order of floating-point summation. The three are module-level functions
    (sent to the workers by reference). Register one with :func:`register_block_state`.
    """

    static: Callable[[tuple], Any]
    make: Callable[..., Any]
    call: Callable[..., np.ndarray]


#: Block function (``module.qualname``) -> its registered per-block state.
_BLOCK_STATES: dict[str, BlockState] = {}


def _name(block_fn: Callable[..., np.ndarray]) -> str:
    return f"{getattr(block_fn, '__module__', '')}.{getattr(block_fn, '__qualname__', '')}"


def register_block_state(block_fn: str | Callable[..., np.ndarray], state: BlockState) -> None:
    """Let the holders run ``block_fn`` (the function or its ``module.qualname``) through
    ``state`` (:class:`BlockState`): the in-memory kernel of an algorithm, with what it
    computes once per data set kept per row block."""
    _BLOCK_STATES[block_fn if isinstance(block_fn, str) else _name(block_fn)] = state


class RowBlockHolder:
    """Runs on a worker: holds its row blocks and returns their block sums.

    ``blocks`` are the blocks of every array, ``arrays`` per row block in order
    (``x_0, y_0, x_1, y_1, ...``); Dask passes the worker's own persisted blocks by reference.
    The zero-record rule (:func:`~dpfit.distributed.zero_nonfinite_records`) is applied once,
    here: a row block is copied only if it has a non-finite record, is not float64, or is not
    an aligned C-contiguous array. A block received from another worker is a view into the
    message buffer, misaligned even for float64, and the BLAS calls of a step ran 12 times
    slower on it (0.056 against 0.0045 s of CPU for 250,000 x 20 rows).
    ``threads`` blocks are worked on at a time (NumPy releases the GIL).
    """

    def __init__(self, arrays: int, threads: int, *blocks: np.ndarray) -> None:
        from .reduce import aligned, zero_nonfinite_records

        self._rows = [
            [aligned(b) for b in zero_nonfinite_records(*blocks[i : i + arrays])]
            for i in range(0, len(blocks), arrays)
        ]
        self._pool = ThreadPoolExecutor(threads) if threads > 1 and len(self._rows) > 1 else None

        self._state_key: Any = None
        self._states: list[Any] = []

    def _map(self, func: Callable[[Any], np.ndarray], items: list[Any]) -> list[Any]:
        return list(map(func, items) if self._pool is None else self._pool.map(func, items))

    def block_sums(
        self, block_fn: Callable[..., np.ndarray], args: tuple, state: BlockState | None = None
    ) -> np.ndarray:
        """(blocks held x width): ``block_fn``'s sum over each held row block, in order; with
        a registered :class:`BlockState`, from the blocks' states (built once per static key)."""
        from .reduce import block_sum

        if state is None:
            return np.stack(
                self._map(
                    lambda row: block_sum(*row, block_fn=block_fn, args=args, checked=True),
                    self._rows,
                )
            )
        key = (state.make, state.static(args))
        if key != self._state_key:  # one static key at a time: free the old states first
            self._state_key, self._states = None, []
            self._states = self._map(lambda row: state.make(*row, *args), self._rows)
            self._state_key = key
        return np.stack(
            self._map(lambda s: np.asarray(state.call(s, *args), dtype=np.float64), self._states)
        )


@dataclass(frozen=True)
class _Holders:
    """The holders of one set of arrays: actor handles, their futures (which keep them
    alive) and, per holder, the indices of its row blocks."""

    actors: tuple[Any, ...]
    futures: tuple[Any, ...]
    indices: tuple[tuple[int, ...], ...]
    blocks: int


#: Values (rows x columns, all arrays) per holder below which fewer workers get a holder:
#: a step's arithmetic on 5e6 float64 values (a few ms on one core) costs about what one call
#: to a worker and back costs on a busy machine, so a second call would add more waiting than
#: it saves (``docs/dask.md``, "Small data: in memory is faster").
MIN_HOLDER_VALUES = 5_000_000

#: Arrays (by their names) -> their holders, or None once holders failed for them.
_HOLDERS: dict[tuple[str, ...], _Holders | None] = {}


def _share(rows: Sequence[int], owners: Sequence[str], threads: dict[str, int]) -> dict:
    """worker -> indices of the row blocks it works on: rows in proportion to its threads; a
    block stays with its owner while the owner has room (module docstring)."""
    total, capacity = sum(rows), sum(threads.values())
    room = {w: total * t / capacity for w, t in threads.items()}
    load = dict.fromkeys(threads, 0.0)
    share: dict[str, list[int]] = {w: [] for w in threads}
    moved = []
    for i, (size, owner) in enumerate(zip(rows, owners, strict=True)):
        if owner in load and load[owner] + size <= room[owner] * (1.0 + 1e-9):
            share[owner].append(i)
            load[owner] += size
        else:
            moved.append(i)
    for i in moved:
        worker = min(threads, key=lambda w: (load[w] / threads[w], w))
        share[worker].append(i)
        load[worker] += rows[i]
    return {w: sorted(indices) for w, indices in share.items() if indices}


def _holding(threads: dict[str, int], owners: Sequence[str], values: float) -> dict[str, int]:
    """The workers that get a holder: enough for :data:`MIN_HOLDER_VALUES` values each (at
    least one), those that hold the most row blocks first (the fewest copies), then by name."""
    wanted = max(1, min(len(threads), int(values // MIN_HOLDER_VALUES)))
    held = {w: sum(1 for owner in owners if owner == w) for w in threads}
    chosen = sorted(threads, key=lambda w: (-held[w], w))[:wanted]
    return {w: threads[w] for w in chosen}


def _make(client: Any, arrays: Sequence[Any], blocks: list[list[Any]]) -> _Holders:
    """One holder per worker, or fewer on small data (:func:`_holding`), sharing out the row
    blocks (:func:`_share`)."""
    wait(client, [f for array in blocks for f in array])  # the persist has finished
    who_has = client.who_has(blocks[0])
    owners = [sorted(who_has[future.key])[0] for future in blocks[0]]
    threads = {w: t for w, t in client.nthreads().items() if t > 0}
    futures, indices = [], []
    sizes = arrays[0].chunks[0]
    if any(math.isnan(size) for size in sizes):  # unknown lengths: count blocks
        sizes = (1,) * len(sizes)
    else:  # the arrays' size (metadata): one call a step where the work is smaller than one
        columns = sum(1 if a.ndim == 1 else int(a.shape[1]) for a in arrays)
        threads = _holding(threads, owners, float(sum(sizes)) * columns)
    for worker, rows in sorted(_share(sizes, owners, threads).items()):
        args = [array[i] for i in rows for array in blocks]
        holder = client.submit(
            RowBlockHolder, len(blocks), threads[worker], *args, workers=[worker], actor=True,
            pure=False,
        )  # fmt: skip
        futures.append(holder)
        indices.append(tuple(rows))
    actors = gather(client, futures)
    return _Holders(tuple(actors), tuple(futures), tuple(indices), len(blocks[0]))


def block_results(
    client: Any,
    arrays: Sequence[Any],
    blocks: list[list[Any]],
    block_fn: Callable[..., np.ndarray],
    args: tuple,
    width: int,
) -> np.ndarray | None:
    """(row blocks x width): every row block's sum, in block order, from the holders of
    ``arrays`` (made on the first call); None when the holders failed (module docstring)."""
    key = tuple(a.name for a in arrays)
    if key not in _HOLDERS:
        try:
            _HOLDERS[key] = _make(client, arrays, blocks)
        except WorkersLostError:
            raise
        except Exception:  # any other failure: the caller's ordinary tasks
            _HOLDERS[key] = None
        weakref.finalize(arrays[0], _HOLDERS.pop, key, None)  # released with the arrays
    holders = _HOLDERS[key]
    if holders is None:
        return None
    out = np.empty((holders.blocks, width))
    try:
        state = _BLOCK_STATES.get(_name(block_fn))
        calls = [actor.block_sums(block_fn, args, state) for actor in holders.actors]
        results = actor_results(client, calls)
    except WorkersLostError:  # no worker, or one that stopped answering: the fit stops
        _HOLDERS[key] = None
        raise
    except Exception:  # a holder is gone: the caller's ordinary tasks
        _HOLDERS[key] = None
        return None
    for result, rows in zip(results, holders.indices, strict=True):
        out[list(rows)] = result
    return out
