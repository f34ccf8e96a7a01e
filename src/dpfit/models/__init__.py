"""Estimators and results: DPLinearRegression, the formula API, the Result and its Summary."""

from .formula import IVDesign, IVFormula, design_matrices, iv_design, ols, parse_iv_formula
from .linear import DPLinearRegression
from .results import Result
from .summary import Summary

__all__ = [
    "DPLinearRegression",
    "IVDesign",
    "IVFormula",
    "Result",
    "Summary",
    "design_matrices",
    "iv_design",
    "ols",
    "parse_iv_formula",
]
