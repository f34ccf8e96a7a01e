"""Figures of the ``glm-coverage`` and ``glm-bootstrap`` studies: coverage and width per cell."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FormatStrFormatter, NullFormatter

from ._silent_coverage import BAND

__all__ = ["bootstrap_figure", "coverage_figure"]


def _labels(table: pd.DataFrame) -> list[str]:
    return [f"{r.design}, n={int(r.n)}, rho={r.rho:g}" for r in table.itertuples()]


def _axes(table: pd.DataFrame, title: str) -> tuple[Figure, object, object, np.ndarray]:
    fig = Figure(figsize=(10, max(3.0, 1.4 + 0.28 * len(table))), layout="constrained")
    left, right = fig.subplots(1, 2, sharey=True)
    y = np.arange(len(table))[::-1]
    left.axvspan(*BAND, color="0.9", label=f"target band [{BAND[0]}, {BAND[1]}]")
    left.axvline(0.95, color="0.5", lw=0.8)
    left.set_yticks(y, _labels(table), fontsize=7)
    left.set_xlabel("coverage of theta* (nominal 0.95), +/- 2 MC s.e.")
    right.axvline(1.0, color="0.5", lw=0.8)
    right.set_xscale("log")
    right.xaxis.set_major_locator(FixedLocator([1, 1.25, 1.5, 2, 3, 5, 8, 12]))
    right.xaxis.set_major_formatter(FormatStrFormatter("%g"))
    right.xaxis.set_minor_formatter(NullFormatter())
    right.set_xlabel("median width / non-private HC0 width (log scale)")
    fig.suptitle(title, fontsize=10)
    return fig, left, right, y


def coverage_figure(table: pd.DataFrame) -> Figure:
    """The ``glm-coverage`` cell table (:func:`~dpfit.experiments.glm_coverage.cell_table`):
    left, coverage of the silent fits with +/- 2 MC s.e. (all fits as crosses; cells that warn
    in more than half their fits circled); right, median width over HC0."""
    fig, left, right, y = _axes(table, "Private GLM: coverage of the population coefficient")
    silent = table["silent_coverage"].to_numpy(dtype=float)
    left.errorbar(silent, y, xerr=2 * table["mc_se"], fmt="o", color="C0",
                  label="fits without a warning")  # fmt: skip
    left.plot(table["coverage"], y, "x", color="C1", label="all fits")
    warned = table["warned"].to_numpy() > 0.5
    left.plot(table["coverage"][warned], y[warned], "s", mfc="none", color="C3", ms=10,
              label="warns in most fits")  # fmt: skip
    left.legend(fontsize=7, loc="lower left")
    right.plot(table["width_hc0"], y, "o", color="C0")
    return fig


def bootstrap_figure(table: pd.DataFrame) -> Figure:
    """The ``glm-bootstrap`` comparison table
    (:func:`~dpfit.experiments.glm_bootstrap.comparison_table`): coverage with +/- 2 MC s.e.
    and median width over HC0 of the sandwich (the default) and the bootstrap."""
    fig, left, right, y = _axes(table, "Sandwich (default) against parametric bootstrap")
    for offset, method, color in ((0.12, "sandwich", "C0"), (-0.12, "bootstrap", "C2")):
        left.errorbar(table[f"{method}_coverage"], y + offset, xerr=2 * table[f"{method}_mc_se"],
                      fmt="o", color=color, label=method)  # fmt: skip
        right.plot(table[f"{method}_width"], y + offset, "o", color=color, label=method)
    left.legend(fontsize=7, loc="lower left")
    return fig
