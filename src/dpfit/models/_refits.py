"""A warning when the same data are fitted again and again without a shared budget.

Tuning (``GridSearchCV``, a loop over clips or step sizes) refits an estimator on the same
records; each fit spends its own rho, and nothing adds them up unless one
:class:`~dpfit.Budget` is passed to every fit. The estimators call :func:`note_fit` after each
successful fit without a budget; the fifth fit of identical data in a process draws a
:class:`~dpfit.exceptions.RepeatedFitWarning` (once per dataset). Only a digest of the data is
kept, in memory, and the warning tells the caller nothing beyond what they passed: that two
of their calls received identical data.
"""

from __future__ import annotations

import hashlib
import warnings
from collections import OrderedDict
from typing import Any

import numpy as np

from ..exceptions import RepeatedFitWarning

__all__ = ["REFITS", "note_fit"]

#: The fit of identical data, without a shared budget, that draws the warning.
REFITS = 5
_SEEN: OrderedDict[bytes, list] = OrderedDict()  # digest -> [fits, rho so far, warned]
_CAPACITY = 256


def _digest(*arrays: Any) -> bytes | None:
    h = hashlib.blake2b(digest_size=16)
    for a in arrays:
        if a is None:
            continue
        if type(a).__module__.partition(".")[0] == "dask":
            return None  # hashing would read the whole collection
        if hasattr(a, "to_numpy"):
            a = a.to_numpy()
        arr = np.ascontiguousarray(np.asarray(a))
        if arr.dtype == object:
            return None
        h.update(str((arr.shape, arr.dtype.str)).encode())
        h.update(arr.view(np.uint8).reshape(-1))
    return h.digest()


def note_fit(estimator: str, rho: float, *data: Any, budget: Any = None) -> None:
    """Count a successful fit of ``data`` and warn at the :data:`REFITS`-th without a budget."""
    if budget is not None:
        return
    key = _digest(*data)
    if key is None:
        return
    fits, spent, warned = _SEEN.pop(key, [0, 0.0, False])
    fits, spent = fits + 1, spent + float(rho)
    if fits >= REFITS and not warned:
        warnings.warn(
            f"{estimator} has now been fitted {fits} times on the same data without a shared "
            f"budget, spending rho = {spent:g} in all: tuning on private data spends privacy "
            "that no single summary shows; pass one budget=dpfit.Budget(rho=...) to every fit "
            "(or dpfit.Budget.open(...) across processes)",
            RepeatedFitWarning,
            stacklevel=3,
        )
        warned = True
    _SEEN[key] = [fits, spent, warned]
    while len(_SEEN) > _CAPACITY:
        _SEEN.popitem(last=False)
