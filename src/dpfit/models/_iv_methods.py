"""The method table of :class:`~dpfit.DPIVRegression`: one entry per private IV algorithm.

Each entry takes the standardised data (:class:`IVData`, built by the estimator from public
bounds and one charged standardisation), the validated config and the public settings, runs
its releases on the fit's ledger and returns the :class:`~dpfit.models.Result` in the
original units:

``"moments"``
    2SLS from one noisy second-moment matrix of (design, y) and a noisy Omega for the robust
    sandwich (:mod:`._iv_moments`): a population interval.
``"2s-gd"``
    DP-2S-GD (Liang et al. 2025, Alg. 1; :func:`dpfit.algorithms.dp_two_stage_gd`), run m
    times independently or once for batched means: privacy-only (``target="sample"``)
    intervals, with a CoverageWarning (and a note in the summary) when the released iterates
    cannot show that they converged (:mod:`._iv_convergence`).

The map back to original units (:class:`._iv_release.Back`) is exact, so covariances map as
J V J'; everything after the releases is post-processing.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import user_stacklevel
from ..algorithms.two_stage import dp_two_stage_gd
from ..exceptions import CoverageWarning
from ..inference.population import transform
from ..mechanisms import NoiseSource
from ..privacy import PrivacyLedger, split
from ._iv_config import EXPERIMENTAL_INTERVALS, IVConfig, two_stage_estimates
from ._iv_convergence import convergence_warning
from ._iv_moments import fit_moments, row_clip
from ._iv_release import MOMENTS_METHOD, Back, interval_text, notes, shown, shown_moments
from ._iv_scaling import Standardization
from ._result_iv import IVReleases
from .results import Result

__all__ = ["IV_METHOD_TABLE", "IVData"]


@dataclass(frozen=True, kw_only=True, eq=False)
class IVData:
    """The rows an IV method sees, and the public facts of how they were built.

    ``V`` holds the (ones,) design and response columns, clipped and standardised when
    bounds were given and with every zero record's row 0; ``x_idx``, ``z_idx`` and
    ``y_idx`` index the regressors, instruments and response in it; ``rho_fit`` is the
    budget left for the method after the standardisation.
    """

    V: np.ndarray
    rho_fit: float
    x_idx: list[int]
    z_idx: list[int]
    y_idx: int
    n: int
    names: list[str]
    response: str
    columns: list[str]
    bounds: np.ndarray | None
    std: Standardization | None
    back: Back


#: One IV method: (data, config, settings, ledger, noise source) -> Result.
IVMethod = Callable[[IVData, IVConfig, dict[str, Any], PrivacyLedger, NoiseSource], Result]


def _result(
    data: IVData, cfg: IVConfig, ledger: PrivacyLedger, *, checks: tuple[str, ...] = (), **fields
) -> Result:
    """The :class:`Result` fields every IV method shares, plus the method's own; ``checks``
    (warnings about the interval, from released quantities) join the summary's notes."""
    return Result(
        names=data.names,
        n=data.n,
        ledger=ledger,
        model="DP IV regression",
        response=data.response,
        notes=[*notes(data.std, cfg), *checks],
        **fields,
    )


def run_moments(
    data: IVData,
    cfg: IVConfig,
    settings: dict[str, Any],
    ledger: PrivacyLedger,
    source: NoiseSource,
) -> Result:
    """Noisy-moment 2SLS with a population interval (:mod:`._iv_moments`)."""
    row_bound = None
    if data.std is not None:  # |standardised value| <= its bound's distance / sd
        std = data.std
        reach = np.maximum(std.mean - std.bounds[:, 0], std.bounds[:, 1] - std.mean) / std.sd
        row_bound = float(np.sqrt(np.sum(reach**2) + cfg.fit_intercept))
    clip = row_clip(data.V.shape[1], row_bound)
    out = fit_moments(
        data.V, data.x_idx, data.z_idx, data.y_idx, rho=data.rho_fit, n=data.n,
        clip=clip, ledger=ledger, source=source, names=data.names,
    )  # fmt: skip
    return _result(
        data,
        cfg,
        ledger,
        estimate=data.back(out["estimate"][None, :])[0],
        interval_estimates=None,
        interval_method=MOMENTS_METHOD,
        method="noisy-moment 2SLS",
        noise_backend=source.backend,
        seeded=source.seeded,
        config=shown_moments(cfg, clip, data.bounds, data.columns),
        population=transform(out["population"], data.back.jacobian(len(data.x_idx))),
        identification=IVReleases(
            moments=out["moments"],
            stage=out["first_stage"],
            omega=out["omega"],
            beta=out["estimate"],
            scale=np.diag(data.back.jacobian(len(data.x_idx))),
            names=tuple(data.names),
        ),
        # Not experimental: the registered inference-coverage-iv claim passes at paper
        # scale (docs/inference.md); outside its regime the fit warns (CoverageWarning).
        experimental=False,
    )


def run_two_stage(
    data: IVData,
    cfg: IVConfig,
    settings: dict[str, Any],
    ledger: PrivacyLedger,
    source: NoiseSource,
) -> Result:
    """DP-2S-GD (Liang et al. 2025, Alg. 1) with privacy-only intervals."""
    rho_theta, rho_beta = split(data.rho_fit, [cfg.rho_split, 1.0 - cfg.rho_split])  # exact
    traj = dp_two_stage_gd(
        data.V[:, data.x_idx],
        data.V[:, data.y_idx],
        data.V[:, data.z_idx],
        rho_theta=rho_theta,
        rho_beta=rho_beta,
        noise_calibration=cfg.noise_calibration,
        ledger=ledger,
        rng=source,
        warn_large_rho=False,  # the estimator checked (and warned about) its whole rho
        **settings["algorithm"],
    )
    estimates, checks = None, ()
    if cfg.interval is not None:
        estimates = data.back(two_stage_estimates(traj, cfg, settings))
        jacobian = data.back.jacobian(len(data.x_idx))
        message = convergence_warning(traj, cfg, settings, estimates, jacobian)
        if message is not None:  # released iterates and public settings only
            warnings.warn(message, CoverageWarning, stacklevel=user_stacklevel())
            checks = (message,)
    estimate = (
        data.back(np.asarray(traj.estimate)[None, :])[0]
        if estimates is None
        else estimates.mean(axis=0)
    )
    return _result(
        data,
        cfg,
        ledger,
        estimate=estimate,
        interval_estimates=estimates,
        interval_method=interval_text(cfg, settings),
        method="DP-2S-GD (Liang et al. 2025, Alg. 1)",
        noise_backend=traj.noise_backend,
        seeded=traj.seeded,
        config=shown(cfg, settings, traj, data.bounds, data.columns),
        experimental=cfg.interval in EXPERIMENTAL_INTERVALS,
        checks=checks,
        diagnostics={k: float(np.mean(v)) for k, v in traj.diagnostics.items()},
    )


IV_METHOD_TABLE: dict[str, IVMethod] = {"moments": run_moments, "2s-gd": run_two_stage}
