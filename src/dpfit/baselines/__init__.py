"""Non-private reference estimators (OLS, 2SLS, ...) that private fits are measured against."""

from .adassp import adassp, adassp_paper
from .ols import OLSResult, ols
from .ssp import ssp
from .two_sls import TwoSLSResult, two_sls

__all__ = ["OLSResult", "TwoSLSResult", "adassp", "adassp_paper", "ols", "ssp", "two_sls"]
