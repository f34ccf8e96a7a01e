"""Black-box audits of any private entry point: a score calibrated on held-out runs.

The gradient-descent targets know the exact law of their score; most entry points (a ridge
solve of noisy sufficient statistics, a fit with a population interval, a grid search, a
PyTorch loop) do not. For them the audit scores each run's **released estimate** by a
statistic fixed before the audited runs are looked at (Jagielski et al. 2020; Nasr et al.
2021 fix their thresholds the same way):

1. ``runs`` calibration runs per side fix the statistic: each coordinate of the released
   estimate is mapped to normal scores through its empirical CDF on D (ranks, so that a
   heavy-tailed coordinate, such as a ridge solve with a noisy denominator, cannot dominate),
   then projected on w = S^-1 (m1 - m0) (Fisher's linear discriminant of those scores: S
   their pooled covariance, m0 and m1 the means on D and D'); the sorted statistic of the
   calibration runs on D is kept;
2. :class:`~dpfit.audit.whitebox.CalibratedScore` maps a statistic through that empirical
   null CDF to the N(0, 1) scale, where :func:`dpfit.audit.assess` places its fixed
   thresholds; the claimed shift for the reverse-direction events is the median score of
   the calibration runs on D';
3. ``runs`` fresh runs per side are scored and assessed.

The events {s > t} of step 3 are fixed events of independent runs, so the Clopper-Pearson
epsilon lower bounds are rigorous whatever the calibration's quality (check 1). The mean
shift check (:class:`~dpfit.audit.checks.MeanShift`) uses that a mu-GDP pair (every
composition of Gaussian releases of total rho is sqrt(2 rho)-GDP) makes any score calibrated
to N(0, 1) on D stochastically smaller than N(mu, 1) on D' (the Gaussian trade-off curve of
Dong, Roth & Su 2022), so its mean shift is at most mu; the calibration is empirical, so
that check's level is alpha up to the calibration error (about 1/sqrt(runs)).

Neighbours are the canary pairs of :mod:`dpfit.audit.canary` with the canary at the public
bounds, so that its contribution to every release saturates the declared sensitivity.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..exceptions import PrivacyWarning
from ..mechanisms import NoiseSource
from .canary import CanaryData
from .registry import AuditTarget, Scores, register_target
from .whitebox import CalibratedScore

__all__: list[str] = []

#: fit(side, config, source) -> (released estimate, the ledger's rho)
Fit = Callable[[tuple[Any, ...], Mapping[str, Any], NoiseSource], tuple[np.ndarray, float]]
#: data(config, data_rng) -> the canary pair
Data = Callable[[Mapping[str, Any], np.random.Generator], CanaryData]


def _released(fit: Fit, side: tuple, config: Mapping[str, Any], source, runs: int):
    """``runs`` released estimates (rows) and the largest rho their ledgers charged."""
    rows, charged = [], 0.0
    with warnings.catch_warnings():  # small synthetic data: coverage and side conditions
        warnings.simplefilter("ignore", PrivacyWarning)
        for _ in range(runs):
            estimate, rho = fit(side, config, source)
            rows.append(np.ravel(np.asarray(estimate, dtype=np.float64)))
            charged = max(charged, rho)
    return np.array(rows), charged


def discriminant(null: np.ndarray, alt: np.ndarray) -> np.ndarray:
    """Fisher's direction S^-1 (m1 - m0) of two samples of vectors (rows), with a ridge of
    1e-12 of S's trace so that a constant coordinate does not make S singular."""
    centred = np.vstack([null - null.mean(axis=0), alt - alt.mean(axis=0)])
    S = centred.T @ centred / max(1, len(centred) - 2)
    S += 1e-12 * max(float(np.trace(S)), 1e-300) * np.eye(S.shape[0])
    return np.linalg.solve(S, alt.mean(axis=0) - null.mean(axis=0))


class _Statistic:
    """The statistic of step 1, fixed by calibration runs on D (``null``) and D' (``alt``)."""

    def __init__(self, null: np.ndarray, alt: np.ndarray) -> None:
        self._marginals = [
            CalibratedScore(null_sample=np.sort(null[:, j]), shift=0.0)
            for j in range(null.shape[1])
        ]
        self._w = discriminant(self._normal(null), self._normal(alt))

    def _normal(self, rows: np.ndarray) -> np.ndarray:
        return np.column_stack([f(rows[:, j]) for j, f in enumerate(self._marginals)])

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        return self._normal(rows) @ self._w


def calibrated_runner(data: Data, fit: Fit) -> Callable[..., Scores]:
    """The :data:`~dpfit.audit.registry.Runner` of the module docstring for ``fit``."""

    def run(config: Mapping[str, Any], runs: int, source: NoiseSource, data_rng) -> Scores:
        pair = data(config, data_rng)
        cal0, rho0 = _released(fit, pair.side(False), config, source, runs)
        cal1, rho1 = _released(fit, pair.side(True), config, source, runs)
        statistic = _Statistic(cal0, cal1)
        null_sample = np.sort(statistic(cal0))
        centred = CalibratedScore(null_sample=null_sample, shift=0.0)
        shift = float(np.median(centred(statistic(cal1))))
        score = CalibratedScore(null_sample=null_sample, shift=shift)
        out0, rho2 = _released(fit, pair.side(False), config, source, runs)
        out1, rho3 = _released(fit, pair.side(True), config, source, runs)
        charged = max(rho0, rho1, rho2, rho3)
        if not charged <= float(config["rho"]) * (1.0 + 1e-12):
            raise RuntimeError(f"a run charged rho = {charged!r} > the claimed {config['rho']!r}")
        return Scores(
            null=score(statistic(out0)),
            alt=score(statistic(out1)),
            exact_null=False,
            shift=shift,
            claim={"ledger_rho": charged, "calibration_runs": runs},
        )

    return run


def register_calibrated(
    name: str, description: str, defaults: Mapping[str, Any], data: Data, fit: Fit
) -> AuditTarget:
    """Register a black-box target for ``fit`` on the canary pairs of ``data``."""
    return register_target(
        AuditTarget(
            name=name,
            description=f"{description}; score: calibrated discriminant of the released estimate",
            kind="black-box",
            defaults=defaults,
            rho=lambda config: float(config["rho"]),
            run=calibrated_runner(data, fit),
        )
    )
