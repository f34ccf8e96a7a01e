"""A warning when data of one shape are fitted again and again without a shared budget.

Tuning (``GridSearchCV``, a loop over clips or step sizes) refits an estimator on the same
records; each fit spends its own rho, and nothing adds them up unless one
:class:`~dpfit.Budget` is passed to every fit. The estimators call :func:`note_fit` after each
successful fit without a budget; the fifth fit by one estimator class of data of one public
shape (the public n and the number of columns of each array) in a process draws a
:class:`~dpfit.exceptions.RepeatedFitWarning` (once per shape).

The count is keyed by public quantities only. It used to be keyed by a digest of the data, so
whether the fifth fit warned depended on whether its data equalled earlier data bit for bit:
one record moved by one ulp silenced it (``docs/threat-model.md``). The price is that fits of
different data of the same shape (a simulation study) count together; the message says so.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from typing import Any

import numpy as np

from .._validation import user_stacklevel
from ..exceptions import RepeatedFitWarning

__all__ = ["REFITS", "note_fit"]

#: The fit of data of one shape, without a shared budget, that draws the warning.
REFITS = 5
_SEEN: OrderedDict[tuple, list] = OrderedDict()  # public key -> [fits, rho so far, warned]
_CAPACITY = 256


def _columns(a: Any) -> tuple:
    """The shape of ``a`` after its first axis (public metadata; nothing is read)."""
    shape = getattr(a, "shape", None)
    if shape is None:
        try:
            shape = np.shape(a)
        except TypeError:  # an array-like that refuses numpy's functions (checked in fit)
            return ()
    return tuple(shape[1:])


def note_fit(estimator: str, rho: float, *data: Any, n: int, budget: Any = None) -> None:
    """Count a successful fit on ``data`` with public record count ``n`` (the row count under
    replace-one, the declared ``n_public`` under add/remove) and warn at the
    :data:`REFITS`-th fit of that shape without a budget."""
    if budget is not None:
        return
    key = (estimator, int(n), *(_columns(a) for a in data if a is not None))
    fits, spent, warned = _SEEN.pop(key, [0, 0.0, False])
    fits, spent = fits + 1, spent + float(rho)
    if fits >= REFITS and not warned:
        warnings.warn(
            f"{estimator} has now been fitted {fits} times on data of the same shape (n = {n}) "
            f"without a shared budget, spending rho = {spent:g} in all: if these were the same "
            "records (tuning), that privacy spend shows in no single summary; pass one "
            "budget=dpfit.Budget(rho=...) to every fit (or dpfit.Budget.open(...) across "
            "processes)",
            RepeatedFitWarning,
            stacklevel=user_stacklevel(),
        )
        warned = True
    _SEEN[key] = [fits, spent, warned]
    while len(_SEEN) > _CAPACITY:
        _SEEN.popitem(last=False)
