"""Scoring a canary coordinate that follows a noisy gradient-descent random walk.

In every gradient-descent target, the canary coordinate c of the released iterate obeys

    w_t[c] = w_{t-1}[c] - eta * (g_t[c] + sigma_t xi_t),   xi_t ~ N(0, 1),

where sigma_t is the noise std *declared in the ledger* for release t and g_t[c] is the
canary's clipped gradient over the public n: +clip/n on D when D holds the anti-canary
(replace-one), 0 when D has no canary (add/remove), and -clip/n on D' (the canary's
residual exceeds the clip at every step, see :func:`canary_response`). The final iterate is
therefore exactly N(m0, s0^2) on D with m0 = w_0[c] - eta sum_t g_t[c] and
s0 = eta sqrt(sum_t sigma_t^2); D' shifts it by eta T (2 clip / n) (replace-one) or
eta T clip / n (add/remove), i.e. by sqrt(2 rho) s0 when the noise is calibrated as
claimed. The final iterate is a sufficient statistic of the T releases on this coordinate,
so scoring it is as strong as a white-box audit of the per-step releases.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..privacy import Relation
from .registry import Scores

__all__ = ["canary_response", "declared_noise", "run_sides", "walk_scores"]


def canary_response(clip: float, null_sd: float, drift: float) -> float:
    """A canary response so large that its residual exceeds ``clip`` with certainty.

    The canary coordinate stays within |drift| + 40 null sd of 0 except with probability
    below 1e-300, so a response of clip + |drift| + 40 sd + 1 keeps the canary saturated.
    """
    return clip + abs(drift) + 40.0 * null_sd + 1.0


def declared_noise(ledger, label: str) -> np.ndarray:
    """The noise std of every release labelled ``label``, as declared in ``ledger``."""
    return np.array(
        [e.noise_std for e in ledger.releases if e.label == label for _ in range(e.count)]
    )


def run_sides(fit: Callable[[bool], tuple[float, object]], runs: int) -> tuple[np.ndarray, ...]:
    """Call ``fit(alt)`` ``runs`` times per side; returns (null finals, alt finals, a ledger)."""
    out, ledger = [], None
    for alt in (False, True):
        finals = np.empty(runs)
        for i in range(runs):
            finals[i], ledger_i = fit(alt)
            ledger = ledger if ledger is not None else ledger_i
        out.append(finals)
    return out[0], out[1], ledger


def walk_scores(
    null: np.ndarray,
    alt: np.ndarray,
    *,
    start: float,
    step_size: float,
    noise_stds: np.ndarray,
    clip_over_n: float,
    relation: Relation,
    extra: dict | None = None,
) -> Scores:
    """Standardise final canary coordinates by the claimed random-walk law on D."""
    steps = noise_stds.size
    drift = steps * clip_over_n if relation is Relation.REPLACE_ONE else 0.0
    null_mean = start - step_size * drift
    null_sd = step_size * math.sqrt(float(np.sum(noise_stds**2)))
    return Scores(
        null=(null - null_mean) / null_sd,
        alt=(alt - null_mean) / null_sd,
        exact_null=True,
        claim={
            "noise_std": float(noise_stds.max()),
            "null_mean": null_mean,
            "null_sd": null_sd,
            **(extra or {}),
        },
    )
