"""Neighbour checks: run an entry point on D and on a neighbour D', compare all but the noise.

A differentially private entry point may let only its noised releases depend on one record.
Everything else it outputs (the type and attributes of the result, its public metadata, the
summary text, warnings, whether and how it raises, the ledger, what a pickle stores) must be
the same on neighbouring datasets, and each release's query (before noise) may move by at
most its declared sensitivity. :func:`check_neighbours` checks both, in the spirit of
Re:cord-play (Cebere et al.; how the library uses it: ``tests/neighbours/README.md``):

1. run on D while recording every mechanism call (:func:`recording`);
2. run on D' with the same seed: every component is compared with numbers masked
   (:func:`mask_numbers`), except the privacy claim (total rho and epsilon), which must not
   depend on the data even through the releases;
3. run on D' again, replaying D's mechanism outputs (:func:`replaying`):
   the same sequence of mechanism calls, every query within its declared sensitivity, and
   every component **bit-identical** (all of it is post-processing of the frozen releases).

:func:`worst_shares` is the large-n form of step 3's sensitivity check: it replays D' in
other summation orders (row permutations, BLAS thread counts) and reports, per release, the
largest ratio of the computed query's move to its declared sensitivity, which the float
rounding allowance of :func:`dpfit.privacy.query_sensitivity` keeps at or below 1.

The record/replay hooks themselves (:func:`recording`, :func:`replaying`, :class:`Recording`,
:class:`ReplayMismatchError`) are exported here, their documented home: they are test
instruments, not part of releasing data. (:mod:`dpfit.mechanisms` still exports them because
the library's own checks use them.)

``run`` must be deterministic given its arguments (fix the seed inside it). The components
of an :class:`Observation` are plain text so that a failure prints a readable diff.

Examples
--------
>>> import warnings
>>> import numpy as np
>>> from dpfit.mechanisms import gaussian, make_noise_source
>>> from dpfit.privacy import PrivacyLedger
>>> def private_mean(x):  # values clipped to [-1, 1]: replacing one moves the mean by 2/n
...     out = gaussian(np.clip(x, -1.0, 1.0).mean(), sensitivity=2.0 / len(x),
...                    noise_std=0.1, ledger=PrivacyLedger(), rng=make_noise_source(7),
...                    label="mean")
...     return float(out)
>>> x = np.linspace(-1.0, 1.0, 50)
>>> x2 = x.copy(); x2[0] = 1.7e308
>>> check_neighbours(private_mean, (x,), (x2,)).releases
1
>>> def leaky_mean(x):
...     if np.abs(x).max() > 1.0:
...         warnings.warn("some values were clipped")  # depends on one record
...     return private_mean(x)
>>> check_neighbours(leaky_mean, (x,), (x2,))
Traceback (most recent call last):
AssertionError: same seed, [warnings] differs (numbers masked):
...
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._testing_observe import Observation, compare, default_views, observe
from ._testing_text import describe, mask_numbers
from .mechanisms.recorder import Recording, ReplayMismatchError, recording, replaying

__all__ = [
    "NeighbourReport",
    "Observation",
    "Recording",
    "ReplayMismatchError",
    "check_neighbours",
    "compare",
    "describe",
    "mask_numbers",
    "observe",
    "recording",
    "release_shares",
    "replaying",
    "worst_shares",
]

#: The name under which :func:`check_neighbours` reports (and ``ignore`` skips) a query that
#: moved by more than its declared sensitivity on the replayed run.
SENSITIVITY = "sensitivity"


def release_shares(
    a: Recording, b: Recording, *, encoders: Sequence[np.ndarray] = ()
) -> list[tuple[str, float]]:
    """For each pair of releases, (label, ||query_D - query_D'|| / declared sensitivity).

    A streamed matrix release ``C G + Z`` (DP-FTRL) is measured as ``||C (G - G')||_F`` with
    the encoder among ``encoders`` whose number of columns matches the steps of ``G``; an
    entry of ``count`` releases recorded as ``count`` rows (independent, e.g. subsampled,
    steps) by its largest row.
    """
    shares = []
    for x, y in zip(a.releases, b.releases, strict=False):
        diff = np.atleast_1d(np.asarray(x.value, dtype=np.float64) - y.value)
        count = getattr(x.entry, "count", 1)
        with np.errstate(all="ignore"):
            if not np.isfinite(diff).all():
                dist = math.inf
            elif diff.ndim == 2 and count > 1 and diff.shape[0] == count:
                dist = float(np.linalg.norm(diff, axis=1).max())  # count releases, one per row
            else:
                for C in encoders:
                    if diff.ndim == 2 and C.shape[1] == diff.shape[0]:
                        diff = C @ diff
                        break
                dist = float(np.linalg.norm(diff))
        shares.append((x.entry.label, dist / x.entry.sensitivity))
    return shares


def _permuted(data: Sequence[Any], order: np.ndarray) -> tuple[Any, ...]:
    """Every array argument with as many rows as ``order`` taken in that row order."""
    return tuple(
        a[order] if isinstance(a, np.ndarray) and a.ndim >= 1 and len(a) == len(order) else a
        for a in data
    )


def worst_shares(
    run: Callable[..., Any],
    data: Sequence[Any],
    neighbour: Sequence[Any],
    *,
    threads: Sequence[int] = (1,),
    orders: int = 0,
    seed: int = 0,
    encoders: Sequence[np.ndarray] = (),
) -> dict[str, float]:
    """Per release label, the largest ||query_D - query_D'|| / declared sensitivity.

    ``run(*data)`` is recorded, then ``run(*neighbour)`` replayed (so both see the same
    released values and every query is asked at the same point), for every BLAS thread count
    in ``threads`` (:mod:`threadpoolctl`) and, with ``orders`` > 0, for as many random row
    orders: D and D' each get their own permutation of the rows of every array argument
    (the neighbour relation is on the records, so any order of either dataset is a valid
    input). Only for algorithms whose queries are order-free sums (full-batch); a one-pass
    algorithm, whose blocks follow the row order, is checked with ``orders=0``.

    Returns
    -------
    dict
        label -> the largest share over all runs (> 1 means a computed query moved by more
        than its declared sensitivity).
    """
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(seed)

    def rows(args: Sequence[Any]) -> int:
        return next((len(a) for a in args if isinstance(a, np.ndarray)), 0)

    worst: dict[str, float] = {}
    for count in threads:
        pairs = [(data, neighbour)]
        for _ in range(orders):
            pairs.append((
                _permuted(data, rng.permutation(rows(data))),
                _permuted(neighbour, rng.permutation(rows(neighbour))),
            ))  # fmt: skip
        for d, dp in pairs:
            with threadpool_limits(limits=count, user_api="blas"):
                with recording() as rec:
                    run(*d)
                with replaying(rec) as rep:
                    run(*dp)
            for label, share in release_shares(rec, rep, encoders=encoders):
                worst[label] = max(worst.get(label, 0.0), share)
    return worst


@dataclass(frozen=True)
class NeighbourReport:
    """What :func:`check_neighbours` saw: the number of releases and the largest share moved."""

    releases: int
    max_share: float
    observations: tuple[Observation, Observation, Observation]


def check_neighbours(
    run: Callable[..., Any],
    data: Sequence[Any],
    neighbour: Sequence[Any],
    *,
    encoders: Sequence[np.ndarray] = (),
    ignore: Collection[str] = (),
    skip: Collection[str] = ("Trajectory.diagnostics",),
    views: Callable[[Any], Mapping[str, str]] = default_views,
    tolerance: float = 0.0,
    replay_only: Collection[str] = (),
) -> NeighbourReport:
    """Run the three-run protocol of the module docstring; raise AssertionError on any leak.

    Parameters
    ----------
    run : callable
        ``run(*data)`` -> the released object; deterministic (a fixed seed inside).
    data, neighbour : sequence
        The arguments of ``run`` on D and on D'.
    encoders : sequence of ndarray
        Encoders C of streamed matrix releases (see :func:`release_shares`).
    ignore : collection of str
        Components not compared (known, separately tracked leaks); ``"sensitivity"`` skips
        the sensitivity check.
    skip : collection of str
        Attributes left out of the pickled state (documented non-private diagnostics).
    views : callable
        ``views(result)`` -> named text renderings (default: :func:`default_views`).
    tolerance : float
        Relative slack on the declared sensitivities.
    replay_only : collection of str
        Components compared under replay only, not with the same seed: those whose shape
        follows released values (an early stop decided by noisy releases, as KL-Spider's,
        releases a data-dependent number of iterates with the same seed; under replay the
        releases, hence the stop, coincide).

    Returns
    -------
    NeighbourReport
    """
    kw = {"views": views, "skip": skip}
    on_d = observe(run, *data, **kw)
    on_dp = observe(run, *neighbour, **kw)
    replayed = observe(run, *neighbour, replay=on_d.recording, **kw)
    same_seed = compare(on_d, on_dp, exact=False, ignore=(*ignore, *replay_only))
    problems = [f"same seed, {d}" for d in same_seed]
    problems += [f"replayed, {d}" for d in compare(on_d, replayed, exact=True, ignore=ignore)]
    shares = release_shares(on_d.recording, replayed.recording, encoders=encoders)
    for i, (label, share) in enumerate(shares):
        if not share <= 1.0 + tolerance and SENSITIVITY not in ignore:
            problems.append(
                f"[{SENSITIVITY}] release {i} ({label}): the query moved by {share:.6g} x its "
                "declared sensitivity"
            )
    if problems:
        raise AssertionError("\n".join(problems))
    top = max((s for _, s in shares), default=0.0)
    return NeighbourReport(len(on_d.recording), top, (on_d, on_dp, replayed))
