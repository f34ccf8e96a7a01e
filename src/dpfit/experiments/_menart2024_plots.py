"""Plot of the Menart et al. (2024) benchmarks: error against the swept quantity, log-log."""

from __future__ import annotations

import pandas as pd

__all__ = ["plot"]


def plot(results: pd.DataFrame) -> list:
    """One panel per sweep: median excess (solid) and the method's bound (dashed), log-log."""
    import matplotlib.pyplot as plt

    sweeps = list(dict.fromkeys(results["sweep"]))
    fig, axes = plt.subplots(1, len(sweeps), figsize=(4.2 * len(sweeps), 3.6), squeeze=False)
    for ax, sweep in zip(axes[0], sweeps, strict=True):
        rows = results[results["sweep"] == sweep]
        x = "extra" if sweep == "lam" else sweep.split("-")[0]  # "rho-p3": a rho sweep
        for method, group in rows.groupby("method", sort=False):
            med = group.groupby(x)[["excess", "bound"]].median().sort_index()
            (line,) = ax.plot(med.index, med["excess"], "o-", label=method)
            if med["bound"].notna().any():
                ax.plot(med.index, med["bound"], "--", color=line.get_color(), lw=0.8)
        ylabel = "gradient norm" if rows["bench"].iloc[0] == "b7" else "excess risk"
        ax.set(xscale="log", yscale="log", xlabel=sweep, ylabel=ylabel)
        ax.set_title(f"sweep over {sweep} (dashed: bound)", fontsize="small")
        ax.legend(fontsize="x-small")
    fig.tight_layout()
    return [fig]
