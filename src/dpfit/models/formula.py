"""Formula interface: ``dpfit.ols("y ~ x1 + x2", data, rho=...)`` and the IV formula grammar.

Design matrices come from `formulaic <https://matthewwardrop.github.io/formulaic/>`_, so
term names (``"Intercept"``, ``"I(exper ** 2)"``, ``"C(region, levels=['N', 'S'])[T.S]"``)
label the output. Every formula, in memory and on Dask, goes through one check
(:mod:`dpfit.models._design`): each term must be row-wise (stateful transforms such as
``scale`` or ``poly`` are refused), the design is specified on the frame's dtypes only, and
categorical variables need declared levels (``C(region, levels=[...])`` or a declared
``pandas.CategoricalDtype``). A record whose categorical value is not a declared level becomes
the zero record; indicator columns of treatment-coded categorical terms get the public bounds
[0, 1] when ``bounds`` is given as a mapping. Rows with missing numeric values are an error
in memory, never dropped silently: dropping them would change n as a function of the private
data (docs/user-guide.md, section 2).

IV formulas use the linearmodels grammar ``y ~ exog + [endog ~ instruments]``;
:func:`parse_iv_formula` splits one into its four parts and :func:`iv_matrices` builds the
matrices (the exogenous regressors, intercept included, serve as their own instruments).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._floats import quiet_floats
from .._validation import shown
from ..codebook import Codebook, apply_levels, load_codebook
from ..distributed import is_dask
from ..mechanisms.plan import ReleasePlan
from ..privacy import Budget
from ._constraints import check_bounds_check
from ._dask import dask_model_matrix
from ._design import NULL_RECORDS, Design, complete_bounds, design_spec, materialise, null_rows
from ._formula_errors import formula_errors
from ._ols_fit import linear_fit
from ._unit_hook import unit_formula
from .results import Result

__all__ = [
    "IVFormula",
    "IVMatrices",
    "design_matrices",
    "iv_matrices",
    "ols",
    "parse_iv_formula",
    "with_codebook",
]

_INTERCEPT = "Intercept"


def _check_formula(formula: Any) -> str:
    """``formula`` if it is a string with a '~'. Anything else is named by its type only: a
    frame passed as the formula (arguments swapped) is the private data."""
    if not isinstance(formula, str):
        swapped = hasattr(formula, "columns") or hasattr(formula, "shape")
        raise TypeError(
            f"formula must be a string such as 'y ~ x1 + x2', got {shown(formula)}"
            + (": did you swap formula and data? The formula comes first" if swapped else "")
        )
    if "~" not in formula:
        raise ValueError(f"formula must be of the form 'y ~ x1 + x2', got {formula!r}")
    return formula


def _matrix(spec: str, data: Any, declared: frozenset[str] = frozenset()) -> tuple[Any, Design]:
    """One side's design (a lazy Dask DataFrame for Dask data, see
    :mod:`dpfit.models._dask`) and its checked :class:`~dpfit.models._design.Design`;
    ``declared`` names the categorical columns a codebook declared."""
    if is_dask(data):
        return dask_model_matrix(spec, data)
    if not isinstance(data, pd.DataFrame):
        raise TypeError(f"data must be a pandas DataFrame, got {type(data).__name__}")
    if data.columns.has_duplicates:  # the schema is public: the names may be shown
        repeated = sorted({str(c) for c in data.columns[data.columns.duplicated()]})
        raise ValueError(
            f"data has more than one column named {repeated}: rename them (e.g. a merge's "
            "suffixes=) so that a formula can tell them apart"
        )
    design = design_spec(spec, data.iloc[:0], declared)
    return materialise(design, data, refuse_missing=True), design


def _zero_records(y: Any, matrices: list[Any]) -> Any:
    """In memory: make a zero record (an all-NaN design row or a NaN response, see
    :func:`~dpfit.models._design.materialise`) NaN in every matrix and the response, and tag
    the response so that the estimators fit such records as zero records."""
    if not isinstance(y, pd.Series):
        return y  # Dask: the reduction zeroes every record with a NaN
    null = y.isna().to_numpy().copy()
    for matrix in matrices:
        null |= null_rows(matrix)
    for matrix in matrices:
        matrix.loc[null] = np.nan
    y = y.where(~null)
    y.attrs[NULL_RECORDS] = True
    return y


def with_codebook(codebook: Any, data: Any) -> tuple[Codebook | None, Any, frozenset[str]]:
    """The loaded codebook (or None), ``data`` with its declared levels applied, and the
    names of the declared categorical columns (:mod:`dpfit.codebook`)."""
    if codebook is None:
        return None, data, frozenset()
    codebook = load_codebook(codebook)
    data, declared = apply_levels(codebook, data)
    return codebook, data, declared


def _design_matrices(
    formula: str, data: Any, declared: frozenset[str] = frozenset()
) -> tuple[Any, Any, bool, tuple[str, ...]]:
    y, X, has_intercept, design, _ = _formula_design(formula, data, declared)
    return y, X, has_intercept, design.indicators


def _formula_design(
    formula: str, data: Any, declared: frozenset[str] = frozenset()
) -> tuple[Any, Any, bool, Design, tuple[tuple[str, str], ...]]:
    """Response, design (without the intercept column), intercept, the checked design, and
    the factors of both sides that can make a record the zero record
    (:attr:`~dpfit.models._design.Design.zero_terms`)."""
    lhs, rhs = _check_formula(formula).split("~", 1)
    if not lhs.strip():
        raise ValueError("formula needs a response on the left of '~'")
    _refuse_iv_block(rhs)
    y, response = _matrix(lhs, data, declared)
    y = y.drop(columns=[_INTERCEPT], errors="ignore")
    if y.shape[1] != 1:
        raise ValueError("formula must have exactly one response on the left of '~'")
    X, design = _matrix(rhs, data, declared)
    has_intercept = _INTERCEPT in X.columns
    y = _zero_records(y.iloc[:, 0], [X])
    zero_terms = (*response.zero_terms, *design.zero_terms)
    return y, X.drop(columns=[_INTERCEPT], errors="ignore"), has_intercept, design, zero_terms


def _refuse_iv_block(rhs: str) -> None:
    """Name an IV block ``[endog ~ instruments]`` in a formula for least squares."""
    for start, end in _bracket_blocks(rhs):
        if "~" in rhs[start:end]:
            raise ValueError(
                f"formula term {rhs[start:end].strip()!r} is instrumental-variable syntax "
                "(y ~ exog + [endog ~ instruments]): fit it with dpfit.iv (on the command "
                "line: dpfit iv), or drop the brackets for least squares"
            )


def design_matrices(formula: str, data: pd.DataFrame) -> tuple[pd.Series, pd.DataFrame, bool]:
    """Response, design matrix (without the intercept column) and whether there is an intercept.

    Parameters
    ----------
    formula : str
        Wilkinson formula ``"y ~ x1 + x2"``; ``- 1`` or ``0 +`` drops the intercept. Every
        term must be row-wise and categorical variables need declared levels
        (:mod:`dpfit.models._design`).
    data : pandas.DataFrame

    Returns
    -------
    y : pandas.Series
        The response, named after the formula's left-hand side.
    X : pandas.DataFrame
        One column per term other than the intercept; the row of a record whose categorical
        value is not a declared level is NaN (a zero record when fitted).
    has_intercept : bool

    Raises
    ------
    ValueError
        A term that is not row-wise, or missing numeric values.
    TypeError
        A categorical variable without declared levels.
    """
    y, X, has_intercept, _ = _design_matrices(formula, data)
    return y, X, has_intercept


@quiet_floats()
def ols(
    formula: str,
    data: pd.DataFrame,
    *,
    rho: float,
    budget: Budget | None = None,
    dry_run: bool = False,
    **params: Any,
) -> Result | ReleasePlan:
    """Fit a private linear regression from a formula and a data frame.

    Parameters
    ----------
    formula : str
        ``"y ~ x1 + x2"`` (formulaic syntax: ``I(x ** 2)``, ``np.log(x)``,
        ``C(group, levels=["a", "b"])``, ``- 1``). Stateful transforms (``scale``,
        ``center``, ``standardize``, ``poly``, ``bs``, ...) are refused.
    data : pandas.DataFrame or dask.dataframe.DataFrame
        The (private) data. Formula variables must be numeric, bool, or categorical with
        declared levels (``C(region, levels=[...])``); a record whose categorical value is
        not a declared level becomes the zero record. A Dask DataFrame is fitted by DP-GD
        with one distributed reduction per step and needs ``n_public``
        (:mod:`dpfit.models._dask`, ``docs/dask.md``).
    rho : float
        zCDP budget of the fit.
    budget : Budget, optional
        Shared budget to spend ``rho`` from.
    dry_run : bool, default=False
        Return the :class:`~dpfit.mechanisms.plan.ReleasePlan` (every release, its share of
        rho and noise std: ``print(plan)``) instead of fitting; nothing is charged.
    **params
        Any other parameter of :class:`~dpfit.DPLinearRegression` (``clip``, ``steps``,
        ``interval``, ``random_state``, ...). ``bounds`` is a mapping from design-column name
        (as in the result, e.g. ``"I(exper ** 2)"``) to its public (low, high); indicator
        columns of categorical terms default to (0, 1). With bounds, ``bounds_check`` (default
        0.02) is the share of ``rho`` spent on a private count of the records outside them,
        reported in the summary and warned about when large (0 turns it off); warnings also
        flag too few records per coefficient and too few steps
        (:mod:`dpfit.models._fit_checks`). ``privacy_unit="person_id"`` (a column of
        ``data``) makes the guarantee protect all rows of one unit, with the public
        ``max_rows_per_unit``, and the interval cluster-robust by it; the formula may then
        hold ``EntityEffects`` (fixed effects by the within transformation) and
        ``TimeEffects`` (with ``time="year"`` and its public ``time_levels``)
        (:mod:`dpfit.models._unit_fit`, ``docs/privacy-units.md``).

    Returns
    -------
    Result or ReleasePlan
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
    _check_formula(formula)  # before the data: a frame passed as the formula is named by its type
    if "fit_intercept" in params:
        raise TypeError("ols: the intercept is set by the formula ('- 1' removes it)")
    if "bounds_check" in params:
        params["bounds_check"] = check_bounds_check(params["bounds_check"])
    formula, groups, params = unit_formula(formula, data, params)  # privacy_unit: _unit_hook
    codebook, data, declared = with_codebook(params.pop("codebook", None), data)
    with formula_errors(data, formula):
        y, X, has_intercept, design, zero_terms = _formula_design(formula, data, declared)
    indicators = design.indicators
    params = complete_bounds(codebook, params, list(X.columns), indicators, str(y.name))
    return linear_fit(  # plan -> run on one ledger (models/_ols_fit.py)
        X, y, rho=rho, budget=budget, fit_intercept=has_intercept, indicators=indicators,
        zero_terms=zero_terms, groups=groups, dry_run=dry_run, predictors=(design,), **params,
    )  # fmt: skip


# -- IV grammar -------------------------------------------------------------------------------
def _bracket_blocks(text: str) -> list[tuple[int, int]]:
    """Spans ``(start, end)`` of the outermost ``[...]`` blocks outside parentheses and
    quotes (so the ``levels=[...]`` of ``C()`` is not one)."""
    blocks, depth, parens, quote, start = [], 0, 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "({":
            parens += 1
        elif ch in ")}":
            parens -= 1
        elif ch == "[" and parens == 0:
            depth += 1
            start = i if depth == 1 else start
        elif ch == "]" and parens == 0 and depth:
            depth -= 1
            if depth == 0:
                blocks.append((start, i + 1))
    return blocks


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
    blocks = [span for span in _bracket_blocks(rhs) if "~" in rhs[span[0] : span[1]]]
    if len(blocks) != 1 or rhs[blocks[0][0] : blocks[0][1]].count("~") != 1:
        raise ValueError(
            "IV formula must contain exactly one block [endog ~ instruments], as in "
            "'y ~ 1 + exog + [endog ~ instruments]'"
        )
    start, end = blocks[0]
    endog, instruments = (part.strip() for part in rhs[start + 1 : end - 1].split("~"))
    if not endog or not instruments:
        raise ValueError("IV formula: both sides of [endog ~ instruments] must be non-empty")
    before = rhs[:start].strip().rstrip("+").strip()
    after = rhs[end:].strip().lstrip("+").strip()
    exog = " + ".join(part for part in (before, after) if part) or "1"
    return IVFormula(
        dependent=lhs.strip(), exog=exog, endog=f"0 + {endog}", instruments=f"0 + {instruments}"
    )


def _check_roles(exog: tuple[str, ...], endog: tuple[str, ...], instruments: tuple[str, ...]):
    """Refuse a design column with two roles in ``y ~ exog + [endog ~ instruments]``."""
    roles = {
        ("exog", "endog"): "is both exogenous (outside the brackets) and endogenous (left of "
        "'~' inside them): a regressor is one or the other; keep it on one side",
        ("exog", "instruments"): "is exogenous and also listed as an instrument: exogenous "
        "regressors are their own instruments already; list only the excluded instruments "
        "right of '~' inside the brackets",
        ("endog", "instruments"): "is both endogenous and an instrument: an endogenous "
        "regressor cannot instrument itself; list other variables right of '~'",
    }
    parts = {"exog": exog, "endog": endog, "instruments": instruments}
    for (first, second), why in roles.items():
        both = [c for c in parts[first] if c in parts[second]]
        if both:
            raise ValueError(f"IV formula: {', '.join(repr(c) for c in both)} {why}")


@dataclass(frozen=True, kw_only=True)
class IVMatrices:
    """The matrices of an IV formula: response, exogenous, endogenous, instruments."""

    y: pd.Series
    exog: pd.DataFrame
    endog: pd.DataFrame
    instruments: pd.DataFrame
    indicators: tuple[str, ...] = ()
    designs: tuple[Design, ...] = ()
    zero_terms: tuple[tuple[str, str], ...] = ()


def iv_matrices(
    formula: str, data: pd.DataFrame, declared: frozenset[str] = frozenset()
) -> IVMatrices:
    """Build the matrices of ``y ~ exog + [endog ~ instruments]`` from ``data`` (formulaic).

    The intercept, when present, is an ``"Intercept"`` column of ``exog``. Missing numeric
    values are an error; the rows of a record whose categorical value is not a declared
    level are NaN in every matrix (a zero record when fitted). ``indicators`` lists the
    {0, 1} indicator columns, ``zero_terms`` the factors that can make a zero record.
    """
    parts = parse_iv_formula(formula)
    y, _, _, _, response = _formula_design(f"{parts.dependent} ~ 1", data, declared)
    names = ("exog", "endog", "instruments")
    sides = {name: _matrix(getattr(parts, name), data, declared) for name in names}
    designs = [design for _, design in sides.values()]
    _check_roles(*(design.columns for design in designs))
    mats = {name: matrix for name, (matrix, _) in sides.items()}
    return IVMatrices(
        y=_zero_records(y, list(mats.values())),  # a zero record in one part is one in all
        **mats,
        indicators=tuple(dict.fromkeys(c for d in designs for c in d.indicators)),
        designs=tuple(designs),
        zero_terms=tuple(dict.fromkeys((*response, *(t for d in designs for t in d.zero_terms)))),
    )
