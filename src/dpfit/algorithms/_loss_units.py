"""The per-example-loss optimisers with a privacy unit: the guarantee protects all rows of one
unit (:mod:`dpfit.privacy.unit_level`).

With ``groups`` (one unit label per row) and a public cap K = ``max_rows_per_unit``, the run
of :mod:`dpfit.algorithms._loss_queries` changes in three places, nothing else:

* **the rows**: each unit keeps at most K rows, sampled uniformly by a child of the noise
  source (:func:`~dpfit.algorithms._unit_sums.cap_rows`), never by position or data order;
* **n counts units**: the objective is the mean over the G units of each unit's *summed*
  loss, (1/G) sum_u sum_{i in u} loss(theta; x_i, y_i), so every query divides by the public
  number of units G (``n_public`` under add/remove unit);
* **the sensitivities**: a query's value is (1/G) sum_u g_u with g_u = sum_{i in u} clip(g_i),
  each unit's sum of its per-example-clipped gradients, so ||g_u|| <= K L0 exactly (K rows
  can all move by L0). Every release is declared through
  :func:`dpfit.privacy.query_sensitivity` with ``rows_per_unit=K`` (2 K L0 / G under
  replace-one unit), which also counts the G K summed rows in the rounding allowance.

A unit's summed loss has gradient Lipschitz constant at most K L1, so the default step sizes
divide by K (:func:`~dpfit.theory.kl_adaptive.adaptive_gd_params`, noisy GD's 1/(K L1)).
The KL schedules of KL-Spider and the proximal point method are stated for one record's
constants and are not re-derived for units: those methods refuse a unit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..distributed import is_dask
from ..losses.base import split_data
from ..mechanisms import NoiseSource
from ..privacy import PrivacyLedger, Relation
from ..privacy.unit_level import IN_MEMORY, UNIT_KEYWORDS, PrivacyUnit, grouped_unit
from ._glm_units import unit_n
from ._unit_sums import cap_rows

__all__ = ["UNIT_METHODS", "LossUnit", "capped_rows", "loss_unit", "unit_ledger", "unit_options"]


@dataclass(frozen=True)
class LossUnit:
    """A run's privacy unit, its labels (one per row) and its public number of units."""

    unit: PrivacyUnit
    groups: Any
    n: int


def loss_unit(
    loss: Any, X: Any, y: Any, groups: Any, max_rows: Any, *, n_public: Any, relation: Relation
) -> tuple[LossUnit | None, Any, Any]:
    """The run's unit and its checked in-memory ``(X, y)``, from public inputs and the
    labels' length only (no charge, no draw); without ``groups``, None and the data as given.

    Raises
    ------
    TypeError
        Dask data or labels with a unit (:data:`~dpfit.privacy.unit_level.IN_MEMORY`).
    ValueError
        A cap without groups, groups without a cap, labels not one per row, or ``n_public``
        not the number of units under replace-one unit.
    """
    unit = grouped_unit(groups, max_rows)
    if unit is None:
        return None, X, y
    if any(is_dask(a) for a in (X, y, groups)):
        raise TypeError(IN_MEMORY)
    X, y = split_data(loss, (X,) if y is None else (X, y))
    n = unit_n(groups, X, max_rows=unit.max_rows, margins=False, n_public=n_public,
               relation=relation)  # fmt: skip
    return LossUnit(unit=unit, groups=groups, n=n), X, y


def unit_ledger(ledger: PrivacyLedger, unit: PrivacyUnit) -> PrivacyLedger:
    """``ledger`` if it states the guarantee for ``unit``; else ValueError (a ledger of
    row-level entries would misstate what a unit-level run protects)."""
    if ledger.unit != unit:
        raise ValueError(
            "the ledger must be created with the run's privacy unit "
            "(PrivacyLedger(..., unit=PrivacyUnit(column, max_rows_per_unit)))"
        )
    return ledger


def capped_rows(
    units: LossUnit, X: np.ndarray, y: np.ndarray | None, source: NoiseSource
) -> tuple[np.ndarray, np.ndarray | None]:
    """The rows the run reads: at most K per unit, chosen by a child of ``source``
    (:func:`~dpfit.algorithms._unit_sums.cap_rows`), grouped by unit."""
    kept = cap_rows(units.groups, X.shape[0], units.unit.max_rows, source)
    return X[kept.rows], None if y is None else y[kept.rows]


#: The optimisers of :func:`dpfit.minimize` that take a privacy unit.
UNIT_METHODS = ("adaptive-gd", "noisy-gd")


def unit_options(method: str, options: dict[str, Any]) -> PrivacyUnit | None:
    """:func:`dpfit.minimize`'s unit keywords turned into the optimiser's ``groups`` and
    ``max_rows_per_unit`` (``privacy_unit`` names the labels), and the unit; None without
    one. Raises TypeError, naming public inputs only, for a method that takes no unit or a
    name without labels."""
    given = sorted(UNIT_KEYWORDS.intersection(options))
    if not given:
        return None
    if method not in UNIT_METHODS:
        raise TypeError(
            f"dpfit.minimize(method={method!r}) does not take a privacy unit yet "
            f"({', '.join(given)}): its KL schedule is stated for one record's constants; use "
            "method='adaptive-gd' or 'noisy-gd' with a unit (docs/privacy-units.md)"
        )
    name = options.pop("privacy_unit", None)
    if name is not None:
        if not isinstance(name, str) or not name:
            raise TypeError("privacy_unit must name the unit (a non-empty string)")
        if options.get("groups") is None:
            raise TypeError(
                "privacy_unit names the unit; pass its labels too: groups=<one label per row>"
            )
        import pandas as pd  # lazy, as in dpfit.privacy.unit_level

        labels = options["groups"]
        labels = labels.to_numpy() if hasattr(labels, "to_numpy") else np.asarray(labels)
        options["groups"] = pd.Series(labels, name=name, copy=False)
    return grouped_unit(options.get("groups"), options.get("max_rows_per_unit"))
