"""Checks that convert and return the canonical value, or raise a clear error.

Every public entry point of dpfit validates its inputs here, *before* any data-dependent
computation, privacy charge or noise draw (docs/threat-model.md). Messages name the
parameter and the allowed range; for public hyperparameters they echo the received value,
for data they name the array and the failed property only, never a value or a row index.
"""

from __future__ import annotations

import contextlib
import math
import numbers
import os
import sys
import warnings
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ._records import dtype_kind, read_records
from .exceptions import LargeBudgetWarning

__all__ = [
    "check_X_y",
    "check_alpha",
    "check_array",
    "check_bounds_layout",
    "check_delta",
    "check_epsilon",
    "check_identified",
    "check_int",
    "check_interval_alpha",
    "check_iv_data",
    "check_option",
    "check_positive",
    "check_real",
    "check_rho",
    "check_vector",
    "shown",
    "user_stacklevel",
]

#: rho above this is flagged as a weak guarantee: eps(1e-5) > 19 (CKS), as OpenDP flags
#: large budgets.
LARGE_RHO = 5.0

#: Smallest rho an algorithm accepts: below it the noise std overflows or swamps any answer
#: (Google's differential-privacy library floors epsilon at 2**-50 likewise).
RHO_FLOOR = 2.0**-100


#: Frames attributed to dpfit, not to its caller: the package and contextlib (whose decorator
#: frame wraps every function under ``@quiet_floats()``).
_INTERNAL = (os.path.dirname(os.path.abspath(__file__)) + os.sep, contextlib.__file__)


def user_stacklevel() -> int:
    """``stacklevel`` for :func:`warnings.warn` that points at the first caller outside dpfit.

    A fixed ``stacklevel`` breaks whenever a decorator (``@quiet_floats()``) or a helper adds
    a frame: the warning was attributed to ``contextlib.py``, so filters by module and the
    once-per-location rule saw the wrong place. As pandas' ``find_stack_level``, this counts
    the frames that belong to dpfit (or to contextlib) above the caller of ``warnings.warn``.
    """
    frame, level = sys._getframe(1), 1  # the function that calls warnings.warn
    while frame is not None and frame.f_code.co_filename.startswith(_INTERNAL):
        frame, level = frame.f_back, level + 1
    return level


def shown(value: Any) -> str:
    """``repr(value)`` for a scalar (a string, number, bool or None); else its type's name.

    A message may echo a public option it refuses, but an array or a frame passed where an
    option belongs (arguments swapped, a column passed by mistake) may be the private data,
    whose values no message quotes (docs/threat-model.md): it is named by its type only.
    """
    if value is None or isinstance(value, str | bytes | numbers.Number):
        return repr(value)
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def _as_scalar(value: Any, name: str) -> Any:
    """Unwrap numpy scalars and 0-d arrays; reject arrays of size > 1."""
    if isinstance(value, np.ndarray):
        if value.size != 1 or value.ndim > 1:
            raise TypeError(f"{name} must be a scalar, got an array of shape {value.shape}")
        value = value.reshape(()).item()
    elif isinstance(value, np.generic):
        value = value.item()
    return value


def check_real(
    value: Any,
    name: str,
    *,
    low: float = -math.inf,
    high: float = math.inf,
    low_open: bool = True,
    high_open: bool = True,
) -> float:
    """Return ``float(value)`` if it is a real number in the given interval, else raise.

    NaN is always rejected (comparisons with NaN are False, so ``not (low < v)`` catches it).
    ``bool`` is rejected although it is an ``int``.
    """
    if value is None:
        raise TypeError(f"{name} is required")
    value = _as_scalar(value, name)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    v = float(value)
    ok_low = (low < v) if low_open else (low <= v)
    ok_high = (v < high) if high_open else (v <= high)
    if not (ok_low and ok_high):
        if not math.isfinite(v):  # nan, or an infinity the interval leaves out
            raise ValueError(f"{name} must be a finite number, got {v!r}")
        lb = "(" if low_open else "["
        rb = ")" if high_open else "]"
        raise ValueError(f"{name} must be in {lb}{low}, {high}{rb}, got {v!r}")
    return v


def check_positive(value: Any, name: str) -> float:
    """Return a finite float > 0."""
    v = check_real(value, name)
    if not (v > 0 and math.isfinite(v)):
        raise ValueError(f"{name} must be finite and > 0, got {v!r}")
    return v


def check_rho(value: Any, name: str = "rho", *, warn: bool = True) -> float:
    """Return a zCDP parameter in [RHO_FLOOR, inf); warn when it is large.

    ``warn=False`` is for a caller that checks a rho its user's own check has already warned
    about (an estimator validating early, or passing its budget on to an algorithm): a flag
    rather than ``warnings.catch_warnings()``, which is not thread-safe.
    """
    v = check_positive(value, name)
    if v < RHO_FLOOR:
        raise ValueError(
            f"{name} must be >= {RHO_FLOOR:g} (noise scale not finite or meaningless), got {v!r}"
        )
    if warn and v > LARGE_RHO:
        warnings.warn(
            f"{name}={v:g} is a weak privacy guarantee (epsilon > 19 at delta=1e-5)",
            LargeBudgetWarning,
            stacklevel=user_stacklevel(),
        )
    return v


def check_epsilon(value: Any, name: str = "epsilon") -> float:
    """Return a target epsilon: finite and > 0."""
    return check_positive(value, name)


def check_bounds_layout(value: Any, name: str, *, size: int) -> None:
    """Refuse bounds laid out as diffprivlib's ``(lower, upper)`` arrays, with a hint.

    dpfit takes one (low, high) pair per column (or a mapping from column name to its pair);
    diffprivlib's estimators take ``bounds=(lower, upper)``, two arrays of length p. A tuple
    of two lists or arrays, or an array of shape (2, p) when p != 2, is that layout: read
    as pairs it would silently bound the wrong columns. A tuple of two tuples stays a pair
    per column.
    """
    hint = (
        f"{name} looks like diffprivlib's (lower, upper) arrays; dpfit takes one (low, high) "
        f"pair per column: {name}=list(zip(lower, upper)), or a mapping "
        "{column: (low, high)}"
    )
    if (
        isinstance(value, tuple)
        and len(value) == 2
        and all(isinstance(part, list | np.ndarray) for part in value)
        and all(np.ndim(part) == 1 and len(part) == size for part in value)
    ):
        raise ValueError(hint)
    shape = np.shape(value) if not isinstance(value, dict) else ()
    if size != 2 and shape == (2, size):
        raise ValueError(hint)


def check_delta(value: Any, name: str = "delta", *, n: int | None = None) -> float:
    """Return delta in the open interval (0, 1), with a specific message for delta = 0.

    With the public dataset size ``n``, warn when delta > 1/n: such a delta allows a
    mechanism that publishes one whole record.
    """
    v = check_real(value, name)
    if v == 0.0:
        raise ValueError(f"{name} must be > 0: Gaussian noise cannot give delta = 0")
    if not (0.0 < v < 1.0):
        raise ValueError(f"{name} must be in (0, 1), got {v!r}")
    if n is not None and v > 1.0 / n:
        warnings.warn(
            f"{name}={v:g} exceeds 1/n = {1.0 / n:g}: a guarantee this weak allows releasing "
            "a whole record; use delta < 1/n",
            LargeBudgetWarning,
            stacklevel=user_stacklevel(),
        )
    return v


def check_alpha(value: Any, name: str = "alpha") -> float:
    """Return a significance level in (0, 1) (a CI has level 1 - alpha)."""
    return check_real(value, name, low=0.0, high=1.0)


def check_interval_alpha(value: Any, name: str = "alpha") -> float:
    """Return the miss rate alpha of a 1 - alpha interval, in (0, 0.5).

    statsmodels' ``conf_int(alpha=0.05)`` convention: alpha is the probability that the
    interval misses, not its level. A value of 0.5 or more (``alpha=0.95`` meant as "95%")
    would silently print intervals of level 1 - alpha <= 50%, so it is refused with a hint,
    and so is a level in percent (``alpha=95``).
    """
    level = check_real(value, name)
    if 50.0 <= level < 100.0:
        raise ValueError(
            f"{name} must be in (0, 0.5), got {level:g}: {name} is the miss rate, not the "
            f"interval's level in percent; for {level:g}% intervals give {name} = "
            f"{1 - level / 100:.3g}"
        )
    alpha = check_real(value, name, low=0.0, high=1.0)
    if alpha >= 0.5:
        raise ValueError(
            f"{name} must be in (0, 0.5), got {alpha:g}: {name} is the miss rate, 1 minus the "
            f"interval's level (0.05 for 95% intervals), so {alpha:g} would print "
            f"{100 * (1 - alpha):g}% intervals; did you mean {1 - alpha:.3g}?"
        )
    return alpha


def check_int(value: Any, name: str, *, low: int = 1, high: float = math.inf) -> int:
    """Return an ``int`` in [low, high]; ``bool`` and non-integral numbers are a TypeError."""
    if value is None:
        raise TypeError(f"{name} is required")
    value = _as_scalar(value, name)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    v = int(value)
    if not (low <= v <= high):
        raise ValueError(f"{name} must be in [{low}, {high}], got {v!r}")
    return v


def check_option(value: Any, name: str, options: Iterable[str]) -> str:
    """Return ``value`` if it is one of ``options`` (one spelling each), else raise."""
    options = tuple(options)
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{name} must be one of {list(options)}, got {shown(value)}")
    return value


def reject_sparse(value: Any, name: str) -> None:
    """Raise TypeError for a scipy.sparse matrix (dense input is required)."""
    if hasattr(value, "tocsr") and hasattr(value, "nnz"):
        raise TypeError(f"{name} is a scipy.sparse matrix; pass a dense array (X.toarray())")


def _reject_dask(value: Any, name: str) -> None:
    if type(value).__module__.partition(".")[0] == "dask":
        raise TypeError(
            f"{name} is a Dask collection, which this function would load into memory; the "
            "full-batch private algorithms take Dask arrays directly (see docs/dask.md), "
            "otherwise pass NumPy data"
        )


def check_array(value: Any, name: str, *, ndim: int, finite: bool = True) -> np.ndarray:
    """Return ``value`` as a C-contiguous float64 array with ``ndim`` dimensions and finite entries.

    ``finite=False`` leaves out the finiteness check, for a caller that proves it in a pass
    of its own over the values (and raises :func:`not_finite_error` otherwise).

    Integer and low-precision float inputs are up-cast to float64 before any arithmetic, so
    no integer wrap-around or float32 summation error reaches a sensitivity.
    Dask collections are refused rather than silently loaded into memory. The conversion runs
    behind the record boundary (:func:`dpfit._records.read_records`): another library's error
    (a ragged list, an ``__array__`` that raises) is refused with a fixed message, and the
    dtype is named by its kind (``str``, never ``<U10``, whose length is a record's).
    """
    reject_sparse(value, name)
    _reject_dask(value, name)
    arr = read_records(np.asarray, value, what=f"reading {name} as an array")
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        raise TypeError(
            f"{name} must have a numeric (bool, int or float) dtype, got {dtype_kind(arr.dtype)}"
        )
    if arr.ndim != ndim:
        hint = " (use X.reshape(-1, 1) for a single feature)" if ndim == 2 and arr.ndim == 1 else ""
        hint = " (use y.ravel())" if ndim == 1 and arr.ndim == 2 else hint
        raise ValueError(f"{name} must be {ndim}-dimensional, got {arr.ndim} dimensions{hint}")
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    if arr.shape[0] == 0:
        raise ValueError(f"{name} has no rows (n = 0)")
    if ndim == 2 and arr.shape[1] == 0:
        raise ValueError(f"{name} has no columns")
    if finite and not _all_finite(arr):
        raise not_finite_error(name, _nonfinite_columns(value, arr))
    return arr


def not_finite_error(name: str, columns: Sequence[str] = ()) -> ValueError:
    """The error for an array with a NaN or infinite value.

    It names the array and, where the input was a frame, its columns that hold one (column
    names are the public schema); never a record or a value.
    """
    where = f" (column{'s' if len(columns) > 1 else ''} {', '.join(map(repr, columns))})"
    return ValueError(
        f"{name} contains NaN or infinite values{where if columns else ''}; dpfit does not "
        "drop records (that would make n depend on the data): remove or replace them first "
        "and treat n after removal as public"
    )


def _nonfinite_columns(value: Any, arr: np.ndarray) -> list[str]:
    """The names of a frame's columns holding a non-finite entry ([] for unnamed input)."""
    columns = getattr(value, "columns", None)
    if columns is None or arr.ndim != 2 or len(columns) != arr.shape[1]:
        return []
    finite = np.isfinite(arr).all(axis=0)
    return [str(c) for c, ok in zip(columns, finite, strict=True) if not ok]


def _all_finite(arr: np.ndarray) -> bool:
    """Whether every entry is finite. A finite sum proves it (NaN and inf propagate through any
    summation order) in one pass with no temporary; a non-finite sum (a non-finite entry, or
    overflow on finite data) is settled by the exact elementwise check."""
    with np.errstate(over="ignore", invalid="ignore"):
        total = np.add.reduce(arr, axis=None)
    return bool(np.isfinite(total)) or bool(np.isfinite(arr).all())


def check_X_y(  # noqa: N802 - scikit-learn spelling
    X: Any, y: Any, *, x_name: str = "X", y_name: str = "y"
) -> tuple[np.ndarray, np.ndarray]:
    """Validate a design matrix and a response of matching length."""
    if getattr(X, "ndim", None) == 1 and getattr(y, "ndim", None) == 2:  # arrays and frames
        raise ValueError(
            f"{x_name} is 1-dimensional and {y_name} 2-dimensional: did you swap them? "
            f"fit({x_name}, {y_name}) takes the design matrix first, then the response"
        )
    X = check_array(X, x_name, ndim=2)
    y = check_array(y, y_name, ndim=1)
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"{x_name} and {y_name} must have the same number of rows")
    return X, y


def check_vector(value: Any, name: str, *, size: int) -> np.ndarray:
    """Return a finite float64 vector of the given length (e.g. an initial point theta_0)."""
    arr = check_array(value, name, ndim=1)
    if arr.shape[0] != size:
        raise ValueError(f"{name} must have length {size}, got {arr.shape[0]}")
    return arr


def check_iv_data(
    X: Any, y: Any, Z: Any, *, x_name: str = "X", y_name: str = "y", z_name: str = "Z"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate IV data: regressors X (n x p), response y (n,), instruments Z (n x q), q >= p.

    Only shapes and finiteness are checked (public properties); rank is a release and is
    never checked here (docs/liang2025.md).
    """
    X, y = check_X_y(X, y, x_name=x_name, y_name=y_name)
    Z = check_array(Z, z_name, ndim=2)
    if Z.shape[0] != X.shape[0]:
        raise ValueError(f"{z_name} and {x_name} must have the same number of rows")
    check_identified(X.shape[1], Z.shape[1], x_name=x_name, z_name=z_name)
    return X, y, Z


def check_identified(p: int, q: int, *, x_name: str = "X", z_name: str = "Z") -> None:
    """Raise unless there are at least as many instrument columns q as regressors p (public)."""
    if q < p:
        raise ValueError(
            f"under-identified: {z_name} has {q} instrument column(s) but {x_name} has "
            f"{p} regressor column(s); IV needs at least as many instruments as "
            "regressors (exogenous regressors count as their own instruments)"
        )
