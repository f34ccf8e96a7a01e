"""Each record's values read on their own: numbers and declared levels, value by value.

A column's dtype is a function of *all* of its values: pandas reads a CSV column as int64,
float64 or text from the whole column, so one record written ``"x"`` turns every value of the
column into a string (and no value matches the levels ``[1, 2, 3]`` any more), one record
written ``"4.5"`` turns an int64 column into float64 (and changes another record's
``I(income ** 2)``, which wraps around in int64), and one integer beyond 2**64 turns the column
into text. Anything decided from the dtype would let one record change how every other record
is read, far beyond the one-record sensitivity of the fit (``docs/threat-model.md``, "One
record never changes how another is read").

So the formula layer (:mod:`dpfit.models._design`) reads every formula variable here, value
by value, whatever the column's dtype:

* a variable used as a number becomes float64: numbers, bools and numeric strings as Python's
  ``float`` reads them (``"True"``/``"False"`` as pandas reads them, 1 and 0); a value that is
  not a number becomes NaN, which makes its record the zero record
  (:func:`dpfit.models._design.materialise`);
* a categorical variable with declared levels (``C(g, levels=[...])``) maps each value to the
  declared level it equals, or to None (outside the levels: the zero record). Strings compare
  with surrounding blanks removed, and numbers, numeric strings and bools compare as numbers,
  so the value ``"2"`` (a column read as text), ``2`` (int64) and ``2.0`` (float64) all equal the
  level 2.

Each output value is a function of its input value and the public levels only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._records import is_missing, to_float

__all__ = ["level_values", "numeric_values", "to_float"]


def _per_value(series: pd.Series, convert: Callable[[Any], Any], dtype: Any) -> pd.Series:
    """``convert`` applied to each value (once per distinct hashable value)."""
    cache: dict[Any, Any] = {}
    out = []
    for value in series.to_numpy(dtype=object):
        try:
            result = cache[value]
        except KeyError:
            result = cache[value] = convert(value)
        except TypeError:  # unhashable
            result = convert(value)
        out.append(result)
    return pd.Series(np.asarray(out, dtype=dtype), index=series.index, name=series.name)


def numeric_values(series: pd.Series) -> pd.Series:
    """The float64 value of each entry of ``series`` (:func:`to_float`), value by value.

    Numeric and bool columns are converted directly (element by element); any other column
    (object, text) one value at a time.
    """
    dtype = series.dtype
    if isinstance(dtype, np.dtype) and dtype.kind in "biuf":
        return series.astype(np.float64)
    if not isinstance(dtype, np.dtype) and (
        pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype)
    ):  # pandas' nullable Int64, Float64, boolean
        values = series.to_numpy(dtype=np.float64, na_value=np.nan)
        return pd.Series(values, index=series.index, name=series.name)
    return _per_value(series, to_float, np.float64)


def _level_keys(level: Any) -> tuple[str | None, float]:
    """(the stripped text of a string level, its numeric value or NaN)."""
    text = level.strip() if isinstance(level, str) else None
    return text, to_float(level)


def _equal(value: Any, level: Any) -> bool:
    try:
        return bool(value == level)
    except (TypeError, ValueError):
        return False


def level_values(series: pd.Series, levels: Sequence[Any]) -> pd.Series:
    """Each value of ``series`` as the declared level it equals (first match), else None.

    A string value first matches a string level with the same stripped text; otherwise a
    value that reads as a number (:func:`to_float`) matches the first level with the same
    numeric value; any other value matches a level equal to it.
    """
    keys = [(level, *_level_keys(level)) for level in levels]

    def match(value: Any) -> Any:
        if is_missing(value):
            return None
        if isinstance(value, str):
            text = value.strip()
            for level, level_text, _ in keys:
                if level_text is not None and level_text == text:
                    return level
        number = to_float(value)
        if not math.isnan(number):
            for level, _, level_number in keys:
                if level_number == number:
                    return level
            return None
        for level, _, _ in keys:
            if not isinstance(level, str | int | float | np.number) and _equal(value, level):
                return level
        return None

    return _per_value(series, match, object)
