"""Read-only float64 arrays: how every frozen result holds its numbers, written once.

A frozen dataclass stops attribute assignment, not ``result.coef[0] = 0``; so results,
trajectories, plans and simulated designs keep a read-only float64 copy of every array they
are given (the caller's array stays writable and is never aliased).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["readonly"]


def readonly(a: Any) -> np.ndarray:
    """A read-only float64 copy of ``a``."""
    arr = np.array(a, dtype=np.float64, copy=True)
    arr.flags.writeable = False
    return arr
