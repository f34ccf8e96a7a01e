"""The experiment registry: each paper figure is a small, declarative :class:`Experiment`.

An experiment is configuration (a parameter grid per scale and a replicate count), a trial function
``trial(params, seed) -> metrics``, the checkable claims of its paper (or dpfit's predictions), and
a plot. The runner (:mod:`dpfit.experiments.runner`) executes trials, the store keeps them, and the
report evaluates claims and draws the plots. Nothing here runs anything.

Scales: ``"smoke"`` (seconds, run in CI), ``"quick"`` (minutes; the scale at which the claims
are asserted), ``"paper"`` (the published settings).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

__all__ = [
    "SCALES",
    "Claim",
    "ClaimResult",
    "Experiment",
    "docstring_claim",
    "get",
    "names",
    "register",
]

SCALES = ("smoke", "quick", "paper")

Params = Mapping[str, Any]
Metrics = Mapping[str, float]


@dataclass(frozen=True, slots=True, kw_only=True)
class ClaimResult:
    """The verdict on one claim and the numbers that decided it."""

    passed: bool
    numbers: Mapping[str, float]
    detail: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Claim:
    """A checkable statement about a paper's result, evaluated on an experiment's results table.

    ``evaluate`` receives the results (one row per trial: parameters, ``replicate``, ``seed``
    and metrics) and returns a :class:`ClaimResult`. Claims are evaluated only at scales in
    ``scales``; at other scales the report shows them as "not evaluated at this scale".

    ``paper`` quotes what the paper says, with its value where it gives one, so the report can
    show it beside ours. A claim with ``deviation=True`` asserts that we measure something
    other than the paper states (its statement names the deviation and its cause): when it
    holds, the report shows "deviation (asserted)", never PASS.
    """

    name: str
    statement: str
    evaluate: Callable[[pd.DataFrame], ClaimResult]
    scales: tuple[str, ...] = ("quick", "paper")
    paper: str = ""
    deviation: bool = False


def docstring_claim(
    name: str, evaluate: Callable[[pd.DataFrame], ClaimResult], **options: Any
) -> Claim:
    """A :class:`Claim` whose statement is the first paragraph of ``evaluate``'s docstring.

    The statement is written once, beside the code that checks it, and folded onto one line
    for the report; ``options`` are the other :class:`Claim` fields (``paper``, ``scales``,
    ``deviation``).
    """
    statement = " ".join(evaluate.__doc__.split("\n\n")[0].split())
    return Claim(name=name, statement=statement, evaluate=evaluate, **options)


@dataclass(frozen=True, kw_only=True)
class Experiment:
    """One reproducible figure or table.

    Attributes
    ----------
    name : str
        Unique id, ``"<paper>-<figure>"`` (e.g. ``"brown2024-fig1"``).
    paper, figure : str
        Citation and the figure/table reproduced.
    description : str
        One paragraph: what is varied, what is measured.
    grid : Mapping[str, Sequence[Mapping]]
        For each scale, the list of parameter dicts (JSON-serialisable values).
    replicates : Mapping[str, int]
        For each scale, independent replicates per parameter dict.
    trial : callable
        ``trial(params, seed) -> metrics``: a pure function of its inputs, whose metrics are a
        flat dict of floats. ``seed`` is an int derived by the runner from
        ``numpy.random.SeedSequence`` of (experiment, params, replicate).
    claims : Sequence[Claim]
        The checkable statements: the paper's results, or dpfit's predictions where the
        paper has no experiments.
    plot : callable, optional
        ``plot(results) -> list[matplotlib.figure.Figure]`` in the style of the paper.
    privacy : str
        The privacy parameters of the experiment in words (shown in the report).
    panels : Sequence[str]
        A caption per figure of ``plot``, naming the paper's figure it redraws (default: the
        experiment's ``figure``).
    """

    name: str
    paper: str
    figure: str
    description: str
    grid: Mapping[str, Sequence[Params]]
    replicates: Mapping[str, int]
    trial: Callable[[Params, int], Metrics]
    claims: Sequence[Claim] = ()
    plot: Callable[[pd.DataFrame], list] | None = None
    privacy: str = ""
    tags: tuple[str, ...] = field(default=())
    panels: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        missing = [s for s in SCALES if s not in self.grid or s not in self.replicates]
        if missing:
            raise ValueError(f"experiment {self.name!r} lacks grid/replicates for {missing}")
        self._check_tasks_and_claims()

    def _check_tasks_and_claims(self) -> None:
        """Fail at registration, not mid-run: replicates >= 1, storable params, unique claims."""
        from .store import canonical_params  # every grid point must have a store key

        for scale in SCALES:
            reps = self.replicates[scale]
            if isinstance(reps, bool) or not isinstance(reps, int) or reps < 1:
                raise ValueError(f"experiment {self.name!r}: replicates[{scale!r}] must be >= 1")
            for params in self.grid[scale]:
                canonical_params(params)
        claim_names = [c.name for c in self.claims]
        if len(set(claim_names)) != len(claim_names):
            raise ValueError(f"experiment {self.name!r} has duplicate claim names")

    def tasks(self, scale: str) -> list[tuple[dict[str, Any], int]]:
        """All (params, replicate) pairs of ``scale``, in a deterministic order."""
        if scale not in SCALES:
            raise ValueError(f"scale must be one of {list(SCALES)}, got {scale!r}")
        return [(dict(p), r) for p in self.grid[scale] for r in range(int(self.replicates[scale]))]


_REGISTRY: dict[str, Experiment] = {}


def register(experiment: Experiment) -> Experiment:
    """Add ``experiment`` to the registry (names must be unique); returns it."""
    if experiment.name in _REGISTRY and _REGISTRY[experiment.name] is not experiment:
        raise ValueError(f"an experiment named {experiment.name!r} is already registered")
    _REGISTRY[experiment.name] = experiment
    return experiment


def _load_all() -> None:
    from . import catalog  # noqa: F401 - importing registers every experiment module


def names() -> list[str]:
    """Names of every registered experiment, sorted."""
    _load_all()
    return sorted(_REGISTRY)


def get(name: str) -> Experiment:
    """The registered experiment called ``name``."""
    _load_all()
    if name not in _REGISTRY:
        close = difflib.get_close_matches(name, sorted(_REGISTRY), n=4, cutoff=0.5)
        hint = f"did you mean {', '.join(close)}?" if close else "none is close"
        raise ValueError(
            f"unknown experiment {name!r}; {hint} (dpfit reproduce --list shows all "
            f"{len(_REGISTRY)})"
        )
    return _REGISTRY[name]
