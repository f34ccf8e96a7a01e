"""The fitted-model methods shared by dpfit's linear estimators (post-processing only).

An estimator whose ``fit`` stores its :class:`~dpfit.models.Result` with ``_keep`` (which
sets ``result_``, ``privacy_``, ``coef_`` and ``intercept_``) gets ``predict``, ``conf_int``
(with its ``target``) and ``summary`` from :class:`ReleasedLinearModel`; all three read only
the release. ``score`` is scikit-learn's R^2 on the data passed, which is not a release: it
warns (:class:`~dpfit.exceptions.NonPrivateWarning`). The rest of
the statsmodels-like API (``bse``, ``tvalues``, ``pvalues``, ``cov_params()``,
``wald_test()``, ``f_test()``) lives on ``result_``.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
from sklearn.utils.validation import check_is_fitted, validate_data

from .._validation import check_array, user_stacklevel
from ..exceptions import NonPrivateWarning
from .results import Result
from .summary import Summary

__all__ = ["ReleasedLinearModel"]


class ReleasedLinearModel:
    """Mixin: predictions, intervals and the summary of a fitted private linear model."""

    def _keep(self, result: Result, fit_intercept: bool) -> None:
        """Store a fit's release: ``result_``, ``privacy_`` (its ledger snapshot), and
        ``intercept_`` and ``coef_`` read off its estimate (the intercept first, if any)."""
        self.result_ = result
        self.privacy_ = result.ledger
        self.intercept_ = float(result.estimate[0]) if fit_intercept else 0.0
        self.coef_ = np.array(result.estimate[int(fit_intercept) :])

    def predict(self, X: Any) -> np.ndarray:
        """X @ coef_ + intercept_ (post-processing of the release; bounds are not applied)."""
        check_is_fitted(self)
        X_arr = check_array(X, "X", ndim=2)
        validate_data(self, X, reset=False, skip_check_array=True)
        return X_arr @ self.coef_ + self.intercept_

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """R^2 of ``predict(X)`` against ``y`` (scikit-learn's ``RegressorMixin.score``),
        computed on the data passed, without privacy.

        Kept because model selection calls it (``cross_val_score``, ``GridSearchCV``), but it
        is not a release of the fit: it reads every row of ``X`` and ``y`` exactly, so it is
        safe on public data only, such as a public validation set. On the private training
        rows it is the in-sample R^2 that :class:`~dpfit.models.Result` refuses
        (``rsquared``), and on private held-out folds each fold's score is published outside
        the privacy guarantee.

        Warns
        -----
        NonPrivateWarning
            On every call (Python shows it once per calling line by default).
        """
        predicted = self.predict(X)  # checks X first: a malformed X is an error, not a warning
        warnings.warn(
            "score() computes R^2 on the X and y it is given, without privacy: safe on public "
            "data only (e.g. a public validation set); on the private rows it is the in-sample "
            "R^2 that Result.rsquared refuses, and cross-validation on private folds "
            "(cross_val_score, GridSearchCV) publishes each fold's score outside the guarantee",
            NonPrivateWarning,
            stacklevel=user_stacklevel(),
        )
        from sklearn.metrics import r2_score

        return float(r2_score(y, predicted, sample_weight=sample_weight))

    def conf_int(self, alpha: float = 0.05, target: str = "population") -> pd.DataFrame:
        """Level 1 - alpha intervals for ``target`` (``"population"`` or ``"sample"``), one
        row per term (``lower``, ``upper``); see :meth:`Result.conf_int`."""
        check_is_fitted(self)
        return self.result_.conf_int(alpha, target=target)

    def summary(self, alpha: float = 0.05, **kwargs: Any) -> Summary:
        """The statsmodels-like summary of the release (see :meth:`Result.summary`)."""
        check_is_fitted(self)
        return self.result_.summary(alpha, **kwargs)
