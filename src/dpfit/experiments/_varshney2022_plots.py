"""Figures of the DP-AMBSSGD experiments, one per prediction (docs/varshney2022.md)."""

from __future__ import annotations

import pandas as pd

from ..theory.ambssgd import noise_multiplier_for_epsilon
from ._varshney2022_claims import (
    BASELINES,
    P1_BAND,
    P5_MIN_N,
    P45_BASELINES,
    medians,
    sample_complexity,
)
from ._varshney2022_trials import DELTA

__all__ = ["p1_plot", "p2_plot", "p3_plot", "p4_plot", "p5_plot", "p7_plot"]


def _figure() -> tuple:
    """A new figure and axes at the size every figure of these experiments uses."""
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(5.5, 3.8))


def _log_log(fig, ax, *, legend: dict | None = None, **labels: str) -> list:
    """Finish a figure: both axes logarithmic, ``labels`` (xlabel, ylabel, title), a legend.

    ``legend`` holds :meth:`matplotlib.axes.Axes.legend`'s options (default: small print).
    """
    ax.set(xscale="log", yscale="log", **labels)
    ax.legend(**(legend or {"fontsize": "x-small"}))
    fig.tight_layout()
    return [fig]


def p1_plot(results: pd.DataFrame) -> list:
    cells = medians(
        results.assign(
            dp=results["excess_practical"] / results["rate"],
            np_=results["excess_nonprivate"] / results["rate"],
        ),
        ["d", "n"],
        ["dp", "np_"],
    )
    fig, ax = _figure()
    for d, g in cells.groupby("d"):
        ax.plot(g["n"], g["dp"], "o-", label=f"DP-AMBSSGD practical, d={d}")
        ax.plot(g["n"], g["np_"], "x--", label=f"non-private SGD, d={d}")
    ax.axhspan(*P1_BAND, color="0.9", label="P1 band")
    return _log_log(
        fig,
        ax,
        xlabel="N",
        ylabel="excess / (σ² d / N)",
        title="P1: near-non-private regime (ε = 8)",
    )


def p2_plot(results: pd.DataFrame) -> list:
    alpha = results["epsilon"].map(lambda e: noise_multiplier_for_epsilon(e, DELTA))
    data = results.assign(
        x=alpha**2 * results["d"] / results["n"], ratio=results["excess_paper"] / results["rate"]
    )
    cells = medians(data, ["d", "n", "epsilon"], ["x", "ratio"])
    fig, ax = _figure()
    for (d, eps), g in cells.groupby(["d", "epsilon"]):
        ax.plot(g["x"], g["ratio"], "o-", label=f"d={d}, ε={eps:g}")
    return _log_log(
        fig,
        ax,
        legend={"fontsize": "x-small", "ncol": 2},
        xlabel="α² d / N",
        ylabel="excess / (σ² d / N)",
        title="P2: data collapse (paper variant)",
    )


def p3_plot(results: pd.DataFrame) -> list:
    methods = ["paper", "practical", "nonprivate", *BASELINES]
    cells = medians(results, ["sigma"], [f"excess_{m}" for m in methods])
    cells["sigma"] = cells["sigma"].where(cells["sigma"] > 0, 1e-4)  # sigma = 0 drawn at 1e-4
    fig, ax = _figure()
    for m in methods:
        ax.plot(cells["sigma"], cells[f"excess_{m}"], "o-", label=m)
    return _log_log(
        fig,
        ax,
        xlabel="σ (σ = 0 plotted at 1e-4)",
        ylabel="excess risk",
        title="P3: adaptivity in σ",
    )


def p7_plot(results: pd.DataFrame) -> list:
    fig, ax = _figure()
    for k, (col, label) in enumerate(
        [("excess_paper", "margin θ = s − Γ'"), ("excess_literal", "literal θ = s")]
    ):
        ax.plot(results["n"] * (1.08 if k else 0.93), results[col], "o", alpha=0.6, label=label)
    return _log_log(
        fig,
        ax,
        legend={"fontsize": "small"},
        xlabel="N",
        ylabel="excess risk (each replicate)",
        title="P7: DP-STAT threshold",
    )


def p4_plot(results: pd.DataFrame) -> list:
    cols = {"privacy_excess_paper": "DP-AMBSSGD privacy error"}
    cols.update({f"excess_{b}": b for b in P45_BASELINES})
    cells = medians(results, ["d"], list(cols))
    fig, ax = _figure()
    for col, label in cols.items():
        ax.plot(cells["d"], cells[col], "o-", label=label)
    return _log_log(fig, ax, xlabel="d", ylabel="median excess", title="P4 (ε = 0.5)")


def p5_plot(results: pd.DataFrame) -> list:
    fig, ax = _figure()
    for method in ("practical", *P45_BASELINES):
        star = sample_complexity(results, method).dropna()
        if len(star):
            ax.plot(star.index, star.to_numpy(), "o-", label=method)
    if not ax.lines:
        ax.text(0.5, 0.5, "no N*: no privacy error falls in N", ha="center", va="center")
    else:
        for n in (max(results["n"].min(), P5_MIN_N), results["n"].max()):  # fitted N range
            ax.axhline(n, color="grey", lw=0.8, ls=":")
        ax.set(xscale="log", yscale="log")
        ax.legend(fontsize="x-small")
    ax.set(xlabel="d", ylabel="N*(d) (dotted: fitted N range)", title="P5: sample complexity")
    fig.tight_layout()
    return [fig]
