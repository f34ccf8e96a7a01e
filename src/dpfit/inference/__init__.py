"""Inference from released iterates: Student-t intervals and their constructions."""

from .intervals import (
    CONSTRUCTIONS,
    VARIANTS,
    confidence_interval,
    interval_estimates,
    t_interval,
    t_interval_from_stderr,
)

__all__ = [
    "CONSTRUCTIONS",
    "VARIANTS",
    "confidence_interval",
    "interval_estimates",
    "t_interval",
    "t_interval_from_stderr",
]
