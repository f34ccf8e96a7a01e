"""What an audit target is, and the registry of the library's targets.

An :class:`AuditTarget` knows how to run one private algorithm of dpfit many times on the
neighbouring datasets of a canary design and turn each run's *released* output into a
score standardised by the **claimed** mechanism (N(0, 1) on D, N(sqrt(2 rho), 1) on D' when
the claim is tight). Targets are registered by name for :func:`dpfit.audit.audit` and the
``dpfit audit`` command.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from ..mechanisms import NoiseSource

__all__ = ["TARGETS", "AuditTarget", "Scores", "get_target", "register_target"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Scores:
    """Standardised scores of the runs on D (``null``) and D' (``alt``).

    ``exact_null`` says whether N(0, 1) is the exact law of ``null`` for a correct
    implementation (then all three checks apply); ``shift`` is the claimed separation used
    for the reverse-direction events (default sqrt(2 rho)); ``claim`` holds the public
    claimed quantities the standardisation used (noise std, drift, ...), echoed in reports.
    """

    null: np.ndarray
    alt: np.ndarray
    exact_null: bool
    shift: float | None = None
    claim: Mapping[str, float] = field(default_factory=dict)


#: run(config, runs, source, data_rng) -> Scores
Runner = Callable[[Mapping[str, Any], int, NoiseSource, np.random.Generator], Scores]


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditTarget:
    """A private algorithm of dpfit wired to the canary design.

    Attributes
    ----------
    name : str
        Registry key (``dpfit audit NAME``).
    description : str
        One line: what is run and which statistic is scored.
    kind : {"black-box", "white-box"}
        Whether scores use the final model only or released per-step quantities.
    defaults : Mapping[str, Any]
        Default public configuration (n, d, rho, clip, steps, ...); an audit may override
        any of these keys and no others.
    rho : Callable[[Mapping], float]
        The claimed zCDP cost of one run for a configuration.
    run : Runner
        Runs the algorithm ``runs`` times per side and returns the scores.
    """

    name: str
    description: str
    kind: str
    defaults: Mapping[str, Any]
    rho: Callable[[Mapping[str, Any]], float]
    run: Runner

    def __post_init__(self) -> None:
        if self.kind not in ("black-box", "white-box"):
            raise ValueError(f"kind must be one of ['black-box', 'white-box'], got {self.kind!r}")
        object.__setattr__(self, "defaults", MappingProxyType(dict(self.defaults)))

    def config(self, overrides: Mapping[str, Any]) -> dict[str, Any]:
        """The defaults updated with ``overrides``; unknown keys are a ValueError."""
        unknown = sorted(set(overrides) - set(self.defaults))
        if unknown:
            raise ValueError(
                f"unknown option(s) {unknown} for audit target {self.name!r}; "
                f"allowed: {sorted(self.defaults)}"
            )
        return {**self.defaults, **overrides}


#: Registered targets by name.
TARGETS: dict[str, AuditTarget] = {}


def register_target(target: AuditTarget) -> AuditTarget:
    """Add ``target`` to :data:`TARGETS` (a name can be registered once)."""
    if not isinstance(target, AuditTarget):
        raise TypeError(f"target must be an AuditTarget, got {type(target).__name__}")
    if target.name in TARGETS:
        raise ValueError(f"audit target {target.name!r} is already registered")
    TARGETS[target.name] = target
    return target


def get_target(name: str) -> AuditTarget:
    """The registered target called ``name``; a ValueError lists the known names."""
    if not isinstance(name, str) or name not in TARGETS:
        raise ValueError(f"audit target must be one of {sorted(TARGETS)}, got {name!r}")
    return TARGETS[name]
