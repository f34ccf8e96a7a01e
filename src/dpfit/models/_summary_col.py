"""Several private fits side by side: ``dpfit.summary_col([res1, res2], model_names=[...])``.

After statsmodels' ``summary_col`` (``statsmodels.iolib.summary2``): one column per fit, one
row per term with the coefficient and, below it, its standard error in parentheses (or its
interval), and at the bottom each fit's public n, rho and method. Every entry is a release
or a public input of the fits, so the table costs no privacy; its notes say that the fits'
rho add up when they used the same data (zCDP composition, Bun and Steinke 2016, Lemma 2.3).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import pandas as pd

from .._validation import check_interval_alpha, check_option, shown
from ._hypothesis import two_sided_pvalues
from .results import Result
from .summary import Summary, format_number

__all__ = ["summary_col"]

_BELOW = ("se", "ci")


def _stars(pvalue: float) -> str:
    return "***" if pvalue < 0.01 else "**" if pvalue < 0.05 else "*" if pvalue < 0.1 else ""


def _cells(result: Result, alpha: float, target: str, below: str, stars: bool) -> dict:
    cov = result.covariance(target)
    pvalues = two_sided_pvalues(result.estimate / cov.bse, cov.dof)
    ci = result.conf_int(alpha, target=target).to_numpy()
    cells = {}
    for j, term in enumerate(result.names):
        mark = _stars(float(pvalues[j])) if stars else ""
        second = (
            f"({format_number(cov.bse[j])})"
            if below == "se"
            else f"[{format_number(ci[j, 0])}, {format_number(ci[j, 1])}]"
        )
        cells[term] = (format_number(result.estimate[j]) + mark, second)
    return cells


def summary_col(
    results: Sequence[Result],
    *,
    model_names: Sequence[str] | None = None,
    alpha: float = 0.05,
    target: str = "population",
    below: str = "se",
    stars: bool = False,
    regressor_order: Sequence[str] = (),
    delta: float | None = None,
) -> Summary:
    """A table of several fits, one column each (statsmodels' ``summary_col``).

    Parameters
    ----------
    results : sequence of Result
        Fits from :func:`dpfit.ols`, :func:`dpfit.iv` or an estimator's ``result_``.
    model_names : sequence of str, optional
        Column titles (default "(1)", "(2)", ...).
    alpha : float, default=0.05
        Level 1 - alpha of the intervals (``below="ci"``) and of nothing else.
    target : {"population", "sample"}, default="population"
        What the standard errors cover; every fit must have released it.
    below : {"se", "ci"}, default="se"
        Under each coefficient: its standard error in parentheses, or its interval.
    stars : bool, default=False
        Mark p < 0.1, 0.05, 0.01 with *, **, ***.
    regressor_order : sequence of str, default=()
        Terms listed first, in this order; the others follow in order of appearance.
    delta : float, optional
        delta of the epsilon row (default: each fit's own :attr:`Result.default_delta`).

    Returns
    -------
    Summary
        ``as_text()``, ``as_html()``, ``as_latex()``.
    """
    if isinstance(results, Result):
        raise TypeError(
            "summary_col takes a list of results, got one Result: write summary_col([res]) "
            "(or summary_col([res1, res2]) for several columns)"
        )
    if not isinstance(results, Iterable) or isinstance(results, str):
        raise TypeError(f"results must be a list of dpfit Result objects, got {shown(results)}")
    results = list(results)
    if not results or not all(isinstance(r, Result) for r in results):
        raise TypeError("results must be a non-empty sequence of dpfit Result objects")
    alpha = check_interval_alpha(alpha)
    target = check_option(target, "target", ("population", "sample"))
    below = check_option(below, "below", _BELOW)
    names = [f"({i})" for i in range(1, len(results) + 1)]
    if model_names is not None:
        names = [str(n) for n in model_names]
        if len(names) != len(results) or len(set(names)) != len(names):
            raise ValueError(f"model_names must be {len(results)} distinct names, got {names}")
    cells = [_cells(r, alpha, target, below, stars) for r in results]
    seen = list(dict.fromkeys(t for r in results for t in r.names))
    unknown = [t for t in regressor_order if t not in seen]
    if unknown:
        raise ValueError(f"regressor_order names terms no fit has: {unknown}")
    terms = [*regressor_order, *(t for t in seen if t not in regressor_order)]
    rows, index = [], []
    for term in terms:
        pair = [c.get(term, ("", "")) for c in cells]
        rows += [[p[0] for p in pair], [p[1] for p in pair]]
        index += [term, ""]
    info = {
        "Dep. variable": [r.response for r in results],
        "No. observations": [str(r.n) for r in results],
        "rho (zCDP)": [f"{r.rho:.4g}" for r in results],
        "epsilon": [f"{r.epsilon(delta):.3g}" for r in results],
        "delta": [f"{r.default_delta if delta is None else delta:g}" for r in results],
    }
    for label, values in info.items():
        rows.append(values)
        index.append(label)
    table = pd.DataFrame(rows, index=index, columns=names)
    total = math.fsum(r.rho for r in results)
    what = "standard errors" if below == "se" else f"{100 * (1 - alpha):g}% intervals"
    notes = [
        f"Under each coefficient: its {what} around the {target} "
        + (
            "coefficient (sampling + privacy error)."
            if target == "population"
            else "fit to these data (privacy error only)."
        ),
        *(["* p < 0.1, ** p < 0.05, *** p < 0.01 (two-sided t)."] if stars else []),
        *(f"{name}: {r.method}." for name, r in zip(names, results, strict=True)),
        f"Fits of the same data compose: together they are {total:.4g}-zCDP (rho adds up; "
        "Bun and Steinke 2016, Lemma 2.3). Each fit's own privacy statement is in its "
        "summary().",
    ]
    return Summary(
        title="Private regressions",
        header=[("Models", ", ".join(names)), ("Target", target)],
        table=table,
        notes=notes,
    )
