"""Per-record arithmetic never signals floating-point conditions: one context, written once.

numpy's error state belongs to the caller (``np.seterr`` sets it for the thread). Under
``np.seterr(all="warn")`` a subnormal record made underflow ``RuntimeWarning``\\s appear that
its neighbour did not; under ``np.seterr(all="raise")`` a record at 5e-324 raised
``FloatingPointError`` part-way through a fit, after budget was charged. Which records
underflow, overflow or divide by zero is a property of the data, so such a warning or error
would be a release (``docs/threat-model.md``, "Extreme finite records"). Every function that
computes on records runs inside :func:`quiet_floats`, whatever the caller's setting; the
non-finite values this lets through are handled by the zero-record rule
(:mod:`dpfit.mechanisms.clipping`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np

__all__ = ["quiet_floats"]


@contextlib.contextmanager
def quiet_floats() -> Iterator[None]:
    """``np.errstate(all="ignore")`` as a context (``with quiet_floats():``) or a decorator
    (``@quiet_floats()``; a fresh context per call, so it nests and is thread-safe)."""
    with np.errstate(all="ignore"):
        yield
