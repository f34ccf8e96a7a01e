"""Reference estimators that private fits are measured against: non-private (OLS, 2SLS) and
private baselines (SSP, AdaSSP, fixed-clip and one-pass SGD, a private grid search)."""

from .adassp import adassp, adassp_paper
from .fixed_clip_sgd import fixed_clip_sgd
from .ols import OLSResult, ols
from .onepass_sgd import onepass_sgd
from .private_grid_search import GridSearchResult, private_grid_search
from .ssp import ssp
from .two_sls import TwoSLSResult, two_sls

__all__ = [
    "GridSearchResult",
    "OLSResult",
    "TwoSLSResult",
    "adassp",
    "adassp_paper",
    "fixed_clip_sgd",
    "ols",
    "onepass_sgd",
    "private_grid_search",
    "ssp",
    "two_sls",
]
