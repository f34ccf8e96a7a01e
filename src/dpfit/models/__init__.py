"""Estimators and results: DPLinearRegression, the formula API, the Result and its Summary."""

from ._summary_col import summary_col
from .formula import IVFormula, IVMatrices, design_matrices, iv_matrices, ols, parse_iv_formula
from .iv import DPIVRegression, iv
from .linear import DPLinearRegression
from .results import Result
from .summary import Summary

__all__ = [
    "DPIVRegression",
    "DPLinearRegression",
    "IVFormula",
    "IVMatrices",
    "Result",
    "Summary",
    "design_matrices",
    "iv",
    "iv_matrices",
    "ols",
    "parse_iv_formula",
    "summary_col",
]
