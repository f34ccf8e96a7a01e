"""Dask inputs of the model layer: :class:`~dpfit.DPLinearRegression` and :func:`dpfit.ols`.

A Dask DataFrame's design matrix is built on the workers, partition by partition, from a
formulaic model spec made on the frame's *metadata* (its empty ``_meta``) by the same check
as in memory (:mod:`dpfit.models._design`): the columns of the design, hence every public
shape, depend only on the formula and the column dtypes, never on the values. So on Dask as
in memory, stateful transforms are refused and categorical variables need declared levels
(``C(region, levels=[...])``, or a ``pandas.CategoricalDtype`` with known categories), and a
record whose categorical value is not a declared level becomes the zero record.

Missing or non-finite values are not checked up front (every partition is read once before
the first charge, :func:`dpfit.distributed.arrays.read_pass`, but an error there would be
raised by a value): a record with one in any design column becomes the zero record
(:mod:`dpfit.distributed.reduce`), whereas in memory such data are refused. Non-finite
values become the zero record *before* the public rescaling could clip them into the bounds
(:func:`dpfit.distributed.map_rows`).

Only DP-GD (``method="gd"``) runs on Dask; the number of records must be declared
(``n_public``, :mod:`dpfit.distributed.arrays`). The design is built once: both sides of the
formula come from one graph (:func:`fit_data`), and DP-GD persists the rescaled design on the
workers before its first step (:mod:`dpfit.distributed.persist`).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pandas as pd

from .._validation import check_X_y as _check_X_y
from ..distributed import check_dask_rows, is_dask
from ..privacy import Relation, public_n
from ._design import Design, design_spec, materialise, take_null_records

__all__ = ["dask_model_matrix", "fit_data", "frame_columns", "response_name"]


def _memory_data(X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    """Validated float64 arrays; a formula's zero records (all-NaN design rows) become NaN rows
    of X and y, which :func:`dpfit.distributed.map_rows` turns into zero rows."""
    null, y, (X,) = take_null_records(y, X)
    X_arr, y_arr = _check_X_y(X, y)
    if null is not None:
        X_arr = np.where(null[:, None], np.nan, X_arr)
        y_arr = np.where(null, np.nan, y_arr)
    return X_arr, y_arr


def fit_data(
    X: Any, y: Any, *, method: str, n_public: int | None, relation: Relation
) -> tuple[Any, Any, int]:
    """``(X, y, n)`` for a fit: validated NumPy data or Dask arrays, and the public n.

    In memory n follows :func:`dpfit.privacy.public_n` (the row count under replace-one; the
    declared ``n_public``, required, under add/remove), so nothing downstream (summary,
    default delta) sees the private count; on Dask n is always ``n_public``.
    """
    if not (is_dask(X) or is_dask(y)):
        X_arr, y_arr = _memory_data(X, y)
        return X_arr, y_arr, public_n(X_arr.shape[0], n_public, relation)
    if method != "gd":
        raise TypeError(
            f"method={method!r} needs in-memory data; Dask inputs support method='gd' "
            "(DP-GD, one distributed reduction per step)"
        )
    X, y = _one_graph(X, y)
    (X_arr, y_arr), n = check_dask_rows(  # checked again, and persisted, by the algorithm
        {"X": (X, 2), "y": (y, 1)}, n_public=n_public, relation=relation, intermediate=True
    )
    return X_arr, y_arr, n


def _one_graph(X: Any, y: Any) -> tuple[Any, Any]:
    """A Dask DataFrame X and Series y of float64 columns with the same partitions (a formula's
    two sides) as the columns of one Dask array, so that the source they share (a Parquet
    read, the formula's evaluation) is computed once per partition; converted separately,
    each conversion would fuse (and run) its own copy. Other inputs are returned as they are.
    """
    frames = hasattr(X, "columns") and hasattr(y, "to_frame")
    if not (frames and is_dask(X) and is_dask(y) and X.npartitions == y.npartitions):
        return X, y
    if not all(np.dtype(d) == np.float64 for d in [*X.dtypes, y.dtype]):
        return X, y  # a common dtype could be object: converted separately and checked
    import dask.dataframe as dd

    both = dd.concat([X, y.to_frame(name="__response__")], axis=1).to_dask_array()
    p = len(X.columns)
    return both[:, :p], both[:, p]


def frame_columns(X: Any) -> np.ndarray | None:
    """A Dask DataFrame's column names (public metadata), as ``feature_names_in_``; else None."""
    if is_dask(X) and hasattr(X, "columns"):
        return np.asarray([str(c) for c in X.columns], dtype=object)
    return None


def response_name(y: Any) -> str:
    """The name of a pandas or Dask Series response, else ``"y"``."""
    if (isinstance(y, pd.Series) or (is_dask(y) and hasattr(y, "to_frame"))) and y.name:
        return str(y.name)
    return "y"


#: formulaic compiles each factor with Python's ``ast``; on CPython 3.11 compiling in several
#: threads at once can fail ("AST constructor recursion depth mismatch"), and Dask's
#: threaded workers build several partitions at once. One lock per process serialises it.
_FORMULA_LOCK = threading.Lock()


def _partition_matrix(part: pd.DataFrame, design: Design) -> pd.DataFrame:
    with _FORMULA_LOCK:
        return materialise(design, part, refuse_missing=False)


def dask_model_matrix(formula: str, data: Any) -> tuple[Any, Design]:
    """One side of a formula as a lazy Dask DataFrame of float64 columns, and its design.

    The formulaic spec comes from ``data._meta`` (no values); each partition is materialised
    with it on the workers.
    """
    design = design_spec(formula, data._meta)
    empty = pd.DataFrame({c: pd.Series(dtype=np.float64) for c in design.columns})
    return data.map_partitions(_partition_matrix, design, meta=empty), design
