"""The one boundary between the records and code that dpfit does not own.

Readers (NumPy's and pandas' conversions, Dask's CSV reader, any task of a Dask graph), a
user's loss and a PyTorch model run on the records, and when one of them raises, its message
can quote the record that made it raise (``could not convert string to float:
'secret-4.2'``, ``index 3 is out of bounds``); raised part-way through a fit, the step at
which it comes points at the record too. Every entry point that reads data or evaluates
such code on records goes through this module, so that one record can do one of two things
only (which one, path by path, is listed in ``docs/threat-model.md``, "Errors never quote
a record"):

* **refuse the data before anything is charged**, with :class:`~dpfit.exceptions.DataError`,
  whose message is fixed by the call site (what failed and how to see the details, never a
  value, a row or a step): :func:`read_records`, around the conversion of in-memory arrays
  and around the one pass over a Dask input that runs before its first charge;
* **become the zero record**: :func:`float_values` reads a block value by value when it is
  not numeric (a value that is not a number is NaN, which makes its record the zero
  record), and :func:`evaluate_records` evaluates a user's loss or model per record when the
  batch raises, so that a record on which it raises contributes exactly zero and the other
  records are computed as before.

What passes unchanged: dpfit's own errors (:class:`~dpfit.exceptions.DPFitError`; its
messages quote no data), and failures of memory and storage (``MemoryError``, ``OSError``),
which no value causes; a fit that fails after its charge for them keeps spent only the
releases it drew (``docs/threat-model.md``, "A failed fit keeps spent only the releases it
drew"). ``KeyboardInterrupt`` is not an ``Exception`` and passes too.

The withheld exception is dropped, not chained: raising the fixed error outside the
``except`` block gives it no ``__context__``, so neither a traceback nor a logger that
walks the chain can print the original message, and the frames that hold the records are
freed.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from .exceptions import DataError, DPFitError

__all__ = [
    "PASSED",
    "Substitution",
    "dtype_kind",
    "evaluate_records",
    "float_values",
    "is_missing",
    "read_records",
    "to_float",
    "withheld",
]

R = TypeVar("R")

#: Exceptions that cross the boundary unchanged (module docstring).
PASSED: tuple[type[BaseException], ...] = (DPFitError, MemoryError, OSError)

#: The spellings of bools that pandas' CSV reader recognises (its default true/false values).
_BOOLS = {"True": 1.0, "TRUE": 1.0, "true": 1.0, "False": 0.0, "FALSE": 0.0, "false": 0.0}

#: What a dtype's kind is called in an error: the kind, never the dtype itself, whose text
#: can depend on the values (``<U10`` against ``<U32``: the longest string's length).
_KINDS = {
    "b": "bool",
    "i": "int",
    "u": "unsigned int",
    "f": "float",
    "c": "complex",
    "m": "timedelta64",
    "M": "datetime64",
    "O": "object",
    "S": "bytes",
    "U": "str",
    "V": "void (structured)",
}


def dtype_kind(dtype: Any) -> str:
    """The name of ``dtype``'s kind (``"str"``, ``"object"``, ...) for an error message: the
    kind depends on the column, the full dtype text (``<U10``) on the values."""
    try:
        return _KINDS.get(np.dtype(dtype).kind, "non-numeric")
    except TypeError:  # an extension dtype (pandas' string, categorical, ...)
        return str(getattr(dtype, "name", None) or type(dtype).__name__)


def withheld(what: str, *, hint: str = "") -> DataError:
    """The fixed error for ``what`` (a constant of the call site, e.g. ``"reading X"``)."""
    text = (
        f"{what} failed in code outside dpfit; its message is withheld because it may quote a "
        "record"
    )
    return DataError(f"{text} ({hint})" if hint else text)


def read_records(
    func: Callable[..., R], /, *args: Any, what: str, hint: str = "", **kwargs: Any
) -> R:
    """``func(*args, **kwargs)``; any exception it raises other than :data:`PASSED` becomes
    :func:`withheld` ``(what, hint=hint)``, with nothing chained (module docstring)."""
    try:
        return func(*args, **kwargs)
    except PASSED:
        raise
    except Exception:  # re-raised below, outside the handler: no __context__
        pass
    raise withheld(what, hint=hint)


def is_missing(value: Any) -> bool:
    """Whether one value is missing (None, NaN, NaT, pandas' NA); False for an array-like."""
    import pandas as pd  # loaded by whoever has records to read; not by ``import dpfit``

    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):  # an array-like cell
        return False


def to_float(value: Any) -> float:
    """One value as a float64; NaN when it is missing or not a number.

    Numbers, bools and numeric strings as Python's ``float`` reads them (``"True"`` and
    ``"False"`` as pandas reads them, 1 and 0; a string with ``_``, which Python reads as a
    digit separator and no CSV writes, is not a number); an integer beyond float64 is
    infinite, as ``"1e400"`` reads.
    """
    if isinstance(value, bool | np.bool_):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        if text in _BOOLS:
            return _BOOLS[text]
        if "_" in text:
            return math.nan
        try:
            return float(text)
        except ValueError:
            return math.nan
    if is_missing(value):
        return math.nan
    try:
        return float(value)
    except OverflowError:  # (copysign would convert the value to float again)
        return math.inf if value > 0 else -math.inf
    except (TypeError, ValueError):
        return math.nan


def float_values(block: Any) -> np.ndarray:
    """``block`` as a float64 array; when it is not numeric (a Dask block whose values are not
    those its metadata declared, say), converted value by value with :func:`to_float`, so that
    a value that is not a number is NaN and makes its record the zero record."""
    try:
        return np.asarray(block, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        values = np.asarray(block, dtype=object)
        return np.fromiter(map(to_float, values.ravel()), np.float64, values.size).reshape(
            values.shape
        )


@dataclass(frozen=True)
class Substitution:
    """How to rebuild a batch: record i reads row ``index[i]`` of the batch (``-1``: an
    all-zero record of the batch's shapes), and ``failed[i]`` says that its result must be
    zeroed (the caller does it)."""

    index: np.ndarray
    failed: np.ndarray


def _fails(evaluate: Callable[[Substitution | None], Any], sub: Substitution) -> bool:
    try:
        evaluate(sub)
    except PASSED:
        raise
    except Exception:
        return True
    return False


def _failing(evaluate: Callable[[Substitution | None], Any], rows: int) -> np.ndarray:
    """The records that raise alone, found by bisection from the whole batch (which raised):
    a part that does not raise holds none, a part that raises is split in two, down to single
    records; k failing records cost O(k log rows) evaluations instead of ``rows``."""
    failed = np.zeros(rows, dtype=bool)
    parts = [np.arange(rows // 2), np.arange(rows // 2, rows)] if rows > 1 else []
    if rows == 1:
        failed[0] = True  # the batch of one raised
    while parts:
        part = parts.pop()
        if part.size == 0 or not _fails(evaluate, Substitution(part, np.zeros(part.size, bool))):
            continue
        if part.size == 1:
            failed[part[0]] = True
        else:
            parts += [part[: part.size // 2], part[part.size // 2 :]]
    return failed


def evaluate_records(
    evaluate: Callable[[Substitution | None], R], rows: int, *, what: str, hint: str = ""
) -> tuple[R, np.ndarray | None]:
    """Evaluate a batch of ``rows`` records so that a record on which it raises counts zero.

    ``evaluate(None)`` computes the batch as it is; ``evaluate(sub)`` the batch rebuilt by a
    :class:`Substitution`. When the whole batch raises (in another library), the records
    that raise alone are found (:func:`_failing`, by bisection); they read another record of
    the batch (the first that does not raise, else an all-zero record), the batch is
    evaluated once more, and the caller zeroes their results. The other records are computed
    in a batch of the same shape as before, so their results do not change.

    Returns
    -------
    result
        ``evaluate``'s value.
    failed : numpy.ndarray of bool, or None
        The records whose result the caller must zero; None when the batch did not raise.

    Raises
    ------
    DataError
        The batch raises although no record raises alone, or the rebuilt batch raises (a
        fixed message: ``what`` and ``hint``).
    """
    try:
        return evaluate(None), None
    except PASSED:
        raise
    except Exception:  # the records that raise alone are found below
        pass
    failed = _failing(evaluate, rows)
    if not failed.any():
        raise withheld(what, hint=hint)
    good = np.flatnonzero(~failed)
    index = np.arange(rows)
    index[failed] = good[0] if good.size else -1
    return read_records(evaluate, Substitution(index, failed), what=what, hint=hint), failed
