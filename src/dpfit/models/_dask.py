"""Dask inputs of the model layer: :class:`~dpfit.DPLinearRegression` and :func:`dpfit.ols`.

A Dask DataFrame's design matrix is built on the workers, partition by partition, from a
formulaic model spec made on the frame's *metadata* (its empty ``_meta``): the columns of
the design, hence every public shape, depend only on the formula and the column dtypes,
never on the values. Hence the rules for a formula on Dask:

* every variable must have a numeric, bool or categorical dtype with **known categories**
  (declare a string column's levels by converting it first, e.g.
  ``df["region"].astype(pandas.CategoricalDtype(["north", "south"]))``);
* stateful transforms (``center``, ``scale``, ``standardize``, ...) are refused: they
  learn from the data, which would be a release;
* missing or non-finite values are not checked up front (that would need a pass over the
  data): a record with one in any design column becomes the zero record
  (:mod:`dpfit.distributed.reduce`), whereas in memory such data are refused.

Only DP-GD (``method="gd"``) runs on Dask; the number of records must be declared
(``n_public``, :mod:`dpfit.distributed.arrays`).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
from formulaic import model_matrix

from .._validation import check_X_y as _check_X_y
from ..distributed import check_dask_rows, is_dask
from ..privacy import Relation

__all__ = ["dask_model_matrix", "fit_data", "frame_columns", "response_name"]


def fit_data(
    X: Any, y: Any, *, method: str, n_public: int | None, relation: Relation
) -> tuple[Any, Any, int]:
    """``(X, y, n)`` for a fit: validated NumPy data and len(X), or Dask arrays and n_public."""
    if not (is_dask(X) or is_dask(y)):
        X_arr, y_arr = _check_X_y(X, y)
        return X_arr, y_arr, X_arr.shape[0]
    if method != "gd":
        raise TypeError(
            f"method={method!r} needs in-memory data; Dask inputs support method='gd' "
            "(DP-GD, one distributed reduction per step)"
        )
    (X_arr, y_arr), n = check_dask_rows(
        {"X": (X, 2), "y": (y, 1)}, n_public=n_public, relation=relation
    )
    return X_arr, y_arr, n


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


def _check_variables(spec: Any, data: Any) -> None:
    meta = data._meta
    if spec.transform_state:
        raise ValueError(
            "stateful formula transforms (center, scale, standardize, ...) learn from the "
            "data and are not supported on Dask; use I() with public constants"
        )
    for name in sorted(v for v in spec.variables if v in meta.columns):
        dtype = meta[name].dtype
        if isinstance(dtype, pd.CategoricalDtype):
            if not data[name].cat.known:
                raise TypeError(
                    f"column {name!r} is categorical with unknown categories: declare them "
                    "(astype(pandas.CategoricalDtype([...]))); levels are never read off data"
                )
        elif not pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype):
            raise TypeError(
                f"column {name!r} has dtype {dtype}: on Dask every formula variable must be "
                "numeric, bool or categorical with declared categories "
                "(astype(pandas.CategoricalDtype([...])))"
            )


def _partition_matrix(part: pd.DataFrame, spec: Any, columns: list[str]) -> pd.DataFrame:
    out = pd.DataFrame(spec.get_model_matrix(part, na_action="ignore"))
    return out.astype(np.float64).reindex(columns=columns)


def dask_model_matrix(formula: str, data: Any) -> Any:
    """The model matrix of one side of a formula as a lazy Dask DataFrame of float64 columns.

    The formulaic spec comes from ``data._meta`` (no values); each partition is materialised
    with it on the workers.
    """
    meta = data._meta
    with warnings.catch_warnings():  # stateful transforms warn on the empty frame (refused)
        warnings.simplefilter("ignore", RuntimeWarning)
        spec = model_matrix(formula, meta, na_action="ignore").model_spec
    _check_variables(spec, data)
    columns = [str(c) for c in spec.column_names]
    empty = pd.DataFrame({c: pd.Series(dtype=np.float64) for c in columns})
    return data.map_partitions(_partition_matrix, spec, columns, meta=empty)
