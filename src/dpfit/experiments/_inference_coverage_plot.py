"""Figures of the ``inference-coverage`` and ``-iv`` studies: coverage and width per cell."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

__all__ = ["coverage_figure", "iv_coverage_figure"]


@dataclass(frozen=True)
class _Columns:
    """Which columns of a study's table are drawn, and what they are called."""

    coverage: str
    mc_se: str
    width: str
    other_coverage: str
    other_width: str
    ours: str
    other: str
    other_same_rho: str
    target: str
    baseline: str
    title: str


_LINEAR = _Columns(
    "coverage", "mc_se", "width_ratio", "nss_coverage", "nss_width_ratio",
    "DP default (population)", "NSS (population)", "NSS, same rho",
    "theta*", "non-private robust (HC0) OLS width",
    "Population intervals: what they cover and what privacy costs",
)  # fmt: skip
_IV = _Columns(
    "coverage_x", "mc_se_x", "width_ratio_x", "gd_coverage_x", "gd_width_ratio_x",
    "DP moments 2SLS (population)", "DP-2S-GD (privacy only)", "DP-2S-GD, same rho",
    "beta*_x", "non-private robust 2SLS width (median)",
    "IV population intervals: what they cover and what privacy costs",
)  # fmt: skip


def coverage_figure(table: pd.DataFrame) -> Figure:
    """Left: coverage of theta* with +/- 2 MC s.e. and the [0.93, 0.97] band; right: width
    relative to non-private HC0 OLS for DP-GD (default) and NSS at the same rho."""
    return _figure(table, _LINEAR)


def iv_coverage_figure(table: pd.DataFrame) -> Figure:
    """The ``inference-coverage-iv`` study: left, coverage of beta*_x (endogenous coefficient)
    with +/- 2 MC s.e. and the [0.93, 0.97] band, DP-2S-GD's privacy-only interval beside
    it where measured; right, width relative to non-private robust 2SLS (median)."""
    return _figure(table, _IV)


def _figure(table: pd.DataFrame, c: _Columns) -> Figure:
    fig = Figure(figsize=(10, max(3.0, 1.2 + 0.3 * len(table))))
    left, right = fig.subplots(1, 2, sharey=True)
    labels = [f"{r.design}, n={int(r.n)}, rho={r.rho:g}" for r in table.itertuples()]
    y = np.arange(len(table))[::-1]
    warned = table["warned"].to_numpy() >= 0.5
    left.axvspan(0.93, 0.97, color="0.9", label="target band [0.93, 0.97]")
    left.axvline(0.95, color="0.5", lw=0.8)
    left.errorbar(table[c.coverage], y, xerr=2 * table[c.mc_se], fmt="o", color="C0", label=c.ours)
    left.plot(table[c.other_coverage], y, "x", color="C1", label=c.other)
    left.plot(
        table[c.coverage][warned],
        y[warned],
        "s",
        mfc="none",
        color="C3",
        ms=10,
        label="library warned (outside valid regime)",
    )
    left.set_yticks(y, labels, fontsize=7)
    left.set_xlabel(f"coverage of the population coefficient {c.target} (nominal 0.95)")
    left.legend(
        fontsize=7,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.08 * 30 / max(len(table), 8)),
        ncol=2,
    )
    right.axvline(1.0, color="0.5", lw=0.8)
    right.plot(table[c.width], y, "o", color="C0", label=c.ours.split(" (")[0])
    right.plot(table[c.other_width], y, "x", color="C1", label=c.other_same_rho)
    right.set_xscale("log")
    right.set_xlabel(f"interval width / {c.baseline}")
    right.legend(fontsize=7)
    fig.suptitle(c.title, fontsize=10)
    fig.tight_layout()
    return fig
