"""``dpfit.ols`` after the formula: design -> plan -> run -> Result, on one ledger.

:func:`linear_fit` checks every public input, builds the fit's release plan (the method's
plan, :meth:`DPLinearRegression._plan`, followed by the bounds check's count of the records
outside the public bounds, :mod:`dpfit.models._fit_checks`), and then either returns it
(``dry_run=True``: nothing is charged, nothing is computed from the data) or charges it as
one composed ledger entry (:func:`dpfit.mechanisms.plan.charge_plan`) and runs it. The fit and
the check share the plan's budget: the bounds check gets the exact share ``bounds_check`` of
rho (:func:`~dpfit.models._fit_checks.bounds_check_shares`) and the fit the rest. A fit
without a plan (one with a privacy unit) charges release by release.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

from .._validation import check_real, check_rho
from ..mechanisms import make_noise_source
from ..mechanisms.plan import ReleasePlan, charge_plan, fit_part
from ..privacy import Budget, PrivacyLedger
from ..privacy.ledger import check_affordable
from ._fit_checks import (
    _DEFAULT_GD_STEPS,
    DEFAULT_BOUNDS_CHECK,
    bounds_check,
    bounds_check_shares,
    outside_queries,
    refuse_response_bounds,
    reservation,
    warn_public_settings,
)
from ._linear_plan import bounds_check_release
from ._refits import note_fit
from .results import Result

__all__ = ["linear_fit"]

#: The label of an ``ols`` fit's plan (its composed ledger entry).
LABEL = "dpfit.ols"


def linear_fit(
    X: Any,
    y: Any,
    *,
    rho: float,
    budget: Budget | None,
    fit_intercept: bool,
    bounds_check: float = DEFAULT_BOUNDS_CHECK,
    indicators: tuple[str, ...] = (),
    zero_terms: tuple[tuple[str, str], ...] = (),
    groups: Any = None,
    dry_run: bool = False,
    predictors: tuple[Any, ...] = (),
    **params: Any,
) -> Result | ReleasePlan:
    """:class:`~dpfit.DPLinearRegression` on (X, y) with the checks of ``_fit_checks``.

    Every public parameter is checked before anything is charged; a stored budget
    (:mod:`dpfit.privacy.store`) reserves the whole ``rho`` in one transaction. With
    ``dry_run`` the plan is returned instead (a :class:`~dpfit.mechanisms.plan.ReleasePlan`).
    ``zero_terms`` names the formula's factors that can make a record the zero record, and
    ``predictors`` the formula's designs (the result's ``predict`` on new public x).
    ``groups`` (a privacy unit's labels) goes to the estimator; the bounds check counts rows,
    so it is off with a privacy unit (:mod:`dpfit.models._unit_fit`), whose fit charges
    release by release (no plan yet).
    """
    from .linear import DPLinearRegression

    rho = check_rho(rho)
    share = check_real(bounds_check, "bounds_check", low=0.0, high=1.0, low_open=False)
    if budget is not None and not isinstance(budget, Budget):
        raise TypeError(f"budget must be a dpfit.Budget, got {type(budget).__name__}")
    bounds, y_bounds = params.get("bounds"), params.get("y_bounds")
    refuse_response_bounds(bounds, X, y)
    share = share if (bounds is not None or y_bounds is not None) else 0.0
    if groups is not None:
        share = 0.0  # a row count: its sensitivity is not one unit's
    source = make_noise_source(
        params.pop("random_state", None), secure=params.get("secure", False), name="random_state"
    )
    fit_rho, check_rho_ = bounds_check_shares(rho, share)
    model = DPLinearRegression(
        rho=fit_rho, fit_intercept=fit_intercept, random_state=source, **params
    )
    config = model._config(warn_large_rho=False)  # rho was checked (and warned about) above
    if not dry_run and budget is not None and not budget.can_afford(rho):
        budget.spend(rho)  # raises BudgetExceededError: nothing charged or drawn
    prepared = model._prepare(X, y, config, groups)
    fit_plan = model._plan(prepared)
    check = None
    if share:
        queries = outside_queries(X, bounds, y_bounds, indicators)
        n = prepared.settings.get("n", prepared.n_data)
        check = bounds_check_release(check_rho_, queries=queries, n=n, relation=config.relation)
    if dry_run:
        return _whole_plan(fit_plan, check, rho, method=config.method)
    unit = prepared.settings.get("unit")
    ledger = PrivacyLedger(relation=config.relation, budget=budget, unit=unit)
    terms = " + ".join(str(c) for c in getattr(X, "columns", [])) or "X"
    with reservation(budget, rho, f"dpfit.ols {getattr(y, 'name', None) or 'y'} ~ {terms}"):
        check_affordable(ledger, rho, name="dpfit.ols")  # a stored budget: its reservation
        planned = None if fit_plan is None else _whole_plan(fit_plan, check, rho, config.method)
        notes: tuple[str, ...] = ()
        with nullcontext() if planned is None else charge_plan(planned, ledger) as charge:
            fit = model._run(prepared, ledger)
            note_fit(type(model).__name__, fit_rho, X, y, n=prepared.n_data, budget=budget)
            if groups is not None:
                return model._result(prepared, fit, ledger, rho=rho, predictors=predictors)
            plain_gd = getattr(config, "precondition", False) is False  # a preconditioned
            warn_public_settings(  # fit chooses its own steps and step size
                p=len(prepared.terms),
                method=config.method if plain_gd else "preconditioned gd",
                steps=_DEFAULT_GD_STEPS if config.steps is None else config.steps,
                step_size=config.step_size,
                m=config.m,
                interval=config.interval,
                rescaled=bounds is not None,
                default_steps=config.steps is None,
            )
            if check is not None:
                spent = ledger.rho if charge is None else fit_part(charge)
                checked = nullcontext() if charge is not None else charge_plan(
                    ReleasePlan(label=LABEL, rho=check_rho_, relation=config.relation,
                                n=prepared.n_data, releases=(check,)),
                    ledger,
                )  # fmt: skip
                with checked:
                    notes = (_check(X, y, prepared, spent, check_rho_, ledger, source,
                                    indicators, {**params, "zero_terms": zero_terms}),)  # fmt: skip
        return model._result(prepared, fit, ledger, notes, rho=rho, predictors=predictors)


def _whole_plan(
    fit_plan: ReleasePlan | None, check: Any, rho: float, method: str
) -> ReleasePlan:
    """The fit's plan followed by the bounds check, under the label of ``dpfit.ols``."""
    if fit_plan is None:
        raise ValueError(
            f"dry_run: this fit (method={method!r} with a privacy unit) has no release plan "
            "yet (it charges release by release); leave out groups to see a plan before "
            "fitting"
        )
    return fit_plan.then(*([] if check is None else [check]), label=LABEL, rho=rho)


def _check(X, y, prepared, spent, rho, ledger, source, indicators, params) -> str:
    n = prepared.n_data if prepared.config.n_public is None else prepared.config.n_public
    return bounds_check(
        X, y, n=n, fit_rho=spent, rho=rho, ledger=ledger, source=source,
        indicators=indicators, params=params,
    )  # fmt: skip
