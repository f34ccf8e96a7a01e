"""Declarative parameter constraints of dpfit's estimators (cf. scikit-learn's
``_parameter_constraints``).

An estimator lists its scalar parameters in a table, parameter -> check; each check takes
``(value, name)`` and returns the clean value or raises ``TypeError`` / ``ValueError`` naming
the parameter. :func:`validated` runs the table on an estimator's stored parameters, so that
``fit`` checks every public input before it reads any data, and both estimators
(:class:`~dpfit.DPLinearRegression`, :class:`~dpfit.DPIVRegression`) build their frozen
configs the same way.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from .._validation import check_int, check_option, check_real, check_rho, user_stacklevel
from ..privacy import Budget

__all__ = [
    "MAX_BOUNDS_CHECK",
    "Check",
    "check_bool",
    "check_bounds_check",
    "check_budget",
    "fraction",
    "integer",
    "one_of",
    "optional",
    "require_y",
    "rho_check",
    "store_params",
    "total_steps",
    "validated",
]

#: A constraint: ``(value, name) -> clean value``.
Check = Callable[[Any, str], Any]

#: Largest share of rho the bounds check may take. It buys a diagnostic (a noisy count of the
#: records outside the bounds); a count's noise std falls only as 1 / sqrt(share), so a
#: quarter of rho already makes it 3.5 times sharper than the default 2%, while the fit
#: itself loses precision in proportion: a share above this is almost surely a typo
#: (``--bounds-check 0.9`` meant as "90% of the records").
MAX_BOUNDS_CHECK = 0.25


def optional(check: Check) -> Check:
    """``check``, or None passed through."""
    return lambda value, name: None if value is None else check(value, name)


def check_bool(value: Any, name: str) -> bool:
    """A Python or NumPy bool (an int such as 1 is refused: it usually means a typo)."""
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return bool(value)


def integer(low: int) -> Check:
    """An int >= ``low`` (a float such as 2.0 is refused)."""
    return lambda value, name: check_int(value, name, low=low)


def one_of(options: Any) -> Check:
    """One of the strings ``options``."""
    return lambda value, name: check_option(value, name, options)


def fraction(value: Any, name: str) -> float:
    """A real number in [0, 1]."""
    return check_real(value, name, low=0.0, high=1.0)


def check_bounds_check(value: Any, name: str = "bounds_check") -> float:
    """The share of rho spent on the private count of records outside the bounds, in
    [0, :data:`MAX_BOUNDS_CHECK`]."""
    share = check_real(value, name, low=0.0, high=1.0, low_open=False)
    if share > MAX_BOUNDS_CHECK:
        raise ValueError(
            f"{name} must be in [0, {MAX_BOUNDS_CHECK:g}], got {share:g}: it is the share of rho "
            f"spent on counting the records outside the bounds (a diagnostic), so {share:g} "
            f"would leave only {100 * (1 - share):.0f}% of rho for the fit itself; the default "
            "0.02 is usually enough (0 turns the check off)"
        )
    return share


def rho_check(*, warn: bool) -> Check:
    """The check of a zCDP budget; ``warn=False`` leaves the LargeBudgetWarning to the fit."""
    return lambda value, name: check_rho(value, name, warn=warn)


def validated(
    estimator: Any, table: Mapping[str, Check], *, warn_large_rho: bool = True
) -> dict[str, Any]:
    """Every parameter of ``table`` read off ``estimator`` and checked, in table order.

    ``rho`` is checked with :func:`rho_check` (its LargeBudgetWarning only when
    ``warn_large_rho``), so a caller validating early need not silence warnings.
    """
    checks = {**table, "rho": rho_check(warn=warn_large_rho)} if "rho" in table else table
    return {name: check(getattr(estimator, name), name) for name, check in checks.items()}


def total_steps(total: int | None, values: Mapping[str, Any]) -> int | None:
    """The total number of noisy steps of a linear fit: ``total`` (``total_steps``), or its
    ``steps``, which counts one run's steps, except with ``interval="independent-runs"``,
    where it still means the total of the m runs (deprecated: a DeprecationWarning names
    ``total_steps``). Both given: TypeError. None: the method's default."""
    steps = values["steps"]
    if total is not None and steps is not None:
        raise TypeError("give steps (one run's) or total_steps (all runs'), not both")
    if steps is not None and values["interval"] == "independent-runs":
        warnings.warn(
            "steps= with interval='independent-runs' counts the steps of all m runs "
            "together, which steps= means nowhere else (dp_gd, DPIVRegression: one run's); "
            f"this use is deprecated and will be removed in a future release: use "
            f"total_steps={steps} (same meaning)",
            DeprecationWarning,
            stacklevel=user_stacklevel(),
        )
    return steps if total is None else total


def check_budget(budget: Any) -> None:
    """Refuse a ``budget`` argument of ``fit`` that is neither None nor a :class:`~dpfit.Budget`."""
    if budget is not None and not isinstance(budget, Budget):
        raise TypeError(f"budget must be a dpfit.Budget, got {type(budget).__name__}")


def store_params(estimator: Any, values: Mapping[str, Any]) -> None:
    """Store every ``__init__`` parameter of ``estimator`` unchanged, read from ``values``
    (its ``locals()``): scikit-learn's contract, ``__init__`` stores and ``fit`` validates
    (https://scikit-learn.org/stable/developers/develop.html#instantiation)."""
    for name in estimator._get_param_names():
        setattr(estimator, name, values[name])


def require_y(estimator: Any, y: Any) -> None:
    """Refuse ``fit(X, None)`` with scikit-learn's message for a regressor without a target."""
    if y is None:
        raise ValueError(
            f"{type(estimator).__name__} requires y to be passed, but the target y is None"
        )
