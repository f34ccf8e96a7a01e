"""Preprocessing with public constants only: ``PublicScaler``.

scikit-learn's ``StandardScaler`` learns each column's mean and standard deviation from the
data it is fitted on; in ``Pipeline(StandardScaler(), DPLinearRegression(...))`` those are the
private data's mean and sd, an unprotected release that also shapes every scaled record, so
the fit is no longer covered by its privacy guarantee (dpfit warns:
:class:`~dpfit.exceptions.PrivatePreprocessingWarning`). :class:`PublicScaler` scales with
public bounds instead and learns nothing from the data: ``fit`` only checks the number of
columns (and their names), as scikit-learn's ``FunctionTransformer`` does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from ._validation import check_array

__all__ = ["PublicScaler"]


class PublicScaler(TransformerMixin, BaseEstimator):
    """Map each column from public bounds [low, high] onto [-1, 1]; learns nothing from data.

    x -> (2 x - low - high) / (high - low), then (with ``clip=True``) clipped to [-1, 1].
    A drop-in replacement for ``StandardScaler`` in front of a dpfit estimator: the scaled
    columns have the public bounds (-1, 1), so the estimator can be given
    ``bounds=[(-1, 1)] * n_features``.

    Parameters
    ----------
    bounds : sequence of (float, float), or mapping of str to (float, float)
        Public (low, high) of every column, in column order, or keyed by column name (for a
        DataFrame X). Choose them without looking at the data (a questionnaire's range, a
        legal limit); bounds read off the data are themselves a release.
    clip : bool, default=True
        Clip the scaled values into [-1, 1] (a fixed, per-record map).

    Attributes
    ----------
    low_, high_ : ndarray of shape (n_features,)
        The public bounds in column order (copied from ``bounds``, not learned).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        When X has string column names.

    Examples
    --------
    >>> import numpy as np
    >>> from dpfit.preprocessing import PublicScaler
    >>> PublicScaler(bounds=[(0, 10), (0, 1)]).fit_transform(np.array([[5.0, 1.0]]))
    array([[0., 1.]])
    """

    #: Read by dpfit's Pipeline check: this step learns nothing from the data.
    _dpfit_public = True

    def __init__(self, *, bounds: Any = None, clip: bool = True) -> None:
        self.bounds = bounds
        self.clip = clip

    def _bounds(self, names: Sequence[str] | None, p: int) -> tuple[np.ndarray, np.ndarray]:
        from .models._scaling import bounds_in_order, check_bounds

        if self.bounds is None:
            raise TypeError(
                "PublicScaler needs bounds: public (low, high) of every column, e.g. "
                "bounds=[(0, 18), (0, 30)] or bounds={'educ': (0, 18), 'exper': (0, 30)}"
            )
        if isinstance(self.bounds, Mapping):
            if names is None:
                names = [f"x{j}" for j in range(p)]
            pairs = bounds_in_order(self.bounds, list(names), "for every column of X")
        else:
            pairs = self.bounds
        checked = check_bounds(pairs, "bounds", size=p)
        return checked[:, 0].copy(), checked[:, 1].copy()

    def fit(self, X: Any, y: Any = None) -> PublicScaler:
        """Check X's width and the bounds; nothing is learned from X's values."""
        if not isinstance(self.clip, bool):
            raise TypeError(f"clip must be a bool, got {type(self.clip).__name__}")
        validate_data(self, X, reset=True, skip_check_array=True)
        p = check_array(X, "X", ndim=2).shape[1]
        names = getattr(self, "feature_names_in_", None)
        self.low_, self.high_ = self._bounds(None if names is None else list(names), p)
        return self

    def transform(self, X: Any) -> np.ndarray:
        """The scaled columns, in [-1, 1] when ``clip``."""
        check_is_fitted(self)
        validate_data(self, X, reset=False, skip_check_array=True)
        arr = check_array(X, "X", ndim=2)
        scaled = (2.0 * arr - self.low_ - self.high_) / (self.high_ - self.low_)
        return np.clip(scaled, -1.0, 1.0) if self.clip else scaled

    def inverse_transform(self, X: Any) -> np.ndarray:
        """Back to the original units: x = (z (high - low) + low + high) / 2."""
        check_is_fitted(self)
        arr = check_array(X, "X", ndim=2)
        return (arr * (self.high_ - self.low_) + self.low_ + self.high_) / 2.0

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """The input names (one output column per input column)."""
        check_is_fitted(self)
        names = getattr(self, "feature_names_in_", None)
        if input_features is not None:
            return np.asarray(input_features, dtype=object)
        if names is not None:
            return np.asarray(names, dtype=object)
        return np.asarray([f"x{j}" for j in range(self.n_features_in_)], dtype=object)
