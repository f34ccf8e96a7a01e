"""Privacy you can check: canary audits that give empirical lower bounds on epsilon.

A user (or a test) runs one of dpfit's private algorithms many times on two neighbouring datasets
built around a Dirac canary and gets, at several delta', a Clopper-Pearson lower bound on epsilon
next to the claimed epsilon, plus a parametric test of the Gaussian shift and a check of the noise
scale (docs/auditing.md describes the design). An audit can refute a privacy claim, never prove it.
See ``docs/auditing.md`` and ``dpfit audit --help``.
"""

from .bounds import (
    DEFAULT_DELTAS,
    DEFAULT_THRESHOLDS,
    EpsilonBound,
    clopper_pearson,
    epsilon_lower_bounds,
)
from .canary import CanaryData, canary_data, canary_iv_data
from .checks import (
    AuditResult,
    MeanShift,
    MuTest,
    NullCalibration,
    assess,
    mean_shift,
    mu_test,
    null_calibration,
)
from .registry import TARGETS, AuditTarget, Scores, get_target, register_target
from .run import audit

__all__ = [
    "DEFAULT_DELTAS",
    "DEFAULT_THRESHOLDS",
    "TARGETS",
    "AuditResult",
    "AuditTarget",
    "CanaryData",
    "EpsilonBound",
    "MeanShift",
    "MuTest",
    "NullCalibration",
    "Scores",
    "assess",
    "audit",
    "canary_data",
    "canary_iv_data",
    "clopper_pearson",
    "epsilon_lower_bounds",
    "get_target",
    "mean_shift",
    "mu_test",
    "null_calibration",
    "register_target",
]
