"""Building the release of a :class:`~dpfit.DPIVRegression` fit (post-processing only).

Public defaults from shapes (:func:`settings_from`), the exact map from standardised
coefficients back to original units (:class:`Back`), and the texts of the summary.
"""

from __future__ import annotations

import warnings
from types import SimpleNamespace
from typing import Any

import numpy as np

from ..exceptions import CoverageWarning
from ..inference import interval_estimates
from ._iv_scaling import Standardization

__all__: list[str] = []

TARGET = (
    "They cover the 2SLS estimate on these data (approximately: the fixed point of the "
    "clipped two-stage iteration), i.e. they reflect the privacy noise only, not sampling "
    "error; they are not confidence intervals for the population beta."
)


def settings_from(cfg: dict[str, Any], p1: int, q1: int) -> dict[str, Any]:
    """Public defaults (clips, step sizes, runs) from the public shapes only."""
    clip = cfg["clip"] or (2.0 * np.sqrt(p1 * q1), 2.0 * np.sqrt(p1))
    eta, alpha = cfg["step_size"] or (1.0, 2.0 / 3.0)
    runs = cfg["m"] if cfg["interval"] == "independent-runs" else 1
    burn_in = cfg["burn_in"]
    if burn_in is None and cfg["interval_variant"] == "experimental":
        burn_in = 20 if cfg["interval"] == "batched-means" else min(20, cfg["steps"] // 2)
    return {
        "algorithm": {
            "clip_theta": float(clip[0]),
            "clip_beta": float(clip[1]),
            "steps": cfg["steps"],
            "step_size_theta": float(eta),
            "step_size_beta": float(alpha),
            "runs": runs,
        },
        "burn_in": burn_in,
    }


def check_interval(cfg: dict[str, Any], settings: dict[str, Any], p1: int) -> None:
    """Dry run of the interval construction on public shapes, before anything is charged.

    The m estimates are built from the released iterates after the fit; whether the
    requested construction can build them (enough iterates for m blocks after the burn-in,
    steps > burn_in for independent runs) depends only on public settings, so it is checked
    here on an all-zero trajectory of the same shape, by the same code that builds them.
    """
    if cfg["interval"] is None:
        return
    alg = settings["algorithm"]
    dry = SimpleNamespace(
        iterates=np.zeros((alg["runs"] * alg["steps"], p1)),
        config={"runs": alg["runs"], "steps": alg["steps"]},
    )
    try:
        with warnings.catch_warnings():  # the real construction warns once, after the fit
            warnings.simplefilter("ignore", CoverageWarning)
            interval_estimates(
                dry,
                cfg["interval"],
                m=cfg["m"],
                burn_in=settings["burn_in"],
                variant=cfg["interval_variant"],
            )
    except ValueError as err:
        raise ValueError(
            f"interval={cfg['interval']!r} with steps={alg['steps']}, m={cfg['m']}, "
            f"burn_in={settings['burn_in']} ({cfg['interval_variant']}): {err}; raise steps "
            "or lower m / burn_in (nothing was charged)"
        ) from None


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


def shown_moments(cfg, clip, bounds, columns) -> dict[str, Any]:
    """The public configuration of a noisy-moment fit, for the summary."""
    from ._iv_moments import OMEGA_SHARE

    shown = {
        "method": "moments (2SLS from released second moments)",
        "row clip (standardised units)": f"{clip:.4g}",
        "Omega share of rho": f"{OMEGA_SHARE:g}",
    }
    if bounds is not None:
        shown["bounds"] = ", ".join(
            f"{c} [{lo:g}, {hi:g}]" for c, (lo, hi) in zip(columns, bounds, strict=True)
        )
        shown["standardisation share of rho"] = f"{cfg['scale_fraction']:g}"
    return shown


def interval_text(cfg: dict[str, Any], settings: dict[str, Any]) -> str:
    if cfg["interval"] is None:
        return "No interval was requested (interval=None); the estimate is the final iterate."
    how = {
        "independent-runs": f"{cfg['m']} independent DP-2S-GD runs ({cfg['interval_variant']}: "
        + ("final iterates)" if cfg["interval_variant"] == "formal" else "post-burn-in means)"),
        "batched-means": f"{cfg['m']} batch means of one run (burn-in {settings['burn_in']})",
    }[cfg["interval"]]
    return f"Student-t intervals from {how}, mapped to the original units. {TARGET}"


def shown(cfg, settings, traj, bounds, columns) -> dict[str, Any]:
    alg = settings["algorithm"]
    shown = {
        "rho split (theta : beta)": f"{cfg['rho_split']:g} : {1 - cfg['rho_split']:g}",
        "clip (theta, beta)": f"{alg['clip_theta']:.4g}, {alg['clip_beta']:.4g}",
        "step sizes (eta, alpha)": f"{alg['step_size_theta']:.4g}, {alg['step_size_beta']:.4g}",
        "steps x runs": f"{alg['steps']} x {alg['runs']}",
        "noise calibration": cfg["noise_calibration"],
        "noise std (theta, beta)": (
            f"{traj.config['noise_std_theta']:.4g}, {traj.config['noise_std_beta']:.4g}"
        ),
    }
    if bounds is not None:
        shown["bounds"] = ", ".join(
            f"{c} [{lo:g}, {hi:g}]" for c, (lo, hi) in zip(columns, bounds, strict=True)
        )
        shown["standardisation share of rho"] = f"{cfg['scale_fraction']:g}"
    return shown


def notes(std: Standardization | None, cfg: dict[str, Any]) -> list[str]:
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
            f"released means and standard deviations ({cfg['scale_fraction']:g} of rho)."
        )
    return out
