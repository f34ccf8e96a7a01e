"""Non-private reference estimators (OLS, 2SLS, ...) that private fits are measured against."""

from .adassp import adassp, adassp_paper
from .fixed_clip_sgd import fixed_clip_sgd
from .ols import OLSResult, ols
from .onepass_sgd import onepass_sgd
from .ssp import ssp
from .two_sls import TwoSLSResult, two_sls

__all__ = [
    "OLSResult",
    "TwoSLSResult",
    "adassp",
    "adassp_paper",
    "fixed_clip_sgd",
    "ols",
    "onepass_sgd",
    "ssp",
    "two_sls",
]
