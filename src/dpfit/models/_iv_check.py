"""``dpfit.iv``'s fit and its bounds check as one release plan, charged as one entry.

:func:`checked_iv_fit` gives an IV fit the bounds check of :func:`dpfit.ols`
(:mod:`dpfit.models._fit_checks`): with public bounds and ``bounds_check > 0`` the fit gets
``(1 - bounds_check) * rho`` and a private count of the records outside the bounds of every
regressor, instrument and the response the rest. The check is the last release of the fit's
plan (:class:`~dpfit.mechanisms.plan.PlannedCheck`), so the ledger holds one composed entry
labelled ``"dpfit.iv"``, the plan ``dpfit.iv(..., dry_run=True)`` shows.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from .._validation import check_real, check_rho
from ..mechanisms import NoiseSource, make_noise_source
from ..mechanisms.plan import PlannedCheck
from ..privacy import Budget, PrivacyLedger, Relation
from ._fit_checks import bounds_check as release_bounds_check
from ._fit_checks import bounds_check_shares, outside_queries, reservation
from ._linear_plan import bounds_check_release
from .results import Result

__all__ = ["LABEL", "checked_iv_fit"]

#: The label of a ``dpfit.iv`` fit's plan (its composed ledger entry).
LABEL = "dpfit.iv"


def checked_iv_fit(
    fit: Callable[[float, NoiseSource, PlannedCheck], Result],
    X: Any,
    Z: Any,
    y: Any,
    *,
    rho: float,
    budget: Budget | None,
    bounds: Mapping[str, Any] | None,
    y_bounds: Any,
    label: str,
    bounds_check: float,
    random_state: Any = None,
    secure: bool = False,
    indicators: tuple[str, ...] = (),
    zero_terms: tuple[tuple[str, str], ...] = (),
) -> Result:
    """An IV fit ``fit(rho_fit, source, check)`` whose plan ends with the bounds check.

    ``X`` and ``Z`` are the regressor and instrument frames the fit sees (exogenous columns
    in both) and ``y`` the response. The budget must afford the whole ``rho`` before
    anything is drawn; a stored budget reserves it in one transaction, recorded as ``label``.
    """
    rho = check_rho(rho)
    share = check_real(bounds_check, "bounds_check", low=0.0, high=1.0, low_open=False)
    share = share if (bounds is not None or y_bounds is not None) else 0.0
    if budget is not None and not isinstance(budget, Budget):
        raise TypeError(f"budget must be a dpfit.Budget, got {type(budget).__name__}")
    source = make_noise_source(random_state, secure=secure, name="random_state")
    if budget is not None and not budget.can_afford(rho):
        budget.spend(rho)  # raises BudgetExceededError: nothing charged or drawn
    fit_rho, check_rho_ = bounds_check_shares(rho, share)
    instruments = [c for c in Z.columns if c not in X.columns]
    columns = X.join(Z[instruments]) if instruments else X
    release = None
    if share:
        queries = outside_queries(columns, bounds, y_bounds, indicators)
        release = bounds_check_release(check_rho_, queries=queries, n=len(y),
                                       relation=Relation.REPLACE_ONE)  # fmt: skip
    params = {"bounds": bounds, "y_bounds": y_bounds, "zero_terms": zero_terms}

    def run(result: Result, ledger: PrivacyLedger, charge: Any) -> Result:
        note = release_bounds_check(
            columns, y, n=result.n, fit_rho=check.fit_rho(charge), rho=check_rho_,
            ledger=ledger, source=source, indicators=indicators, params=params,
        )  # fmt: skip
        return dataclasses.replace(result, ledger=ledger, notes=(*result.notes, note))

    check = PlannedCheck(release=release, label=LABEL, rho=rho, run=run)
    with reservation(budget, rho, label):
        return fit(fit_rho, source, check)
