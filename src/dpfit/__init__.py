"""dpfit: differentially private regression and optimisation with honest uncertainty."""

from . import mechanisms, privacy
from .exceptions import (
    BudgetExceededError,
    DPFitError,
    InsecureRandomnessWarning,
    LargeBudgetWarning,
    NonPrivateWarning,
    PrivacyWarning,
)
from .models import DPLinearRegression, ols
from .optimize import minimize
from .privacy import Budget, PrivacyLedger

__version__ = "0.1.0"

__all__ = [
    "Budget",
    "BudgetExceededError",
    "DPFitError",
    "DPLinearRegression",
    "InsecureRandomnessWarning",
    "LargeBudgetWarning",
    "NonPrivateWarning",
    "PrivacyLedger",
    "PrivacyWarning",
    "__version__",
    "mechanisms",
    "minimize",
    "ols",
    "privacy",
]
