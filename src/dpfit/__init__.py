"""dpfit: differentially private regression and optimisation with honest uncertainty."""

from . import mechanisms, noise, privacy
from .exceptions import (
    BudgetExceededError,
    DPFitError,
    InsecureRandomnessWarning,
    LargeBudgetWarning,
    NonPrivateWarning,
    PrivacyWarning,
)
from .models import DPIVRegression, DPLinearRegression, iv, ols
from .optimize import minimize
from .privacy import Budget, PrivacyLedger

__version__ = "0.1.0"

__all__ = [
    "Budget",
    "BudgetExceededError",
    "DPFitError",
    "DPIVRegression",
    "DPLinearRegression",
    "InsecureRandomnessWarning",
    "LargeBudgetWarning",
    "NonPrivateWarning",
    "PrivacyLedger",
    "PrivacyWarning",
    "__version__",
    "iv",
    "mechanisms",
    "minimize",
    "noise",
    "ols",
    "privacy",
]
