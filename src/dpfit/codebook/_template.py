"""``dpfit codebook init``: a codebook template written from a dataset's schema only.

The template lists every column with the type its dtype suggests and an empty placeholder
(``bounds = []``, ``levels = []``) to fill in from public knowledge. It never contains a
value, a minimum, a maximum or a category read off the data: bounds taken from the data
would void the privacy guarantee they are meant to give (they are themselves a release).
The only facts besides names and types are a bool column's bounds [0, 1] (its dtype says so)
and a Stata file's value labels, which the file declares as metadata.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pandas as pd

from ._codebook import Codebook

__all__ = ["template"]

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_HEADER = """\
# dpfit codebook for {source}
# Written from the data's schema only (column names and types): no value, minimum or
# maximum of the data is in this file. Fill in every `bounds = []` with [LOW, HIGH] from
# public knowledge (a questionnaire's range, a legal limit), never from the data, and every
# `levels = []` with all the categories. Delete the columns you do not use.
# Check it with:  dpfit check DATA --codebook THIS_FILE --formula "y ~ x1 + x2"
"""


def _key(name: str) -> str:
    return name if _BARE_KEY.match(name) else json.dumps(name)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(str(value))


def _entry(name: str, dtype: Any, labels: Codebook | None) -> list[str]:
    declared = None if labels is None else labels.columns.get(name)
    lines = [f"[columns.{_key(name)}]"]
    if declared is not None and declared.levels is not None:
        levels = ", ".join(_value(v) for v in declared.levels)
        codes = ", ".join(f"{json.dumps(str(k))} = {_value(v)}" for k, v in declared.codes.items())
        lines += [
            'type = "category"  # from the file\'s value labels (metadata, not the data)',
            f"levels = [{levels}]",
        ]
        return lines + ([f"codes = {{ {codes} }}"] if codes else [])
    kinds = pd.api.types
    if kinds.is_bool_dtype(dtype):
        return [*lines, 'type = "number"', "bounds = [0, 1]  # a bool column (its dtype)"]
    if kinds.is_numeric_dtype(dtype) and not kinds.is_complex_dtype(dtype):
        return [*lines, 'type = "number"', "bounds = []  # FILL IN [LOW, HIGH]"]
    if isinstance(dtype, pd.CategoricalDtype):
        note = "FILL IN every level (the file's categories may come from the data)"
        return [*lines, 'type = "category"', f"levels = []  # {note}"]
    if kinds.is_object_dtype(dtype) or kinds.is_string_dtype(dtype):
        return [
            *lines,
            'type = "category"  # text; if it holds numbers, convert it and use "number"',
            'levels = []  # FILL IN every level, e.g. ["north", "south"]',
        ]
    return [
        f"# {_key(name)}: dtype {dtype} cannot enter a formula; convert it publicly first",
        f"# (e.g. a date to its year) and add [columns.{_key(name)}] here",
    ]


def template(schema: pd.DataFrame, *, source: str, labels: Codebook | None = None) -> str:
    """The TOML text of a codebook template for the columns of ``schema``.

    Parameters
    ----------
    schema : pandas.DataFrame
        Read for its column names and dtypes only (pass ``frame.iloc[:0]``).
    source : str
        The data's name, for the header.
    labels : Codebook, optional
        Levels the file declares (a Stata file's value labels).
    """
    blocks = [_HEADER.format(source=source).rstrip("\n")]
    for name in schema.columns:
        blocks.append("\n".join(_entry(str(name), schema[name].dtype, labels)))
    return "\n\n".join(blocks) + "\n"
