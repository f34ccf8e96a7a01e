"""Using a codebook in a fit: declared levels on the data, declared bounds for the design.

Both steps read only the codebook (public) and the data's schema; each category value is
matched to its declared level on its own (:func:`dpfit.models._values.level_values`), so one
record never changes how another is read, and a value outside the levels makes its record
the zero record, as with ``C(column, levels=[...])``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ._codebook import Codebook

__all__ = ["PASS_BOUNDS", "apply_levels", "fill_bounds"]

#: How a Python caller gives bounds instead (the command line says --bound / --y-bounds).
PASS_BOUNDS = "or pass bounds= and y_bounds= to the fit"


def _as_levels(column: Any, series: pd.Series) -> pd.Series:
    from ..models._values import level_values

    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype) and list(dtype.categories) == list(column.levels):
        return series  # already read as exactly these levels (codes already mapped)
    if column.codes:  # a stored code -> its level (Stata value labels)
        codes = list(column.codes)
        matched = level_values(series, codes)
        series = matched.map(lambda code: None if code is None else column.codes[code])
    values = level_values(series, list(column.levels))
    return pd.Series(
        pd.Categorical(values, categories=list(column.levels)), index=series.index, name=series.name
    )


def apply_levels(codebook: Codebook, data: Any) -> tuple[Any, frozenset[str]]:
    """``data`` with each category column of ``codebook`` read as its declared levels (a
    ``pandas.CategoricalDtype``), and the names of those columns (declared, so the formula
    layer does not warn that the levels may come from the data)."""
    categories = {c: lv for c, lv in codebook.categories().items() if c in data.columns}
    if not categories:
        return data, frozenset()
    if not isinstance(data, pd.DataFrame):
        raise TypeError(
            "codebook levels apply to a pandas DataFrame; for Dask data write "
            "C(column, levels=[...]) in the formula"
        )
    frame = data.copy(deep=False)
    for name in categories:
        frame[name] = _as_levels(codebook.columns[name], frame[name])
    return frame, frozenset(categories)


def _refuse_placeholders(
    codebook: Codebook, where: str, params: dict[str, Any], terms: list[str], response: str
) -> None:
    """Name the number columns whose bounds are still placeholders (``bounds = []``, as
    ``dpfit codebook init`` writes them) when the fit needs them and has none: without
    this, a template used before it is filled in read as a codebook of levels only."""
    given = params.get("bounds") or {}
    needed = [c for c in terms if c not in given]
    needed += [response] if params.get("y_bounds") is None else []
    unfilled = [
        c
        for c in needed
        if c in codebook.columns
        and codebook.columns[c].type == "number"
        and codebook.columns[c].bounds is None
    ]
    if unfilled and params.get("clip") is None:
        raise ValueError(
            f"{where} has no bounds yet for {unfilled} (bounds = [] is a placeholder still to "
            f"fill in): write each one's public [LOW, HIGH], {PASS_BOUNDS}"
        )


def fill_bounds(
    codebook: Codebook,
    params: dict[str, Any],
    design: Sequence[str],
    indicators: Sequence[str],
    response: str,
) -> dict[str, Any]:
    """``params`` with ``bounds`` and ``y_bounds`` completed from ``codebook``.

    Nothing changes when the codebook bounds none of the design columns and not the
    response (a codebook of levels only). Otherwise every design column that is not a
    category indicator needs bounds, from ``params["bounds"]`` (which wins) or the codebook
    (raw columns by name; a derived term such as ``I(exper ** 2)`` can have its own entry,
    ``[columns."I(exper ** 2)"]``), and so does the response.

    Raises
    ------
    ValueError
        A design column or the response without bounds anywhere, named; or a codebook whose
        entries for them are placeholders (``bounds = []``) when nothing else bounds them.
    """
    given = params.get("bounds")
    if given is not None and not isinstance(given, Mapping):
        return params  # bounds given in column order: the caller's, complete
    given = dict(given or {})
    terms = [c for c in design if c not in indicators]
    known = {c: codebook.bounds(c) for c in [*terms, response] if codebook.bounds(c) is not None}
    where = f"codebook {codebook.source}" if codebook.source else "codebook"
    if not known:
        _refuse_placeholders(codebook, where, params, terms, response)
        return params
    missing = [c for c in terms if c not in given and c not in known]
    if missing:
        raise ValueError(
            f"{where} has no bounds for design columns {missing}: fill in bounds = [LOW, HIGH] "
            "(a derived term such as 'I(x ** 2)' gets its own entry, [columns.\"I(x ** 2)\"]), "
            "or pass them as bounds"
        )
    bounds = {**{c: known[c] for c in terms if c in known}, **given}
    y_bounds = params.get("y_bounds")
    if y_bounds is None:
        y_bounds = known.get(response)
        if y_bounds is None:
            raise ValueError(
                f"{where} has no bounds for the response {response!r}: fill in its bounds = "
                "[LOW, HIGH], or pass y_bounds"
            )
    return {**params, "bounds": bounds, "y_bounds": y_bounds}
