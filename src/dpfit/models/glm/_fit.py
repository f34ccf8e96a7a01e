"""One fit path for every private GLM: config, public scaling, the algorithm, the result.

The estimators (:mod:`dpfit.models.glm.estimators`) and the formula API
(:mod:`dpfit.models.glm.formula`) both validate their public parameters into a frozen
:class:`GLMConfig` (a constraint table, nothing read off the data) and call :func:`fit_glm`:
features are clipped into their public bounds and mapped to [-1, 1] (the linear default's
:class:`~dpfit.models._scaling.PublicScaling`), :func:`dpfit.algorithms.glm.dp_glm` runs
its plan of releases, and the released estimate and population covariance are mapped back to
the original units exactly (J V J'). The one ``CoverageWarning`` of the fit
(:mod:`dpfit.inference.doubts`) lists what the releases say against the interval.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._records import read_records
from ..._validation import check_positive, check_real
from ...algorithms._glm_plan import GLMPlan
from ...algorithms._glm_units import in_memory, unit_n
from ...algorithms.glm import dp_glm, plan_glm
from ...algorithms.glm_family import get_family
from ...distributed import map_rows
from ...inference.doubts import warn_doubts
from ...inference.population import transform
from ...inference.population_glm import glm_doubts, glm_population, spread_batch_means
from ...mechanisms import NoiseSource
from ...mechanisms.plan import PlannedCheck
from ...privacy import Budget, PrivacyLedger, Relation, parse_relation, public_n
from ...privacy._units import units_to_float
from ...privacy.ledger import prepare_ledger
from ...privacy.unit_level import PrivacyUnit
from .._constraints import Check, check_bool, integer, optional, rho_check, validated
from .._dask import fit_data
from .._fit_checks import warn_few_records
from .._scaling import PublicScaling, bounds_in_order, bounds_text
from ._margins import glm_margins
from .results import GLMResult

__all__ = ["GLMConfig", "fit_glm", "glm_config", "per_record_numbers"]

#: The model names of the summary's title.
_MODELS = {
    ("binomial", "logit"): "DP logistic regression",
    ("binomial", "probit"): "DP probit regression",
    ("poisson", "log"): "DP Poisson regression",
}

#: Constraint table of the scalar parameters shared by every GLM entry point.
GLM_CONSTRAINTS: dict[str, Check] = {
    "rho": rho_check(warn=True),
    "steps": integer(1),
    "step_size": lambda v, name: check_positive(v, name),
    "fit_intercept": check_bool,
    "m": integer(2),
    "burn_in": integer(0),
    "relation": lambda v, name: parse_relation(v),
    "n_public": optional(integer(1)),
    "secure": check_bool,
    "margins": check_bool,
}


@dataclass(frozen=True, kw_only=True)
class GLMConfig:
    """The validated public parameters of one private GLM fit."""

    family: str
    link: str
    rho: float
    steps: int
    step_size: float
    fit_intercept: bool
    m: int
    burn_in: int
    relation: Relation
    n_public: int | None
    secure: bool
    margins: bool
    count_bound: float | None


def _count_bound(family: str, y_bounds: Any) -> float | None:
    """K of the Poisson fit's public y_bounds=(0, K); binomial refuses y_bounds."""
    if family == "binomial":
        if y_bounds is not None:
            raise ValueError(
                "y_bounds applies to the Poisson family only: a binomial response is 0/1 "
                "(values are clipped into [0, 1])"
            )
        return None
    if y_bounds is None:
        raise TypeError(
            "y_bounds=(0, K) is required for the Poisson family: counts are clipped to a public "
            "K (choose it from public knowledge of the count's range, not from the data)"
        )
    pair = np.asarray(y_bounds, dtype=np.float64).ravel() if _pair(y_bounds) else None
    if pair is None or pair.shape != (2,) or pair[0] != 0.0:
        raise ValueError(f"y_bounds must be (0, K) with K > 0 for counts, got {y_bounds!r}")
    return check_real(float(pair[1]), "y_bounds' K", low=0.0, high=np.inf)


def _pair(value: Any) -> bool:
    return isinstance(value, (tuple, list, np.ndarray)) and not isinstance(value, str)


def glm_config(
    owner: Any, *, family: str, link: str | None, y_bounds: Any, warn_large_rho: bool = True
) -> GLMConfig:
    """Every scalar parameter of ``owner`` (an estimator, or a namespace of the formula's
    keywords) checked against :data:`GLM_CONSTRAINTS`, and the family, link and count bound."""
    fam = get_family(family, link)
    clean = validated(owner, GLM_CONSTRAINTS, warn_large_rho=warn_large_rho)
    if clean["margins"] and fam.name == "poisson":
        clean["margins"] = False  # Poisson margins need no release (the released mean count)
    return GLMConfig(
        family=fam.name, link=fam.link, count_bound=_count_bound(fam.name, y_bounds), **clean
    )


def _bounds(bounds: Any, names: list[str] | None, p: int) -> Any:
    """The public bounds in column order: one pair per feature (from a mapping by name, or
    one (low, high) pair repeated for every feature)."""
    if bounds is None:
        raise TypeError(
            "bounds are required: public (low, high) bounds of every feature bound each "
            "record's gradient (choose them from public knowledge, never from the data)"
        )
    if isinstance(bounds, Mapping):
        if names is None:
            raise ValueError("bounds given as a mapping need X with column names")
        return bounds_in_order(bounds, names, "per column")
    if np.ndim(bounds) == 1 and p > 1:
        return [tuple(bounds)] * p
    return bounds


def glm_plan(config: GLMConfig, *, rows: int, p: int, unit: PrivacyUnit | None = None) -> GLMPlan:
    """The plan :func:`fit_glm` runs on ``rows`` records of ``p`` features (public inputs
    only; :func:`~dpfit.algorithms.glm.plan_glm`); with a privacy ``unit``, ``rows`` is
    the public number of units and the plan bounds one unit (margins are not released)."""
    return plan_glm(
        get_family(config.family, config.link), n=public_n(rows, config.n_public,
        config.relation), k=p + int(config.fit_intercept), rho=config.rho,
        count_bound=config.count_bound, steps=config.steps, step_size=config.step_size,
        m=config.m, burn_in=config.burn_in, margins=config.margins and unit is None,
        relation=config.relation, warn_large_rho=False,
        rows_per_unit=None if unit is None else unit.max_rows,
    )  # fmt: skip


def fit_glm(
    X: Any,
    y: Any,
    config: GLMConfig,
    *,
    bounds: Any,
    offset: Any,
    budget: Budget | None,
    source: NoiseSource,
    names: list[str] | None,
    response: str,
    groups: Any = None,
    unit: PrivacyUnit | None = None,
    check: PlannedCheck | None = None,
) -> GLMResult:
    """Fit one private GLM (module docstring); ``names`` are the feature names (None: x0, ...).

    A ``check`` (the formula calls' bounds check) is the last release of the fit's plan,
    charged with it as one entry of ``check.rho`` (``config.rho`` is the fit's share); its
    ``run`` puts its note in the trajectory's config under ``"bounds_check"``.

    With a privacy ``unit`` and its labels ``groups`` (one per row, in memory) every release
    protects all rows of one unit and the interval is clustered by it
    (:mod:`dpfit.algorithms._glm_units`); ``n`` is then the public number of units.

    Raises
    ------
    TypeError, ValueError
        Invalid parameters or data, before anything is charged or drawn.
    BudgetExceededError
        ``budget`` cannot afford ``config.rho``; nothing was charged or drawn.
    """
    if unit is not None:
        in_memory(X, y, groups)
    rows_public = unit is None or config.relation is Relation.ADD_REMOVE  # never compared
    X_arr, y_arr, n = fit_data(
        X, y, method="gd", n_public=config.n_public if rows_public else None,
        relation=config.relation,
    )  # fmt: skip
    if unit is not None:
        n = unit_n(groups, X_arr, max_rows=unit.max_rows, margins=False,
                   n_public=config.n_public, relation=config.relation)  # fmt: skip
    p = X_arr.shape[1]
    x_names = names if names is not None else [f"x{j}" for j in range(p)]
    scaling = PublicScaling.from_bounds(
        _bounds(bounds, names, p), None, n_features=p, fit_intercept=config.fit_intercept
    )
    k = p + int(config.fit_intercept)
    warn_few_records(n=n, p=k)
    ledger = prepare_ledger(
        PrivacyLedger(relation=config.relation, budget=budget, unit=unit), config.relation,
        config.rho if check is None else check.rho, name=_MODELS[(config.family, config.link)],
    )  # fmt: skip
    y_arr, offset = _zero_records(X_arr, y_arr, offset)
    traj = dp_glm(
        map_rows(scaling.design, X_arr, columns=k), y_arr, rho=config.rho,
        family=config.family, link=config.link, count_bound=config.count_bound,
        offset=offset, intercept=config.fit_intercept,
        steps=config.steps, step_size=config.step_size, m=config.m, burn_in=config.burn_in,
        margins=config.margins and unit is None, relation=config.relation,
        n_public=config.n_public, ledger=ledger, rng=source, warn_large_rho=False,
        groups=groups, max_rows_per_unit=None if unit is None else unit.max_rows, check=check,
    )  # fmt: skip
    checked = check is not None and check.release is not None
    check_note = [traj.config["bounds_check"]] if checked else []  # put there by check.run
    inference = glm_population(traj)
    notes = warn_doubts(glm_doubts(inference, traj))
    shown = _shown(traj, scaling, x_names)
    if unit is not None:  # the summary names the clustering
        shown["privacy unit"] = f"{unit.describe()}; clustered by {unit.column} ({n} units)"
    J = (scaling.to_original(np.eye(k)) - scaling.to_original(np.zeros(k))).T
    terms = (["Intercept"] if config.fit_intercept else []) + x_names
    population = transform(inference.population, J)
    estimate = scaling.to_original(traj.estimate)
    batches = scaling.to_original(spread_batch_means(traj.releases["batch_means"], traj.config))
    return GLMResult(
        names=terms,
        estimate=estimate,
        interval_estimates=batches + (estimate - batches.mean(axis=0)),
        interval_method=_SAMPLE_TEXT.format(m=config.m, burn_in=config.burn_in),
        n=n,
        ledger=ledger,
        model=_MODELS[(config.family, config.link)],
        method="DP-GD (Brown et al. 2024, Alg. 1) on the negative log-likelihood, "
        "preconditioned by a private X'X/n",
        response=response,
        noise_backend=traj.noise_backend,
        seeded=traj.seeded,
        config=shown,
        notes=[*notes, _plan_note(traj, checked), *check_note],
        population=population,
        family=config.family,
        link=config.link,
        margins=glm_margins(traj, inference.population, J, x_names, config.fit_intercept),
    )


def _zero_records(X: Any, y: Any, offset: Any) -> tuple[Any, Any]:
    """In memory, a formula's zero record (a NaN design row or response: a category outside
    the declared levels) gets response 0 and offset 0, as its design row becomes 0
    (:func:`dpfit.distributed.map_rows`): the zero record of every release. On Dask each
    reduction applies the rule block by block."""
    if hasattr(X, "dask"):
        return y, offset
    null = ~np.isfinite(y) | ~np.isfinite(X).all(axis=1)
    if not null.any():
        return y, offset
    y = np.where(null, 0.0, y)
    if offset is not None:
        offset = np.where(null, 0.0, np.asarray(offset, dtype=np.float64))
    return y, offset


_SAMPLE_TEXT = (
    "Student-t intervals (df = m - 1) over the means of m = {m} consecutive batches of the "
    "released DP-GD iterates after a burn-in of {burn_in} (Brown et al. 2024, eq. 12), "
    "spread by the square root of the factor by which the iterates' autocorrelation makes "
    "batch means understate the variance of their average, and centred on the estimate: "
    "they cover this sample's maximum-likelihood fit (privacy error "
    "only), not a population parameter."
)


def _shown(traj: Any, scaling: PublicScaling, x_names: list[str]) -> dict[str, Any]:
    """The public configuration for the summary (and the clips, set from releases)."""
    c = traj.config
    shown = {
        "family": f"{c['family']} ({c['link']} link)",
        "steps": c["steps"],
        "step_size": f"{c['step_size']:.6g} (used {c['step']:.3g}: at most the step that keeps "
        "the iterates' spread small)",
        "spread": f"{c['spread']:.3g} (variance of the linear predictor over the iterates, "
        "mean over records)",
        "m": c["m"],
        "burn_in": c["burn_in"],
        "clip": f"{c['clip']:.6g} (per-record gradient norm, rescaled design"
        + ("; exact: nothing is clipped)" if c["link"] == "logit" else ")"),
        "noise_std": c["noise_std"],
        "bounds": bounds_text(x_names, scaling.x_bounds),
    }
    if c["count_bound"] is not None:
        shown["y_bounds"] = f"[0, {c['count_bound']:g}] (counts above K are clipped to K)"
    return shown


def _plan_note(traj: Any, checked: bool) -> str:
    """The releases of the fit, in order, with their shares of the fit's rho and noise std
    (``checked``: the last release, the bounds check, has its own note)."""
    releases = traj.ledger.releases[: len(traj.ledger.releases) - checked]
    total = units_to_float(sum(e.rho_units for e in releases))
    parts = [
        f"{e.label} {100 * e.rho / total:.3g}% (noise std {e.noise_std:.3g}"
        + (f", {e.count} releases)" if e.count > 1 else ")")
        for e in releases
    ]
    return "Releases (share of rho): " + ", ".join(parts) + "."


def per_record_numbers(value: Any, name: str) -> np.ndarray:
    """A per-record ``exposure`` or ``offset`` as float64. A cell that is not a number is
    refused with a fixed message (numpy's own would quote the cell, a record's value)."""
    return read_records(
        np.asarray, value, dtype=np.float64, what=f"reading {name} as numbers",
        hint=f"{name} must hold numbers: convert or remove its text cells first",
    )  # fmt: skip
