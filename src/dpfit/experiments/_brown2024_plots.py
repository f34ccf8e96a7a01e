"""Figures of the Brown et al. (2024) reproductions, in the style of the paper."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ._brown2024_claims import coverage_table
from ._brown2024_clipping import bias_variance_table

__all__: list[str] = []

_CI_LABELS = {"bm": "batched means", "cp": "checkpoints", "ir": "independent runs"}


def _figure(ncols: int = 1, width: float = 5.0):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, ncols, figsize=(width * ncols, 3.8), squeeze=False)
    return fig, axes[0]


def error_vs_dimension(results: pd.DataFrame) -> list:
    """Figs. 1/9: mean l2 error against theta* vs p at n = 100 p."""
    fig, (ax,) = _figure()
    labels = {
        "err_dpgd": "DP-GD",
        "err_ols": "OLS",
        "err_adassp": "AdaSSP (paper: data bounds, not private)",
        "err_adassp_public": "AdaSSP (public bounds)",
    }
    means = results.groupby("p")[list(labels)].agg(["mean", "sem"])
    for col, label in labels.items():
        ax.errorbar(
            means.index,
            means[col]["mean"],
            yerr=2 * means[col]["sem"],
            marker="o",
            label=label,
            capsize=2,
        )
    ax.set(xscale="log", xlabel="dimension p (n = 100 p)", ylabel="||estimate - θ*||")
    ax.legend(fontsize="small")
    fig.tight_layout()
    return [fig]


def cost_of_privacy(results: pd.DataFrame) -> list:
    """Figs. 2/8: privacy and sampling error vs n with the fitted a/n + b and a/sqrt(n) + b,
    one panel per p; privacy error at each clip multiplier (text 5 sqrt(p), code 3 sqrt(p))."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    if "clip_mult" not in results:
        results = results.assign(clip_mult=5.0)
    groups = list(results.groupby("p"))
    fig, axes = _figure(len(groups))
    for ax, (p, group) in zip(axes, groups, strict=True):
        curves = [
            (f"privacy error, clip {c:g}√p", 1.0, g.groupby("n")["privacy_error"].mean())
            for c, g in group.groupby("clip_mult")
        ]
        curves.append(
            ("sampling error ||θ̂ - θ*||", 0.5, group.groupby("n")["sampling_error"].mean())
        )
        for label, power, means in curves:
            n = means.index.to_numpy(dtype=float)
            grid = np.linspace(n.min(), n.max(), 200)
            A = np.column_stack([n**-power, np.ones_like(n)])
            a, b = np.linalg.lstsq(A, means.to_numpy(), rcond=None)[0]
            (line,) = ax.plot(n, means, "o", ms=3, label=label)
            ax.plot(grid, a * grid**-power + b, "--", color=line.get_color(), lw=1)
        ax.xaxis.set_major_locator(MaxNLocator(5))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 1000:g}k"))
        ax.set(xlabel="n", ylabel="mean l2 error", title=f"p = {p}")
        ax.legend(fontsize="small")
    fig.tight_layout()
    return [fig]


def clipping_heatmap(results: pd.DataFrame) -> list:
    """Fig. 3: fraction of gradients clipped over (p, clip), with a 2 sqrt(p) guide."""
    table = results.pivot_table(index="clip", columns="p", values="fraction_clipped")
    fig, (ax,) = _figure(width=6.0)
    image = ax.pcolormesh(
        table.columns, table.index, table.to_numpy(), shading="nearest", cmap="viridis"
    )
    fig.colorbar(image, ax=ax, label="fraction clipped")
    ps = np.asarray(table.columns, dtype=float)
    ax.plot(ps, 2 * np.sqrt(ps), "w--", label="2 √p")
    ax.set(xlabel="dimension p (n = 100 p)", ylabel="clip γ")
    ax.legend(loc="upper left", fontsize="small")
    fig.tight_layout()
    return [fig]


def bias_variance(results: pd.DataFrame) -> list:
    """Fig. 4: MSE, squared bias and variance vs clip, labelled with the % clipped."""
    table = bias_variance_table(results)
    fig, (ax,) = _figure()
    for col, label in [("mse", "error"), ("bias2", "bias²"), ("variance", "variance")]:
        ax.plot(table["clip"], table[col], "o-", label=label)
    for _, row in table.iterrows():
        ax.annotate(
            f"{100 * row['fraction_clipped']:.0f}%",
            (row["clip"], row["mse"]),
            textcoords="offset points",
            xytext=(0, 6),
            fontsize=7,
            ha="center",
        )
    ax.set(xscale="log", yscale="log", xlabel="clip γ", ylabel="E||θ_T - θ̂||² and parts")
    ax.legend(fontsize="small")
    fig.tight_layout()
    return [fig]


def error_vs_clipped(results: pd.DataFrame) -> list:
    """Fig. 7: mean error vs fraction clipped, one curve per number of iterations."""
    table = bias_variance_table(results)
    fig, (ax,) = _figure()
    for steps, t in table.groupby("steps"):
        ax.plot(t["fraction_clipped"], t["error"], "o-", label=f"T = {steps}")
    ax.set(yscale="log", xlabel="fraction of gradients clipped", ylabel="mean ||θ_T - θ̂||")
    ax.legend(fontsize="small")
    fig.tight_layout()
    return [fig]


def _ci_panel(ax, results: pd.DataFrame, kind: str) -> None:
    for k, (prefix, label) in enumerate(_CI_LABELS.items()):
        table = coverage_table(results, prefix, kind).dropna()
        x = table.index.to_numpy(dtype=float) * 1.04**k  # dodge on the log axis
        err = np.vstack([table["mean"] - table["low"], table["high"] - table["mean"]])
        ax.errorbar(x, table["mean"], yerr=err, marker="o", capsize=2, label=label)
    ax.set(xscale="log", xlabel="total gradient iterations")


def intervals(results: pd.DataFrame) -> list:
    """Figs. 5/6 (10/11): coverage of theta_hat and mean length vs total iterations."""
    fig, (cov, length) = _figure(2)
    _ci_panel(cov, results, "cover")
    cov.axhline(0.95, color="k", ls="--", lw=1)
    cov.set(ylabel="coverage of θ̂ (mean over coordinates)", ylim=(0.5, 1.01))
    cov.legend(fontsize="small")
    _ci_panel(length, results, "len")
    length.axhline(results["ols_len"].mean(), color="k", ls="--", lw=1, label="OLS (θ*)")
    length.set(yscale="log", ylabel="mean interval length")
    length.legend(fontsize="small")
    fig.tight_layout()
    return [fig]
