"""``DPLinearRegression``: a scikit-learn estimator for differentially private least squares.

The estimator follows the scikit-learn contract (``__init__`` only stores its parameters,
``fit`` validates them against a constraint table, runs one private algorithm from the
method table and copies the result into ``_`` attributes). The fitted model keeps a frozen
:class:`~dpfit.models.Result` as ``result_`` and delegates ``conf_int`` and ``summary`` to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import nullcontext
from typing import Any

from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import validate_data

from .._floats import quiet_floats
from .._validation import check_positive
from ..algorithms._preconditioned_plan import LINEAR_TARGETS
from ..distributed import map_rows
from ..inference import CONSTRUCTIONS, VARIANTS
from ..mechanisms import make_noise_source
from ..mechanisms.plan import ReleasePlan, charge_plan
from ..privacy import Budget, PrivacyLedger, parse_relation
from ..privacy.ledger import prepare_ledger
from ._constraints import (
    Check,
    check_bool,
    check_budget,
    fraction,
    integer,
    one_of,
    optional,
    require_y,
    rho_check,
    store_params,
    total_steps,
    validated,
)
from ._dask import fit_data, frame_columns, response_name
from ._fit_checks import reservation
from ._linear_methods import LINEAR_METHODS, LinearConfig, LinearFit
from ._linear_result import PreparedFit, linear_result
from ._refits import note_fit
from ._release import ReleasedLinearModel
from ._scaling import PublicScaling, bounds_in_order
from ._unit_hook import unit_hook
from ._upstream import warn_fitted_upstream
from .results import Result

__all__ = ["DPLinearRegression"]


#: Constraint table of the scalar parameters (cf. scikit-learn's ``_parameter_constraints``):
#: parameter -> check returning the clean value. ``bounds``, ``y_bounds`` (whose shape depends
#: on the data's number of columns) and ``random_state`` are checked in ``fit``.
_CONSTRAINTS: dict[str, Check] = {
    "rho": rho_check(warn=True),
    "method": one_of(LINEAR_METHODS),
    "clip": optional(check_positive),
    "steps": optional(integer(1)),
    "total_steps": optional(integer(1)),
    "step_size": optional(check_positive),
    "fit_intercept": check_bool,
    "interval": optional(one_of(CONSTRUCTIONS)),
    "m": integer(2),
    "burn_in": optional(integer(0)),
    "interval_variant": one_of(VARIANTS),
    "relation": lambda v, name: parse_relation(v),
    "n_public": optional(integer(1)),
    "secure": check_bool,
    "precondition": optional(check_bool),
    "moment_share": optional(fraction),
    "target": one_of(LINEAR_TARGETS),
    "max_rows_per_unit": optional(integer(1)),
    "entity_effects": check_bool,
}


class DPLinearRegression(ReleasedLinearModel, RegressorMixin, BaseEstimator):
    """Differentially private linear regression with confidence intervals at no extra cost.

    Fits y ~ x by full-batch DP gradient descent (``method="gd"``, Brown et al. 2024,
    Alg. 1): per-example gradients of the squared loss are clipped to L2 norm ``clip``,
    averaged, and released with Gaussian noise calibrated so that **all** ``steps`` noisy
    steps together cost ``rho`` (zCDP). With public ``bounds`` the descent is preconditioned
    by a private X'X / n and ``conf_int()`` covers the population coefficients (sampling
    plus privacy error, docs/inference.md); ``conf_int(target="sample")`` gives Brown et
    al.'s Student-t intervals from the released iterates (eq. 12), which cover the data's
    own fit.

    Parameters
    ----------
    rho : float
        zCDP budget of the whole fit, finite and > 0 (required).
    method : {"gd", "adassp", "ambssgd"}, default="gd"
        Private algorithm: ``"gd"`` is DP-GD with intervals; ``"adassp"`` is AdaSSP
        (Wang 2018, zCDP calibration), which needs ``bounds`` and ``y_bounds``, releases a
        population interval by default (``moment_share`` of rho; docs/inference.md, "AdaSSP:
        population intervals") or its point estimate alone with ``interval=None``, and
        refuses ``clip``, ``step_size`` and the iterate-based ``interval`` constructions;
        ``"ambssgd"`` is one-pass DP-AMBSSGD (Varshney et al. 2022, Alg. 2), which needs
        ``bounds`` and ``y_bounds`` (its public constants come from them), takes ``steps``
        as its number of blocks and an optional ``step_size``, refuses ``clip`` and
        ``burn_in``, needs ``relation="replace-one"`` and releases a point estimate only
        (``interval=None``).
    clip : float, optional
        Public bound on each per-example gradient norm |y_i - x_i.theta| * ||x_i|| (the
        paper's gamma), in the units the algorithm sees (after the public rescaling when
        ``bounds`` are given). Required unless both ``bounds`` and ``y_bounds`` are given;
        then it defaults to sqrt(p + 1), which clips nothing at the start. Choose it from
        public knowledge of the residual scale, never by looking at the data: gradients of
        records with |residual| > clip / ||x_i|| are shrunk, which biases the fit towards a
        Huber-type fit; a larger clip means more noise.
    steps : int, optional
        Noisy gradient steps of one run (burn-in and batches included), as in ``dp_gd``;
        default 200 for the preconditioned fit, else 1000. With ``interval="independent-runs"``
        it still means all m runs' steps together: deprecated, give ``total_steps``.
    total_steps : int, optional
        Noisy gradient steps of all runs together (the noise is calibrated to it); or steps.
    step_size : float, optional
        Step size eta. Defaults to 1 / (p + 1) when ``bounds`` are given (stable, since the
        rescaled rows satisfy ||x'||^2 <= p + 1), else 0.25 (the paper's choice for features
        with E[x x^T] near the identity). Stability needs eta < 2 / lambda_max(X^T X / n).
    fit_intercept : bool, default=True
        Add a public column of ones (the intercept is a coefficient like the others; the data
        are never centred with their own means).
    interval : {"batched-means", "checkpoints", "independent-runs"} or None, \
default="batched-means"
        How the m estimates behind the intervals are built from the released iterates
        (:mod:`dpfit.inference`); None releases the final iterate and no interval.
    m : int, default=10
        Number of batches, checkpoints or independent runs (>= 2; >= 10 for batched means).
    burn_in : int, optional
        Iterates dropped first (per run for independent runs). Defaults to 20 for the
        experimental variant and 0 for the formal one.
    interval_variant : {"experimental", "formal"}, default="experimental"
        The paper's App. B construction (burn-in, run means) or the Thm 3.1 one.
    bounds : array-like of shape (n_features, 2) or mapping, optional
        Public (low, high) bounds of each feature (a mapping keyed by feature name when X
        has column names). Features are clipped into them and mapped to [-1, 1] by a fixed
        affine map before fitting; coefficients are mapped back exactly. Never derive them
        from the data.
    y_bounds : (float, float), optional
        Public (low, high) bounds of the response, used in the same way.
    relation : {"replace-one", "add-remove"}, default="replace-one"
        Neighbouring relation of the guarantee (replace-one: n is public).
    n_public : int, optional
        Public record count; required under ``relation="add-remove"``.
    random_state : None, int or numpy.random.Generator, optional
        None draws fresh OS entropy (use this for real releases); an int or Generator makes
        the fit reproducible and is flagged as seeded in the summary.
    secure : bool, default=False
        Draw exact discrete Gaussian noise with OS randomness through OpenDP.
    precondition : bool, optional
        Run DP-GD in coordinates whitened by a private X'X / n and release a population
        interval (docs/inference.md), in memory or on Dask (docs/dask.md). Defaults to True
        when ``bounds`` are given (it needs them). Then ``clip`` (default: 3 sqrt(k) times a
        private residual scale) bounds the whitened gradient |r_i| * ||P x_i||, and
        ``step_size`` defaults to 0.5.
    moment_share : float, optional
        Share of ``rho`` for the moment releases of the preconditioned fit (X'X / n, the
        Huber Hessian and the gradients' second moment), or of ``method="adassp"``'s
        population interval (a residual scale, the share of responses at the y bounds and
        the gradients' second moment); default 0.2.
    target : {"least-squares", "huber"}, default="least-squares"
        What the preconditioned fit's population interval covers. ``"least-squares"``: the
        population least-squares coefficient (what OLS estimates), with a gradient clip that
        grows with n and a warning when the released gap between the clipped fit and least
        squares is material (skewed or heavy-tailed errors). ``"huber"``: the Huber-type
        minimiser of the loss clipped at 3 sqrt(k) residual scales, which equals the
        least-squares coefficient only when the errors are symmetric given x (more robust
        to outliers, narrower at small n); the gap is still released
        (``result_.covariance().gap``). docs/inference.md, "Clipping bias".
    max_rows_per_unit : int, optional
        With ``fit(..., groups=...)`` (a privacy unit): the public cap K on the rows one unit
        contributes; rows beyond it are sampled away uniformly at random (required then).
    entity_effects : bool, default=False
        With ``groups``: remove one intercept per unit by the within transformation
        (fixed effects; docs/privacy-units.md).

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        Released coefficients in the original units.
    intercept_ : float
        Released intercept (0.0 when ``fit_intercept=False``).
    result_ : Result
        The full release: names, estimates, interval estimates, privacy ledger, notes.
    privacy_ : PrivacyLedger
        Every charged release of the fit (a budget-free snapshot).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Defined when X has string column names.

    Notes
    -----
    Privacy (Brown et al. 2024, Lemma 2.1): replacing one record moves the mean clipped
    gradient by at most 2 clip / n, so noise std clip * sqrt(2 * steps / rho) / n per step
    makes the whole fit rho-zCDP for every dataset, whatever is clipped. Everything else
    (intervals, mapping back, predictions) is post-processing. The hyperparameters, bounds
    and the number of records n are public: choosing or tuning them on the private data
    (e.g. by cross-validation with ``GridSearchCV``) is itself a release that this guarantee
    does not cover. Pass a shared :class:`~dpfit.Budget` at fit time (``fit(X, y,
    budget=b)``) to keep several analyses inside one total; a budget is never stored.

    Examples
    --------
    >>> import numpy as np
    >>> from dpfit import DPLinearRegression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((5000, 2))
    >>> y = 1.0 + X @ np.array([2.0, -1.0]) + rng.standard_normal(5000)
    >>> model = DPLinearRegression(rho=0.5, clip=10.0, step_size=0.2, random_state=1)
    >>> model = model.fit(X, y)
    >>> np.round(model.coef_, 1).tolist(), round(model.privacy_.rho, 12)
    ([2.0, -1.0], 0.5)
    >>> model.conf_int(target="sample").shape  # no bounds: the sample target only
    (3, 2)
    """

    def __init__(
        self,
        *,
        rho: float | None = None,
        method: str = "gd",
        clip: float | None = None,
        steps: int | None = None,
        total_steps: int | None = None,
        step_size: float | None = None,
        fit_intercept: bool = True,
        interval: str | None = "batched-means",
        m: int = 10,
        burn_in: int | None = None,
        interval_variant: str = "experimental",
        bounds: Any = None,
        y_bounds: Any = None,
        relation: str = "replace-one",
        n_public: int | None = None,
        random_state: Any = None,
        secure: bool = False,
        precondition: bool | None = None,
        moment_share: float | None = None,
        target: str = "least-squares",
        max_rows_per_unit: int | None = None,
        entity_effects: bool = False,
    ) -> None:
        store_params(self, locals())

    def _config(self, *, warn_large_rho: bool = True) -> LinearConfig:
        """Validate every scalar parameter (constraint table) into a frozen config.

        ``warn_large_rho=False`` checks without the LargeBudgetWarning, for a caller that
        validates early and leaves the warning to ``fit``.
        """
        values = validated(self, _CONSTRAINTS, warn_large_rho=warn_large_rho)
        values["steps"] = total_steps(values.pop("total_steps"), values)
        return LinearConfig(**values)

    def _bounds_array(self, names: list[str] | None) -> Any:
        if not isinstance(self.bounds, Mapping):
            return self.bounds
        if names is None:
            raise ValueError("bounds given as a mapping need X with column names")
        return bounds_in_order(self.bounds, names, "per column")

    @quiet_floats()
    def fit(
        self, X: Any, y: Any, *, budget: Budget | None = None, groups: Any = None
    ) -> DPLinearRegression:
        """Fit the private regression; spends ``rho`` from ``budget`` when one is given.

        Parameters
        ----------
        X : array-like of shape (n, n_features)
            Features (private). Numeric, finite; not standardised. A Dask array or DataFrame
            (with a Dask ``y``) runs DP-GD with one distributed reduction per step (and one
            per moment release of the preconditioned fit); it needs ``n_public``
            (``docs/dask.md``).
        y : array-like of shape (n,)
            Response (private). A column vector is refused (use ``y.ravel()``).
        budget : Budget, optional
            A shared budget to spend ``rho`` from; one that cannot afford ``rho`` raises before
            anything is read or drawn, and a fit that fails part-way (e.g. its Dask workers
            are lost) leaves spent exactly what it drew.
        groups : array-like of shape (n,), optional
            The privacy unit of each row (e.g. a person id; a named Series names the unit in
            the statement). Then the guarantee protects all rows of one unit, at most
            ``max_rows_per_unit`` of them used, and the interval is cluster-robust by unit
            (:mod:`dpfit.models._unit_fit`, docs/privacy-units.md). Without it, one row.

        Returns
        -------
        self

        Raises
        ------
        TypeError, ValueError
            Invalid parameters or data, before anything is charged or drawn.
        BudgetExceededError
            ``budget`` cannot afford ``rho``; nothing was charged or drawn.
        """
        config = self._config()
        check_budget(budget)
        warn_fitted_upstream(self)
        prepared = self._prepare(X, y, config, groups)
        # Checked now; the plan is spent as one entry (a stored budget: one reservation)
        name = type(self).__name__
        with reservation(budget, config.rho, name):
            unit = prepared.settings.get("unit")
            ledger = PrivacyLedger(relation=config.relation, budget=budget, unit=unit)
            ledger = prepare_ledger(ledger, config.relation, config.rho, name=name)
            plan = self._plan(prepared)
            with nullcontext() if plan is None else charge_plan(plan, ledger):
                fit = self._run(prepared, ledger)
        self._keep(self._result(prepared, fit, ledger), prepared.scaling.fit_intercept)
        note_fit(  # tuning spends privacy
            type(self).__name__, config.rho, X, y, n=prepared.n_data, budget=budget
        )
        return self

    def _prepare(self, X: Any, y: Any, config: LinearConfig, groups: Any = None) -> PreparedFit:
        """Everything public about a fit of (X, y), before anything is charged: the data
        checked, the public rescaling, the method and its settings (which warn about too
        few records per coefficient); ``groups``: a privacy unit's labels (:meth:`fit`)."""
        source = make_noise_source(self.random_state, secure=config.secure, name="random_state")
        require_y(self, y)
        X_arr, y_arr, n = fit_data(
            X, y, method=config.method, n_public=config.n_public, relation=config.relation
        )
        validate_data(self, X, y, reset=True, skip_check_array=True)
        if (columns := frame_columns(X)) is not None:
            self.feature_names_in_ = columns
        p = X_arr.shape[1]
        names = list(getattr(self, "feature_names_in_", [f"x{j}" for j in range(p)]))
        scaling = PublicScaling.from_bounds(
            self._bounds_array(names if hasattr(self, "feature_names_in_") else None),
            self.y_bounds,
            n_features=p,
            # entity effects absorb the intercept (models/_panel.py)
            fit_intercept=config.fit_intercept and not config.entity_effects,
        )
        terms = (["Intercept"] if scaling.fit_intercept else []) + names
        units = unit_hook(self, config, groups, X_arr, X_arr.shape[0], scaling)
        if units is None:
            method = LINEAR_METHODS[config.method]
            settings = {**method.resolve(config, scaling, n, p), "terms": terms}
        else:  # a privacy unit (models/_unit_fit.py): charged release by release
            method, settings = units, {**units.settings, "terms": terms}
            n = settings["n"]  # the public number of units
        return PreparedFit(
            config=config, source=source, X=X_arr, y=y_arr, n_data=n, names=names,
            terms=terms, scaling=scaling, method=method, settings=settings,
            response=response_name(y),
        )  # fmt: skip

    def _plan(self, prepared: PreparedFit) -> ReleasePlan | None:
        """The fit's release plan (None for a method that charges release by release)."""
        plan = getattr(prepared.method, "plan", None)
        return plan and plan(prepared.settings, len(prepared.terms), label=type(self).__name__)

    def _run(self, prepared: PreparedFit, ledger: PrivacyLedger) -> LinearFit:
        """Run the method on the publicly rescaled data; every release charged to ``ledger``."""
        scaling = prepared.scaling
        k = prepared.X.shape[1] + int(scaling.fit_intercept)
        lazy = prepared.settings.get("precondition") is True  # read block by block, not whole
        design = map_rows(scaling.design, prepared.X, columns=k, lazy=lazy)
        response = map_rows(scaling.response, prepared.y, columns=None)
        return prepared.method.run(design, response, prepared.settings, ledger, prepared.source)

    def _result(
        self,
        prepared: PreparedFit,
        fit: LinearFit,
        ledger: PrivacyLedger,
        notes: tuple[str, ...] = (),
        *,
        rho: float | None = None,
        predictors: tuple[Any, ...] = (),
    ) -> Result:
        """The released :class:`Result` of ``fit`` (plus ``notes``), in original units;
        ``rho`` is what the whole ledger may hold (default: the fit's rho), ``predictors``
        the formula's designs."""
        config = prepared.config
        rho = config.rho if rho is None else rho
        if not ledger.rho <= rho:  # internal invariant (budgets are exact)
            raise RuntimeError(f"{prepared.method.label} spent rho={ledger.rho!r} > {rho!r}")
        return linear_result(
            fit,
            prepared.scaling,
            ledger,
            names=prepared.terms,
            x_names=prepared.names,
            n=prepared.n_data if config.n_public is None else config.n_public,  # public n
            response=prepared.response,
            label=fit.label or prepared.method.label,
            notes=notes,
            predictors=predictors,
        )
