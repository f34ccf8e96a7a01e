"""Formula designs in which each row depends on its own record only: one check for every path.

A formula's design matrix is private data transformed row by row, and the privacy of a fit
rests on that: the clipped-sum sensitivity 2C/n (Brown et al. 2024, Lemma 2.1) holds because
replacing one record changes one row. formulaic would break it in two ways, so both
:func:`dpfit.ols` and :func:`dpfit.iv`, in memory and on Dask, build their designs here:

* **Stateful transforms** (``scale``, ``poly``, ``lag``, ...) make a row depend on other
  records: every python term is checked against an allow-list of row-wise operations
  *before* any data is read (:mod:`dpfit.models._row_wise`).
* **Levels read off the data**: the levels of a string or categorical variable, hence the
  released term names and the dimension, come from the data. The design is therefore specified
  on the frame's *empty* version (Dask's ``_meta``; ``data.iloc[:0]`` in memory), so its
  columns depend only on the formula and the dtypes, and a categorical variable must have
  declared levels: ``C(region, levels=["north", "south"])``, or a column whose dtype is a
  ``pandas.CategoricalDtype`` with the categories written out by the analyst.

**Values outside the declared levels** (a missing categorical value included): the record
becomes the *zero record* (every design column, the intercept and the response are 0, so it
adds nothing to any clipped sum), the same fixed per-record rule as for non-finite values on
Dask (``docs/dask.md``). The rule is identical in memory and on Dask; refusing instead would
make an error depend on one record (errors are releases: ``docs/threat-model.md``). Such rows
are NaN in the built design (the representation :mod:`dpfit.models._dask` and the estimators
turn into zero records); indicator columns of a treatment-coded categorical term get the
public bounds [0, 1] (:attr:`Design.indicators`).

**Values are read one by one** (:mod:`dpfit.models._values`), never through the column's
dtype, which pandas infers from all the records: every variable used as a number is float64,
converted value by value (a value that is not a number makes its record the zero record), and
the values of a declared categorical variable are matched to the levels value by value, so
one record can never change how another record is read.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from formulaic import model_matrix
from formulaic.transforms.contrasts import TreatmentContrasts

from ..codebook import Codebook, fill_bounds
from ..distributed.blocks import row_slices
from ._row_wise import check_terms, declared_column, factor_column, may_be_undefined, refuse
from ._schema import read_as
from ._values import level_values, numeric_values

__all__ = [
    "NULL_RECORDS",
    "Design",
    "complete_bounds",
    "design_spec",
    "materialise",
    "null_rows",
    "read_values",
    "take_null_records",
    "zero_record_causes",
]

#: ``Series.attrs`` key of a response built here: rows of NaN in the design are zero records.
NULL_RECORDS = "dpfit_null_records"


@dataclass(frozen=True, kw_only=True)
class Design:
    """A checked formula side: the formulaic spec built on metadata and its public facts.

    ``categoricals`` maps each categorical factor's column to its declared levels;
    ``indicators`` lists the design columns in {0, 1} (treatment-coded categorical terms);
    ``zero_terms`` pairs each factor that can make a record the zero record with why:
    ``"levels"`` (a categorical factor: a value outside its levels) or ``"transform"`` (a
    transform undefined at some values, :func:`~._row_wise.may_be_undefined`). All of it is
    read off the formula and the dtypes, never the values.
    """

    spec: Any
    columns: tuple[str, ...]
    categoricals: tuple[tuple[str, tuple[Any, ...]], ...]
    indicators: tuple[str, ...]
    numeric: tuple[str, ...] = ()
    declared: tuple[str, ...] = ()
    zero_terms: tuple[tuple[str, str], ...] = ()


def _levels_hint(expr: str, column: str | None) -> str:
    name = column if column is not None else "column"
    return (
        f"formula term {expr!r}: the levels of a categorical variable must be declared, never "
        f"read off the data: write C({name}, levels=[...]) listing every level, or give the "
        f"column a pandas.CategoricalDtype([...]) with its categories written out"
    )


def design_spec(side: str, meta: pd.DataFrame, declared: Collection[str] = ()) -> Design:
    """Check ``side`` and build its formulaic spec on ``meta`` (an empty frame: dtypes only).

    ``declared`` names the categorical columns whose levels a codebook or the file declared
    (:func:`dpfit.models._schema.read_as`).

    Raises
    ------
    ValueError
        A term that is not row-wise (before anything is built).
    TypeError
        A categorical variable without declared levels, or a column whose dtype is not
        numeric (text, dates) used as a number.
    """
    check_terms(side)
    numbers, declared_columns = read_as(side, meta, declared)
    meta = meta.copy(deep=False)
    for name in numbers:
        meta[name] = numeric_values(meta[name])
    for name in declared_columns:
        meta[name] = meta[name].astype(object)
    with np.errstate(all="ignore"):  # no data: nothing to warn about (a flag, thread-local)
        spec = model_matrix(side, meta, na_action="ignore").model_spec
    for expr, state in spec.transform_state.items():  # a backstop behind check_terms
        # formulaic implements Q("col") as a stateful transform that learns nothing (state
        # {}): a column lookup, row-wise. Anything that learned state read the private column.
        if state or factor_column(expr) is None:
            raise refuse(expr, "stateful formula transforms learn from the data")
    categoricals: dict[str, tuple[Any, ...]] = {}
    categorical_factors = set()
    declared = set()
    for expr, (kind, state) in spec.encoder_state.items():
        if kind.value != "categorical":
            continue
        column = factor_column(expr)
        levels = tuple(state.get("categories") or ())
        if column is None or column not in meta.columns:
            raise refuse(expr, "a categorical term must name a column of the data")
        if "__UNKNOWN_CATEGORIES__" in levels:  # Dask's placeholder: categories not known
            raise TypeError(
                f"column {column!r} is categorical with unknown categories: declare them "
                "(astype(pandas.CategoricalDtype([...]))); levels are never read off data"
            )
        if not levels:
            raise TypeError(_levels_hint(expr, column))
        if categoricals.setdefault(column, levels) != levels:
            raise refuse(expr, f"column {column!r} is used with two different sets of levels")
        categorical_factors.add(expr)
        if declared_column(expr) == column:
            declared.add(column)
    for name in sorted(v for v in spec.variables if v in meta.columns):
        dtype = meta[name].dtype
        numeric = pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype)
        if not (numeric or isinstance(dtype, pd.CategoricalDtype) or name in declared):
            raise TypeError(
                f"column {name!r} has dtype {dtype}: a formula variable must be numeric, bool, "
                f"or categorical with declared levels (C({name}, levels=[...]))"
            )
    indicators: list[str] = []
    for term in spec.terms:
        factors = [str(f.expr) for f in term.factors]
        if factors and all(f in categorical_factors for f in factors):
            if all(
                isinstance(spec.encoder_state[f][1]["contrasts"].contrasts, TreatmentContrasts)
                for f in factors
            ):
                indicators += [spec.column_names[i] for i in spec.term_indices[term]]
    return Design(
        spec=spec,
        columns=tuple(str(c) for c in spec.column_names),
        categoricals=tuple(categoricals.items()),
        indicators=tuple(indicators),
        numeric=numbers,
        declared=declared_columns,
        zero_terms=_zero_terms(spec, categorical_factors),
    )


def _zero_terms(spec: Any, categorical: set[str]) -> tuple[tuple[str, str], ...]:
    """The factors that can make a record the zero record (:attr:`Design.zero_terms`)."""
    found: dict[str, str] = {}
    for term in spec.terms:
        for factor in term.factors:
            expr = str(factor.expr)
            if expr in categorical:
                found.setdefault(expr, "levels")
            elif factor.eval_method.value == "python" and may_be_undefined(expr):
                found.setdefault(expr, "transform")
    return tuple(found.items())


def read_values(design: Design, frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the design's variables read value by value (:mod:`dpfit.models._values`):
    numbers as float64 (NaN where a value is not a number), declared categorical values as
    their level (None outside the levels)."""
    frame = frame.copy(deep=False)
    levels = dict(design.categoricals)
    for name in design.numeric:
        frame[name] = numeric_values(frame[name])
    for name in design.declared:
        frame[name] = level_values(frame[name], levels.get(name, ()))
    return frame


#: What can make a record the zero record, by kind of formula factor (``Design.zero_terms``).
_ZERO_CAUSES = {
    "levels": "a value outside its declared levels: check their spelling and case against the "
    "data's, and list every level, the reference included",
    "transform": "undefined or infinite at some values, e.g. the log of a value <= 0 or a "
    "division by 0",
}


def zero_record_causes(terms: Any, *, dask: bool) -> str:
    """The likely causes of many zero records, from the formula's terms (public): which
    terms can produce them and how, never which one did."""
    if not terms:
        return (
            "a missing or non-finite value, or a category outside the declared levels, makes "
            "a record one"
        )
    causes = "; ".join(f"{term} ({_ZERO_CAUSES[kind]})" for term, kind in terms)
    extra = "; or a missing or non-finite value of any variable (Dask data)" if dask else ""
    which = "; which one did is not released" if len(terms) > 1 or dask else ""
    return f"the formula's terms that can make one: {causes}{extra}{which}"


def outside_levels(design: Design, frame: pd.DataFrame) -> np.ndarray:
    """Records with a categorical value that is not a declared level (missing included)."""
    out = np.zeros(len(frame), dtype=bool)
    for column, levels in design.categoricals:
        values = frame[column]
        if isinstance(values.dtype, pd.CategoricalDtype):
            values = values.astype(object)
        out |= ~values.isin(list(levels)).to_numpy(dtype=bool)
    return out


def _check_raw(design: Design, frame: pd.DataFrame, read: pd.DataFrame) -> None:
    """In memory: refuse a missing or infinite value in a numeric formula variable (the raw
    data ``frame``, and its values ``read`` as numbers), before any transform; dropping the
    row would make n depend on the data. The message names the column (the check is per
    column; docs/threat-model.md, "The schema is public"), never a row or a value. A value
    that is not a number is not refused: it reads as NaN, and its record is the zero
    record."""
    used = sorted(v for v in design.spec.variables if v in frame.columns)
    for name in used:
        column = frame[name]
        if isinstance(column.dtype, pd.CategoricalDtype) or name in dict(design.categoricals):
            continue  # a missing category is outside the declared levels: the zero record
        if column.isna().to_numpy().any():  # per column, like the infinite values below
            raise ValueError(
                f"data column {name!r} has missing values; dpfit does not drop rows (that "
                "would make n depend on the data): remove them first and treat the row count "
                "after removal as public"
            )
        values = read[name].to_numpy()
        if values.dtype.kind in "fc" and np.isinf(values).any():
            raise ValueError(
                f"data column {name!r} has infinite values; dpfit does not drop rows: remove "
                "or replace them first and treat the row count after removal as public"
            )


def materialise(design: Design, frame: pd.DataFrame, *, refuse_missing: bool) -> pd.DataFrame:
    """The float64 design of ``frame``, with the row of every zero record all NaN.

    A zero record is a record outside the declared levels, or one whose design row is not
    finite although its data are (a transform such as ``np.log(x)`` at 0 or ``np.exp(x)``
    overflowing): a fixed per-record rule, never an error that one record could trigger.
    Missing or infinite values in the data themselves are refused first when
    ``refuse_missing`` (in memory); on Dask they are zero records too.
    """
    read = read_values(design, frame)
    if refuse_missing:
        _check_raw(design, frame, read)
    frame = read
    outside = outside_levels(design, frame) if design.categoricals else None
    # A value outside the declared levels would make formulaic warn, quoting it: such a
    # record is a zero record anyway, so it is given a declared level first (no warning to
    # silence, so no warnings.catch_warnings(), which changes every thread's filters).
    for column, levels in design.categoricals if outside is not None and outside.any() else ():
        frame = frame.assign(**{column: frame[column].astype(object).where(~outside, levels[0])})
    with np.errstate(all="ignore"):  # non-finite rows: handled by the zero records
        matrix = pd.DataFrame(design.spec.get_model_matrix(frame, na_action="ignore"))
    matrix, values = _one_block(matrix.astype(np.float64).reindex(columns=list(design.columns)))
    null = ~np.isfinite(values).all(axis=1) if values.shape[1] else np.zeros(len(matrix), bool)
    if outside is not None:
        null |= outside
    if null.any():
        matrix.loc[null] = np.nan
    return matrix


#: The name formulaic gives the intercept's column of ones.
_INTERCEPT = "Intercept"


def _one_block(matrix: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
    """``matrix`` with every column but the intercept in one C-ordered float64 array (returned
    too), the intercept's ones in a column apart: the estimators then read the design
    without the intercept as that array, with no copy of the size of the data
    (``np.asarray`` of a frame of one C-ordered block is a view; formulaic builds one
    array per column, which ``np.asarray`` would copy, in column order, and the estimators
    then copy again to row order)."""
    names = [c for c in matrix.columns if c != _INTERCEPT]
    columns = [matrix[name].to_numpy() for name in names]
    values = np.empty((len(matrix), len(names)), dtype=np.float64)
    for rows in row_slices(len(matrix), len(names)):  # each block filled while in cache
        for j, column in enumerate(columns):
            values[rows, j] = column[rows]
    out = pd.DataFrame(values, index=matrix.index, columns=names, copy=False)
    if _INTERCEPT in matrix.columns:
        where = list(matrix.columns).index(_INTERCEPT)
        out.insert(where, _INTERCEPT, matrix[_INTERCEPT].to_numpy(dtype=np.float64, copy=True))
    return out, values


def null_rows(matrix: pd.DataFrame) -> np.ndarray:
    """The zero records of a design built by :func:`materialise` (its all-NaN rows)."""
    if matrix.shape[1] == 0:
        return np.zeros(len(matrix), dtype=bool)
    return matrix.isna().all(axis=1).to_numpy()


def take_null_records(y: Any, X: Any, *others: Any) -> tuple[np.ndarray | None, Any, list[Any]]:
    """The zero records of data built here, with placeholders in their rows.

    Only for a response tagged by the formula layer (``y.attrs[NULL_RECORDS]``): a zero record
    is an all-NaN row of ``X`` or a NaN response; its values in ``y``, ``X`` and ``others``
    become 0 (placeholders, so that every other value is validated as usual) and the caller
    zeroes the record after any public rescaling. Returns ``(None, y, [X, *others])`` for any
    other data.
    """
    frames = [X, *others]
    tagged = isinstance(y, pd.Series) and bool(y.attrs.get(NULL_RECORDS, False))
    if not (tagged and all(isinstance(f, pd.DataFrame) for f in frames)):
        return None, y, frames
    null = null_rows(X) | y.isna().to_numpy()
    if not null.any():
        return None, y, frames
    filled = []
    for frame in frames:
        frame = frame.copy()
        frame.loc[null] = 0.0
        filled.append(frame)
    return null, y.where(~null, 0.0), filled


def complete_bounds(
    codebook: Codebook | None,
    params: dict[str, Any],
    columns: Sequence[str],
    indicators: Sequence[str],
    response: str,
) -> dict[str, Any]:
    """``params`` with ``bounds`` (and ``y_bounds``) completed from ``codebook``, and (0, 1)
    for the indicator columns that a mapping of bounds lacks: the indicators of a
    treatment-coded categorical term take values in {0, 1} by construction (public), so their
    bounds need not be written out."""
    if codebook is not None:
        params = fill_bounds(codebook, params, columns, indicators, response)
    bounds = params.get("bounds")
    if isinstance(bounds, Mapping) and indicators:
        params = {**params, "bounds": {**dict.fromkeys(indicators, (0.0, 1.0)), **bounds}}
    return params
