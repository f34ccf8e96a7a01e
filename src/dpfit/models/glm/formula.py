"""The GLM formula API: ``dpfit.logit``, ``dpfit.probit``, ``dpfit.poisson`` and ``dpfit.glm``.

They read a formula as :func:`dpfit.ols` does (formulaic designs checked row-wise, declared
categorical levels, indicator columns bounded by [0, 1], a codebook), fit through
:func:`~dpfit.models.glm._fit.fit_glm`, and, with public bounds, spend ``bounds_check`` of
rho (2% by default) on a private count of the records outside the bounds, as ``ols`` does
(:mod:`dpfit.models._fit_checks`): for a Poisson fit the response's count says how many
counts the public K clipped. The check is the last release of the fit's plan
(:class:`~dpfit.mechanisms.plan.PlannedCheck`), so the ledger holds one composed entry
labelled ``"dpfit.glm"``, the plan ``dry_run=True`` shows.
"""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

import pandas as pd

from ..._floats import quiet_floats
from ..._validation import check_rho
from ...mechanisms import make_noise_source
from ...mechanisms.plan import PlannedCheck, ReleasePlan
from ...privacy import Budget
from ...privacy.unit_level import CAP_REQUIRED, PrivacyUnit, unit_codes
from .._constraints import check_bounds_check, check_budget
from .._design import complete_bounds
from .._fit_checks import (
    DEFAULT_BOUNDS_CHECK,
    bounds_check,
    bounds_check_shares,
    outside_queries,
    reservation,
)
from .._formula_errors import formula_errors
from .._linear_plan import bounds_check_release
from ..formula import _formula_design, with_codebook
from ._fit import fit_glm, glm_config, glm_plan, per_record_numbers
from ._offsets import record_offsets
from .results import GLMResult

__all__ = ["LABEL", "glm", "logit", "poisson", "probit"]

#: The label of a GLM formula fit's plan (its one composed ledger entry).
LABEL = "dpfit.glm"

#: The defaults of the keywords every GLM entry point takes (the estimators' defaults).
DEFAULTS = {
    "steps": 200,
    "step_size": 0.5,
    "fit_intercept": True,
    "m": 10,
    "burn_in": 20,
    "relation": "replace-one",
    "n_public": None,
    "secure": False,
    "margins": True,
}


def _column(value: Any, data: Any, name: str) -> Any:
    """A per-record array: a column of ``data`` named by ``value``, or ``value`` itself."""
    if value is None:
        return None
    if isinstance(value, str):
        if value not in getattr(data, "columns", ()):
            raise ValueError(f"{name}={value!r} is not a column of data")
        value = data[value]
    return per_record_numbers(value, name)


def _check_text_response(formula: Any, data: Any, family: str) -> None:
    """A binomial response held as text (a CSV's "yes"/"no") gets the GLM's own fix: declare
    its two labels in the formula. Read off the column's dtype (public schema), never a value.
    """
    lhs = formula.split("~", 1)[0].strip() if isinstance(formula, str) else ""
    dtypes = getattr(data, "dtypes", None)
    if family != "binomial" or not lhs.isidentifier() or dtypes is None or lhs not in dtypes:
        return
    dtype = dtypes[lhs]
    if isinstance(dtype, pd.CategoricalDtype) or not (
        pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype)
    ):
        return
    raise TypeError(
        f"the response {lhs!r} holds text (dtype {dtype}); a binomial response is 0/1 with 1 "
        f"the event. Declare its two labels publicly in the formula: "
        f"'C({lhs}, levels=[non-event, event]) ~ ...' (the event last; a record with any "
        "other label is then the zero record), or convert it to 0/1 before the fit"
    )


def _offsets(offset: Any, exposure: Any, data: Any) -> Any:
    """offset + log(exposure) from columns of ``data`` or arrays (:func:`record_offsets`)."""
    if hasattr(data, "dask"):  # refused before a Dask column is read
        return record_offsets(offset, exposure, dask=True)
    names = tuple(v if isinstance(v, str) else None for v in (offset, exposure))
    return record_offsets(
        _column(offset, data, "offset"), _column(exposure, data, "exposure"), names=names
    )


@quiet_floats()
def glm(
    formula: str,
    data: Any,
    *,
    family: str = "binomial",
    link: str | None = None,
    rho: float,
    bounds: Any = None,
    y_bounds: Any = None,
    exposure: Any = None,
    offset: Any = None,
    budget: Budget | None = None,
    bounds_check: float = DEFAULT_BOUNDS_CHECK,
    random_state: Any = None,
    codebook: Any = None,
    dry_run: bool = False,
    privacy_unit: str | None = None,
    max_rows_per_unit: int | None = None,
    **params: Any,
) -> GLMResult | ReleasePlan:
    """Fit a private generalised linear model from a formula and a data frame.

    Parameters
    ----------
    formula : str
        ``"y ~ x1 + x2"`` (formulaic syntax as for :func:`dpfit.ols`).
    data : pandas.DataFrame
        The (private) data.
    family : {"binomial", "poisson"}, default="binomial"
    link : str, optional
        ``"logit"`` (default) or ``"probit"`` for binomial; ``"log"`` for Poisson.
    rho : float
        zCDP budget of the fit and its bounds check.
    bounds : mapping
        Public (low, high) of every design column (indicator columns default to (0, 1)).
    y_bounds : (0, K)
        Poisson only (required): counts above K are clipped to K.
    exposure, offset : str or array-like, optional
        A column name or per-record values: log(exposure) + offset enters the linear
        predictor with coefficient 1 (Poisson rates per unit of exposure).
    budget : Budget, optional
        Shared budget to spend ``rho`` from (the whole ``rho`` must be affordable first).
    bounds_check : float, default=0.02
        Share of ``rho`` for the private count of records outside the bounds (0: off).
    random_state : None, int or numpy.random.Generator, optional
    codebook : path or Codebook, optional
        Declared levels and bounds (:mod:`dpfit.codebook`).
    dry_run : bool, default=False
        Return the fit's :class:`~dpfit.mechanisms.plan.ReleasePlan` (every release, its
        share of rho and noise std; ``print(plan)``) instead of fitting: nothing is charged.
    privacy_unit : str, optional
        A column of ``data`` naming the person (or household, firm) each row belongs to:
        every release then protects all rows of one unit, not one row, and the interval is
        cluster-robust by the unit (docs/privacy-units.md). ``n_public`` then counts units;
        no bounds check and no marginal effects are released with a unit.
    max_rows_per_unit : int, optional
        Public cap K on the rows one unit contributes (required with ``privacy_unit``); a
        unit with more keeps K of them, sampled uniformly at random.
    **params
        ``steps``, ``step_size``, ``m``, ``burn_in``, ``margins``, ``relation``,
        ``n_public``, ``secure`` (as for :class:`~dpfit.models.glm.DPLogisticRegression`).

    Returns
    -------
    GLMResult or ReleasePlan
        Indexed by the formula's term names; ``summary()``, ``params_exp()``,
        ``get_margeff()``, ``predict()``. With ``dry_run=True``, the plan.
    """
    if "fit_intercept" in params:
        raise TypeError("glm: the intercept is set by the formula ('- 1' removes it)")
    unknown = sorted(set(params) - set(DEFAULTS))
    if unknown:
        raise TypeError(f"glm got unexpected keyword arguments {unknown}; allowed: "
                        f"{sorted(DEFAULTS)}")  # fmt: skip
    rho = check_rho(rho)
    unit, groups = _unit(privacy_unit, max_rows_per_unit, data, bounds_check)
    share = check_bounds_check(bounds_check) if unit is None else 0.0
    check_budget(budget)
    codebook, data, declared = with_codebook(codebook, data)
    _check_text_response(formula, data, family)
    with formula_errors(data, formula if isinstance(formula, str) else ""):
        y, X, has_intercept, design, zero_terms = _formula_design(formula, data, declared)
    indicators = design.indicators
    given = complete_bounds(
        codebook, {"bounds": bounds, "y_bounds": y_bounds}, list(X.columns), indicators,
        str(y.name),
    )  # fmt: skip
    bounds = given["bounds"]
    if family != "binomial":  # a 0/1 response has no y bounds, even where a codebook has them
        y_bounds = given["y_bounds"]
    share = share if bounds is not None else 0.0
    fit_rho, check_share = bounds_check_shares(rho, share)
    owner = SimpleNamespace(**{**DEFAULTS, **params, "rho": fit_rho})
    owner.fit_intercept = has_intercept
    config = glm_config(owner, family=family, link=link, y_bounds=y_bounds, warn_large_rho=False)
    source = make_noise_source(random_state, secure=config.secure, name="random_state")
    offsets = _offsets(offset, exposure, data)
    check = _bounds_check(
        X, y, check_share, rho, source, config.relation, indicators,
        {"bounds": bounds, "y_bounds": y_bounds, "zero_terms": zero_terms},
    )  # fmt: skip
    if dry_run:
        rows = len(X) if unit is None else unit_codes(groups, len(X))[1]
        return check.plan(glm_plan(config, rows=rows, p=X.shape[1], unit=unit))
    if budget is not None and not budget.can_afford(rho):
        budget.spend(rho)  # raises BudgetExceededError: nothing charged or drawn
    label = f"dpfit.glm {config.family} {y.name} ~ {' + '.join(map(str, X.columns)) or '1'}"
    with reservation(budget, rho, label):
        result = fit_glm(
            X, y, config, bounds=bounds, offset=offsets, budget=budget, source=source,
            names=[str(c) for c in X.columns], response=str(y.name), groups=groups, unit=unit,
            check=check,
        )  # fmt: skip
    return dataclasses.replace(result, predictors=(design,))


def _bounds_check(
    X: Any, y: Any, share: float, rho: float, source: Any, relation: Any,
    indicators: tuple[str, ...], params: dict[str, Any],
) -> PlannedCheck:  # fmt: skip
    """The fit's plan's last release: with a ``share`` of rho (0: none) a private count of
    the records outside the public bounds (:func:`~dpfit.models._fit_checks.bounds_check`),
    made inside the fit's plan, so that the fit is one entry of ``rho`` labelled
    :data:`LABEL`, the plan ``dry_run=True`` shows."""
    release = None
    if share > 0:
        queries = outside_queries(X, params["bounds"], params["y_bounds"], indicators)
        release = bounds_check_release(share, queries=queries, n=len(X), relation=relation)

    def run(traj: Any, ledger: Any, charge: Any) -> Any:
        note = bounds_check(
            X, y, n=traj.config["n"], fit_rho=check.fit_rho(charge), rho=share, ledger=ledger,
            source=source, indicators=indicators, params=params,
        )  # fmt: skip
        return dataclasses.replace(traj, config={**traj.config, "bounds_check": note})

    check = PlannedCheck(release=release, label=LABEL, rho=rho, run=run)
    return check


def _unit(
    column: Any, max_rows: Any, data: Any, bounds_check: Any
) -> tuple[PrivacyUnit | None, Any]:
    """The privacy unit and its labels (the ``privacy_unit`` column), or (None, None)."""
    if column is None:
        if max_rows is not None:
            raise ValueError("max_rows_per_unit needs a privacy unit: privacy_unit='column'")
        return None, None
    if not isinstance(column, str) or column not in getattr(data, "columns", ()):
        raise ValueError("privacy_unit must name a column of data")
    if max_rows is None:
        raise ValueError(CAP_REQUIRED)
    if bounds_check != DEFAULT_BOUNDS_CHECK and bounds_check:
        raise ValueError(
            "bounds_check counts rows and is not available with a privacy unit; leave it out"
        )
    return PrivacyUnit(column, max_rows), data[column]


def logit(formula: str, data: Any, *, rho: float, **params: Any) -> GLMResult | ReleasePlan:
    """Private logistic regression: :func:`glm` with ``family="binomial"``, logit link.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> import dpfit
    >>> gen = np.random.default_rng(0)
    >>> df = pd.DataFrame({"x": gen.uniform(-1, 1, 5000)})
    >>> df["y"] = (gen.uniform(size=5000) < 1 / (1 + np.exp(-0.5 - df["x"]))).astype(int)
    >>> res = dpfit.logit("y ~ x", df, rho=1.0, bounds={"x": (-1, 1)}, random_state=0)
    >>> res.conf_int().index.tolist()
    ['Intercept', 'x']
    >>> bool(abs(res.params["x"] - 1.0) < 0.3)
    True
    """
    return glm(formula, data, family="binomial", link="logit", rho=rho, **params)


def probit(formula: str, data: Any, *, rho: float, **params: Any) -> GLMResult | ReleasePlan:
    """Private probit regression: :func:`glm` with ``family="binomial"``, probit link."""
    return glm(formula, data, family="binomial", link="probit", rho=rho, **params)


def poisson(formula: str, data: Any, *, rho: float, y_bounds: Any, **params: Any) -> GLMResult:
    """Private Poisson regression (log link): :func:`glm` with ``family="poisson"``.

    ``y_bounds=(0, K)`` is required; ``exposure=`` or ``offset=`` (column names or arrays)
    enter the linear predictor with coefficient 1.
    """
    return glm(formula, data, family="poisson", rho=rho, y_bounds=y_bounds, **params)
