"""Reference estimators that private fits are measured against.

Non-private references (they read the raw data; their ledgers are empty): :func:`nonprivate_ols`
(formerly ``ols``, a name it shared with the private :func:`dpfit.ols`),
:func:`two_sls`, :func:`glm_mle` (the GLM's MLE with HC0 standard errors) and
:func:`onepass_sgd` (DP-AMBSSGD's schedule without clipping or noise).
Private baselines (zCDP, charged to a ledger like every algorithm): :func:`ssp`,
:func:`adassp`, :func:`fixed_clip_sgd`, :func:`private_grid_search` and
:func:`friendlycore_2sls` (Liang et al.'s FriendlyCore comparison, in pure zCDP). AdaSSP as Brown et
al.'s figures ran it (bounds read off the data) is paper-only: :mod:`dpfit.paper_only`.
"""

from .adassp import adassp
from .fixed_clip_sgd import fixed_clip_sgd
from .friendlycore import friendlycore_2sls
from .glm_mle import glm_mle
from .ols import OLSResult, nonprivate_ols, ols
from .onepass_sgd import onepass_sgd
from .private_grid_search import GridSearchResult, private_grid_search
from .ssp import ssp
from .two_sls import TwoSLSResult, two_sls

__all__ = [
    "GridSearchResult",
    "OLSResult",
    "TwoSLSResult",
    "adassp",
    "fixed_clip_sgd",
    "friendlycore_2sls",
    "glm_mle",
    "nonprivate_ols",
    "ols",
    "onepass_sgd",
    "private_grid_search",
    "ssp",
    "two_sls",
]
