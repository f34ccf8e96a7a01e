"""How ``correlated_noise(mode="auto")`` picks a stream: the rule and its public record.

``"auto"`` never lets the work per step grow with t. It streams

1. a :class:`~dpfit.noise.BLTMechanism`, or a Toeplitz mechanism whose encoder C has at most
   :data:`SHORT_MEMORY_ROWS` bands (:func:`~dpfit.noise.banded_encoder`), by its recurrence;
2. a mechanism whose step combines at most :data:`SHORT_MEMORY_ROWS` rows (DP-SGD, anti-PGD,
   short banded mechanisms) or O(log T) rows (tree aggregation) exactly, buffered when the
   buffer fits ``max_buffer_bytes`` and regenerated otherwise;
3. any other Toeplitz mechanism (nu-DP-FTRL, Fichtenberger, long banded ones) by the optimal
   BLT for the same (T, k, b) (:func:`~dpfit.noise.optimal_blt`) **at the same rho** (the
   noise std is rescaled by the ratio of sensitivities), provided its objective
   sens^2 x ||A B||_F^2 (Choquette-Choo et al. 2024, eq. 3) is within :data:`AUTO_RTOL` of the
   requested mechanism's; otherwise (a mechanism tuned for another workload that the prefix-sum
   BLT does not match) it streams the requested mechanism exactly and says so.

The choice is made from the mechanism and the public participation pattern only; the
:class:`StreamChoice` it returns is what :attr:`dpfit.noise.NoiseStream.choice` shows.
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import CorrelatedMechanism
from .blt import BLTMechanism, optimal_blt
from .toeplitz import ToeplitzMechanism
from .tree import RestartedMechanism, TreeMechanism

__all__ = ["AUTO_RTOL", "SHORT_MEMORY_ROWS", "StreamChoice"]

#: "auto" streams a mechanism exactly when no step combines more rows than this.
SHORT_MEMORY_ROWS = 16
#: "auto" replaces a long-memory mechanism by a BLT only within this relative error.
AUTO_RTOL = 0.02


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamChoice:
    """What a stream adds and why (public): see the table in :mod:`dpfit.noise.streams`.

    Attributes
    ----------
    mode : str
        ``"recurrence"``, ``"regenerate"``, ``"buffered"`` or ``"fft"``.
    mechanism : str
        Name of the mechanism whose noise is added.
    requested : str
        Name of the mechanism passed to :func:`correlated_noise`.
    error_ratio : float
        sens^2 x ||A B||_F^2 of ``mechanism`` over that of ``requested`` (1 when they are
        the same): the ratio of expected squared prefix-sum errors at equal rho.
    per_step : str
        ``"constant"`` (work independent of t) or ``"grows with t"``.
    reason : str
        One sentence.
    """

    mode: str
    mechanism: str
    requested: str
    error_ratio: float
    per_step: str
    reason: str

    def __str__(self) -> str:
        return (
            f"{self.mode} stream of {self.mechanism} (requested {self.requested}; error ratio "
            f"{self.error_ratio:.4f}; per-step work {self.per_step}): {self.reason}"
        )


def _objective(mechanism: CorrelatedMechanism, k: int, b: int | None, order: str) -> float:
    return mechanism.sensitivity_squared(k, b, order) * mechanism.prefix_error()


def _short_memory(mechanism: CorrelatedMechanism) -> bool:
    """Whether every step combines a bounded number of rows, whatever t is."""
    if isinstance(mechanism, RestartedMechanism):
        return _short_memory(mechanism.base)
    if isinstance(mechanism, ToeplitzMechanism):
        return mechanism.bands <= SHORT_MEMORY_ROWS
    return isinstance(mechanism, TreeMechanism)  # at most 2 log2(T) nodes per step


def _has_recurrence(mechanism: CorrelatedMechanism) -> bool:
    if isinstance(mechanism, BLTMechanism):
        return True
    return (
        isinstance(mechanism, ToeplitzMechanism)
        and mechanism.encoder_bands <= SHORT_MEMORY_ROWS < mechanism.bands
    )


def _exact_mode(mechanism: CorrelatedMechanism, need: int, max_buffer_bytes: int) -> str:
    if _has_recurrence(mechanism):
        return "recurrence"
    return "buffered" if need <= max_buffer_bytes else "regenerate"


def _choose(
    mechanism: CorrelatedMechanism,
    k: int,
    b: int | None,
    order: str,
    need: int,
    max_buffer_bytes: int,
) -> tuple[CorrelatedMechanism, StreamChoice]:
    """The "auto" rule of the module docstring."""
    name = mechanism.name
    exact = _exact_mode(mechanism, need, max_buffer_bytes)
    if _has_recurrence(mechanism) or _short_memory(mechanism):
        why = "a recurrence" if exact == "recurrence" else "each step combines few rows"
        return mechanism, StreamChoice(
            mode=exact,
            mechanism=name,
            requested=name,
            error_ratio=1.0,
            per_step="constant",
            reason=f"exact: {why}",
        )
    if isinstance(mechanism, ToeplitzMechanism):
        candidate = optimal_blt(mechanism.steps, participations=k, separation=b, order=order)
        ratio = _objective(candidate, k, b, order) / _objective(mechanism, k, b, order)
        if ratio <= 1.0 + AUTO_RTOL:
            return candidate, StreamChoice(
                mode="recurrence",
                mechanism=candidate.name,
                requested=name,
                error_ratio=ratio,
                per_step="constant",
                reason="the optimal BLT for this (T, k, b) at the same rho",
            )
        reason = f"no BLT within {AUTO_RTOL:.0%} of its error (best {ratio:.3f}); exact"
    else:
        reason = "exact: no streaming substitute for this mechanism"
    return mechanism, StreamChoice(
        mode=exact,
        mechanism=name,
        requested=name,
        error_ratio=1.0,
        per_step="grows with t",
        reason=reason,
    )
