"""Private generalised linear models: estimators, the formula API and their result.

``DPLogisticRegression`` and ``DPPoissonRegressor`` (scikit-learn estimators), ``logit``,
``probit``, ``poisson`` and ``glm`` (formulas), all fitted by
:func:`dpfit.algorithms.glm.dp_glm` through one fit path (:mod:`._fit`) and returning a
:class:`GLMResult` with population intervals (docs/glm.md).
"""

from .estimators import DPLogisticRegression, DPPoissonRegressor
from .formula import glm, logit, poisson, probit
from .results import GLMMargins, GLMPrediction, GLMResult

__all__ = [
    "DPLogisticRegression",
    "DPPoissonRegressor",
    "GLMMargins",
    "GLMPrediction",
    "GLMResult",
    "glm",
    "logit",
    "poisson",
    "probit",
]
