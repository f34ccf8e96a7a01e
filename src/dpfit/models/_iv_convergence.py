"""Can a DP-2S-GD interval be trusted? The drift check on its released iterates.

A DP-2S-GD interval (``DPIVRegression(method="2s-gd")``) is built from the final iterates of
m runs or from means of the iterates; it covers the fixed point of the clipped two-stage
iteration (about the data's 2SLS) only once the iterates have reached it. With the default
20 steps they often have not, and the interval then misses the point it is meant to cover.
Whether the iterates still move is read off the released iterates alone (post-processing),
by the drift check of :mod:`dpfit.inference.diagnostics` (Geweke-style halves of each run,
as for the linear population interval, docs/inference.md):

* final iterates (``interval="independent-runs"``, formal variant): the drift of the second
  half of each run, since the final iterate is a draw from the fixed point's law only if
  the run has stopped moving before it ends;
* means of iterates (batched means, or the experimental post-burn-in run means): the drift
  of the iterates that are averaged, i.e. those after the interval's burn-in, since any
  trend in them moves the centre.

The check needs 2 x 4 blocks of 5 iterates per run (:data:`MIN_ITERATES`). With fewer, the
interval's convergence cannot be checked at all, and the fit says so rather than print an
interval as if it could be trusted.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..inference.diagnostics import MIN_BLOCK, MIN_HALF_BLOCKS, iterate_drift
from ._iv_config import IVConfig

__all__: list[str] = []

#: Iterates per run that the drift check needs (two halves of MIN_HALF_BLOCKS blocks).
MIN_ITERATES = 2 * MIN_HALF_BLOCKS * MIN_BLOCK


def _checked_from(cfg: IVConfig, steps: int, burn_in: int | None) -> int:
    """First iterate of each run that the check reads (module docstring)."""
    if cfg.interval == "independent-runs" and cfg.interval_variant == "formal":
        return steps - steps // 2  # the last steps // 2 iterates
    return burn_in or 0


def _steps_needed(cfg: IVConfig) -> int:
    """The fewest steps per run whose checked iterates the drift check can read (the burn-in
    defaults of :func:`._iv_config.settings_from`: 20 for the experimental variant)."""
    if cfg.interval == "independent-runs" and cfg.interval_variant == "formal":
        return 2 * MIN_ITERATES
    burn_in = cfg.burn_in
    if burn_in is None:
        burn_in = 20 if cfg.interval_variant == "experimental" else 0
    return MIN_ITERATES + burn_in


def convergence_warning(
    traj: Any,
    cfg: IVConfig,
    settings: dict[str, Any],
    estimates: np.ndarray,
    jacobian: np.ndarray,
) -> str | None:
    """The message for a DP-2S-GD interval that cannot be trusted, or None when it can.

    ``traj`` holds the released iterates (standardised units), ``estimates`` the m estimates
    behind the interval in the original units and ``jacobian`` the exact linear map between
    the two units. A function of released iterates and public settings only.
    """
    alg = settings["algorithm"]
    steps, runs = alg["steps"], alg["runs"]
    start = _checked_from(cfg, steps, settings["burn_in"])
    drift = iterate_drift(traj.iterates, runs=runs, burn_in=start)
    if drift is None:
        return (
            f"The convergence of DP-2S-GD cannot be checked: the drift check reads "
            f"{steps - start} released iterates per run here and needs {MIN_ITERATES} "
            f"(steps >= {_steps_needed(cfg)}). With too few steps the iterates "
            "have not reached the 2SLS fixed point and the interval may not contain it; it is "
            "printed unchecked."
        )
    bse = estimates.std(axis=0, ddof=1) / np.sqrt(estimates.shape[0])
    drift = drift.transform(jacobian)
    untrusted = drift.untrusted(bse)
    if not untrusted.any():
        return None
    worst = float(np.max(drift.relative(bse)[untrusted]))
    return (
        "The released DP-2S-GD iterates have not converged: the mean of the second half of "
        f"the checked iterates differs from the first half's by up to {worst:.2g} interval "
        f"standard errors in {int(untrusted.sum())} coefficient(s); the interval is off "
        "centre and may not contain the 2SLS fixed point (more steps or larger step sizes "
        "help)."
    )
