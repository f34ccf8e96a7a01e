"""``DPIVRegression`` and ``dpfit.iv``: private instrumental-variable regression (private 2SLS).

The estimator follows the scikit-learn contract like :class:`~dpfit.DPLinearRegression`:
``__init__`` stores, ``fit(X, y, Z)`` validates everything public (interval settings
included) before touching the data and keeps a frozen :class:`~dpfit.models.Result` as
``result_``.

Pipeline of a fit with budget rho (every step charged to one ledger), in ``fit``:

1. public checks: the constraint table into a frozen config and DP-2S-GD's defaults from
   the shapes (:mod:`._iv_config`), bounds, data; nothing is read off the data;
2. scale: with ``bounds``, ``scale_fraction * rho`` releases the columns' means and mean
   squares (:mod:`._iv_scaling`), and every column is standardised with them;
3. run: the method table (:mod:`._iv_methods`). ``method="moments"`` (default): one noisy
   second-moment matrix of (design, y), 2SLS from its blocks and a noisy Omega for the
   robust sandwich (:mod:`._iv_moments`): a population interval. ``method="2s-gd"``:
   DP-2S-GD (Liang et al. 2025, Alg. 1), the rest split ``rho_split`` : ``1 - rho_split``
   between its stages, run ``m`` times independently or once for batched means:
   privacy-only (``target="sample"``) intervals;
4. result: coefficients and covariances are mapped back to the original units
   (:mod:`._iv_release`, post-processing) into a frozen :class:`~dpfit.models.Result`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import validate_data

from .._floats import quiet_floats
from .._validation import check_iv_data
from ..mechanisms import NoiseSource, make_noise_source
from ..mechanisms.plan import PlannedCheck, ReleasePlan, charge_plan
from ..privacy import Budget, PrivacyLedger, Relation
from ..privacy.ledger import prepare_ledger
from ..privacy.unit_level import refuse_unit
from ._constraints import check_bounds_check, check_budget, require_y, store_params
from ._design import complete_bounds, take_null_records
from ._fit_checks import DEFAULT_BOUNDS_CHECK, reservation, warn_few_records
from ._formula_errors import formula_errors
from ._iv_check import checked_iv_fit
from ._iv_columns import NO_INSTRUMENTS, column_names, iv_bounds
from ._iv_config import EXPERIMENTAL_INTERVALS as EXPERIMENTAL_INTERVALS  # public names
from ._iv_config import (
    IV_INTERVALS,
    IVConfig,
    check_interval,
    check_two_stage_scales,
    iv_config,
    settings_from,
)
from ._iv_config import IV_METHODS as IV_METHODS
from ._iv_config import TWO_STAGE_SETTINGS as TWO_STAGE_SETTINGS
from ._iv_methods import IV_METHOD_TABLE, IVData
from ._iv_plan import formula_plan, iv_plan
from ._iv_release import Back
from ._iv_scaling import check_scales, standardise
from ._refits import note_fit
from ._release import ReleasedLinearModel
from ._upstream import warn_fitted_upstream
from .formula import _check_formula, iv_matrices, with_codebook
from .results import Result

__all__ = ["IV_INTERVALS", "DPIVRegression", "iv"]


class DPIVRegression(ReleasedLinearModel, RegressorMixin, BaseEstimator):
    """Differentially private IV regression (the private 2SLS).

    Fits y = X beta + e with instruments Z. The default (``method="moments"``) releases the
    second moments of the standardised (design, y) rows once with Gaussian noise and computes
    2SLS from them: no iterations, so no truncation bias. Its interval covers the
    population beta: the robust 2SLS sandwich (from a second release, Omega) plus the exact
    first-order law of the moment noise (docs/inference.md; coverage measured by ``dpfit
    reproduce inference-coverage-iv``). ``method="2s-gd"`` runs DP-2S-GD (Liang et al.
    2025, Alg. 1): per-example gradients of both stages clipped, averaged and released
    with noise (corrected calibration; ``noise_calibration="paper"`` reproduces Prop. 3.1,
    which spends half the stated budget), with privacy-only intervals from the iterates.

    Parameters
    ----------
    rho : float
        zCDP budget of the whole fit (required).
    method : {"moments", "2s-gd"}, default="moments"
        Noisy-moment 2SLS with a population interval, or DP-2S-GD. The parameters from
        ``rho_split`` to ``noise_calibration`` below (except ``bounds``, ``y_bounds``,
        ``scale_fraction`` and ``fit_intercept``) apply to ``"2s-gd"`` only; changing them
        with ``"moments"`` is an error.
    rho_split : float, default=0.75
        Share of the DP-2S-GD budget spent on the first stage (rho1); the rest is rho2.
        First-stage noise biases beta towards zero (like measurement error in the fitted
        regressors: it inflates Theta^T Z^T Z Theta), second-stage noise only adds
        variance, so the first stage gets more.
    bounds : mapping, optional
        Public (low, high) bounds of **every** column of X and Z, keyed by name (array
        columns are named x0.., z0..). Values are clipped into them, and
        ``scale_fraction * rho`` buys private means and standard deviations to standardise
        each column (strongly recommended: without it the data must already be centred and
        scaled with public constants). Never derive bounds from the data.
    y_bounds : (float, float), optional
        Public (low, high) bounds of the response, required with ``bounds`` (the same
        convention as :class:`~dpfit.DPLinearRegression`: the response is never a key of
        ``bounds``).
    scale_fraction : float, default=0.1
        Share of rho spent on the standardisation (only with ``bounds``).
    clip : float or (float, float), optional
        Per-example gradient norm bounds (gamma1, gamma2) in standardised units. Default
        (2 sqrt(p' q'), 2 sqrt(p')) with p', q' the numbers of regressors and instruments
        including the intercept: about twice the typical norm ||z|| ||x|| (resp. ||x||) of
        standardised data, so only outlying records are clipped. Larger clips add noise,
        smaller ones bias (Fig. 8).
    steps : int, default=20
        Iterations per run (``"independent-runs"``, or no interval) or in total
        (``"batched-means"``). The noise is calibrated to all runs and steps. An interval's
        convergence is checked on the released iterates (the drift between the halves of
        the checked iterates, :mod:`dpfit.inference.diagnostics`), which needs 40 of them per
        run: at least 80 steps for the formal independent runs (the second half of each run
        is checked), 40 plus the burn-in otherwise. With fewer, or when the drift check
        fires, the fit warns (``CoverageWarning``) and the summary says so.
    step_size : float or (float, float), optional
        (eta, alpha). Default (1, 2/3): the paper's rules eta = 1 / lambda_max(Z^T Z / n),
        alpha = 2 / (2 lambda_max(H) + lambda_min(H)) with both maxima assumed <= 1, which
        holds for standardised, weakly correlated columns. Lower them for many strongly
        correlated instruments or regressors (the iteration diverges beyond eq. 3's bounds).
    fit_intercept : bool, default=True
        Add a ones column to both X and Z (the constant is its own instrument).
    interval : {"independent-runs", "batched-means"} or None, default="independent-runs"
        How the m estimates behind the Student-t intervals are built (``"2s-gd"``; they
        cover the data's 2SLS: ``conf_int(target="sample")``). Checked on public shapes
        before anything is charged.
    m : int, default=10
        Number of independent runs or batches.
    burn_in : int, optional
        Iterates dropped first (experimental variant; default 20 for batched means).
    interval_variant : {"formal", "experimental"}, default="formal"
        ``"formal"``: each run's final iterate (independent runs) or plain batch means;
        ``"experimental"``: means after a burn-in.
    noise_calibration : {"exact", "paper"}, default="exact"
        See above.
    random_state : None, int or numpy.random.Generator, optional
        None for real releases (fresh OS entropy); a seed makes the fit reproducible.
    secure : bool, default=False
        Exact discrete Gaussian noise through OpenDP.

    Attributes
    ----------
    coef_ : ndarray of shape (n_regressors,)
    intercept_ : float
    result_ : Result
    privacy_ : PrivacyLedger
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        When X has string column names.

    Notes
    -----
    Privacy: one Gaussian release for the standardisation (sensitivity sqrt(5k)/n); with
    ``"moments"``, the upper triangles of M and Omega (rows clipped to public norms C and
    C_g: sensitivities sqrt(2) C^2 / n and sqrt(2) C_g^2 / n, replace-one); with ``"2s-gd"``, 2T
    releases per run of DP-2S-GD (sensitivity 2 gamma_k / n each, replace-one, public n);
    their rho add up to ``rho`` (``noise_calibration="exact"``). Intervals, mapping back and
    predictions are post-processing. Bounds, clips, step sizes, steps, m and n are public:
    tuning them on the private data is itself a release that this guarantee does not cover.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> z = rng.integers(0, 2, 20_000).astype(float); u = rng.normal(size=20_000)
    >>> x = np.clip(2 + 2 * z + u + rng.normal(size=20_000), -3, 9)
    >>> y = np.clip(1 + 0.5 * x + u + rng.normal(size=20_000), -8, 12)
    >>> bounds = {"x0": (-3, 9), "z0": (0, 1)}
    >>> model = DPIVRegression(rho=1.0, bounds=bounds, y_bounds=(-8, 12), random_state=1)
    >>> model = model.fit(x[:, None], y, Z=z[:, None])
    >>> bool(abs(model.coef_[0] - 0.5) < 0.1), round(model.privacy_.rho, 9)
    (True, 1.0)
    """

    def __init__(
        self,
        *,
        rho: float | None = None,
        method: str = "moments",
        rho_split: float = 0.75,
        bounds: Mapping[str, Any] | None = None,
        y_bounds: Any = None,
        scale_fraction: float = 0.1,
        clip: Any = None,
        steps: int = 20,
        step_size: Any = None,
        fit_intercept: bool = True,
        interval: str | None = "independent-runs",
        m: int = 10,
        burn_in: int | None = None,
        interval_variant: str = "formal",
        noise_calibration: str = "exact",
        random_state: Any = None,
        secure: bool = False,
    ) -> None:
        store_params(self, locals())

    def _config(self, *, warn_large_rho: bool = True) -> IVConfig:
        """Validate every scalar parameter (constraint table) into a frozen config.

        ``warn_large_rho=False`` checks without the LargeBudgetWarning, for a caller that
        validates early and leaves the warning to ``fit``.
        """
        cfg = iv_config(self, warn_large_rho=warn_large_rho)
        if self.bounds is not None and not isinstance(self.bounds, Mapping):
            raise TypeError("bounds must be a mapping from column name to (low, high)")
        return cfg

    @quiet_floats()
    def fit(self, X: Any, y: Any, Z: Any = None, *, budget: Budget | None = None) -> DPIVRegression:
        """Fit the private IV regression; spends ``rho`` from ``budget`` when one is given.

        ``Z`` may be passed by position, ``fit(X, y, Z)``, or by keyword; scikit-learn's
        meta-estimators route it as fit metadata: ``Pipeline.fit(X, y, dpivregression__Z=Z)``,
        ``cross_validate(model, X, y, params={"Z": Z})`` (which splits its rows with X's), or
        with metadata routing enabled ``model.set_fit_request(Z=True)``.

        Parameters
        ----------
        X : array-like of shape (n, p)
            All regressors (exogenous ones too; they must also be columns of ``Z``).
        y : array-like of shape (n,)
        Z : array-like of shape (n, q), optional
            All instruments, q >= p. Without it every regressor is its own instrument (all
            are exogenous): the fit is least squares from private moments, and the result's
            notes say so.
        budget : Budget, optional
            Shared budget: checked before any draw, then each release is spent from it as it
            is charged (a fit that fails part-way keeps only what it drew).

        Returns
        -------
        self

        Raises
        ------
        TypeError, ValueError
            Invalid parameters or data (under-identified, mismatched lengths, non-finite
            values, missing bounds), before anything is charged or drawn.
        BudgetExceededError
            ``budget`` cannot afford ``rho``; nothing was charged or drawn.
        """
        return self._fit(X, y, Z, budget, warn_large_rho=True)

    def _fit(self, X: Any, y: Any, Z: Any, budget: Budget | None, *, warn_large_rho: bool,
             check: PlannedCheck | None = None):  # fmt: skip
        """:meth:`fit`; ``warn_large_rho=False`` for :func:`iv`, which warned for its whole
        rho; ``check``: :func:`iv`'s bounds check, the last release of the fit's plan."""
        cfg = self._config(warn_large_rho=warn_large_rho)
        check_budget(budget)
        warn_fitted_upstream(self)
        source = make_noise_source(self.random_state, secure=cfg.secure, name="random_state")
        require_y(self, y)
        exogenous = Z is None  # every regressor instruments itself
        null, y, (X, Z) = take_null_records(y, X, X if exogenous else Z)  # dpfit.iv: zero records
        X_arr, y_arr, Z_arr = check_iv_data(X, y, Z)
        validate_data(self, X, y, reset=True, skip_check_array=True)
        (n, p), q = X_arr.shape, Z_arr.shape[1]
        x_names = column_names(X, "x", p)
        z_names = x_names if exogenous else column_names(Z, "z", q)
        y_name = str(y.name) if isinstance(y, pd.Series) and y.name is not None else "y"
        columns, bounds = iv_bounds(self.bounds, self.y_bounds, x_names, z_names, y_name)
        if bounds is not None:  # public only, before any charge
            rows = {c: j for j, c in enumerate(columns)}
            check_scales(
                bounds, [rows[c] for c in x_names], rows[y_name], n=n,
                rho=cfg.scale_fraction * cfg.rho,
            )  # fmt: skip
        p1, q1 = p + cfg.fit_intercept, q + cfg.fit_intercept
        warn_few_records(n=n, p=p1)  # public n (replace-one) and p, before any charge
        settings = settings_from(cfg, p1, q1)
        if cfg.method == "2s-gd":
            check_interval(cfg, settings, p1)  # before any charge
            check_two_stage_scales(cfg, settings, n)
        # Checked now; the plan is then spent at its first release, as one entry (a stored
        # budget: one reservation), and a fit that fails part-way keeps only what it drew.
        plan = iv_plan(cfg, n=n, columns=len(columns), bounded=bounds is not None,
                       label=type(self).__name__, settings=settings)  # fmt: skip
        plan = plan if check is None else check.plan(plan)
        ledger = prepare_ledger(
            PrivacyLedger(budget=budget), Relation.REPLACE_ONE, plan.rho, name="DPIVRegression"
        )
        charged = charge_plan(plan, ledger)
        with reservation(budget, cfg.rho, type(self).__name__), charged as charge:
            values = {
                **dict(zip(x_names, X_arr.T, strict=True)),
                **dict(zip(z_names, Z_arr.T, strict=True)),
                y_name: y_arr,
            }
            V = np.column_stack([values[c] for c in columns])
            V, std, rho_fit = standardise(V, bounds, null, cfg=cfg, ledger=ledger, source=source)
            lead = [0] if cfg.fit_intercept else []
            index = {c: j + len(lead) for j, c in enumerate(columns)}
            data = IVData(
                V=V, rho_fit=rho_fit, x_idx=lead + [index[c] for c in x_names],
                z_idx=lead + [index[c] for c in z_names], y_idx=index[y_name], n=n,
                names=["Intercept"] * len(lead) + x_names, response=y_name, columns=columns,
                bounds=bounds, std=std, back=Back(std, columns, x_names, y_name, cfg.fit_intercept),
            )  # fmt: skip
            result = IV_METHOD_TABLE[cfg.method](data, cfg, settings, ledger, source)
            if check is not None:
                result = check.after(result, ledger, charge)
        if exogenous:
            result = dataclasses.replace(result, notes=(*result.notes, NO_INSTRUMENTS))
        self._keep(result, cfg.fit_intercept)
        note_fit(type(self).__name__, cfg.rho, X, y, Z, n=n, budget=budget)  # tuning
        return self


@quiet_floats()
def iv(
    formula: str,
    data: pd.DataFrame,
    *,
    rho: float,
    budget: Budget | None = None,
    dry_run: bool = False,
    **params: Any,
) -> Result | ReleasePlan:
    """Private IV regression from a formula ``y ~ exog + [endog ~ instruments]``.

    Parameters
    ----------
    formula : str
        linearmodels grammar, e.g. ``"lwage ~ exper + [educ ~ nearc4 + nearc2]"``; the
        intercept follows the formula (``0 +`` or ``- 1`` removes it).
    data : pandas.DataFrame
        The (private) data; missing values are an error.
    rho : float
        zCDP budget of the fit.
    budget : Budget, optional
        Shared budget to spend ``rho`` from.
    dry_run : bool, default=False
        The default method's :class:`~dpfit.mechanisms.plan.ReleasePlan` instead of a fit
        (every release, its share of rho and noise std; ``print(plan)``): nothing is charged.
    **params
        Any other parameter of :class:`DPIVRegression`; ``bounds`` is keyed by design-column
        name (e.g. ``"I(exper ** 2)"``) and ``y_bounds`` bounds the response. With bounds,
        ``bounds_check`` (default 0.02) is the share of ``rho`` spent on a private count of
        the records outside them, warned about when large (0 turns it off), as in
        :func:`dpfit.ols` (:func:`dpfit.models._iv_check.checked_iv_fit`).

    Returns
    -------
    Result or ReleasePlan
    """
    if "fit_intercept" in params:
        raise TypeError("iv: the intercept is set by the formula ('0 +' removes it)")
    refuse_unit("dpfit.iv", params)
    bounds_check = check_bounds_check(params.pop("bounds_check", DEFAULT_BOUNDS_CHECK))
    random_state, codebook = params.pop("random_state", None), params.pop("codebook", None)
    # Public parameters first (fit() warns about a large rho).
    DPIVRegression(rho=rho, random_state=random_state, **params)._config(warn_large_rho=False)
    _check_formula(formula)  # before the data: a frame passed as the formula is named by its type
    codebook, data, declared = with_codebook(codebook, data)
    with formula_errors(data, formula):
        mats = iv_matrices(formula, data, declared)
    design = [*mats.exog.columns, *mats.endog.columns, *mats.instruments.columns]
    design = [c for c in dict.fromkeys(design) if c != "Intercept"]
    params = complete_bounds(codebook, params, design, mats.indicators, str(mats.y.name))
    exog = mats.exog.drop(columns=["Intercept"], errors="ignore")
    X = pd.concat([exog, mats.endog], axis=1)
    Z = pd.concat([exog, mats.instruments], axis=1)
    intercept = "Intercept" in mats.exog.columns
    if dry_run:
        return formula_plan(X, Z, mats, rho, bounds_check, intercept, params)

    def fit(rho_fit: float, source: NoiseSource, check: PlannedCheck) -> Result:
        model = DPIVRegression(rho=rho_fit, fit_intercept=intercept, random_state=source, **params)
        with quiet_floats():
            return model._fit(X, mats.y, Z, budget, warn_large_rho=False, check=check).result_

    result = checked_iv_fit(
        fit,
        X,
        Z,
        mats.y,
        rho=rho,
        budget=budget,
        bounds=params.get("bounds"),
        y_bounds=params.get("y_bounds"),
        label=f"dpfit.iv {formula}",
        bounds_check=bounds_check,
        random_state=random_state,
        secure=params.get("secure", False),
        indicators=tuple(mats.indicators),
        zero_terms=mats.zero_terms,
    )
    # The regressors' designs (exogenous, endogenous), for predict on new public x.
    return dataclasses.replace(result, predictors=mats.designs[:2])
