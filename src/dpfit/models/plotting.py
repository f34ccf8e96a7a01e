"""Coefficient plots: point estimates and intervals of one or more fits, one panel per term.

Coefficients of a regression live on very different scales (an intercept near 5, a slope near
0.07), so each term gets its own panel and x-axis; within a panel, each fit is one horizontal
interval with its point estimate. The figure is built without ``pyplot`` (no global state).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd
from matplotlib.figure import Figure

from .results import Result

__all__ = ["coefficient_frame", "plot_coefficients"]

_COLUMNS = ("coef", "lower", "upper")


def coefficient_frame(
    result: Result, alpha: float = 0.05, target: str | None = None
) -> pd.DataFrame:
    """``coef``, ``lower`` and ``upper`` of a :class:`Result`, indexed by term name.

    ``target`` defaults to the population when the fit released a population interval,
    else the sample minimiser (:meth:`Result.conf_int`).
    """
    if target is None:
        target = result.targets[0] if result.targets else "population"
    return pd.concat([result.params, result.conf_int(alpha, target=target)], axis=1)


def plot_coefficients(
    fits: Mapping[str, pd.DataFrame],
    *,
    terms: Sequence[str] | None = None,
    title: str = "",
    level: str = "95%",
) -> Figure:
    """One panel per term, one interval per fit.

    Parameters
    ----------
    fits : mapping of str to pandas.DataFrame
        Label (e.g. ``"DP-GD, rho = 0.25"``) -> frame with columns ``coef``, ``lower`` and
        ``upper`` indexed by term (see :func:`coefficient_frame`). The first fit's terms set
        the order.
    terms : sequence of str, optional
        Terms to show (default: all terms of the first fit).
    title : str, default=""
        Figure title.
    level : str, default="95%"
        Interval level, for the axis label.

    Returns
    -------
    matplotlib.figure.Figure
    """
    if not fits:
        raise ValueError("fits must contain at least one fit")
    for label, frame in fits.items():
        missing = [c for c in _COLUMNS if c not in frame.columns]
        if missing:
            raise ValueError(f"fit {label!r} lacks columns {missing}")
    labels = list(fits)
    first = fits[labels[0]]
    terms = list(first.index) if terms is None else list(terms)
    fig = Figure(figsize=(7.5, 0.9 + 0.75 * len(terms) * max(1, len(labels) / 2)))
    axes = fig.subplots(len(terms), 1, squeeze=False)[:, 0]
    colours = [f"C{i}" for i in range(len(labels))]
    for ax, term in zip(axes, terms, strict=True):
        for row, (label, colour) in enumerate(zip(labels, colours, strict=True)):
            frame = fits[label]
            if term not in frame.index:
                continue
            coef, lower, upper = (float(frame.loc[term, c]) for c in _COLUMNS)
            y = len(labels) - 1 - row
            ax.hlines(y, lower, upper, colors=colour, linewidth=3)
            ax.plot([coef], [y], "o", color=colour, markersize=6, label=label)
        ax.set_yticks([])
        ax.set_ylim(-0.7, len(labels) - 0.3)
        ax.set_ylabel(term, rotation=0, ha="right", va="center")
        ax.grid(axis="x", alpha=0.3)
        ax.tick_params(axis="x", labelsize=8)
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(
        handles,
        names,
        loc="upper center",
        ncol=min(len(labels), 2),
        fontsize=8,
        frameon=False,
        bbox_to_anchor=(0.5, 0.995),
    )
    axes[-1].set_xlabel(f"coefficient and {level} interval (each term on its own scale)")
    if title:
        fig.suptitle(title, y=0.02, va="bottom", fontsize=9)
    fig.tight_layout(rect=(0, 0.04 if title else 0, 1, 1 - 0.3 / fig.get_figheight()))
    return fig
