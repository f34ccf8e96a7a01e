"""The result of a private GLM: a :class:`~dpfit.models.Result` with the GLM's own read-outs.

:class:`GLMResult` adds to the linear result what statsmodels' ``Logit``, ``Poisson`` and
``GLM`` results give: odds ratios or incidence-rate ratios with their intervals
(:meth:`GLMResult.params_exp`), average marginal effects with delta-method intervals
(:meth:`GLMResult.get_margeff`), and predictions on the mean's scale
(:meth:`GLMResult.predict`, :meth:`GLMResult.get_prediction`). Everything is post-processing of
the fit's releases (the coefficients, their population covariance and, for marginal effects,
the released averages behind them), so none of it costs privacy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..._validation import check_interval_alpha, check_option
from ...algorithms.glm_family import get_family
from ...inference import t_interval_from_stderr
from .._hypothesis import two_sided_pvalues
from .._result_predict import exog_matrix
from ..results import Result

__all__ = ["GLMMargins", "GLMPrediction", "GLMResult"]

#: What exp(coefficient) is called, per family.
_RATIO = {"binomial": "odds ratio", "poisson": "incidence-rate ratio"}


@dataclass(frozen=True, kw_only=True)
class GLMMargins:
    """Average marginal effects d E[y | x] / d x_j averaged over the records, and their
    covariance around the population's (delta method; :func:`glm_margins`)."""

    names: tuple[str, ...]
    effect: np.ndarray
    cov: np.ndarray
    dof: np.ndarray
    description: str

    @property
    def bse(self) -> np.ndarray:
        return np.sqrt(np.clip(np.diag(self.cov), 0.0, None))


@dataclass(frozen=True, kw_only=True)
class GLMPrediction:
    """Predicted means at public x with intervals from the linear predictor's (statsmodels'
    ``get_prediction(...).summary_frame()`` names)."""

    linear: np.ndarray
    linear_se: np.ndarray
    dof: np.ndarray
    family: str
    link: str
    index: Any = None

    def summary_frame(self, alpha: float = 0.05) -> pd.DataFrame:
        """``mean``, ``mean_se`` (delta method), ``mean_ci_lower``, ``mean_ci_upper`` (the
        linear predictor's interval mapped through the inverse link), one row per x."""
        alpha = check_interval_alpha(alpha)
        family = get_family(self.family, self.link)
        _, lower, upper = t_interval_from_stderr(
            self.linear, self.linear_se, dof=self.dof, alpha=alpha
        )
        mean = family.mean(self.linear)
        return pd.DataFrame(
            {
                "mean": mean,
                "mean_se": family.mean_derivative(self.linear) * self.linear_se,
                "mean_ci_lower": family.mean(lower),
                "mean_ci_upper": family.mean(upper),
            },
            index=self.index,
        )


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)  # Result's short repr
class GLMResult(Result):
    """Released coefficients, population intervals and privacy accounting of a private GLM.

    Parameters
    ----------
    family, link : str
        ``"binomial"`` (``"logit"``, ``"probit"``) or ``"poisson"`` (``"log"``).
    margins : GLMMargins, optional
        Average marginal effects, when the fit released what they need.
    **Result's parameters.
    """

    family: str = "binomial"
    link: str = "logit"
    margins: GLMMargins | None = field(default=None)

    def params_exp(self, alpha: float = 0.05) -> pd.DataFrame:
        """exp(coefficients) with the exponentiated population interval: odds ratios (logit)
        or incidence-rate ratios (Poisson). Columns ``ratio``, ``lower``, ``upper``.

        Raises
        ------
        ValueError
            The probit link, whose exp(coefficient) is no ratio.
        """
        if self.link == "probit":
            raise ValueError("params_exp: exp(coefficient) is an odds ratio for the logit link "
                             "only; the probit link has none (use get_margeff())")  # fmt: skip
        ci = self.conf_int(alpha)
        frame = pd.DataFrame(
            {"ratio": np.exp(self.estimate), "lower": np.exp(ci["lower"].to_numpy()),
             "upper": np.exp(ci["upper"].to_numpy())},
            index=list(self.names),
        )  # fmt: skip
        frame.columns.name = _RATIO[self.family]
        return frame

    def get_margeff(self, alpha: float = 0.05) -> pd.DataFrame:
        """Average marginal effects (statsmodels' ``get_margeff(at="overall")``) with
        delta-method intervals around the population's average marginal effect: columns
        ``dy/dx``, ``std err``, ``t``, ``P>|t|`` and the interval's bounds.

        Raises
        ------
        ValueError
            The fit released no marginal effects (a Poisson fit without an intercept, or a
            binomial fit with ``margins=False``).
        """
        alpha = check_interval_alpha(alpha)
        if self.margins is None:
            raise ValueError(
                "get_margeff: this fit released no average marginal effects (they need an "
                "intercept, and for the binomial family margins=True, the default)"
            )
        mg = self.margins
        _, lower, upper = t_interval_from_stderr(mg.effect, mg.bse, dof=mg.dof, alpha=alpha)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = mg.effect / mg.bse
        return pd.DataFrame(
            {"dy/dx": mg.effect, "std err": mg.bse, "t": t, "P>|t|": two_sided_pvalues(t, mg.dof),
             f"[{alpha / 2:g}": lower, f"{1 - alpha / 2:g}]": upper},
            index=list(mg.names),
        )  # fmt: skip

    def predict(
        self, exog: Any, *, which: str = "mean", offset: Any = None, exposure: Any = None
    ) -> np.ndarray:
        """Predictions at public ``exog``: the mean g^-1(x'theta + offset) (``which="mean"``,
        statsmodels' default) or the linear predictor (``which="linear"``). ``exposure``
        adds log(exposure) to the offset (Poisson). Post-processing of the release."""
        which = check_option(which, "which", ("mean", "linear"))
        linear = exog_matrix(self, exog) @ self.estimate + _offset(offset, exposure)
        if which == "linear":
            return linear
        return get_family(self.family, self.link).mean(linear)

    def get_prediction(  # type: ignore[override]
        self, exog: Any, *, offset: Any = None, exposure: Any = None
    ) -> GLMPrediction:
        """Predicted means at public ``exog`` with population intervals:
        ``.summary_frame(alpha)`` (post-processing of the release)."""
        design = exog_matrix(self, exog)
        cov = self.covariance("population")
        se = np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", design, cov.cov, design), 0.0))
        return GLMPrediction(
            linear=design @ self.estimate + _offset(offset, exposure),
            linear_se=se,
            dof=np.where(design != 0.0, cov.dof, np.inf).min(axis=1),
            family=self.family,
            link=self.link,
            index=exog.index if isinstance(exog, pd.DataFrame) else None,
        )


def _offset(offset: Any, exposure: Any) -> Any:
    total = 0.0 if offset is None else np.asarray(offset, dtype=np.float64)
    if exposure is not None:
        total = total + np.log(np.asarray(exposure, dtype=np.float64))
    return total
