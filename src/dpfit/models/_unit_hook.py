"""Where :class:`~dpfit.DPLinearRegression` turns to the unit-level fit: ``groups`` given.

Kept apart from the estimator so that the row-level path is unchanged: :func:`unit_hook`
returns None without ``groups`` (and refuses the unit-only parameters), or the unit-level
method (:mod:`dpfit.models._unit_fit`) and its public settings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..privacy.unit_level import IN_MEMORY, grouped_unit, unit_codes
from ._linear_methods import LinearConfig
from ._panel import panel_formula
from ._scaling import PublicScaling
from ._unit_fit import UNIT_LABEL, resolve_units, run_units

__all__ = ["UnitPlan", "unit_formula", "unit_hook"]


@dataclass(frozen=True)
class UnitPlan:
    """The unit-level method, shaped like a method-table entry (``label``, ``run`` bound to
    the groups), and its public settings."""

    label: str
    run: Callable[..., Any]
    settings: dict[str, Any]


def unit_hook(
    estimator: Any,
    config: LinearConfig,
    groups: Any,
    X: Any,
    n_rows: int,
    scaling: PublicScaling,
) -> UnitPlan | None:
    """None for a row-level fit; else the unit-level plan (checks before any charge)."""
    if groups is None:
        if config.max_rows_per_unit is not None or config.entity_effects:
            raise ValueError(
                "max_rows_per_unit and entity_effects need a privacy unit: pass "
                "fit(X, y, groups=unit_labels) (dpfit.ols: privacy_unit='column')"
            )
        return None
    unit = grouped_unit(groups, config.max_rows_per_unit)
    if not isinstance(X, np.ndarray):
        raise TypeError(IN_MEMORY)
    _, n_units = unit_codes(groups, n_rows)
    settings = resolve_units(
        config, scaling, unit, n_units=n_units, entity_effects=config.entity_effects
    )

    def run(design: Any, response: Any, settings: Any, ledger: Any, source: Any) -> Any:
        return run_units(design, response, groups, settings, ledger, source)

    return UnitPlan(UNIT_LABEL, run, settings)


def unit_formula(
    formula: str, data: Any, params: dict[str, Any]
) -> tuple[str, Any, dict[str, Any]]:
    """For :func:`dpfit.ols`: the formula with ``EntityEffects``/``TimeEffects`` written out
    (:func:`~dpfit.models._panel.panel_formula`), the unit labels (the ``privacy_unit``
    column, or None) and the other parameters, ``entity_effects`` set from the formula."""
    params = dict(params)
    column = params.pop("privacy_unit", None)
    time, levels = params.pop("time", None), params.pop("time_levels", None)
    formula, entity = panel_formula(formula, time=time, time_levels=levels)
    if column is None:
        if entity:
            raise ValueError("EntityEffects needs a privacy unit: privacy_unit='column'")
        return formula, None, params
    if not isinstance(column, str) or column not in getattr(data, "columns", ()):
        raise ValueError("privacy_unit must name a column of data")
    if params.get("bounds_check", 0.0):
        raise ValueError(
            "bounds_check counts rows and is not available with a privacy unit; leave it out"
        )
    params.pop("bounds_check", None)
    params["entity_effects"] = bool(entity or params.get("entity_effects", False))
    return formula, data[column], params
