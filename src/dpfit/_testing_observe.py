"""One observed run of an entry point: every user-visible output as text (:func:`observe`), and
readable differences between two runs (:func:`compare`).

The components are what :func:`dpfit.testing.check_neighbours` requires to be the same on
neighbouring datasets: outcome, warnings, ledger, privacy claim, pickled state and the result's
renderings (:func:`default_views`).
"""

from __future__ import annotations

import contextlib
import difflib
import pickle
import re
import warnings
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ._testing_text import describe, mask_numbers
from .mechanisms import Recording, recording, replaying
from .privacy import PrivacyLedger

__all__ = ["CLAIM", "Observation", "compare", "default_views", "observe"]

#: The component compared exactly even on the same-seed run: the claimed guarantee (total rho
#: and epsilon) must be a function of public inputs, whatever was released.
CLAIM = "privacy claim"
_WHITESPACE = re.compile(r"\s+")


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
