"""Reading a registered dataset's file into the frame its fits use, value by value.

Only the schema's columns are read. Every cell is read as written (CSV text, no dtype
inference) and converted on its own, so one record never changes how another is read
(``docs/threat-model.md``, "One record never changes how another is read"):

* a numeric or boolean column becomes float64; every value must be a finite number (for a
  boolean, 0/1/true/false). Registration refuses a file where one is not, telling the steward
  which column and how many values: a fit must never fail, or change shape, because of one
  record, and the service never drops rows (that would make n depend on the data);
* a categorical value is compared with the declared levels as text
  (:func:`~dpfit.serve.schema.canonical_level`); any other value, a missing one included, is
  outside the levels and its record is the zero record of the fit (``dpfit.ols``).

The file's SHA-256 is recorded at registration and checked whenever the file is loaded: a
file changed since registration is never fitted (the schema and checks were for the old one).
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .schema import ColumnSpec, PublicSchema, canonical_level

__all__ = ["DataCache", "DatasetUnavailableError", "file_sha256", "read_dataset"]

_SUFFIXES = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}
_TRUE = frozenset({"1", "1.0", "true"})
_FALSE = frozenset({"0", "0.0", "false"})


class DatasetUnavailableError(Exception):
    """A registered dataset's file is missing or changed: no fit may run on it."""


def file_sha256(path: str | Path) -> str:
    """SHA-256 (hex) of the file at ``path``, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _number(value: Any) -> float:
    """A finite float, or NaN when ``value`` is missing, not a number or not finite."""
    if isinstance(value, bool | np.bool_):
        return float(value)
    try:
        number = float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        return math.nan
    return number if math.isfinite(number) else math.nan


def _boolean(value: Any) -> float:
    text = canonical_level(value)
    text = text.lower() if text is not None else None
    return 1.0 if text in _TRUE else 0.0 if text in _FALSE else math.nan


def _column(spec: ColumnSpec, values: list[Any]) -> tuple[Any, int]:
    """The column's values converted one by one, and how many failed (numeric, boolean)."""
    if spec.type == "categorical":
        levels = set(spec.levels or ())
        read = [text if (text := canonical_level(v)) in levels else None for v in values]
        return pd.Categorical(read, categories=list(spec.levels or ())), 0
    convert = _boolean if spec.type == "boolean" else _number
    array = np.fromiter((convert(v) for v in values), dtype=np.float64, count=len(values))
    return array, int(np.isnan(array).sum())


def _raw(path: Path, names: list[str]) -> dict[str, list[Any]]:
    """The named columns of a CSV (as written) or Parquet file, as lists of values."""
    kind = _SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise ValueError(f"data file must end in .csv, .parquet or .pq: {path}")
    if not path.is_file():
        raise ValueError(f"data file not found: {path}")
    if kind == "csv":
        header = pd.read_csv(path, nrows=0).columns
        missing = [n for n in names if n not in header]
        if missing:
            raise ValueError(f"data file {path} lacks the schema's columns {missing}")
        frame = pd.read_csv(path, usecols=names, dtype=str, keep_default_na=False, na_filter=False)
    else:
        import pyarrow.parquet as pq

        header = pq.read_schema(path).names
        missing = [n for n in names if n not in header]
        if missing:
            raise ValueError(f"data file {path} lacks the schema's columns {missing}")
        frame = pd.read_parquet(path, columns=names)
    return {name: frame[name].tolist() for name in names}


def read_dataset(path: str | Path, schema: PublicSchema) -> pd.DataFrame:
    """The frame of the schema's columns, converted as the module docstring says.

    Raises
    ------
    ValueError
        The file is missing or unreadable, lacks a declared column (or the privacy unit),
        has no rows, or a numeric or boolean column holds a value that is not a finite
        number (the message names the column and the count; it is for the steward).
    """
    path = Path(path)
    names = list(schema.names)
    if schema.privacy_unit is not None:
        _raw(path, [schema.privacy_unit])  # it must exist; it is not read into fits yet
    raw = _raw(path, names)
    n = len(raw[names[0]])
    if n == 0:
        raise ValueError(f"data file {path} has no rows")
    columns, problems = {}, []
    for spec in schema.columns:
        columns[spec.name], bad = _column(spec, raw[spec.name])
        if bad:
            what = "0/1/true/false" if spec.type == "boolean" else "finite numbers"
            problems.append(f"{spec.name!r} ({bad} value(s) not {what})")
    if problems:
        raise ValueError(
            f"data file {path}: columns {', '.join(problems)}; the service never drops rows "
            "(n would depend on the data): fix or remove those records, then treat the row "
            "count as public"
        )
    return pd.DataFrame(columns)


class DataCache:
    """Frames of registered datasets, loaded once per process and checked against their hash.

    Parameters
    ----------
    capacity : int, default=8
        Frames kept; the least recently used is dropped beyond it.
    """

    def __init__(self, capacity: int = 8) -> None:
        self._capacity = capacity
        self._frames: OrderedDict[tuple[int, str], pd.DataFrame] = OrderedDict()
        self._lock = threading.Lock()

    def frame(
        self, *, dataset_id: int, path: str, sha256: str, schema: PublicSchema
    ) -> pd.DataFrame:
        """The frame of a registered dataset, or :class:`DatasetUnavailableError`."""
        key = (dataset_id, sha256)
        with self._lock:
            if key in self._frames:
                self._frames.move_to_end(key)
                return self._frames[key]
            try:
                if file_sha256(path) != sha256:
                    raise DatasetUnavailableError("its data file changed since registration")
                frame = read_dataset(path, schema)
            except (OSError, ValueError) as exc:
                raise DatasetUnavailableError("its data file cannot be read") from exc
            self._frames[key] = frame
            while len(self._frames) > self._capacity:
                self._frames.popitem(last=False)
            return frame
