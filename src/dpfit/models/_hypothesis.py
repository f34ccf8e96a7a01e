"""Standard errors, t statistics, p-values and Wald tests from a released covariance.

All of it is post-processing of a :class:`~dpfit.inference.population.CovarianceEstimate`
(the released estimate's covariance for one target), so it costs no privacy. Quantiles are
Student-t with the estimate's per-coordinate degrees of freedom (``inf`` = normal), as in
statsmodels' ``RegressionResults`` and linearmodels' ``OLSResults``.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from ..inference.population import CovarianceEstimate
from ._formula_errors import one_line

__all__ = ["WaldTestResult", "constraints", "two_sided_pvalues", "wald"]


def two_sided_pvalues(tvalues: np.ndarray, dof: np.ndarray) -> np.ndarray:
    """2 P(|T| > |t|) per coordinate (normal where dof is inf)."""
    tvalues = np.abs(np.asarray(tvalues, dtype=np.float64))
    dof = np.asarray(dof, dtype=np.float64)
    out = 2.0 * stats.norm.sf(tvalues)
    finite = np.isfinite(dof)
    out[finite] = 2.0 * stats.t.sf(tvalues[finite], dof[finite])
    return out


@dataclass(frozen=True, kw_only=True)
class WaldTestResult:
    """A Wald test of H0: R theta = q (chi2 form) or its F form, from released values only."""

    statistic: float
    pvalue: float
    df_num: int
    df_denom: float
    distribution: str
    restrictions: tuple[str, ...]
    target: str

    def __str__(self) -> str:
        df = (
            f"{self.df_num}" if self.distribution == "chi2" else f"{self.df_num}, {self.df_denom:g}"
        )
        return (
            f"Wald test ({self.target} target), H0: {'; '.join(self.restrictions)}\n"
            f"{self.distribution}({df}) = {self.statistic:.4g}, p-value = {self.pvalue:.4g}"
        )


def _parsed(restrictions: str, names: Sequence[str]) -> Any:
    """formulaic's ``LinearConstraints`` of a restrictions string, its errors (a bare
    ``KeyError`` for an unknown term) as one-line ``ValueError``s naming the culprit."""
    from formulaic.errors import FormulaicError
    from formulaic.utils.constraints import LinearConstraints

    try:
        return LinearConstraints.from_spec(restrictions, variable_names=list(names))
    except KeyError as exc:
        term = str(exc.args[0]) if exc.args else ""
        close = difflib.get_close_matches(term, list(names), n=2, cutoff=0.6)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise ValueError(
            f"restrictions: {term!r} is not a term of the model{hint} (its terms: "
            f"{list(names)}; a term with spaces or brackets goes in backticks)"
        ) from None
    except FormulaicError as exc:
        first = one_line(str(exc).splitlines()[0] if str(exc) else "invalid restrictions")
        raise ValueError(
            f"restrictions {restrictions!r}: {first.replace('insuffient', 'insufficient')} "
            "(write e.g. 'educ = 0, exper = 2 * female')"
        ) from None


def constraints(
    restrictions: Any, q: Any, names: Sequence[str]
) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """R (k x p), q (k,) and labels from a string, a matrix, or a list of term names.

    ``"educ = 0, exper - 2 * female = 1"`` (formulaic's constraint grammar), a (k, p)
    matrix with optional ``q`` (default 0), or a list of term names (all equal to 0).
    """
    p = len(names)
    if isinstance(restrictions, str):
        if q is not None:
            raise ValueError("q must be None when restrictions is a string (write '= value')")
        spec = _parsed(restrictions, names)
        R, q_arr = (
            np.asarray(spec.constraint_matrix, float),
            np.asarray(spec.constraint_values, float),
        )
        labels = tuple(part.strip() for part in restrictions.split(","))
    elif isinstance(restrictions, Sequence) and all(isinstance(r, str) for r in restrictions):
        unknown = [r for r in restrictions if r not in names]
        if unknown or not restrictions:
            raise ValueError(f"restrictions must name terms of the model, got unknown {unknown}")
        R = np.zeros((len(restrictions), p))
        for row, term in enumerate(restrictions):
            R[row, list(names).index(term)] = 1.0
        q_arr = np.zeros(len(restrictions)) if q is None else np.asarray(q, float).reshape(-1)
        labels = tuple(f"{r} = {v:g}" for r, v in zip(restrictions, q_arr, strict=True))
    else:
        R = np.atleast_2d(np.asarray(restrictions, dtype=np.float64))
        if R.ndim != 2 or R.shape[1] != p:
            raise ValueError(f"restrictions must be a (k, {p}) matrix, got shape {R.shape}")
        q_arr = np.zeros(R.shape[0]) if q is None else np.asarray(q, float).reshape(-1)
        labels = tuple(f"row {i} of R" for i in range(R.shape[0]))
    if q_arr.shape != (R.shape[0],):
        raise ValueError(f"q must have {R.shape[0]} entries, got {q_arr.size}")
    if not np.isfinite(R).all() or not np.isfinite(q_arr).all():
        raise ValueError("restrictions and q must be finite")
    return R, q_arr, labels


def wald(
    estimate: np.ndarray,
    covariance: CovarianceEstimate,
    R: np.ndarray,
    q: np.ndarray,
    labels: tuple[str, ...],
    *,
    use_f: bool,
) -> WaldTestResult:
    """W = (R theta - q)' (R V R')^-1 (R theta - q): chi2(k), or W / k against F(k, dof).

    The F form uses the smallest dof of the coordinates R involves (conservative); with
    infinite dof it equals the chi2 form divided by k.
    """
    diff = R @ estimate - q
    middle = R @ covariance.cov @ R.T
    rank = int(np.linalg.matrix_rank(middle))
    if rank < R.shape[0]:
        raise ValueError("the restrictions are linearly dependent (R V R' is singular)")
    stat = float(diff @ np.linalg.solve(middle, diff))
    k = R.shape[0]
    involved = (np.abs(R) > 0).any(axis=0)
    dof = float(covariance.dof[involved].min()) if involved.any() else math.inf
    if not use_f:
        return WaldTestResult(
            statistic=stat,
            pvalue=float(stats.chi2.sf(stat, k)),
            df_num=k,
            df_denom=math.inf,
            distribution="chi2",
            restrictions=labels,
            target=covariance.target,
        )
    f_stat = stat / k
    pvalue = stats.chi2.sf(stat, k) if math.isinf(dof) else stats.f.sf(f_stat, k, dof)
    return WaldTestResult(
        statistic=f_stat,
        pvalue=float(pvalue),
        df_num=k,
        df_denom=dof,
        distribution="F",
        restrictions=labels,
        target=covariance.target,
    )
