"""Plots of the Choquette-Choo et al. (2024) reproductions, in the style of the paper's figures."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..theory.ftrl import figure1_ratio

__all__: list[str] = []


def _figure(ncols: int):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(4.2 * ncols, 3.4), layout="constrained")
    return fig, fig.subplots(1, ncols, squeeze=False)[0]


def fig1(results: pd.DataFrame) -> list:
    """Left: exact ratio beta*/DP-SGD vs eta with simulated points; right: variances."""
    fig, (ax, ax2) = _figure(2)
    eta = np.concatenate([np.logspace(-4, -0.01, 200), np.linspace(1.0, 1.99, 60)])
    ax.plot(eta, [figure1_ratio(e) for e in eta], label="exact (eq. 18)")
    sim = results.groupby(["eta", "mechanism"])["simulated"].mean().unstack()
    ax.plot(sim.index, sim["optimal"] / sim["dp-sgd"], "o", label="simulation")
    ax.set(xscale="log", xlabel="learning rate eta", ylabel="DP-FTRL* / DP-SGD variance")
    ax.legend()
    for mech, grp in results.groupby("mechanism"):
        g = grp.groupby("eta")[["simulated", "theory"]].mean()
        ax2.plot(g.index, g["theory"], "-", label=f"{mech} closed form")
        ax2.plot(g.index, g["simulated"], "o", label=f"{mech} simulated")
    ax2.set(xscale="log", yscale="log", xlabel="eta", ylabel="stationary E[delta^2]")
    ax2.legend(fontsize=7)
    return [fig]


def fig2(results: pd.DataFrame) -> list:
    """Stationary excess risk vs d, d_eff and eta: LTI formula lines, simulated means as points."""
    from matplotlib.ticker import NullFormatter

    fig, axes = _figure(3)
    markers = {"lti_simulated": ("x", "LTI sim"), "random_simulated": ("o", "random-design sim")}
    for ax, sweep in zip(axes, ("d", "alpha", "eta"), strict=True):
        rows = results[results["sweep"] == sweep]
        for mech, grp in rows.groupby("mechanism"):
            form = grp[grp["kind"] == "formula"].groupby(sweep)[["lti_formula", "d_eff"]].mean()
            x = form["d_eff"] if sweep == "alpha" else form.index
            (line,) = ax.plot(x, form["lti_formula"], "-", label=f"{mech} (LTI formula)")
            sims = grp[grp["kind"] == "sim"]
            if sims.empty:
                continue
            g = sims.groupby(sweep)[["d_eff", *markers]].mean()
            x = g["d_eff"] if sweep == "alpha" else g.index
            for column, (marker, what) in markers.items():
                ax.plot(
                    x,
                    g[column],
                    marker,
                    ms=4,
                    mfc="none",
                    color=line.get_color(),
                    ls="none",
                    label=f"{mech} ({what})",
                )
        ax.set(xscale="log", yscale="log", xlabel="d_eff" if sweep == "alpha" else sweep)
        ax.xaxis.set_minor_formatter(NullFormatter())  # labelled minor ticks overlap
    axes[0].set_ylabel("stationary excess risk")
    axes[0].legend(fontsize=7)
    return [fig]


def fig4(results: pd.DataFrame) -> list:
    """Metric vs learning rate per mechanism, one panel per epsilon."""
    metric = "accuracy" if "accuracy" in results else "excess_risk"
    eps_values = sorted(results["epsilon"].unique())
    fig, axes = _figure(len(eps_values))
    for ax, eps in zip(axes, eps_values, strict=True):
        rows = results[results["epsilon"] == eps]
        for mech, grp in rows.groupby("mechanism"):
            g = grp.groupby("lr")[metric].mean()
            ax.plot(g.index, g.to_numpy(), "-o", ms=3, label=mech)
        ax.set(xscale="log", xlabel="learning rate", title=f"epsilon = {eps:g}")
        if metric == "excess_risk":
            ax.set_yscale("log")
    axes[0].set_ylabel(metric)
    axes[0].legend()
    return [fig]
