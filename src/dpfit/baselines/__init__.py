"""Non-private reference estimators (OLS, 2SLS, ...) that private fits are measured against."""

from .two_sls import TwoSLSResult, two_sls

__all__ = ["TwoSLSResult", "two_sls"]
