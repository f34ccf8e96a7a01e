"""The public part of a :class:`~dpfit.DPLinearRegression` fit, and its release in original
units.

:class:`PreparedFit` is what :meth:`DPLinearRegression._prepare` checks and resolves before
anything is charged (data, public rescaling, method settings); :func:`linear_result` turns a
method's :class:`~dpfit.models._linear_methods.LinearFit` into the :class:`Result` a user
sees, undoing the public rescaling exactly (post-processing).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..inference.population import transform
from ..mechanisms import NoiseSource
from ..privacy import PrivacyLedger
from ._linear_methods import LinearConfig, LinearFit, LinearMethod
from ._scaling import PublicScaling, bounds_text
from .results import Result

__all__ = ["PreparedFit", "linear_result"]


@dataclass(frozen=True, kw_only=True)
class PreparedFit:
    """The public part of one fit, from :meth:`DPLinearRegression._prepare`."""

    config: LinearConfig
    source: NoiseSource
    X: Any
    y: Any
    n_data: int
    names: list[str]
    terms: list[str]
    scaling: PublicScaling
    method: LinearMethod
    settings: dict[str, Any]
    response: str


def linear_result(
    fit: LinearFit,
    scaling: PublicScaling,
    ledger: PrivacyLedger,
    *,
    names: list[str],
    x_names: list[str],
    n: int,
    response: str,
    label: str,
    notes: tuple = (),
    predictors: tuple[Any, ...] = (),
) -> Result:
    """The release in original units: the public rescaling undone exactly (post-processing),
    covariances as J V J', and the bounds and scaling shown in the summary."""
    estimate = scaling.to_original(fit.estimate)
    interval_est = (
        None if fit.interval_estimates is None else scaling.to_original(fit.interval_estimates)
    )
    population = None
    if fit.population is not None:  # the affine map back is exact: J V J'
        k = estimate.shape[0]
        J = (scaling.to_original(np.eye(k)) - scaling.to_original(np.zeros(k))).T
        population = transform(fit.population, J)
    config_shown = dict(fit.settings)
    shown_notes = list(fit.notes)
    if (scaling_note := scaling.describe()) is not None:
        shown_notes.append(scaling_note)
        config_shown.update(_bounds_text(x_names, scaling))
    shown_notes.extend(notes)
    return Result(
        names=names,
        estimate=estimate,
        interval_estimates=interval_est,
        interval_method=fit.interval_method,
        n=n,
        ledger=ledger,
        model="DP linear regression",
        method=label,
        response=response,
        noise_backend=fit.noise_backend,
        seeded=fit.seeded,
        config=config_shown,
        notes=shown_notes,
        experimental=fit.experimental,
        diagnostics=fit.diagnostics,
        population=population,
        predictors=predictors,
    )


def _bounds_text(names: list[str], scaling: PublicScaling) -> dict[str, str]:
    shown = {}
    if scaling.x_bounds is not None:
        shown["bounds"] = bounds_text(names, scaling.x_bounds)
    if scaling.y_bounds is not None:
        shown["y_bounds"] = f"[{scaling.y_bounds[0]:g}, {scaling.y_bounds[1]:g}]"
    return shown
