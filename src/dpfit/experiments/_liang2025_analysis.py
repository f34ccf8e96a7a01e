"""Tables, claim checks and plots shared by the Liang et al. (2025) experiments."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ._stats import Estimate
from .registry import ClaimResult

__all__: list[str] = []


def scales(smoke, quick, paper) -> dict:
    """A per-scale mapping (grid or replicates)."""
    return {"smoke": smoke, "quick": quick, "paper": paper}


def mean_se(results: pd.DataFrame, by: Sequence[str], value: str) -> pd.DataFrame:
    """Mean and standard error of ``value`` per group (the paper's error bars)."""
    g = results.groupby(list(by), as_index=False)[value]
    out = g.mean().rename(columns={value: "mean"})
    out["se"] = g.std(ddof=1)[value].to_numpy() / np.sqrt(g.count()[value].to_numpy())
    return out


def _where(results: pd.DataFrame, where) -> pd.DataFrame:
    rows = results
    for key, val in where.items():
        rows = (
            rows[np.isclose(rows[key].astype(float), val)]
            if isinstance(val, float)
            else rows[rows[key] == val]
        )
    return rows


def curve(results: pd.DataFrame, x: str, value: str, **where) -> pd.Series:
    """Mean of ``value`` against ``x`` on the rows matching ``where`` (sorted by x)."""
    return _where(results, where).groupby(x)[value].mean().sort_index()


def curve_se(results: pd.DataFrame, x: str, value: str, **where) -> pd.Series:
    """Standard error of the mean of ``value`` against ``x`` (the paper's error bars)."""
    g = _where(results, where).groupby(x)[value]
    return (g.std(ddof=1) / np.sqrt(g.count())).sort_index()


def verdict(checks: dict[str, bool], numbers: dict[str, float], detail: str = "") -> ClaimResult:
    """A ClaimResult that passes when every named check does; failed checks go in ``detail``."""
    failed = [name for name, ok in checks.items() if not ok]
    text = detail + (f" Failed: {', '.join(failed)}." if failed else "")
    return ClaimResult(passed=not failed, numbers=numbers, detail=text.strip())


def ratio(series: pd.Series, se: pd.Series, top, bottom) -> Estimate:
    """log(series[top] / series[bottom]) with its delta-method s.e. (independent points)."""
    return Estimate(
        float(np.log(series[top] / series[bottom])),
        float(np.hypot(se[top] / series[top], se[bottom] / series[bottom])),
    )


def u_shape(
    series: pd.Series, factor: float, se: pd.Series | None = None
) -> tuple[bool, dict[str, float]]:
    """Interior minimum with both ends at least ``factor`` times the minimum; with ``se``,
    each end's log ratio to the minimum exceeds log(factor) by 3 Monte Carlo s.e."""
    values = series.to_numpy()
    k = int(np.argmin(values))
    lo, first, last = series.index[k], series.index[0], series.index[-1]
    if se is None:
        se = pd.Series(0.0, index=series.index)
    ends = [ratio(series, se, end, lo) for end in (first, last)]
    ok = 0 < k < len(values) - 1 and all(e.above(np.log(factor)) for e in ends)
    return bool(ok), {
        "argmin": float(lo),
        "min": float(values[k]),
        "first": float(values[0]),
        "last": float(values[-1]),
    }


def line_plot(
    results: pd.DataFrame,
    *,
    x: str,
    value: str,
    series: Sequence[str],
    title: str,
    logx: bool = True,
    logy: bool = True,
    ax=None,
    reference: str | None = None,
):
    """Mean +/- SE of ``value`` against ``x``, one line per ``series`` combination."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(5.0, 3.6))
    table = mean_se(results, [*series, x], value)
    for key, group in table.groupby(list(series)):
        key = key if isinstance(key, tuple) else (key,)
        label = ", ".join(
            f"{s}={k:g}" if isinstance(k, float) else f"{s}={k}"
            for s, k in zip(series, key, strict=True)
        )
        ax.errorbar(group[x], group["mean"], yerr=group["se"], marker="o", ms=3, label=label)
    if reference is not None:
        ref = results.groupby(x)[reference].mean()
        ax.plot(ref.index, ref.to_numpy(), "k--", lw=1, label=reference)
    ax.set(
        xscale="log" if logx else "linear",
        yscale="log" if logy else "linear",
        xlabel=x,
        ylabel=value,
        title=title,
    )
    ax.legend(fontsize="x-small")
    return ax


def paths_plot(results: pd.DataFrame, *, steps: int, title: str) -> list:
    """Fig. 5 / 13 panels: boxplot of beta^(T) per rho, and the mean +/- SE path of beta^(t)."""
    import matplotlib.pyplot as plt

    rhos = sorted(results["rho"].unique())
    fig, axes = plt.subplots(2, len(rhos), figsize=(3.4 * len(rhos), 6.0), squeeze=False)
    cols = [f"beta_{t}" for t in range(1, steps + 1)]
    for j, rho in enumerate(rhos):
        rows = results[results["rho"] == rho]
        axes[0, j].boxplot(rows["beta_T"].to_numpy())
        axes[0, j].axhline(float(rows["beta_2sls"].iloc[0]), color="r", ls="--", lw=1)
        axes[0, j].set(title=f"{title}, rho1 = rho2 = {rho:g}", ylabel="beta^(T)")
        mean = rows[cols].mean().to_numpy()
        se = rows[cols].std(ddof=1).to_numpy() / np.sqrt(len(rows))
        t = np.arange(1, steps + 1)
        axes[1, j].plot(t, mean)
        axes[1, j].fill_between(t, mean - se, mean + se, alpha=0.3)
        axes[1, j].axhline(float(rows["beta_2sls"].iloc[0]), color="r", ls="--", lw=1)
        axes[1, j].set(xlabel="iteration t", ylabel="mean beta^(t)")
    fig.tight_layout()
    return [fig]
