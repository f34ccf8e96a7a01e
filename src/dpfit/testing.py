"""Neighbour checks: run an entry point on D and on a neighbour D', compare all but the noise.

A differentially private entry point may let only its noised releases depend on one record.
Everything else it outputs (the type and attributes of the result, its public metadata, the
summary text, warnings, whether and how it raises, the ledger, what a pickle stores) must be
the same on neighbouring datasets, and each release's query (before noise) may move by at
most its declared sensitivity. :func:`check_neighbours` checks both, in the spirit of
Re:cord-play (Cebere et al.; ``specs/reliability.md`` 3.3):

1. run on D while recording every mechanism call (:func:`dpfit.mechanisms.recording`);
2. run on D' with the same seed: every component is compared with numbers masked
   (:func:`mask_numbers`), except the privacy claim (total rho and epsilon), which must not
   depend on the data even through the releases;
3. run on D' again, replaying D's mechanism outputs (:func:`dpfit.mechanisms.replaying`):
   the same sequence of mechanism calls, every query within its declared sensitivity, and
   every component **bit-identical** (all of it is post-processing of the frozen releases).

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

import contextlib
import difflib
import enum
import functools
import math
import pickle
import re
import sys
import types
import warnings
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields, is_dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from .mechanisms import Recording, recording, replaying
from .privacy import PrivacyLedger

__all__ = [
    "NeighbourReport",
    "Observation",
    "check_neighbours",
    "compare",
    "describe",
    "mask_numbers",
    "observe",
    "release_shares",
]

#: A number that is not part of a name (``x0``, ``C(g)[T.3]`` keep their digits).
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?![\w])")
#: The component compared exactly even on the same-seed run: the claimed guarantee (total rho
#: and epsilon) must be a function of public inputs, whatever was released.
CLAIM = "privacy claim"
#: The name under which :func:`check_neighbours` reports (and ``ignore`` skips) a query that
#: moved by more than its declared sensitivity on the replayed run.
SENSITIVITY = "sensitivity"
_BLANKS = re.compile(r"[ \t]+")
_WHITESPACE = re.compile(r"\s+")
_CODE = (
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.ModuleType,
    functools.partial,
)


def mask_numbers(text: str) -> str:
    """``text`` with every free-standing number replaced by ``#`` and runs of blanks collapsed.

    ``nan`` and ``inf`` stay visible (a non-finite release is a leak). Column widths and line
    breaks depend on how long the (noised) numbers print, so :func:`compare` also ignores
    whitespace after masking.

    >>> mask_numbers("coef  -1.25e+03   x0 0.5, C(g)[T.3]")
    'coef # x0 #, C(g)[T.3]'
    """
    return _BLANKS.sub(" ", _NUMBER.sub("#", text)).strip()


def _array_text(a: np.ndarray) -> str:
    if a.dtype == object:
        body = repr(a.tolist())
    else:
        body = np.array2string(
            a, threshold=sys.maxsize, max_line_width=sys.maxsize, floatmode="unique", separator=","
        )
    return f"ndarray{a.shape}<{a.dtype}>{body}"


def describe(obj: Any, *, skip: Collection[str] = ()) -> str:
    """Everything an object holds, as indented text (what a pickle of it would store).

    Walks dataclass fields, ``__getstate__``/``__dict__``/slots, mappings and sequences;
    arrays and frames print every value. Attributes named in ``skip``, as ``"name"`` or
    ``"TypeName.name"``, are left out (e.g. ``"Trajectory.diagnostics"``, the documented
    NON-PRIVATE field of :class:`~dpfit.algorithms.Trajectory`).
    """
    lines: list[str] = []
    _walk(obj, "", lines, set(), frozenset(skip), 0)
    return "\n".join(lines)


def _state(obj: Any) -> Iterable[tuple[str, Any]]:
    if is_dataclass(obj) and not isinstance(obj, type):
        return [(f.name, getattr(obj, f.name, "<unset>")) for f in fields(obj)]
    state = obj.__getstate__() if hasattr(obj, "__getstate__") else getattr(obj, "__dict__", {})
    if isinstance(state, tuple) and len(state) == 2:  # (dict, slots)
        merged = dict(state[0] or {})
        merged.update(state[1] or {})
        state = merged
    if isinstance(state, Mapping):
        return sorted(state.items(), key=lambda kv: str(kv[0]))
    return [("state", state)]


def _walk(obj: Any, pad: str, out: list[str], seen: set[int], skip: frozenset, depth: int) -> None:
    if depth > 12:
        out.append(f"{pad}<depth limit> {type(obj).__name__}")
        return
    if obj is None or isinstance(obj, bool | int | float | complex | str | bytes | Fraction):
        out.append(pad + repr(obj))
    elif isinstance(obj, enum.Enum | np.generic | np.dtype | type):
        out.append(pad + repr(obj))
    elif isinstance(obj, np.ndarray):
        out.append(pad + _array_text(obj))
    elif isinstance(obj, pd.DataFrame | pd.Series | pd.Index):
        frame = obj.to_frame() if isinstance(obj, pd.Series) else obj
        out.append(f"{pad}{type(obj).__name__}{obj.shape} index={list(obj.index)!r}")
        if isinstance(frame, pd.DataFrame):
            for name in frame.columns:
                out.append(f"{pad}  {name!r}: {_array_text(frame[name].to_numpy())}")
    elif isinstance(obj, _CODE):
        out.append(f"{pad}<{type(obj).__name__} {getattr(obj, '__qualname__', '')}>")
    elif id(obj) in seen:
        out.append(f"{pad}<cycle {type(obj).__name__}>")
    elif hasattr(obj, "detach") and hasattr(obj, "numpy"):  # a torch tensor
        out.append(pad + _array_text(obj.detach().cpu().numpy()))
    else:
        seen = seen | {id(obj)}
        if isinstance(obj, Mapping):
            items: Iterable[tuple[str, Any]] = ((repr(k), v) for k, v in obj.items())
            out.append(f"{pad}{type(obj).__name__}:")
        elif isinstance(obj, list | tuple | set | frozenset):
            seq = sorted(obj, key=repr) if isinstance(obj, set | frozenset) else obj
            items = ((f"[{i}]", v) for i, v in enumerate(seq))
            out.append(f"{pad}{type(obj).__name__}[{len(obj)}]:")
        else:
            kind = type(obj).__name__
            items = (
                (str(k), v)
                for k, v in _state(obj)
                if str(k) not in skip and f"{kind}.{k}" not in skip
            )
            out.append(f"{pad}{type(obj).__module__}.{type(obj).__qualname__}:")
        for key, value in items:
            out.append(f"{pad}  {key} =")
            _walk(value, pad + "    ", out, seen, skip, depth + 1)


def _ledgers(obj: Any) -> list[PrivacyLedger]:
    found = []
    for name in ("ledger", "privacy_", "result_"):
        value = getattr(obj, name, None)
        if isinstance(value, PrivacyLedger):
            found.append(value)
        elif value is not None and name == "result_":
            found += _ledgers(value)
    return found


def _try(func: Callable[[], Any]) -> str:
    try:
        value = func()
    except Exception as exc:  # an exception is an output like any other
        return f"raised {type(exc).__name__}: {exc}"
    return value if isinstance(value, str) else describe(value)


def default_views(obj: Any) -> dict[str, str]:
    """The user-facing renderings of a result: summary (text, HTML, LaTeX), intervals, epsilon."""
    views: dict[str, str] = {}
    summary = getattr(obj, "summary", None)
    if callable(summary):
        try:
            table = summary()
        except Exception as exc:  # an exception is an output like any other
            views["summary"] = f"raised {type(exc).__name__}: {exc}"
        else:
            views["summary"] = table.as_text()
            views["summary (html, latex)"] = table.as_html() + "\n" + table.as_latex()
    if callable(getattr(obj, "conf_int", None)):
        views["conf_int"] = _try(obj.conf_int)
    if callable(getattr(obj, "epsilon", None)):
        views["epsilon"] = _try(lambda: repr(obj.epsilon()))
    for ledger in _ledgers(obj):
        views["statement"] = _try(lambda ledger=ledger: ledger.statement())
    views["repr"] = _try(lambda: repr(obj))
    return views


@contextlib.contextmanager
def _fresh_process() -> Iterator[None]:
    """Run as in a fresh process: the estimators' count of refits of identical data
    (:class:`~dpfit.exceptions.RepeatedFitWarning`) starts empty and is restored after."""
    from .models import _refits

    saved = _refits._SEEN.copy()
    _refits._SEEN.clear()
    try:
        yield
    finally:
        _refits._SEEN.clear()
        _refits._SEEN.update(saved)


@dataclass(frozen=True)
class Observation:
    """What one run showed, as text components (see :func:`observe`), and its recording."""

    components: Mapping[str, str]
    recording: Recording
    value: Any = None


def _pickled(obj: Any, skip: Collection[str]) -> str:
    try:
        restored = pickle.loads(pickle.dumps(obj))
    except Exception as exc:
        return f"not picklable ({type(exc).__name__}: {exc})\n" + describe(obj, skip=skip)
    return describe(restored, skip=skip)


def observe(
    run: Callable[..., Any],
    *args: Any,
    replay: Recording | None = None,
    views: Callable[[Any], Mapping[str, str]] = default_views,
    skip: Collection[str] = ("Trajectory.diagnostics",),
) -> Observation:
    """Run ``run(*args)`` (replaying ``replay``'s releases if given) and record what it shows.

    Each run starts from a fresh per-process state, so that runs are independent of how
    often the same data were fitted before.

    Components: ``outcome`` (the result's type, or the exception and its message),
    ``warnings`` (category and message of each, in order, including those of the views),
    ``ledger`` (every mechanism call's ledger entry and the result's ledgers), ``privacy
    claim`` (the result's ``rho``, its ledgers' total rho and epsilon at delta = 1e-5), ``pickled
    state`` (:func:`describe` of the result after a pickle round trip, without ``skip``) and
    one component per view (summary, intervals, epsilon, statement, repr).
    """
    comps: dict[str, str] = {}
    context = recording() if replay is None else replaying(replay)
    value = None
    with warnings.catch_warnings(record=True) as caught, _fresh_process():
        warnings.simplefilter("always")
        try:
            with context as rec:
                value = run(*args)
        except Exception as exc:  # an exception is an output like any other
            comps["outcome"] = f"raised {type(exc).__name__}: {exc}"
        else:
            comps["outcome"] = f"returned {type(value).__module__}.{type(value).__qualname__}"
            comps["pickled state"] = _pickled(value, skip)
            comps.update(views(value))
    comps["warnings"] = "\n".join(f"{w.category.__name__}: {w.message}" for w in caught)
    entries = [repr(r.entry) for r in rec.releases]
    entries += [describe(ledger.entries) for ledger in _ledgers(value)]
    comps["ledger"] = "\n".join(entries)
    claims = [("rho", getattr(value, "rho", None))]
    for ledger in _ledgers(value):
        claims += [("ledger rho", ledger.rho), ("ledger epsilon(1e-5)", ledger.epsilon(1e-5))]
    comps[CLAIM] = "\n".join(f"{k} = {v!r}" for k, v in claims if isinstance(v, float))
    return Observation(components=comps, recording=rec, value=value)


def compare(
    a: Observation, b: Observation, *, exact: bool, ignore: Collection[str] = ()
) -> list[str]:
    """Readable diffs of the components that differ (numbers masked unless ``exact``).

    Without ``exact`` the ledger is masked too (an adaptive algorithm may set a release's
    noise from earlier noised releases; replaying them makes it exact again), but not the
    privacy claim: the total rho and epsilon must not depend on what was released.
    """
    diffs = []
    for key in sorted(set(a.components) | set(b.components)):
        if key in ignore:
            continue
        x, y = a.components.get(key, "<absent>"), b.components.get(key, "<absent>")
        masked = not exact and key != CLAIM
        if masked:
            x, y = mask_numbers(x), mask_numbers(y)
        if (_WHITESPACE.sub("", x) != _WHITESPACE.sub("", y)) if masked else x != y:
            lines = difflib.unified_diff(
                x.splitlines(), y.splitlines(), "D", "D'", lineterm="", n=1
            )
            body = "\n".join(list(lines)[:40])
            mode = "numbers masked" if masked else "exact"
            diffs.append(f"[{key}] differs ({mode}):\n{body}")
    return diffs


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
