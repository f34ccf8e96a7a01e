"""dpfit: differentially private regression and optimisation with honest uncertainty.

Names are loaded on first use (PEP 562 module ``__getattr__``), so ``import dpfit`` and the
command line's ``--help`` do not pay for pandas, scikit-learn or SciPy until a fit needs them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__
from .exceptions import (
    BudgetExceededError,
    DataError,
    DPFitError,
    InsecureRandomnessWarning,
    LargeBudgetWarning,
    NonPrivateWarning,
    PrivacyWarning,
)

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from . import mechanisms, noise, privacy
    from .models import (
        DPIVRegression,
        DPLinearRegression,
        DPLogisticRegression,
        DPPoissonRegressor,
        glm,
        iv,
        logit,
        ols,
        poisson,
        probit,
        summary_col,
    )
    from .optimize import minimize
    from .privacy import Budget, PrivacyLedger

__all__ = [
    "Budget",
    "BudgetExceededError",
    "DPFitError",
    "DPIVRegression",
    "DPLinearRegression",
    "DPLogisticRegression",
    "DPPoissonRegressor",
    "DataError",
    "InsecureRandomnessWarning",
    "LargeBudgetWarning",
    "NonPrivateWarning",
    "PrivacyLedger",
    "PrivacyWarning",
    "__version__",
    "glm",
    "iv",
    "logit",
    "mechanisms",
    "minimize",
    "noise",
    "ols",
    "poisson",
    "privacy",
    "probit",
    "summary_col",
]

#: Public name -> the module that defines it, imported on first access.
_LAZY = {
    "Budget": "privacy",
    "PrivacyLedger": "privacy",
    "DPIVRegression": "models",
    "DPLinearRegression": "models",
    "DPLogisticRegression": "models",
    "DPPoissonRegressor": "models",
    "glm": "models",
    "iv": "models",
    "logit": "models",
    "ols": "models",
    "poisson": "models",
    "probit": "models",
    "summary_col": "models",
    "minimize": "optimize",
}
#: Subpackages reachable as attributes of ``dpfit`` (``dpfit.algorithms.dp_gd``, ...).
_SUBMODULES = frozenset(
    {
        "algorithms",
        "audit",
        "baselines",
        "codebook",
        "datasets",
        "distributed",
        "experiments",
        "inference",
        "losses",
        "mechanisms",
        "models",
        "noise",
        "optimize",
        "preprocessing",
        "privacy",
        "remote",
        "serve",
        "theory",
        "torch",
    }
)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module 'dpfit' has no attribute {name!r}")
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, *_SUBMODULES})
