"""Hypothesis tests and degrees of freedom of a released fit (post-processing only).

``t_test``, ``wald_test`` and ``f_test`` read statsmodels' way (restrictions as a string such
as ``"educ = 0, exper = female"``, a matrix R with q, or term names) and use the released
covariance of the chosen target, with Student-t quantiles at each coefficient's own degrees
of freedom (:class:`~dpfit.inference.population.CovarianceEstimate`).

``df_model`` and ``df_resid`` are statsmodels' counts, from public n and p: the number of
regressors besides the intercept, and n minus the number of coefficients. For a private fit
they describe the model's size only: no residual is computed, and no interval or test uses
``df_resid`` (each uses the degrees of freedom of its released covariance,
``covariance(target).dof``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from .._validation import check_interval_alpha
from ._hypothesis import WaldTestResult, constraints, two_sided_pvalues, wald

__all__ = ["TTestResult", "TestsMixin"]


@dataclass(frozen=True, kw_only=True)
class TTestResult:
    """One t test per restriction row (statsmodels' ``ContrastResults``): ``effect`` = R
    theta with its ``sd`` and interval, t = (effect - q) / sd and its two-sided p-value."""

    restrictions: tuple[str, ...]
    effect: np.ndarray
    q: np.ndarray
    sd: np.ndarray
    dof: np.ndarray
    target: str

    @property
    def tvalue(self) -> np.ndarray:
        return (self.effect - self.q) / self.sd

    @property
    def pvalue(self) -> np.ndarray:
        """Two-sided p-values."""
        return two_sided_pvalues(self.tvalue, self.dof)

    def conf_int(self, alpha: float = 0.05) -> np.ndarray:
        """(k, 2) level 1 - alpha intervals for each effect."""
        alpha = check_interval_alpha(alpha)
        finite = np.isfinite(self.dof)
        q = np.where(
            finite,
            stats.t.ppf(1 - alpha / 2, np.where(finite, self.dof, 1.0)),
            stats.norm.ppf(1 - alpha / 2),
        )
        return np.column_stack([self.effect - q * self.sd, self.effect + q * self.sd])

    def summary_frame(self, alpha: float = 0.05) -> pd.DataFrame:
        ci = self.conf_int(alpha)
        return pd.DataFrame(
            {
                "coef": self.effect,
                "std err": self.sd,
                "t": self.tvalue,
                "P>|t|": self.pvalue,
                "lower": ci[:, 0],
                "upper": ci[:, 1],
            },
            index=list(self.restrictions),
        )

    def __str__(self) -> str:
        return f"t test ({self.target} target)\n{self.summary_frame().to_string()}"


class TestsMixin:
    """t, Wald and F tests and statsmodels' degrees of freedom for a result."""

    def t_test(
        self, restrictions: Any, q: Any = None, *, target: str = "population"
    ) -> TTestResult:
        """One t test of H0: r theta = q per row of the restrictions.

        Parameters
        ----------
        restrictions : str, array-like of shape (k, p) or sequence of term names
            As for :meth:`wald_test`, e.g. ``"educ = 0.05"`` or ``"exper - 2 * expersq = 0"``.
        q : array-like of shape (k,), optional
        target : {"population", "sample"}, default="population"
        """
        R, q_arr, labels = constraints(restrictions, q, self.names)
        cov = self.covariance(target)
        sd = np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", R, cov.cov, R), 0.0))
        dof = np.where(R != 0.0, cov.dof, np.inf).min(axis=1)
        return TTestResult(
            restrictions=labels, effect=R @ self.estimate, q=q_arr, sd=sd, dof=dof,
            target=cov.target,
        )  # fmt: skip

    def wald_test(
        self, restrictions: Any, q: Any = None, *, target: str = "population"
    ) -> WaldTestResult:
        """Wald test of H0: R theta = q (chi2 with k degrees of freedom).

        Parameters
        ----------
        restrictions : str, array-like of shape (k, p) or sequence of term names
            ``"educ = 0, exper = female"`` (formulaic's constraint grammar), a matrix R, or
            names of terms that are all 0 under H0.
        q : array-like of shape (k,), optional
            Right-hand side for a matrix R (default 0).
        target : {"population", "sample"}, default="population"
        """
        R, q_arr, labels = constraints(restrictions, q, self.names)
        return wald(self.estimate, self.covariance(target), R, q_arr, labels, use_f=False)

    def f_test(
        self, restrictions: Any, q: Any = None, *, target: str = "population"
    ) -> WaldTestResult:
        """The F form of :meth:`wald_test`: W / k against F(k, dof)."""
        R, q_arr, labels = constraints(restrictions, q, self.names)
        return wald(self.estimate, self.covariance(target), R, q_arr, labels, use_f=True)

    @property
    def df_model(self) -> int:
        """Regressors besides the intercept (statsmodels' ``df_model``; public)."""
        return len(self.names) - int("Intercept" in self.names)

    @property
    def df_resid(self) -> int:
        """n minus the number of coefficients (statsmodels' ``df_resid``; public n and p).

        A count only: no residual is computed on the private rows, and the intervals and
        tests use the degrees of freedom of the released covariance instead
        (``covariance(target).dof``), not this.
        """
        return self.n - len(self.names)
