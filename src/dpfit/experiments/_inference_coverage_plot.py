"""Figures of the ``inference-coverage`` and ``-iv`` studies: coverage and width per cell."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

__all__ = ["coverage_figure", "iv_coverage_figure"]


def coverage_figure(table: pd.DataFrame) -> Figure:
    """Left: coverage of theta* with +/- 2 MC s.e. and the [0.93, 0.97] band; right: width
    relative to non-private HC0 OLS for DP-GD (default) and NSS at the same rho."""
    fig = Figure(figsize=(10, max(3.0, 1.2 + 0.3 * len(table))))
    left, right = fig.subplots(1, 2, sharey=True)
    labels = [f"{r.design}, n={int(r.n)}, rho={r.rho:g}" for r in table.itertuples()]
    y = np.arange(len(table))[::-1]
    warned = table["warned"].to_numpy() >= 0.5
    left.axvspan(0.93, 0.97, color="0.9", label="target band [0.93, 0.97]")
    left.axvline(0.95, color="0.5", lw=0.8)
    left.errorbar(
        table["coverage"],
        y,
        xerr=2 * table["mc_se"],
        fmt="o",
        color="C0",
        label="DP default (population)",
    )
    left.plot(table["nss_coverage"], y, "x", color="C1", label="NSS (population)")
    left.plot(
        table["coverage"][warned],
        y[warned],
        "s",
        mfc="none",
        color="C3",
        ms=10,
        label="library warned (outside valid regime)",
    )
    left.set_yticks(y, labels, fontsize=7)
    left.set_xlabel("coverage of the population coefficient theta* (nominal 0.95)")
    left.legend(
        fontsize=7,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.08 * 30 / max(len(table), 8)),
        ncol=2,
    )
    right.axvline(1.0, color="0.5", lw=0.8)
    right.plot(table["width_ratio"], y, "o", color="C0", label="DP default")
    right.plot(table["nss_width_ratio"], y, "x", color="C1", label="NSS, same rho")
    right.set_xscale("log")
    right.set_xlabel("interval width / non-private robust (HC0) OLS width")
    right.legend(fontsize=7)
    fig.suptitle("Population intervals: what they cover and what privacy costs", fontsize=10)
    fig.tight_layout()
    return fig


def iv_coverage_figure(table: pd.DataFrame) -> Figure:
    """The ``inference-coverage-iv`` study: left, coverage of beta*_x (endogenous coefficient)
    with +/- 2 MC s.e. and the [0.93, 0.97] band, DP-2S-GD's privacy-only interval beside
    it where measured; right, width relative to non-private robust 2SLS (median)."""
    fig = Figure(figsize=(10, max(3.0, 1.2 + 0.3 * len(table))))
    left, right = fig.subplots(1, 2, sharey=True)
    labels = [f"{r.design}, n={int(r.n)}, rho={r.rho:g}" for r in table.itertuples()]
    y = np.arange(len(table))[::-1]
    warned = table["warned"].to_numpy() >= 0.5
    left.axvspan(0.93, 0.97, color="0.9", label="target band [0.93, 0.97]")
    left.axvline(0.95, color="0.5", lw=0.8)
    left.errorbar(
        table["coverage_x"],
        y,
        xerr=2 * table["mc_se_x"],
        fmt="o",
        color="C0",
        label="DP moments 2SLS (population)",
    )
    left.plot(table["gd_coverage_x"], y, "x", color="C1", label="DP-2S-GD (privacy only)")
    left.plot(
        table["coverage_x"][warned],
        y[warned],
        "s",
        mfc="none",
        color="C3",
        ms=10,
        label="library warned (outside valid regime)",
    )
    left.set_yticks(y, labels, fontsize=7)
    left.set_xlabel("coverage of the population coefficient beta*_x (nominal 0.95)")
    left.legend(
        fontsize=7,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.08 * 30 / max(len(table), 8)),
        ncol=2,
    )
    right.axvline(1.0, color="0.5", lw=0.8)
    right.plot(table["width_ratio_x"], y, "o", color="C0", label="DP moments 2SLS")
    right.plot(table["gd_width_ratio_x"], y, "x", color="C1", label="DP-2S-GD, same rho")
    right.set_xscale("log")
    right.set_xlabel("interval width / non-private robust 2SLS width (median)")
    right.legend(fontsize=7)
    fig.suptitle("IV population intervals: what they cover and what privacy costs", fontsize=10)
    fig.tight_layout()
    return fig
