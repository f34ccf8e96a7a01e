"""Building the release of a :class:`~dpfit.DPIVRegression` fit (post-processing only).

The exact map from standardised coefficients back to original units (:class:`Back`), and
the public texts of the summary: how the interval was built, the shown configuration and
the notes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._iv_config import IVConfig
from ._iv_moments import OMEGA_SHARE
from ._iv_scaling import Standardization
from ._scaling import bounds_text

__all__: list[str] = []

TARGET = (
    "They cover the 2SLS estimate on these data (approximately: the fixed point of the "
    "clipped two-stage iteration), i.e. they reflect the privacy noise only, not sampling "
    "error; they are not confidence intervals for the population beta."
)


class Back:
    """Map coefficient rows [b0', b'] of the standardised fit back to original units (exact)."""

    def __init__(self, std: Standardization | None, columns, x_names, y_name, intercept: bool):
        self.std, self.intercept = std, intercept
        if std is not None:
            index = {c: j for j, c in enumerate(columns)}
            self.mx = std.mean[[index[c] for c in x_names]]
            self.sx = std.sd[[index[c] for c in x_names]]
            self.my, self.sy = std.mean[index[y_name]], std.sd[index[y_name]]

    def jacobian(self, p1: int) -> np.ndarray:
        """The linear part J of the map (exact: the map is affine), for covariances J V J'."""
        if self.std is None:
            return np.eye(p1)
        J = np.zeros((p1, p1))
        lead = int(self.intercept)
        J[lead:, lead:] = np.diag(self.sy / self.sx)
        if self.intercept:
            J[0, 0] = self.sy
            J[0, 1:] = -(self.sy / self.sx) * self.mx
        return J

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        if self.std is None:
            return np.asarray(rows, dtype=np.float64)
        b = rows[:, int(self.intercept) :]
        coef = self.sy * b / self.sx
        if not self.intercept:  # the fit had no constant: keep the map linear (no shift)
            return coef
        intercept = self.my + self.sy * rows[:, 0] - coef @ self.mx
        return np.column_stack([intercept, coef])


MOMENTS_METHOD = (
    "No privacy-only interval: the noisy-moment 2SLS releases a population interval "
    "(sampling + privacy error); conf_int(target='population')."
)


def shown_moments(
    cfg: IVConfig, clip: float, bounds: np.ndarray | None, columns: list[str]
) -> dict[str, Any]:
    """The public configuration of a noisy-moment fit, for the summary."""
    shown = {
        "method": "moments (2SLS from released second moments)",
        "row clip (standardised units)": f"{clip:.4g}",
        "Omega share of rho": f"{OMEGA_SHARE:g}",
    }
    return {**shown, **_bounds_shown(cfg, bounds, columns)}


def interval_text(cfg: IVConfig, settings: dict[str, Any]) -> str:
    """How the m estimates of a DP-2S-GD fit were built, and what their interval covers."""
    if cfg.interval is None:
        return "No interval was requested (interval=None); the estimate is the final iterate."
    how = {
        "independent-runs": f"{cfg.m} independent DP-2S-GD runs ({cfg.interval_variant}: "
        + ("final iterates)" if cfg.interval_variant == "formal" else "post-burn-in means)"),
        "batched-means": f"{cfg.m} batch means of one run (burn-in {settings['burn_in']})",
    }[cfg.interval]
    return f"Student-t intervals from {how}, mapped to the original units. {TARGET}"


def shown(
    cfg: IVConfig,
    settings: dict[str, Any],
    traj: Any,
    bounds: np.ndarray | None,
    columns: list[str],
) -> dict[str, Any]:
    """The public configuration of a DP-2S-GD fit, with its released noise stds."""
    alg = settings["algorithm"]
    shown = {
        "rho split (theta : beta)": f"{cfg.rho_split:g} : {1 - cfg.rho_split:g}",
        "clip (theta, beta)": f"{alg['clip_theta']:.4g}, {alg['clip_beta']:.4g}",
        "step sizes (eta, alpha)": f"{alg['step_size_theta']:.4g}, {alg['step_size_beta']:.4g}",
        "steps x runs": f"{alg['steps']} x {alg['runs']}",
        "noise calibration": cfg.noise_calibration,
        "noise std (theta, beta)": (
            f"{traj.config['noise_std_theta']:.4g}, {traj.config['noise_std_beta']:.4g}"
        ),
    }
    return {**shown, **_bounds_shown(cfg, bounds, columns)}


def _bounds_shown(cfg: IVConfig, bounds: np.ndarray | None, columns: list[str]) -> dict[str, str]:
    """The public bounds and the standardisation's share of rho (nothing without bounds)."""
    if bounds is None:
        return {}
    return {
        "bounds": bounds_text(columns, bounds),
        "standardisation share of rho": f"{cfg.scale_fraction:g}",
    }


def notes(std: Standardization | None, cfg: IVConfig) -> list[str]:
    """The notes of every IV fit: units, and how the columns were scaled."""
    out = [
        "Clipping and noise act in standardised units; n, bounds and all settings are "
        "public inputs."
    ]
    if std is None:
        out.append(
            "No bounds were given: the data were used as passed (they should be "
            "centred and scaled with public constants)."
        )
    else:
        out.append(
            f"Every column was clipped into its public bounds and standardised with privately "
            f"released means and standard deviations ({cfg.scale_fraction:g} of rho)."
        )
    return out
