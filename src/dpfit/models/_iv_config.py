"""The public configuration of a :class:`~dpfit.DPIVRegression` fit, checked before any data.

A constraint table (the same form as :class:`~dpfit.DPLinearRegression`'s, run by
:func:`._constraints.validated`) turns the estimator's stored parameters into a frozen
:class:`IVConfig`; :func:`settings_from` fills the defaults of DP-2S-GD from the public
shapes, and :func:`check_interval` dry-runs the interval construction on public shapes, so a
fit that could not build its interval fails before anything is charged.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np

from .._validation import check_positive
from ..algorithms._two_stage_core import check_stage_scale
from ..algorithms.two_stage import NOISE_CALIBRATIONS
from ..inference import VARIANTS, interval_estimates
from ..privacy import Relation, split
from ._constraints import (
    Check,
    check_bool,
    fraction,
    integer,
    one_of,
    optional,
    rho_check,
    validated,
)

__all__ = [
    "EXPERIMENTAL_INTERVALS",
    "IV_INTERVALS",
    "IV_METHODS",
    "TWO_STAGE_SETTINGS",
    "IVConfig",
    "check_interval",
    "check_two_stage_scales",
    "iv_config",
    "settings_from",
    "two_stage_estimates",
]

IV_INTERVALS = ("independent-runs", "batched-means")
#: ``"moments"``: 2SLS from privately released second moments with a population interval
#: (the default); ``"2s-gd"``: DP-2S-GD (Liang et al. 2025, Alg. 1) with privacy-only intervals.
IV_METHODS = ("moments", "2s-gd")
#: Settings of DP-2S-GD only, with their defaults: refused with method="moments" when changed.
TWO_STAGE_SETTINGS = {
    "rho_split": 0.75,
    "clip": None,
    "steps": 20,
    "step_size": None,
    "interval": "independent-runs",
    "m": 10,
    "burn_in": None,
    "interval_variant": "formal",
    "noise_calibration": "exact",
}

#: Constructions whose measured coverage of 2SLS fell below nominal - 3 standard errors
#: (docs/liang2025.md; ``dpfit reproduce liang2025-coverage --scale quick``): the noise in
#: the first stage biases beta towards zero, which the intervals do not account for.
EXPERIMENTAL_INTERVALS: frozenset[str] = frozenset({"batched-means", "independent-runs"})


def _scalar_or_pair(value: Any, name: str) -> tuple[float, float]:
    """A positive number for both stages, or a (theta stage, beta stage) pair."""
    if isinstance(value, tuple | list):
        if len(value) != 2:
            raise ValueError(f"{name} must be a number or a (theta, beta) pair")
        return check_positive(value[0], f"{name}[0]"), check_positive(value[1], f"{name}[1]")
    v = check_positive(value, name)
    return v, v


#: Constraint table of the scalar parameters; ``bounds`` and ``y_bounds`` (whose keys depend
#: on the data's column names) and ``random_state`` are checked in ``fit``.
_CONSTRAINTS: dict[str, Check] = {
    "rho": rho_check(warn=True),
    "method": one_of(IV_METHODS),
    "rho_split": fraction,
    "scale_fraction": fraction,
    "clip": optional(_scalar_or_pair),
    "steps": integer(1),
    "step_size": optional(_scalar_or_pair),
    "fit_intercept": check_bool,
    "interval": optional(one_of(IV_INTERVALS)),
    "m": integer(2),
    "burn_in": optional(integer(0)),
    "interval_variant": one_of(VARIANTS),
    "noise_calibration": one_of(NOISE_CALIBRATIONS),
    "secure": check_bool,
}


@dataclass(frozen=True, kw_only=True)
class IVConfig:
    """The validated public parameters of one :class:`~dpfit.DPIVRegression` fit."""

    rho: float
    method: str
    rho_split: float
    scale_fraction: float
    clip: tuple[float, float] | None
    steps: int
    step_size: tuple[float, float] | None
    fit_intercept: bool
    interval: str | None
    m: int
    burn_in: int | None
    interval_variant: str
    noise_calibration: str
    secure: bool


def iv_config(estimator: Any, *, warn_large_rho: bool = True) -> IVConfig:
    """Check every scalar parameter of ``estimator`` and how they combine (no data read)."""
    cfg = IVConfig(**validated(estimator, _CONSTRAINTS, warn_large_rho=warn_large_rho))
    if cfg.method == "moments":
        changed = [k for k, v in TWO_STAGE_SETTINGS.items() if getattr(estimator, k) != v]
        if changed:
            raise ValueError(
                f"{', '.join(changed)} apply to method='2s-gd' (DP-2S-GD) only; the "
                "default method='moments' has no steps, clips or intervals to set: drop "
                "them or pass method='2s-gd'"
            )
    if cfg.interval_variant == "formal" and cfg.burn_in:
        raise ValueError("burn_in applies to interval_variant='experimental' only")
    return cfg


def settings_from(cfg: IVConfig, p1: int, q1: int) -> dict[str, Any]:
    """DP-2S-GD's public defaults (clips, step sizes, runs, burn-in) from the public shapes:
    p1 regressors and q1 instruments, the intercept included."""
    clip = cfg.clip or (2.0 * np.sqrt(p1 * q1), 2.0 * np.sqrt(p1))
    eta, alpha = cfg.step_size or (1.0, 2.0 / 3.0)
    runs = cfg.m if cfg.interval == "independent-runs" else 1
    burn_in = cfg.burn_in
    if burn_in is None and cfg.interval_variant == "experimental":
        burn_in = 20 if cfg.interval == "batched-means" else min(20, cfg.steps // 2)
    return {
        "algorithm": {
            "clip_theta": float(clip[0]),
            "clip_beta": float(clip[1]),
            "steps": cfg.steps,
            "step_size_theta": float(eta),
            "step_size_beta": float(alpha),
            "runs": runs,
        },
        "burn_in": burn_in,
    }


def check_two_stage_scales(cfg: IVConfig, settings: dict[str, Any], n: int) -> None:
    """DP-2S-GD's clips and step sizes checked before anything is charged (the
    standardisation is charged before DP-2S-GD's own check runs): each stage's clipped
    gradient sum, noisy release, iterates and their squares must stay finite
    (:func:`dpfit.algorithms._two_stage_core.check_stage_scale`), with the smallest share
    either stage can get (the standardisation's share taken, the paper calibration's half)."""
    alg = settings["algorithm"]
    _, rho_fit = split(cfg.rho, [cfg.scale_fraction, 1.0 - cfg.scale_fraction])  # as the plan's
    rho = split(min(split(rho_fit, [cfg.rho_split, 1.0 - cfg.rho_split])), 2)[0]
    common = {"n": n, "rho": rho, "releases": alg["runs"] * alg["steps"], "steps": alg["steps"]}
    for stage in ("theta", "beta"):
        check_stage_scale(
            alg[f"clip_{stage}"], step_size=alg[f"step_size_{stage}"], name=f"clip_{stage}",
            relation=Relation.REPLACE_ONE, **common,
        )  # fmt: skip


def check_interval(cfg: IVConfig, settings: dict[str, Any], p1: int) -> None:
    """Dry run of the interval construction on public shapes, before anything is charged.

    The m estimates are built from the released iterates after the fit; whether the
    requested construction can build them (enough iterates for m blocks after the burn-in,
    steps > burn_in for independent runs) depends only on public settings, so it is checked
    here on an all-zero trajectory of the same shape, by the same code that builds them.
    """
    if cfg.interval is None:
        return
    alg = settings["algorithm"]
    dry = SimpleNamespace(
        iterates=np.zeros((alg["runs"] * alg["steps"], p1)),
        config={"runs": alg["runs"], "steps": alg["steps"]},
    )
    try:
        two_stage_estimates(dry, cfg, settings, warn=False)  # the real one warns, after the fit
    except ValueError as err:
        raise ValueError(
            f"interval={cfg.interval!r} with steps={alg['steps']}, m={cfg.m}, "
            f"burn_in={settings['burn_in']} ({cfg.interval_variant}): {err}; raise steps "
            "or lower m / burn_in (nothing was charged)"
        ) from None


def two_stage_estimates(
    traj: Any, cfg: IVConfig, settings: dict[str, Any], *, warn: bool = True
) -> np.ndarray:
    """The m estimates behind a DP-2S-GD interval, from the released iterates of ``traj``
    (:func:`dpfit.inference.interval_estimates`; in standardised units). ``warn=False``
    for the dry run of :func:`check_interval`, which must not warn twice."""
    return interval_estimates(
        traj,
        cfg.interval,
        m=cfg.m,
        burn_in=settings["burn_in"],
        variant=cfg.interval_variant,
        warn=warn,
    )
