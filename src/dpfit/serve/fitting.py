"""Running a charged fit: the same ``dpfit.ols``, ``dpfit.iv``, ``dpfit.logit``,
``dpfit.probit`` or ``dpfit.poisson`` call a local user makes.

The service holds no statistics of its own. A request whose rho is already charged in the
database runs as ``dpfit.ols(formula, data, rho=r, budget=dpfit.Budget(rho=r), bounds=...,
y_bounds=...)`` with the schema's public bounds (a logit or probit fit has no ``y_bounds``:
its response is 0/1; a Poisson fit's are the counts' public (0, K), and its ``exposure`` or
``offset`` column is clipped into its declared bounds first, so that an exposure is always
positive), where r is the largest
float not above the decimal rho charged (:func:`~dpfit.serve.units.fit_rho`): the in-memory
budget of exactly that amount is a second, independent guard that the fit cannot spend more.

Fits run one at a time per process (:data:`LIBRARY_LOCK`, also held while a stored result is
rendered): they are CPU-bound, so threads would gain little, and dpfit's warnings are caught
with :class:`warnings.catch_warnings`, which is not thread-safe. Run ``dpfit serve --workers N``
for N processes; the database keeps their charges consistent. Only dpfit's own warnings, which
depend on public inputs and releases only, are returned to the analyst; any other library's
warning is dropped, since it could depend on a record.
"""

from __future__ import annotations

import threading
import warnings
from typing import Any

from ..exceptions import PrivacyWarning
from ..models.results import Result
from ..privacy import Budget
from .fit_request import BINARY, FitDesign, FitRequest
from .units import fit_rho

__all__ = ["LIBRARY_LOCK", "run_fit"]

#: Held while dpfit runs in this process (fits, summaries, plots): a fit's caught warnings
#: are then its own, never another request's.
LIBRARY_LOCK = threading.Lock()


def run_fit(
    request: FitRequest, design: FitDesign, frame: Any, *, random_state: int | None = None
) -> tuple[Result, list[str]]:
    """Fit ``request`` on ``frame``; return the result and dpfit's warnings (one line each)."""
    import pandas as pd

    from ..models import iv, ols
    from ..models.glm import logit, poisson, probit

    fit = {"ols": ols, "iv": iv, "logit": logit, "probit": probit, "poisson": poisson}
    extra: dict[str, Any] = {} if random_state is None else {"random_state": random_state}
    if request.model not in BINARY:  # a 0/1 response has no y_bounds
        extra["y_bounds"] = design.y_bounds
    # The categorical columns were read as the steward's declared levels (serve/data.py).
    declared = {
        name: {"type": "category", "levels": list(frame[name].cat.categories)}
        for name in frame.columns
        if isinstance(frame[name].dtype, pd.CategoricalDtype)
    }
    for kind, (column, (low, high)) in design.offsets.items():  # public bounds, as for X
        frame = frame.assign(**{column: frame[column].clip(low, high)})
        extra[kind] = column
    with LIBRARY_LOCK, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fit[request.model](
            request.formula,
            frame,
            rho=fit_rho(request.rho),
            budget=Budget(rho=fit_rho(request.rho)),
            bounds=dict(design.bounds),
            codebook=declared,
            **extra,
        )
    lines = [
        f"{w.category.__name__}: {w.message}"
        for w in caught
        if issubclass(w.category, PrivacyWarning)
    ]
    return result, list(dict.fromkeys(lines))
