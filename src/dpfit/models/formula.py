"""Formula interface: ``dpfit.ols("y ~ x1 + x2", data, rho=...)`` and the IV formula grammar.

Design matrices come from `formulaic <https://matthewwardrop.github.io/formulaic/>`_, so
term names (``"Intercept"``, ``"I(exper ** 2)"``, ``"C(region)[T.2]"``) label the output.
Rows with missing values are an error, never dropped silently: dropping them would change n
as a function of the private data (STYLE 2.6). The design's columns, including the levels
of categorical variables, are treated as public; declare the levels explicitly
(``C(region, levels=[...])``) when their presence in the data could itself be private.

IV formulas use the linearmodels grammar ``y ~ exog + [endog ~ instruments]``;
:func:`parse_iv_formula` splits one into its four parts and :func:`iv_matrices` builds the
matrices (the exogenous regressors, intercept included, serve as their own instruments).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pandas as pd
from formulaic import model_matrix

from ..distributed import is_dask
from ..privacy import Budget
from ._dask import dask_model_matrix
from .linear import DPLinearRegression
from .results import Result

__all__ = ["IVFormula", "IVMatrices", "design_matrices", "iv_matrices", "ols", "parse_iv_formula"]

_INTERCEPT = "Intercept"


def _check_formula(formula: Any) -> str:
    if not isinstance(formula, str) or "~" not in formula:
        raise ValueError(f"formula must be a string of the form 'y ~ x1 + x2', got {formula!r}")
    return formula


def _matrix(spec: str, data: pd.DataFrame) -> pd.DataFrame:
    """formulaic model matrix, refusing missing values instead of dropping rows (a lazy
    Dask DataFrame for Dask data, see :mod:`dpfit.models._dask`)."""
    if is_dask(data):
        return dask_model_matrix(spec, data)
    if not isinstance(data, pd.DataFrame):
        raise TypeError(f"data must be a pandas DataFrame, got {type(data).__name__}")
    try:
        return pd.DataFrame(model_matrix(spec, data, na_action="raise"))
    except ValueError as exc:
        if "null values" in str(exc):
            raise ValueError(
                "data has missing values in a formula variable; dpfit does not drop rows (that "
                "would make n depend on the data): remove them first and treat the row count "
                "after removal as public"
            ) from None
        raise


def design_matrices(formula: str, data: pd.DataFrame) -> tuple[pd.Series, pd.DataFrame, bool]:
    """Response, design matrix (without the intercept column) and whether there is an intercept.

    Parameters
    ----------
    formula : str
        Wilkinson formula ``"y ~ x1 + x2"``; ``- 1`` or ``0 +`` drops the intercept.
    data : pandas.DataFrame

    Returns
    -------
    y : pandas.Series
        The response, named after the formula's left-hand side.
    X : pandas.DataFrame
        One column per term other than the intercept.
    has_intercept : bool
    """
    lhs, rhs = _check_formula(formula).split("~", 1)
    if not lhs.strip():
        raise ValueError("formula needs a response on the left of '~'")
    y = _matrix(lhs, data).drop(columns=[_INTERCEPT], errors="ignore")
    if y.shape[1] != 1:
        raise ValueError("formula must have exactly one response on the left of '~'")
    X = _matrix(rhs, data)
    has_intercept = _INTERCEPT in X.columns
    return y.iloc[:, 0], X.drop(columns=[_INTERCEPT], errors="ignore"), has_intercept


def ols(
    formula: str,
    data: pd.DataFrame,
    *,
    rho: float,
    budget: Budget | None = None,
    **params: Any,
) -> Result:
    """Fit a private linear regression from a formula and a data frame.

    Parameters
    ----------
    formula : str
        ``"y ~ x1 + x2"`` (formulaic syntax: ``I(x ** 2)``, ``C(group)``, ``- 1``).
    data : pandas.DataFrame or dask.dataframe.DataFrame
        The (private) data. A Dask DataFrame is fitted by DP-GD with one distributed
        reduction per step and needs ``n_public``; its formula variables must be numeric,
        bool or categorical with declared categories (:mod:`dpfit.models._dask`,
        ``docs/dask.md``).
    rho : float
        zCDP budget of the fit.
    budget : Budget, optional
        Shared budget to spend ``rho`` from.
    **params
        Any other parameter of :class:`~dpfit.DPLinearRegression` (``clip``, ``steps``,
        ``interval``, ``random_state``, ...). ``bounds`` is a mapping from design-column name
        (as in the result, e.g. ``"I(exper ** 2)"``) to its public (low, high).

    Returns
    -------
    Result
        Indexed by the formula's term names; ``summary()`` prints the table.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> import dpfit
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"x": rng.uniform(0, 10, 4000)})
    >>> df["y"] = 1.0 + 0.5 * df["x"] + rng.normal(0, 1, 4000)
    >>> res = dpfit.ols("y ~ x", df, rho=1.0, bounds={"x": (0, 10)}, y_bounds=(-5, 15),
    ...                 clip=1.0, steps=2000, random_state=0)
    >>> res.conf_int().index.tolist()
    ['Intercept', 'x']
    >>> bool(abs(res.params["x"] - 0.5) < 0.05)
    True
    """
    if "fit_intercept" in params:
        raise TypeError("ols: the intercept is set by the formula ('- 1' removes it)")
    y, X, has_intercept = design_matrices(formula, data)
    model = DPLinearRegression(rho=rho, fit_intercept=has_intercept, **params)
    return model.fit(X, y, budget=budget).result_


# -- IV grammar -------------------------------------------------------------------------------
_BRACKET = re.compile(r"\[([^\[\]]*)\]")


@dataclass(frozen=True, kw_only=True)
class IVFormula:
    """The four parts of ``y ~ exog + [endog ~ instruments]`` as formula strings."""

    dependent: str
    exog: str
    endog: str
    instruments: str


def parse_iv_formula(formula: str) -> IVFormula:
    """Split an IV formula ``y ~ exog + [endog ~ instruments]`` (linearmodels grammar).

    ``exog`` keeps the formula's intercept (``"1"`` when there are no exogenous terms);
    ``endog`` and ``instruments`` never get one.

    Examples
    --------
    >>> parts = parse_iv_formula("lwage ~ 1 + exper + [educ ~ nearc4 + nearc2]")
    >>> parts.dependent, parts.exog, parts.endog, parts.instruments
    ('lwage', '1 + exper', '0 + educ', '0 + nearc4 + nearc2')
    """
    lhs, rhs = _check_formula(formula).split("~", 1)
    matches = list(_BRACKET.finditer(rhs))
    if len(matches) != 1 or matches[0].group(1).count("~") != 1:
        raise ValueError(
            "IV formula must contain exactly one block [endog ~ instruments], as in "
            "'y ~ 1 + exog + [endog ~ instruments]'"
        )
    match = matches[0]
    endog, instruments = (part.strip() for part in match.group(1).split("~"))
    if not endog or not instruments:
        raise ValueError("IV formula: both sides of [endog ~ instruments] must be non-empty")
    before = rhs[: match.start()].strip().rstrip("+").strip()
    after = rhs[match.end() :].strip().lstrip("+").strip()
    exog = " + ".join(part for part in (before, after) if part) or "1"
    return IVFormula(
        dependent=lhs.strip(), exog=exog, endog=f"0 + {endog}", instruments=f"0 + {instruments}"
    )


@dataclass(frozen=True, kw_only=True)
class IVMatrices:
    """The matrices of an IV formula: response, exogenous, endogenous, instruments."""

    y: pd.Series
    exog: pd.DataFrame
    endog: pd.DataFrame
    instruments: pd.DataFrame


def iv_matrices(formula: str, data: pd.DataFrame) -> IVMatrices:
    """Build the matrices of ``y ~ exog + [endog ~ instruments]`` from ``data`` (formulaic).

    The intercept, when present, is an ``"Intercept"`` column of ``exog``. Missing values in
    any formula variable are an error.
    """
    parts = parse_iv_formula(formula)
    y, _, _ = design_matrices(f"{parts.dependent} ~ 1", data)
    return IVMatrices(
        y=y,
        exog=_matrix(parts.exog, data),
        endog=_matrix(parts.endog, data),
        instruments=_matrix(parts.instruments, data),
    )
