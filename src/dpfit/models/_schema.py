"""How a formula reads each variable, decided from the data's schema (column names and dtypes).

A fit's guarantee covers datasets of one public *schema*: the column names, each column's
dtype and, for categorical columns, the declared levels, as OpenDP and SmartNoise treat a
dataset's metadata as public. The schema decides how each formula variable is read, before
any value is looked at and before anything is charged:

* a **numeric or bool** column is read as numbers, value by value (:mod:`._values`);
* a column used as ``C(column, levels=[...])`` is matched to the declared levels, whatever
  its dtype;
* a ``pandas.CategoricalDtype`` column uses its categories as levels. When nothing says that
  they were written out by the analyst (``C(column, levels=[...])``, a codebook, or a
  Stata file's value labels, all passed as ``declared``), a
  :class:`~dpfit.exceptions.UndeclaredLevelsWarning` says that ``astype("category")`` learns
  them from the private data;
* a **text** column (object or string dtype) used as a number is refused: a CSV column of
  numbers written with thousands separators (``"12,345.67"``) is text, and reading it value by
  value would turn most records into zero records while a full table prints. dpfit never
  guesses numbers out of text; convert the column publicly (``read_csv(..., thousands=",")``)
  or declare its levels;
* a **date, time, interval or complex** column is refused with the public conversion to
  make (a year, days since a public date).

The dtype of a CSV column is what pandas infers from the file, so a column with one entry
that is not a number is text: like a missing value (refused in memory), such an entry puts the
file outside the declared schema and is refused before anything is charged; the message names
the column and its dtype, never a value (``docs/threat-model.md``, "The schema is public").
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Collection
from typing import Any

import pandas as pd
from formulaic import Formula
from formulaic.parser.types import Factor

from .._validation import user_stacklevel
from ..exceptions import UndeclaredLevelsWarning
from ._row_wise import column_of, declared_column

__all__ = ["ReadAs", "read_as"]

#: How a formula side reads its variables: (numeric columns, columns matched to C() levels).
ReadAs = tuple[tuple[str, ...], tuple[str, ...]]


def _categorical_factors(side: str) -> tuple[set[str], set[str]]:
    """(columns wrapped in ``C()``, those with ``levels=[...]``) of a checked formula side."""
    wrapped, declared = set(), set()
    for term in Formula(side):
        for factor in term.factors:
            if factor.eval_method is not Factor.EvalMethod.PYTHON:
                continue
            node = ast.parse(factor.expr, mode="eval").body
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
                if node.func.id == "C" and (column := column_of(node.args[0])) is not None:
                    wrapped.add(column)
            column = declared_column(factor.expr)
            if column is not None:
                declared.add(column)
    return wrapped, declared


def _text_message(name: str, dtype: Any) -> str:
    """The refusal of a text column used as a number, with every public fix: which one
    applies is not read off the values (they are private)."""
    return (
        f"column {name!r} holds text (dtype {dtype}), not numbers: dpfit reads a column's type "
        "from the data's schema (public) and never guesses numbers out of text. Convert it "
        "publicly before the fit: numbers written with thousands separators such as "
        '12,345.67: read the file with pandas.read_csv(..., thousands=","); dates: to a year '
        f"or to days since a fixed public date (pandas.to_datetime(df[{name!r}]).dt.year); "
        "entries such as 'n/a': remove those rows and treat the remaining count as public; "
        f"categories: declare the levels, C({name}, levels=[...])"
    )


def _other_message(name: str, dtype: Any) -> str:
    kind = pd.api.types
    if kind.is_datetime64_any_dtype(dtype) or isinstance(dtype, pd.PeriodDtype):
        fix = (
            f"convert it publicly first, e.g. to a year (df[{name!r}].dt.year) or to days "
            f"since a fixed public date ((df[{name!r}] - pd.Timestamp('2000-01-01')).dt.days)"
        )
    elif kind.is_timedelta64_dtype(dtype):
        fix = f"convert it publicly first, e.g. to days (df[{name!r}].dt.days)"
    else:
        fix = "convert it publicly to numbers first, or declare its levels with C()"
    return f"column {name!r} has dtype {dtype}, which a formula cannot use as a number: {fix}"


def read_as(side: str, meta: pd.DataFrame, declared: Collection[str] = ()) -> ReadAs:
    """How each variable of ``side`` is read (module docstring), from ``meta``'s dtypes only.

    ``declared`` names the columns whose ``CategoricalDtype`` categories were declared
    publicly (a codebook, a Stata file's value labels).

    Raises
    ------
    TypeError
        A text, date, time, interval or complex column used as a number.

    Warns
    -----
    UndeclaredLevelsWarning
        A ``CategoricalDtype`` column whose categories nothing declared.
    """
    wrapped, with_levels = _categorical_factors(side)
    numeric = []
    for name in sorted(str(v) for v in Formula(side).required_variables):
        if name not in meta.columns or name in with_levels:
            continue
        dtype = meta[name].dtype
        if isinstance(dtype, pd.CategoricalDtype):
            if name not in declared:
                warnings.warn(
                    f"column {name!r} is categorical and its levels are taken from its dtype: "
                    "if they came from astype('category') they were read off the private data "
                    "(which levels occur is then released with the fit). Declare them "
                    f"publicly: C({name}, levels=[...]) in the formula, or a codebook",
                    UndeclaredLevelsWarning,
                    stacklevel=user_stacklevel(),
                )
            continue
        if name in wrapped:
            continue  # C(column) without levels: refused by design_spec with the levels hint
        if pd.api.types.is_bool_dtype(dtype) or (
            pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_complex_dtype(dtype)
        ):
            numeric.append(name)
        elif pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype):
            raise TypeError(_text_message(name, dtype))
        else:
            raise TypeError(_other_message(name, dtype))
    return tuple(numeric), tuple(sorted(c for c in with_levels if c in meta.columns))
