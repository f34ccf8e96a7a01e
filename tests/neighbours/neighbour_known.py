"""Tracked leaks: what the neighbour layer leaves out today, and the test that flips when fixed.

Each :class:`Leak` names the observation components (see :func:`dpfit.testing.observe`) of
the entry points it affects; :mod:`test_entry_points` does not compare those (``"*"``: the
entry point's whole layer test is a strict xfail), so the layer keeps catching *other* leaks
in the same entry points. :mod:`test_known_leaks` holds the targeted test of each leak,
marked ``xfail(strict=True)`` by :func:`until_fixed` while the key is listed here: when the
fix lands, that test passes, strict xfail turns it into a failure, and its reason says to
delete the key below, which re-enables the layer's comparisons.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest


@dataclass(frozen=True)
class Leak:
    """A tracked leak: why, and which components of which entry points it makes differ."""

    reason: str
    components: dict[str, tuple[str, ...]]


_TORCH = ["torch make_private fixed-epoch", "torch make_private poisson add-remove"]

#: Open leaks, by key (issue 13's finding number, or "new: ..." for ones this layer found).
KNOWN: dict[str, Leak] = {
    "new: Poisson index coupling": Leak(
        "NEW (neighbour layer; testability, not a leak of the output distribution): "
        "dpfit.torch PoissonSampler keys each record's inclusions by its index, so appending "
        "or dropping the LAST record leaves the others' masks unchanged, but removing row 0 "
        "shifts every index; the sampler is exchangeable (same distribution), yet replay "
        "cannot couple such neighbours to check each step's sensitivity",
        {"torch make_private poisson add-remove": ("sensitivity",)},
    ),
}


def ignored(name: str) -> tuple[str, ...]:
    """The components of entry point ``name`` that open leaks make differ."""
    return tuple(c for leak in KNOWN.values() for c in leak.components.get(name, ()))


def others(key: str, like: str) -> tuple[str, ...]:
    """The components that open leaks other than ``key`` make differ in entry point ``like``.

    A targeted test names the registry entry its run resembles (the same function, result
    type and relation): only what other leaks change *there* is left out. Taking the union
    over every entry point would switch off, in every targeted test, a check that one
    entry point's leak needs (e.g. the sensitivity check for Poisson-sampled torch runs).
    """
    comps = {c for k, leak in KNOWN.items() if k != key for c in leak.components.get(like, ())}
    return tuple(sorted(comps - {"*"}))


def reason(key: str) -> str:
    return f"{KNOWN[key].reason} [when fixed: delete KNOWN[{key!r}] in neighbour_known.py]"


def until_fixed(key: str):
    """Decorator: ``xfail(strict=True)`` while leak ``key`` is open, else the test as is."""
    if key not in KNOWN:
        return lambda test: test
    return pytest.mark.xfail(strict=True, reason=reason(key))


def cases(key: str, names: list[str]) -> list:
    """Parameters ``names``, each a strict xfail while leak ``key`` lists that entry point."""
    listed = KNOWN[key].components if key in KNOWN else {}
    return [
        pytest.param(n, id=n, marks=[pytest.mark.xfail(strict=True, reason=reason(key))])
        if n in listed
        else pytest.param(n, id=n)
        for n in names
    ]
