"""The one result type of every algorithm in :mod:`dpfit.algorithms` (cf. SciPy's OptimizeResult).

A :class:`Trajectory` is frozen, with read-only arrays. Everything in it except
``diagnostics`` is a release (covered by ``ledger``) or a public input; ``diagnostics``
holds non-private quantities (fraction clipped, distance to OLS, ...) for experiments and
must never feed a private output.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from .._arrays import readonly
from ..privacy.ledger import PrivacyLedger

__all__ = ["Trajectory"]


@dataclass(frozen=True, kw_only=True)
class Trajectory:
    """Released iterates, the point estimate, the privacy ledger and labelled diagnostics.

    Attributes
    ----------
    algorithm : str
        The public name of the function that produced the run (``"dp_gd"``, ``"kl_spider"``,
        ``"adassp"``, ...): the one place that names it, so ``config`` never carries an
        ``"algorithm"`` or ``"method"`` key.
    iterates : ndarray of shape (steps, p)
        Every released iterate theta_1..theta_T (theta_0 is public and not included).
    estimate : ndarray of shape (p,)
        The algorithm's default point estimate (a post-processing of the iterates).
    ledger : PrivacyLedger
        Every charged release of the run.
    config : Mapping
        The public inputs the run used (steps, step_size, n, ...).
    noise_backend : str
        ``"fast"`` or ``"secure"``.
    seeded : bool
        Whether the noise came from a seeded (reproducible, insecure) source.
    releases : Mapping[str, ndarray]
        Other released quantities (e.g. a privately estimated clip), read-only.
    diagnostics : Mapping
        **Non-private** quantities for experiments and debugging only; left out of the
        repr, so printing a trajectory shows only releases and public inputs.
    """

    algorithm: str
    iterates: np.ndarray
    estimate: np.ndarray
    ledger: PrivacyLedger
    config: Mapping[str, Any]
    noise_backend: str
    seeded: bool
    releases: Mapping[str, np.ndarray] = field(default_factory=dict)
    diagnostics: Mapping[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.algorithm, str) or not self.algorithm:
            raise TypeError(f"algorithm must be a non-empty str, got {self.algorithm!r}")
        named = sorted({"algorithm", "method"} & set(self.config))
        if named:
            raise ValueError(f"config must not name the algorithm ({named}): use algorithm=")
        object.__setattr__(self, "iterates", readonly(self.iterates))
        object.__setattr__(self, "estimate", readonly(self.estimate))
        object.__setattr__(self, "config", MappingProxyType(dict(self.config)))
        object.__setattr__(
            self, "releases", MappingProxyType({k: readonly(v) for k, v in self.releases.items()})
        )
        object.__setattr__(self, "diagnostics", MappingProxyType(dict(self.diagnostics)))

    @property
    def rho(self) -> float:
        """The zCDP guarantee of the ledger: every entry's rho, a privacy filter at its bound."""
        return self.ledger.rho

    @property
    def rho_spent(self) -> float:
        """Realised spend: the rho of the releases actually charged, summed.

        Equal to :attr:`rho` unless a privacy filter stopped early
        (:mod:`dpfit.privacy.filter`). Then it is data-dependent (a function of the released
        values, so no extra privacy cost) and **not a guarantee**: report :attr:`rho`.
        """
        return math.fsum(getattr(e, "rho_spent", e.rho) for e in self.ledger)
