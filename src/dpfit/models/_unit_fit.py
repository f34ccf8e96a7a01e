"""The unit-level linear fit: ``DPLinearRegression().fit(X, y, groups=...)`` and
``dpfit.ols(..., privacy_unit="person_id")``.

Every release bounds what one **unit** (all rows with the same label, at most K =
``max_rows_per_unit`` of them, :mod:`dpfit.privacy.unit_level`) can change, so the guarantee
protects a person with many rows, and the interval is cluster-robust by the same unit.

The algorithm is noisy sufficient statistics (Wang 2018's SSP without AdaSSP's ridge) with a
clustered sandwich, on the design the public bounds map into [-1, 1] (||d_i|| <= B =
sqrt(k), |y_i| <= 1); with ``entity_effects`` each unit's rows are first centred at the
unit's means (:mod:`dpfit.models._panel`). Releases, in order (shares of rho):

1. under add/remove unit only, the number of units, a count of sensitivity 1 (2%): used for
   the small-cluster correction, never as a divisor (sums are divided by the public
   ``n_public``);
2. X'X, upper triangle, with ``query_sensitivity("second-moment-sum", bound=B,
   rows_per_unit=K)`` = sqrt(2) K B^2 under replace-one unit (30%);
3. X'y with ``query_sensitivity("sum", bound=B, rows_per_unit=K)`` = 2 K B (30%).
   Both are bounded by the row cap (exact: K rows can all move by B), not by clipping each
   unit's moments, which would reweight units and move the estimand;
4. the clustered meat's score scale and the meat itself, with each unit's summed, whitened
   score clipped (per-unit clipping; :mod:`dpfit.inference._cluster`) (5% and 33%).

theta = H~^-1 b~ with H~ = X'X~ / G de-spread and raised to one noise s.d.
(:meth:`~dpfit.inference.population.NoisyMoment.shrunk`) and b~ = X'y~ / G. Its covariance
around the population coefficient: the cluster-robust sandwich (sampling, with the
small-cluster correction of :func:`~dpfit.inference._cluster.cluster_correction`) plus the
first-order law of the noise in X'X and X'y at theta (privacy), as for AdaSSP
(:mod:`dpfit.baselines.adassp_population`). Everything after the releases is post-processing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..algorithms._unit_sums import cap_rows, unit_sums
from ..baselines._sufficient_statistics import release_gram
from ..inference._cluster import cluster_correction, few_units, release_cluster_meat
from ..inference.doubts import Doubt, warn_doubts
from ..inference.identification import (
    column_scale,
    unidentified_directions,
    unidentified_reason,
)
from ..inference.population import CovarianceEstimate, NoisyMoment, sandwich, welch_dof
from ..inference.whitened import NOISY_MEAT, inverse_sqrt, noisy_sandwich
from ..mechanisms import NoiseSource, gaussian, noise_std_for_rho, rho_within
from ..privacy import PrivacyLedger, Query, Relation, query_sensitivity, split_rest
from ..privacy.unit_level import PrivacyUnit
from ._linear_methods import LinearFit
from ._panel import bound_units, within

__all__ = ["UNIT_LABEL", "resolve_units", "run_units"]

UNIT_LABEL = "unit-level noisy sufficient statistics with a cluster-robust sandwich"
#: Shares of rho (module docstring); the meat gets the rest.
SHARES = {"xtx": 0.30, "xty": 0.30, "scale": 0.05}
COUNT_SHARE = 0.02


def resolve_units(
    config: Any, scaling: Any, unit: PrivacyUnit, *, n_units: int, entity_effects: bool
) -> dict[str, Any]:
    """Public checks and settings of the unit-level fit; nothing here reads the data.

    ``n_units`` is the number of units in the data: public under replace-one unit; under
    add/remove unit the public ``n_public`` is used instead and n_units is never shown.
    """
    if scaling.x_bounds is None or scaling.y_bounds is None:
        raise ValueError(
            "a fit with a privacy unit needs public bounds for every feature (bounds) and "
            "for the response (y_bounds): they bound each unit's contribution"
        )
    if config.method != "gd":
        raise ValueError(
            f"method={config.method!r} has no unit-level version yet; leave method at its "
            "default with a privacy unit (the unit-level sufficient-statistics fit)"
        )
    ignored = ("clip", "steps", "step_size", "burn_in", "moment_share", "precondition")
    for name in ignored:
        if getattr(config, name) is not None:
            raise ValueError(f"{name} does not apply to a fit with a privacy unit; leave it None")
    if config.interval not in (None, "batched-means") or config.target != "least-squares":
        raise ValueError(
            "a fit with a privacy unit releases a cluster-robust population interval; leave "
            "interval and target at their defaults"
        )
    if config.relation is Relation.ADD_REMOVE:
        if config.n_public is None:
            raise ValueError(
                "n_public (a public number of units) is required under relation='add-remove' "
                "with a privacy unit: sums are divided by it, never by the private count"
            )
        n = config.n_public
    else:
        if config.n_public is not None and config.n_public != n_units:
            raise ValueError(
                "n_public must equal the number of units under relation='replace-one' with a "
                "privacy unit (the number of units is public under replace-one)"
            )
        n = n_units
    return {
        "rho": config.rho,
        "relation": config.relation,
        "n": n,
        "max_rows": unit.max_rows,
        "unit": unit,
        "x_bound": scaling.max_row_norm,
        "entity_effects": entity_effects,
    }


def run_units(
    design: np.ndarray,
    response: np.ndarray,
    groups: Any,
    settings: Mapping[str, Any],
    ledger: PrivacyLedger,
    source: NoiseSource,
) -> LinearFit:
    """The unit-level fit on the rescaled design (module docstring)."""
    n, K, B = settings["n"], settings["max_rows"], settings["x_bound"]
    relation = settings["relation"]
    add_remove = relation is Relation.ADD_REMOVE
    kept = cap_rows(groups, design.shape[0], K, source)
    D, y, codes = np.asarray(design)[kept.rows], np.asarray(response)[kept.rows], kept.codes
    if settings["entity_effects"]:
        D, y = within(D, y, codes, kept.n_units)
    D, y = bound_units(D, y, codes, kept.n_units, max_rows=K, x_bound=B)
    parts = {**SHARES, "count": COUNT_SHARE} if add_remove else dict(SHARES)
    rhos = split_rest(settings["rho"], parts, rest="meat")
    common = {"ledger": ledger, "rng": source}
    units = n
    if add_remove:
        count_sens = query_sensitivity(Query.COUNT)
        units = float(
            gaussian(
                float(kept.n_units),
                sensitivity=count_sens,
                noise_std=noise_std_for_rho(count_sens, rho_within(count_sens, rhos["count"])),
                label="unit/n-units",
                **common,
            )
        )
    bounds = {"n": n, "relation": relation, "rows_per_unit": K, "bound": B}
    s_xx = query_sensitivity(Query.SECOND_MOMENT_SUM, **bounds)
    s_xy = query_sensitivity(Query.SUM, **bounds)
    std_xx = noise_std_for_rho(s_xx, rho_within(s_xx, rhos["xtx"]))
    std_xy = noise_std_for_rho(s_xy, rho_within(s_xy, rhos["xty"]))
    with np.errstate(all="ignore"):
        gram, xty = D.T @ D, D.T @ y
    gram = release_gram(gram, sensitivity=s_xx, noise_std=std_xx, label="unit/xtx", **common)
    xty = gaussian(xty, sensitivity=s_xy, noise_std=std_xy, label="unit/xty", **common)
    H = NoisyMoment(matrix=gram / n, noise_std=std_xx / n)
    bread = H.shrunk()
    theta = np.linalg.solve(bread, xty / n)
    P = inverse_sqrt(H.psd())
    with np.errstate(all="ignore"):
        scores = unit_sums((D @ P) * (y - D @ theta)[:, None], codes, kept.n_units)
    meat, clip = release_cluster_meat(
        scores, max_rows=K, rho_scale=rhos["scale"], rho_meat=rhos["meat"], n=n, **common
    )
    public = {**settings, "noise_backend": source.backend, "seeded": source.seeded}
    return _fit(theta, H, meat, P, public, units=units, clip=clip, noise=std_xy / n)


def _fit(
    theta: np.ndarray,
    H: NoisyMoment,
    meat: NoisyMoment,
    P: np.ndarray,
    settings: Mapping[str, Any],
    *,
    units: float,
    clip: float,
    noise: float,
) -> LinearFit:
    """The covariance and the result from the releases (post-processing)."""
    n, unit = settings["n"], settings["unit"]
    factor, dof_cap = cluster_correction(units)
    sandwich_ = noisy_sandwich(H, meat, n, right=np.linalg.inv(P))
    sampling = factor * sandwich_.cov
    bread = H.shrunk()
    k = theta.size
    law = noise**2 * np.eye(k) + H.noise_std**2 * (
        (theta @ theta) * np.eye(k) + np.outer(theta, theta) - np.diag(theta**2)
    )
    privacy = sandwich(bread, law, 1)
    sampling_dof = np.minimum(sandwich_.dof, dof_cap)
    clustering = f"clustered by {unit.column} ({_units_text(units, settings)})"
    population = CovarianceEstimate(
        target="population",
        cov=sampling + privacy,
        dof=welch_dof([(sampling, sampling_dof), (privacy, math.inf)]),
        description=(
            f"Population interval, cluster-robust ({clustering}): estimate +/- t * "
            "sqrt(V_sampling + V_privacy). V_sampling = G/(G-1) H^-1 Omega H^-1 / G with H the "
            "released X'X/G and Omega the released mean over units of the outer products of "
            f"each unit's summed (whitened) scores, clipped per unit at {clip:.3g}; "
            "V_privacy the first-order law of the noise in X'X and X'y. Student-t with at "
            "most G - 1 degrees of freedom, fewer where the releases' noise warrants "
            "(docs/privacy-units.md)."
        ),
        parts={"sampling": sampling, "privacy": privacy},
        covers="the population least-squares coefficients"
        + (" of the within (fixed-effects) model" if settings["entity_effects"] else "")
        + " of the data clipped to the public bounds (sampling + privacy error)",
    )
    doubts = [d for d in (few_units(units, k),) if d is not None]
    terms = settings.get("terms") or [f"x{j}" for j in range(k)]
    if H.unidentified():
        reason = unidentified_reason(
            unidentified_directions(H, 1.0), column_scale(H), terms, "the released X'X/G", "two"
        )
        doubts.append(_doubt(reason))
    if sandwich_.noisy_meat():
        doubts.append(NOISY_MEAT)
    checks = warn_doubts(doubts)
    notes = [unit.describe() + "; " + clustering + "."]
    if settings["entity_effects"]:
        notes.append(
            "Entity fixed effects removed by the within transformation per unit; the "
            "intercept is absorbed, time-invariant terms are not identified."
        )
    return LinearFit(
        estimate=theta,
        interval_estimates=None,
        interval_method="A unit-level fit releases one estimate: its interval is the "
        "cluster-robust population one (conf_int(target='population')).",
        settings={
            "privacy_unit": unit.column,
            "max_rows_per_unit": unit.max_rows,
            "units": _units_text(units, settings),
            "score clip (per unit)": f"{clip:.6g}",
            "entity_effects": settings["entity_effects"],
        },
        noise_backend=settings["noise_backend"],
        seeded=settings["seeded"],
        notes=tuple(notes + checks),
        population=population,
        label=UNIT_LABEL,
    )


def _units_text(units: float, settings: Mapping[str, Any]) -> str:
    if settings["relation"] is Relation.ADD_REMOVE:
        return f"about {units:.0f} units (a private count)"
    return f"{settings['n']} units"


def _doubt(reason: str) -> Doubt:
    return Doubt(reason, ("more units", "a larger rho", "fewer or less collinear terms"))
