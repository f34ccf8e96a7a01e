"""Predictions for new public x from a released fit, and the in-sample quantities it refuses.

``predict(exog)`` is x' theta-hat and ``get_prediction(exog)`` adds the standard error of the
mean prediction, sqrt(x' V x), with V the released covariance (:meth:`Result.covariance`) and
its Student-t interval, as statsmodels' ``get_prediction(...).summary_frame()`` gives
``mean``, ``mean_se``, ``mean_ci_lower`` and ``mean_ci_upper``. All of it is post-processing of
the release and of ``exog``, which must be public (new x, a grid, a profile): it costs no
privacy. There is no observation interval (``obs_ci``): it needs the residual variance, which
no fit releases.

In-sample fitted values, residuals and R^2 are refused: each is computed from the private rows
(one fitted value per record reveals that record's x), so none is a release.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from .._validation import check_interval_alpha

__all__ = ["PredictMixin", "PredictionResult"]

#: statsmodels' in-sample attributes and why a private fit has none of them.
_IN_SAMPLE = {
    "fittedvalues": "the fitted value of every private record",
    "resid": "the residual of every private record",
    "resid_pearson": "the residual of every private record",
    "rsquared": "R^2, computed from the private residuals",
    "rsquared_adj": "R^2, computed from the private residuals",
    "ssr": "the sum of the private residuals' squares",
    "llf": "the log-likelihood of the private records",
    "aic": "an information criterion from the private records' likelihood",
    "bic": "an information criterion from the private records' likelihood",
}


@dataclass(frozen=True, kw_only=True)
class PredictionResult:
    """Mean predictions at public x with their standard errors (statsmodels' names).

    ``dof`` holds, per row, the smallest degrees of freedom of the coefficients the row
    involves (``inf``: normal quantiles).
    """

    predicted_mean: np.ndarray
    se_mean: np.ndarray
    dof: np.ndarray
    target: str
    index: Any = None

    def conf_int(self, alpha: float = 0.05) -> np.ndarray:
        """(k, 2) array of level 1 - alpha intervals for the mean prediction."""
        alpha = check_interval_alpha(alpha)
        q = np.where(
            np.isfinite(self.dof),
            stats.t.ppf(1 - alpha / 2, np.where(np.isfinite(self.dof), self.dof, 1.0)),
            stats.norm.ppf(1 - alpha / 2),
        )
        half = q * self.se_mean
        return np.column_stack([self.predicted_mean - half, self.predicted_mean + half])

    def summary_frame(self, alpha: float = 0.05) -> pd.DataFrame:
        """``mean``, ``mean_se``, ``mean_ci_lower``, ``mean_ci_upper``, one row per x."""
        ci = self.conf_int(alpha)
        return pd.DataFrame(
            {
                "mean": self.predicted_mean,
                "mean_se": self.se_mean,
                "mean_ci_lower": ci[:, 0],
                "mean_ci_upper": ci[:, 1],
            },
            index=self.index,
        )


def _from_frame(result: Any, exog: pd.DataFrame) -> np.ndarray:
    names = list(result.names)
    terms = [n for n in names if n != "Intercept"]
    if all(term in exog.columns for term in terms):
        design = exog[terms].to_numpy(dtype=np.float64)
    elif result.predictors:
        from ._design import materialise

        _check_variables(result.predictors, terms, exog)
        parts = [materialise(d, exog, refuse_missing=True) for d in result.predictors]
        built = pd.concat(parts, axis=1)
        built = built.loc[:, ~built.columns.duplicated()]
        missing = [t for t in terms if t not in built.columns]
        if missing:  # pragma: no cover - the designs are the fit's own
            raise ValueError(f"exog: could not build the terms {missing}")
        design = built[terms].to_numpy(dtype=np.float64)
    else:
        missing = [t for t in terms if t not in exog.columns]
        raise ValueError(f"exog lacks the columns {missing} (one per term of the fit)")
    return _with_intercept(names, design, has_intercept="Intercept" in names)


def _check_variables(designs: Any, terms: list[str], exog: pd.DataFrame) -> None:
    """Refuse ``exog`` without a column the formula reads, naming the missing ones (the
    formula's variables and the fit's terms are public)."""
    needed = [c for d in designs for c in (*d.numeric, *(col for col, _ in d.categoricals))]
    needed = list(dict.fromkeys(needed))
    missing = [c for c in needed if c not in exog.columns]
    if missing:
        raise ValueError(
            f"exog lacks the columns {missing}: give one column per variable of the formula "
            f"({needed}), or one per term of the fit ({terms})"
        )


def _with_intercept(names: list[str], design: np.ndarray, *, has_intercept: bool) -> np.ndarray:
    if has_intercept:
        position = names.index("Intercept")
        design = np.insert(design, position, 1.0, axis=1)
    return design


def exog_matrix(result: Any, exog: Any) -> np.ndarray:
    """The (k, p) design of public ``exog``: a frame of the formula's variables (its design
    is built as in the fit) or of the term names (or a dict of them, or a list of such
    records, as statsmodels takes), or an array with one column per term (the intercept's
    column may be left out)."""
    names = list(result.names)
    p = len(names)
    if isinstance(exog, pd.Series):
        exog = exog.to_frame().T
    if isinstance(exog, Mapping):  # statsmodels' dict of variables: scalars or equal lists
        exog = pd.DataFrame({k: np.atleast_1d(v) for k, v in exog.items()})
    elif isinstance(exog, (list, tuple)) and exog and all(isinstance(r, Mapping) for r in exog):
        exog = pd.DataFrame(list(exog))  # a list of records
    if isinstance(exog, pd.DataFrame):
        design = _from_frame(result, exog)
    else:
        arr = np.asarray(exog, dtype=np.float64)
        arr = arr.reshape(1, -1) if arr.ndim == 1 else arr
        if arr.ndim != 2:
            raise ValueError(f"exog must be 1- or 2-dimensional, got {arr.ndim} dimensions")
        if "Intercept" in names and arr.shape[1] == p - 1:
            arr = _with_intercept(names, arr, has_intercept=True)
        if arr.shape[1] != p:
            raise ValueError(
                f"exog must have {p} columns (one per term: {names}), or {p - 1} without the "
                f"intercept, got {arr.shape[1]}"
            )
        design = arr
    bad = np.flatnonzero(~np.isfinite(design).all(axis=1))
    if bad.size:  # exog is public: its rows may be named
        raise ValueError(
            f"exog rows {bad[:10].tolist()} are not finite (or outside a categorical term's "
            "declared levels)"
        )
    return design


class PredictMixin:
    """``predict``, ``get_prediction`` and the refusal of in-sample quantities for a result."""

    def predict(self, exog: Any) -> np.ndarray:
        """x' theta-hat for each row of public ``exog`` (see :func:`exog_matrix`).

        Post-processing of the release: no privacy cost, and ``exog`` must be public (new
        x, never the private rows: their predictions are in-sample fitted values).
        """
        return exog_matrix(self, exog) @ self.estimate

    def get_prediction(self, exog: Any, *, target: str = "population") -> PredictionResult:
        """Mean predictions at public ``exog`` with standard errors sqrt(x' V x) from the
        released covariance for ``target`` (:meth:`covariance`); ``.summary_frame(alpha)``
        gives the intervals. Post-processing only (module docstring)."""
        design = exog_matrix(self, exog)
        cov = self.covariance(target)
        se = np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", design, cov.cov, design), 0.0))
        dof = np.where(design != 0.0, cov.dof, np.inf).min(axis=1)
        index = exog.index if isinstance(exog, pd.DataFrame) else None
        return PredictionResult(
            predicted_mean=design @ self.estimate,
            se_mean=se,
            dof=dof,
            target=cov.target,
            index=index,
        )

    def __getattr__(self, name: str) -> Any:
        if name in _IN_SAMPLE:
            raise AttributeError(
                f"{type(self).__name__}.{name} is not available: it would be "
                f"{_IN_SAMPLE[name]}, computed on the private rows and not a release. Use "
                "predict(exog) or get_prediction(exog) on public x instead"
            )
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
