"""Record/replay hooks on the mechanism path, for gray-box privacy tests (``docs/auditing.md``).

``with recording() as rec:`` captures every release made through :mod:`dpfit.mechanisms`:
its ledger entry, the exact query value (before noise) and the released output.
``with replaying(rec) as rep:`` reruns an algorithm (typically on a neighbouring dataset)
with each release returning the output recorded in ``rec``, so all downstream state is
identical; the query values seen on the second run are kept in ``rep`` for comparison.

These hooks exist for testing and auditing; they are scoped with a context variable and are
inert unless a context is active.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from ..privacy.ledger import GaussianEntry

__all__ = ["Recording", "Release", "ReplayMismatchError", "observing", "recording", "replaying"]


@dataclass(frozen=True, slots=True)
class Release:
    """One mechanism call: its entry, the query value and the released output."""

    entry: GaussianEntry
    value: np.ndarray
    output: np.ndarray


@dataclass(slots=True)
class Recording:
    """Releases in call order (``replay`` is set when this recording replays another)."""

    releases: list[Release] = field(default_factory=list)
    replay_of: Recording | None = None

    @property
    def entries(self) -> list[GaussianEntry]:
        """The ledger entries of the releases, in order."""
        return [r.entry for r in self.releases]

    def __len__(self) -> int:
        return len(self.releases)


class ReplayMismatchError(AssertionError):
    """A replayed run made a different sequence of mechanism calls than the recorded run."""


_ACTIVE: contextvars.ContextVar[Recording | None] = contextvars.ContextVar(
    "dpfit_recording", default=None
)


_OBSERVERS: contextvars.ContextVar[tuple[Callable[[GaussianEntry], None], ...]] = (
    contextvars.ContextVar("dpfit_observers", default=())
)


@contextlib.contextmanager
def observing(callback: Callable[[GaussianEntry], None]) -> Iterator[None]:
    """Call ``callback(entry)`` after every release in this context (e.g. a progress bar).

    The callback sees the public ledger entry only, never the query value or the output.
    """
    token = _OBSERVERS.set((*_OBSERVERS.get(), callback))
    try:
        yield
    finally:
        _OBSERVERS.reset(token)


@contextlib.contextmanager
def recording() -> Iterator[Recording]:
    """Record every release made in this context."""
    rec = Recording()
    token = _ACTIVE.set(rec)
    try:
        yield rec
    finally:
        _ACTIVE.reset(token)


@contextlib.contextmanager
def replaying(original: Recording) -> Iterator[Recording]:
    """Replay ``original``'s outputs in order; record the new run's query values."""
    rec = Recording(replay_of=original)
    token = _ACTIVE.set(rec)
    try:
        yield rec
    finally:
        _ACTIVE.reset(token)
    if len(rec) != len(original):
        raise ReplayMismatchError(
            f"replayed run made {len(rec)} releases, the recorded run {len(original)}"
        )


def replayed_output(entry: GaussianEntry, value: np.ndarray) -> np.ndarray | None:
    """The recorded output for this call when replaying, else None (mechanism-internal).

    Of the type the live mechanism returns: a fresh array, or for a 0-d release a numpy
    float64 (``value + noise`` of a 0-d value is one), never the 0-d array it is stored as.
    """
    rec = _ACTIVE.get()
    if rec is None or rec.replay_of is None:
        return None
    i = len(rec.releases)
    if i >= len(rec.replay_of):
        raise ReplayMismatchError(f"replayed run made more than {len(rec.replay_of)} releases")
    old = rec.replay_of.releases[i]
    if old.entry != entry or old.value.shape != value.shape:
        raise ReplayMismatchError(f"release {i} differs: recorded {old.entry}, replayed {entry}")
    return old.output[()] if old.output.ndim == 0 else old.output.copy()


def open_stream(
    entry: GaussianEntry, shape: tuple[int, int]
) -> tuple[np.ndarray, np.ndarray] | None:
    """Append a streamed release to the active recording, if any (mechanism-internal).

    A streamed release (:mod:`dpfit.mechanisms.stream`) is one charged mechanism whose rows are
    released step by step. It is recorded once, when charged, and the returned live
    ``(value, output)`` buffers of ``shape`` are filled in row by row (NaN until released).
    """
    rec = _ACTIVE.get()
    if rec is None:
        return None
    value, output = np.full(shape, np.nan), np.full(shape, np.nan)
    rec.releases.append(Release(entry, value, output))
    return value, output


def notify(entry: GaussianEntry, value: np.ndarray, output: np.ndarray) -> None:
    """Append a release to the active recording, if any, and tell the observers."""
    rec = _ACTIVE.get()
    if rec is not None:
        rec.releases.append(Release(entry, np.array(value, copy=True), np.array(output, copy=True)))
    announce(entry)


_DRAWN = [0]  # releases announced in this process, in any thread (see releases_drawn)


def releases_drawn() -> int:
    """How many releases were announced in this process so far, in any thread: the command
    line tells a failure after noise was drawn from one before (:func:`dpfit.cli.main`)."""
    return _DRAWN[0]


def announce(entry: GaussianEntry) -> None:
    """Tell the observers about a charged release (its public ledger entry only).

    Streamed releases (:func:`dpfit.mechanisms.gaussian_rows`) call this once when charged,
    so progress bars and a stored budget's history see them as they see one-shot releases.
    """
    _DRAWN[0] += 1
    for callback in _OBSERVERS.get():
        callback(entry)
