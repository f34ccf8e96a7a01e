"""Estimators and results: DPLinearRegression, DPIVRegression, the private GLMs, the formula API,
the Result and its Summary."""

from ._summary_col import summary_col
from .formula import design_matrices, iv_matrices, ols, parse_iv_formula
from .glm import (
    DPLogisticRegression,
    DPPoissonRegressor,
    GLMResult,
    glm,
    logit,
    poisson,
    probit,
)
from .iv import DPIVRegression, iv
from .linear import DPLinearRegression
from .results import Result
from .summary import Summary

__all__ = [
    "DPIVRegression",
    "DPLinearRegression",
    "DPLogisticRegression",
    "DPPoissonRegressor",
    "GLMResult",
    "Result",
    "Summary",
    "design_matrices",
    "glm",
    "iv",
    "iv_matrices",
    "logit",
    "ols",
    "parse_iv_formula",
    "poisson",
    "probit",
    "summary_col",
]
