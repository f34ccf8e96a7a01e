"""Where :class:`~dpfit.DPLinearRegression` turns to the unit-level fit: ``groups`` given.

Kept apart from the estimator so that the row-level path is unchanged: :func:`unit_hook`
returns None without ``groups`` (and refuses the unit-only parameters), or the unit-level
method (:mod:`dpfit.models._unit_fit`) and its public settings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..privacy.unit_level import PrivacyUnit, unit_codes
from ._linear_methods import LinearConfig, LinearMethod
from ._scaling import PublicScaling
from ._unit_fit import UNIT_LABEL, resolve_units, run_units

__all__ = ["UnitPlan", "unit_hook"]


@dataclass(frozen=True)
class UnitPlan:
    """The unit-level method (its ``run`` bound to the groups) and its public settings."""

    method: LinearMethod
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
    if config.max_rows_per_unit is None:
        raise ValueError(
            "max_rows_per_unit is required with a privacy unit: a public cap on the rows one "
            "unit contributes (more are sampled away at random), never read off the data"
        )
    if not isinstance(X, np.ndarray):
        raise TypeError("a privacy unit needs in-memory data (Dask is not supported with it yet)")
    name = getattr(groups, "name", None)
    unit = PrivacyUnit(str(name) if name is not None else "groups", config.max_rows_per_unit)
    _, n_units = unit_codes(groups, n_rows)
    settings = resolve_units(
        config, scaling, unit, n_units=n_units, entity_effects=config.entity_effects
    )

    def run(design: Any, response: Any, settings: Any, ledger: Any, source: Any) -> Any:
        return run_units(design, response, groups, settings, ledger, source)

    return UnitPlan(LinearMethod(UNIT_LABEL, resolve_units, run), settings)
