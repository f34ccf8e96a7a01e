"""Coefficient plots: point estimates and intervals of one or more fits, one panel per term.

Each term gets its own panel; within a panel, each fit is one horizontal interval with its
point estimate. By default every panel shares one x-scale that includes zero, with a dashed
line at zero: a panel then shows how far its interval lies from zero and how wide it is
against the others' (each panel scaled to its own interval would make every panel look the
same). An intercept (near 5 where the slopes are near 0.07) would squash the rest, so
:meth:`Result.plot` leaves it out; ``sharex=False`` gives each term its own scale, still
including zero, and ``include_zero=False`` fits each scale to the intervals alone. The legend
says what each fit's interval covers: a private interval from the released iterates covers
the fit to *these* data (privacy noise only), a population interval the population
coefficient. The figure is built without ``pyplot`` (no global state).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import pandas as pd
from matplotlib.figure import Figure

from .results import Result

__all__ = ["COVERS", "coefficient_frame", "plot_coefficients", "plot_result"]

_COLUMNS = ("coef", "lower", "upper")
#: What a population interval covers (conf_int(target="population")).
POPULATION_COVERS = "the population coefficient (sampling + privacy error)"

#: What the intervals of each model's release cover (``frame.attrs["covers"]``).
COVERS = {
    "DP linear regression": "the least-squares fit to these data (privacy noise only)",
    "DP IV regression": "the 2SLS fit to these data (privacy noise only)",
}


def coefficient_frame(
    result: Result, alpha: float = 0.05, target: str | None = None
) -> pd.DataFrame:
    """``coef``, ``lower`` and ``upper`` of a :class:`Result`, indexed by term name.

    ``target`` defaults to the population when the fit released a population interval,
    else the sample fit (:meth:`Result.conf_int`). ``attrs["covers"]`` says what the
    interval covers, for the plot's legend.
    """
    if target is None:
        target = result.targets[0] if result.targets else "population"
    frame = pd.concat([result.params, result.conf_int(alpha, target=target)], axis=1)
    frame.attrs["covers"] = (
        POPULATION_COVERS
        if target == "population"
        else COVERS.get(result.model, "the fit to these data")
    )
    return frame


def _legend_label(label: str, frame: pd.DataFrame, covers: Mapping[str, str], level: str) -> str:
    text = covers.get(label, frame.attrs.get("covers"))
    return f"{label}\n{level} interval covers {text}" if text else f"{label} ({level} interval)"


def plot_coefficients(
    fits: Mapping[str, pd.DataFrame],
    *,
    terms: Sequence[str] | None = None,
    title: str = "",
    level: str = "95%",
    sharex: bool = True,
    covers: Mapping[str, str] | None = None,
    include_zero: bool = True,
) -> Figure:
    """One panel per term, one interval per fit, a zero line and a legend of what is covered.

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
        Interval level, for the axis label and the legend.
    sharex : bool, default=True
        One x-scale for every panel (compare magnitudes); False gives each term its own.
    covers : mapping of str to str, optional
        Label -> what that fit's interval covers, for the legend (default: the frame's
        ``attrs["covers"]``, which :func:`coefficient_frame` sets).
    include_zero : bool, default=True
        Extend every x-scale to zero and draw the dashed zero line in every panel; False
        draws it only where zero already lies in a panel's range.

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
    covers = {} if covers is None else dict(covers)
    labels = list(fits)
    first = fits[labels[0]]
    terms = list(first.index) if terms is None else list(terms)
    legend_height = 0.1 + 0.4 * len(labels)  # inches: two lines per fit
    fig = Figure(figsize=(7.5, 0.9 + legend_height + 0.75 * len(terms) * max(1, len(labels) / 2)))
    axes = fig.subplots(len(terms), 1, squeeze=False, sharex=sharex)[:, 0]
    colours = [f"C{i}" for i in range(len(labels))]
    for ax, term in zip(axes, terms, strict=True):
        for row, (label, colour) in enumerate(zip(labels, colours, strict=True)):
            frame = fits[label]
            if term not in frame.index:
                continue
            coef, lower, upper = (float(frame.loc[term, c]) for c in _COLUMNS)
            y = len(labels) - 1 - row
            ax.hlines(y, lower, upper, colors=colour, linewidth=3)
            ax.plot(
                [coef],
                [y],
                "o",
                color=colour,
                markersize=6,
                label=_legend_label(label, frame, covers, level),
            )
        ax.set_yticks([])
        ax.set_ylim(-0.7, len(labels) - 0.3)
        ax.set_ylabel(term, rotation=0, ha="right", va="center")
        ax.grid(axis="x", alpha=0.3)
        ax.tick_params(axis="x", labelsize=8)
    for ax in axes:  # after all panels are drawn, so shared limits are final
        low, high = ax.get_xlim()
        if include_zero and not low <= 0.0 <= high:
            low, high = min(low, 0.0), max(high, 0.0)
            pad = 0.05 * (high - low)
            low, high = low - pad, high + pad
        if low <= 0.0 <= high:
            ax.axvline(0.0, color="0.35", linewidth=0.9, linestyle="--", zorder=0)
            ax.set_xlim(low, high)
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(
        handles, names, loc="upper left", fontsize=7.5, frameon=False, bbox_to_anchor=(0.01, 0.995)
    )
    scale = "one scale for all terms" if sharex else "each term on its own scale"
    axes[-1].set_xlabel(f"coefficient, {level} interval ({scale}; dashed: 0)", fontsize=9)
    if title:
        fig.suptitle(title, y=0.02, va="bottom", fontsize=9)
    fig.tight_layout(rect=(0, 0.04 if title else 0, 1, 1 - legend_height / fig.get_figheight()))
    return fig


def plot_result(
    result: Result,
    alpha: float = 0.05,
    *,
    target: str | None = None,
    terms: Sequence[str] | None = None,
    sharex: bool = True,
    title: str | None = None,
) -> Figure:
    """:meth:`Result.plot`: the release's coefficients and 1 - alpha intervals for ``target``
    (:func:`coefficient_frame`), one panel per term, one shared scale with zero marked.

    ``terms`` defaults to every term but the intercept (its scale would squash the slopes);
    ``sharex=False`` gives each term its own scale (zero still shown).
    """
    from .._validation import check_interval_alpha

    if isinstance(alpha, str | os.PathLike):
        raise TypeError(
            f"plot() takes alpha first, not a file name ({str(alpha)!r}); it returns a "
            f"matplotlib Figure: to save it, use res.plot().savefig({str(alpha)!r})"
        )
    alpha = check_interval_alpha(alpha)
    if terms is None:
        terms = [t for t in result.names if t != "Intercept"] or list(result.names)
    return plot_coefficients(
        {f"{result.method}, rho = {result.rho:g}": coefficient_frame(result, alpha, target)},
        terms=terms,
        title=f"{result.response}, n = {result.n}" if title is None else title,
        level=f"{100 * (1 - alpha):g}%",
        sharex=sharex,
    )
