"""Inference from releases: Student-t intervals from iterates, and population intervals."""

from .diagnostics import Drift, iterate_drift
from .intervals import (
    CONSTRUCTIONS,
    VARIANTS,
    confidence_interval,
    interval_estimates,
    t_interval,
    t_interval_from_stderr,
)
from .population import TARGETS, CovarianceEstimate

__all__ = [
    "CONSTRUCTIONS",
    "TARGETS",
    "VARIANTS",
    "CovarianceEstimate",
    "Drift",
    "confidence_interval",
    "interval_estimates",
    "iterate_drift",
    "t_interval",
    "t_interval_from_stderr",
]
