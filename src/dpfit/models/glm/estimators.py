"""``DPLogisticRegression`` and ``DPPoissonRegressor``: scikit-learn estimators for private GLMs.

Both follow the scikit-learn contract as :class:`~dpfit.DPLinearRegression` does (``__init__``
only stores its parameters; ``fit`` validates them into a frozen config before it reads any
data, fits through :func:`~dpfit.models.glm._fit.fit_glm` and keeps a frozen
:class:`~dpfit.models.glm.GLMResult` as ``result_``, to which ``conf_int`` and ``summary``
delegate). The classifier gives ``classes_``, ``decision_function``, ``predict_proba``,
``predict`` and ``score`` (accuracy); the regressor ``predict`` (the mean count) and ``score``.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from ..._floats import quiet_floats
from ..._validation import check_array, user_stacklevel
from ...distributed import is_dask
from ...exceptions import UndeclaredLevelsWarning
from ...mechanisms import make_noise_source
from ...privacy import Budget
from ...privacy.unit_level import grouped_unit
from .._constraints import check_budget, require_y, store_params
from .._dask import frame_columns, response_name
from .._refits import note_fit
from .._upstream import warn_fitted_upstream
from ..summary import Summary
from ._fit import fit_glm, glm_config
from ._offsets import record_offsets
from .results import GLMResult

__all__ = ["DPLogisticRegression", "DPPoissonRegressor"]

_SHARED_DOC = """
    bounds : array-like of shape (n_features, 2), (low, high), or mapping
        Public bounds of every feature (required): one (low, high) pair per feature, one pair
        for all, or a mapping keyed by column name. Features are clipped into them and mapped
        to [-1, 1] before fitting; coefficients are mapped back exactly. Never derive them
        from the data.
    fit_intercept : bool, default=True
    steps, step_size : int, float, default=200, 0.5
        Noisy steps and step size of the preconditioned descent (docs/glm.md).
    m, burn_in : int, default=10, 20
        Batch means of the iterates after the burn-in (the estimate and the privacy part of
        the interval).
    relation : {"replace-one", "add-remove"}, default="replace-one"
    n_public : int, optional
        Public record count; required under ``relation="add-remove"`` and on Dask.
    random_state : None, int or numpy.random.Generator, optional
        None draws fresh OS entropy (use this for real releases).
    secure : bool, default=False
        Draw exact discrete Gaussian noise through OpenDP.
    max_rows_per_unit : int, optional
        With ``fit(X, y, groups=unit_labels)``: the public cap K on the rows one privacy unit
        (a person) contributes; every release then protects all rows of a unit, ``n_public``
        counts units, the interval is cluster-robust by unit and no margins are released
        (docs/privacy-units.md).
"""


class _GLMEstimator(BaseEstimator):
    """What both estimators share: the fit through :func:`fit_glm` and the release's methods."""

    _family = "binomial"

    def _fit(self, X: Any, y: Any, *, offset: Any, budget: Budget | None, link: str | None,
             y_bounds: Any, groups: Any) -> GLMResult:  # fmt: skip
        config = glm_config(self, family=self._family, link=link, y_bounds=y_bounds)
        unit = grouped_unit(groups, self.max_rows_per_unit)
        check_budget(budget)
        warn_fitted_upstream(self)
        source = make_noise_source(self.random_state, secure=config.secure, name="random_state")
        validate_data(self, X, y, reset=True, skip_check_array=True)
        if (columns := frame_columns(X)) is not None:
            self.feature_names_in_ = columns
        names = getattr(self, "feature_names_in_", None)
        result = fit_glm(
            X, y, config, bounds=self.bounds, offset=offset,
            budget=budget, source=source, names=None if names is None else list(names),
            response=response_name(y), groups=groups, unit=unit,
        )  # fmt: skip
        note_fit(type(self).__name__, config.rho, X, y, n=result.n, budget=budget)
        self.result_, self.privacy_ = result, result.ledger
        return result

    def _linear(self, X: Any) -> np.ndarray:
        check_is_fitted(self)
        X_arr = check_array(X, "X", ndim=2)
        validate_data(self, X, reset=False, skip_check_array=True)
        return X_arr @ np.ravel(self.coef_) + float(np.ravel(self.intercept_)[0])

    def conf_int(self, alpha: float = 0.05, target: str = "population") -> pd.DataFrame:
        """Level 1 - alpha intervals for ``target`` (see :meth:`Result.conf_int`)."""
        check_is_fitted(self)
        return self.result_.conf_int(alpha, target=target)

    def summary(self, alpha: float = 0.05, **kwargs: Any) -> Summary:
        """The statsmodels-like summary of the release (see :meth:`Result.summary`)."""
        check_is_fitted(self)
        return self.result_.summary(alpha, **kwargs)


#: What a classifier with other than two classes is told (no label and no count of labels).
_BINARY_ONLY = (
    "DPLogisticRegression is a binary classifier (multinomial logistic regression is not "
    "implemented). Declare the event publicly with classes=[non-event, event] (every other "
    "label is then a non-event), or fit one classifier per event (one-vs-rest)"
)


def _classes(declared: Any, labels: np.ndarray) -> np.ndarray:
    """The two public labels: ``declared``; (0, 1) for numbers (or bools); else the labels of
    y, read off the data with an UndeclaredLevelsWarning (which labels occur is then released
    with the fit)."""
    if declared is not None:
        classes = np.asarray(declared)
        if classes.shape != (2,) or classes[0] == classes[1]:
            raise ValueError(
                f"classes must be two distinct labels [non-event, event], got {declared!r}: "
                f"{_BINARY_ONLY}"
            )
        return classes
    if labels.dtype == bool:
        return np.array([False, True])
    if np.issubdtype(labels.dtype, np.number):  # 0/1 coding (clipped into [0, 1] at fit)
        return np.array([0, 1])
    try:
        classes = np.unique(labels)
    except TypeError:  # labels of types that do not compare (text and numbers): numpy's words
        raise ValueError(
            "DPLogisticRegression: y holds labels of more than one type (text mixed with "
            "numbers, say), which cannot be ordered into two classes: code y as 0/1, or "
            "declare its labels publicly with classes=[non-event, event]"
        ) from None
    if classes.size != 2:  # how many labels occur is not shown: it depends on the records
        raise ValueError(
            "DPLogisticRegression: y holds text labels that were not declared, and they are "
            f"not exactly two; {_BINARY_ONLY}"
        )
    warnings.warn(
        "DPLogisticRegression: the two class labels were read off the private y (which labels "
        "occur is released with the fit); declare them publicly with classes=[non-event, "
        "event] (numeric labels are 0/1 and need nothing)",
        UndeclaredLevelsWarning,
        stacklevel=user_stacklevel(),
    )
    return classes


def _dask_classes(declared: Any, y: Any) -> np.ndarray:
    """The two public labels of a Dask y, from its dtype (schema) or ``declared`` only: text
    labels on Dask must be declared (reading them would compute the private column)."""
    if getattr(y, "ndim", 1) != 1:
        raise ValueError(f"y must be 1-dimensional, got {y.ndim} dimensions (use y.ravel())")
    kind = pd.api.types
    if kind.is_bool_dtype(y.dtype):
        return _classes(declared, np.empty(0, dtype=bool))
    if declared is None and not kind.is_numeric_dtype(y.dtype):
        raise TypeError(
            "DPLogisticRegression on Dask: y holds text labels; declare them publicly with "
            "classes=[non-event, event] (numeric labels are 0/1 and need nothing)"
        )
    return _classes(declared, np.empty(0))


def check_labels(y: Any) -> np.ndarray:
    """The labels of a classifier's y as a 1-D array. Their values are not inspected: a
    numeric y is 0/1 coding whatever values occur (a refusal of, say, a "continuous" y would
    depend on one record's label)."""
    labels = np.asarray(y)
    if labels.ndim != 1:
        raise ValueError(f"y must be 1-dimensional, got {labels.ndim} dimensions (use y.ravel())")
    if np.issubdtype(labels.dtype, np.number):  # missing labels are refused, as for X
        check_array(labels, "y", ndim=1)
    return labels


class DPLogisticRegression(ClassifierMixin, _GLMEstimator):
    """Differentially private logistic (or probit) regression with population intervals.

    Fits the binary GLM by preconditioned DP gradient descent on the negative log-likelihood
    and releases the bread and meat of its sandwich, so that ``conf_int()`` covers the
    population coefficients (sampling + privacy error; docs/glm.md). With the logit link
    every record's gradient is bounded by its row norm, so clipping never changes the fit.

    Parameters
    ----------
    rho : float
        zCDP budget of the whole fit (required).
    link : {"logit", "probit"}, default="logit"
    margins : bool, default=True
        Spend 2% of rho on what average marginal effects need (``result_.get_margeff()``).
    classes : sequence of two labels, optional
        The public labels (non-event, event); a record with any label other than the event
        is a non-event. By default (0, 1) for numeric (or bool) labels, whatever values
        occur (numbers are clipped into [0, 1], as :func:`dpfit.logit` clips its response, so
        a 1/2 coding reads as all events and the fit warns); text labels are read off the
        data, with an ``UndeclaredLevelsWarning``.
    """

    __doc__ += _SHARED_DOC + """
    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The two labels; the second is the event (y = 1).
    coef_ : ndarray of shape (1, n_features)
    intercept_ : ndarray of shape (1,)
    result_ : GLMResult
    privacy_ : PrivacyLedger
    """  # fmt: skip

    def __init__(
        self, *, rho: float | None = None, link: str = "logit", bounds: Any = None,
        fit_intercept: bool = True, steps: int = 200, step_size: float = 0.5, m: int = 10,
        burn_in: int = 20, margins: bool = True, classes: Any = None,
        relation: str = "replace-one", n_public: int | None = None, random_state: Any = None,
        secure: bool = False, max_rows_per_unit: int | None = None,
    ) -> None:  # fmt: skip
        store_params(self, locals())

    @quiet_floats()
    def fit(
        self, X: Any, y: Any, *, budget: Budget | None = None, groups: Any = None
    ) -> DPLogisticRegression:
        """Fit the private classifier; spends ``rho`` from ``budget`` when one is given.

        ``groups`` (one privacy-unit label per row, in memory) protects all rows of a unit
        (with ``max_rows_per_unit``).

        Raises
        ------
        TypeError, ValueError
            Invalid parameters or data (undeclared labels other than two), before anything
            is charged or drawn.
        BudgetExceededError
            ``budget`` cannot afford ``rho``; nothing was charged or drawn.
        """
        require_y(self, y)
        if not is_dask(X):
            check_array(X, "X", ndim=2)  # X's own errors (sparse, 1-D, ...) before y's
        if is_dask(y):  # lazily: the labels are never read here
            self.classes_ = _dask_classes(self.classes, y)
            labels = y
        else:
            labels = check_labels(y)
            self.classes_ = _classes(self.classes, labels)
        kind = pd.api.types
        numeric = kind.is_numeric_dtype(labels) and not kind.is_bool_dtype(labels)
        if self.classes is None and numeric:
            # 0/1 coding, clipped into [0, 1] as dpfit.logit's response is: a 1/2 coding
            # reads as all events, which the fit's warning then names
            event = labels.clip(0.0, 1.0).astype(np.float64)
        else:
            event = (labels == self.classes_[1]).astype(np.float64)  # other labels: non-events
        if isinstance(y, pd.Series):
            event = pd.Series(np.asarray(event), index=y.index, name=y.name)
        result = self._fit(X, event, offset=None, budget=budget, link=self.link, y_bounds=None,
                           groups=groups)  # fmt: skip
        k = int(self.fit_intercept)
        self.intercept_ = np.array([result.estimate[0] if k else 0.0])
        self.coef_ = np.array(result.estimate[k:]).reshape(1, -1)
        return self

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False  # binary: the GLM has one linear predictor
        return tags

    def decision_function(self, X: Any) -> np.ndarray:
        """The linear predictor x'beta (post-processing of the release)."""
        return self._linear(X)

    def predict_proba(self, X: Any) -> np.ndarray:
        """(n, 2): probabilities of ``classes_[0]`` and ``classes_[1]``."""
        from ...algorithms.glm_family import get_family

        linear = self.decision_function(X)  # checks that the model is fitted first
        p = get_family("binomial", self.result_.link).mean(linear)
        return np.column_stack([1.0 - p, p])

    def predict(self, X: Any) -> np.ndarray:
        """The more probable label at each row."""
        event = self.predict_proba(X)[:, 1] > 0.5  # checks that the model is fitted first
        return self.classes_[event.astype(int)]


class DPPoissonRegressor(RegressorMixin, _GLMEstimator):
    """Differentially private Poisson regression (log link) with population intervals.

    Counts are clipped to the public [0, K] of ``y_bounds``; each record's gradient is
    clipped at a multiple of a released residual scale that grows with n, at most K times
    its row bound (docs/glm.md). ``fit(X, y, exposure=...)`` or ``offset=...`` adds
    log(exposure) or the offset to the linear predictor.

    Parameters
    ----------
    rho : float
        zCDP budget of the whole fit (required).
    y_bounds : (0, K)
        Public bound of the counts (required).
    """

    __doc__ += _SHARED_DOC + """
    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
    result_ : GLMResult
    privacy_ : PrivacyLedger
    """  # fmt: skip

    _family = "poisson"

    def __init__(
        self, *, rho: float | None = None, bounds: Any = None, y_bounds: Any = None,
        fit_intercept: bool = True, steps: int = 200, step_size: float = 0.5, m: int = 10,
        burn_in: int = 20, relation: str = "replace-one", n_public: int | None = None,
        random_state: Any = None, secure: bool = False, max_rows_per_unit: int | None = None,
    ) -> None:  # fmt: skip
        store_params(self, locals())

    margins = False  # Poisson margins need no release (the released mean count)

    @quiet_floats()
    def fit(
        self, X: Any, y: Any, *, exposure: Any = None, offset: Any = None,
        budget: Budget | None = None, groups: Any = None,
    ) -> DPPoissonRegressor:  # fmt: skip
        """Fit the private Poisson regression; spends ``rho`` from ``budget`` when given.

        ``exposure`` (> 0) and ``offset`` are per-record arrays (private, aligned with y);
        ``groups`` one privacy-unit label per row (with ``max_rows_per_unit``).
        """
        require_y(self, y)
        total = record_offsets(offset, exposure, dask=is_dask(X) or is_dask(y))
        result = self._fit(X, y, offset=total, budget=budget, link=None, y_bounds=self.y_bounds,
                           groups=groups)  # fmt: skip
        k = int(self.fit_intercept)
        self.intercept_ = float(result.estimate[0]) if k else 0.0
        self.coef_ = np.array(result.estimate[k:])
        return self

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.target_tags.positive_only = True  # counts
        return tags

    def predict(self, X: Any) -> np.ndarray:
        """The mean count exp(x'beta) at each row (without exposure)."""
        return np.exp(self._linear(X))
