"""The plan of a private GLM fit: every release, its share of rho and its noise, before any data.

:func:`plan_glm` turns the public inputs (family, n, k, rho, the row and count bounds, the
steps) into a frozen :class:`GLMPlan`: the list of named releases in the order the fit makes
them, each with its share of rho (exact shares from :func:`dpfit.privacy.split`, whose exact
sum never exceeds rho), its query kind and per-record bound, and from those its sensitivity
(:func:`dpfit.privacy.query_sensitivity`) and noise std
(:func:`dpfit.mechanisms.noise_std_for_rho`). None of it reads the data, so a user can
print the plan (``str(plan)``) before spending any budget; :func:`dpfit.algorithms.glm.dp_glm`
builds the same plan and then runs it, charged up front as one ledger entry
(:func:`dpfit.mechanisms.plan.charge_plan`). The Poisson fit's clips are set from its earlier
releases (the mean count and a residual scale) and are shown as "run time"; their releases'
shares are fixed here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import check_int, check_positive, check_real, check_rho
from ..inference.intervals import DEFAULT_BURN_IN, DEFAULT_M
from ..inference.population import NoisyMoment
from ..inference.preconditioner import ROW_CLIP
from ..mechanisms import check_public_scale, release_peaks
from ..mechanisms.plan import PlannedRelease, ReleasePlan, planned_release
from ..privacy import Query, Relation, parse_relation, split
from .glm_family import Family

__all__ = ["GLM_SHARES", "GLMPlan", "PlannedRelease", "plan_glm", "run_config"]

#: Default steps and step size of the preconditioned descent (in coordinates where the
#: Fisher information at the start is about I: a step of 0.5 halves the error per step).
GLM_STEPS = 200
GLM_STEP_SIZE = 0.5
#: Each release's share of rho (the gradient steps get the rest): the two stages of the
#: whitener, the mean response (the start and the preconditioner's scale), the bread and the
#: meat of the sandwich, for the clipped families (probit, Poisson) the gap to the
#: maximum-likelihood fit and the share of far records, and (with ``margins``) the averages
#: behind marginal effects.
GLM_SHARES = {
    "xtx": 0.05,
    "whiten": 0.05,
    "mean": 0.02,
    "scale": 0.02,
    "bread": 0.075,
    "meat": 0.075,
    "gap": 0.02,
    "far": 0.04,
    "margins": 0.02,
}
#: With a privacy unit the meat is the clustered one (:mod:`dpfit.inference._cluster`): a
#: per-unit score scale and the mean outer product of each unit's summed score, clipped per
#: unit. A unit's summed score varies with its size, so the meat gets more of rho than the
#: row-level meat (taken from the gradient steps).
GLM_UNIT_SHARES = {"rows": 0.01, "score-scale": 0.02, "cluster-meat": 0.13}

_PURPOSE = {
    "xtx": "X'X/n: first stage of the whitener",
    "whiten": "second moment of the whitened rows: second stage of the whitener",
    "mean": "mean response: the start (intercept) and the step's scale",
    "scale": "mean squared residual at the start, capped: the Poisson clips' scale",
    "gradient": "clipped mean gradient of the negative log-likelihood, one per step",
    "bread": "Fisher information at the estimate (whitened): the sandwich's bread",
    "meat": "second moment of the whitened scores at the estimate: the sandwich's meat",
    "gap": "mean clipped excess above the clip: the gap to the maximum-likelihood fit",
    "far": "share of records whose gradient is far beyond the clip",
    "margins": "mean dmu/deta, its spread and its derivative: average marginal effects",
    "rows": "mean rows per unit: turns the released means per unit into means per row",
    "score-scale": "mean squared summed score per unit, capped: the clustered meat's clip",
    "cluster-meat": "mean outer product of each unit's summed whitened score, clipped per "
    "unit: the cluster-robust sandwich's meat",
}


@dataclass(frozen=True, kw_only=True)
class GLMPlan(ReleasePlan):
    """The public, data-independent part of one private GLM fit (from :func:`plan_glm`).

    A :class:`~dpfit.mechanisms.plan.ReleasePlan` (label, rho, relation, the public n and
    the releases in the order the fit makes them) with the GLM's public settings:

    Attributes
    ----------
    family : Family
    k : int
        Number of coefficients (ones column included).
    row_bound, row_clip : float
        Public bound on ||d_i|| (sqrt(k) after rescaling into [-1, 1]) and the norm whitened
        rows are clipped to in the moment releases (``ROW_CLIP`` sqrt(k)).
    count_bound : float or None
        The Poisson count's public upper bound K (None for binomial).
    clip : float
        The largest gradient clip: the family's score bound times ``row_bound`` (the
        Poisson fit clips at most there, at a clip set from its released mean count and
        scale).
    steps, step_size, m, burn_in : int, float, int, int
        The descent and the batch means of its iterates.
    clustered : bool
        A fit with a privacy unit: ``n`` counts units, every release of per-row terms bounds
        ``rows_per_unit`` rows, and the meat is the clustered one.
    """

    family: Family
    k: int
    row_bound: float
    row_clip: float
    count_bound: float | None
    clip: float
    steps: int
    step_size: float
    m: int
    burn_in: int
    clustered: bool = False

    def title(self) -> str:
        n = f"{self.n} units of at most {self.rows_per_unit} rows" if self.clustered else self.n
        return (
            f"Private GLM plan: {self.family}, n = {n} (public), k = {self.k} "
            f"coefficients, rho = {self.rho:.6g} ({self.relation})"
        )


def _planned(
    name: str, rho: float, query: Query, bound: float | None, *, n: int, relation: Relation,
    count: int = 1, rows_per_unit: int = 1, label: str | None = None,
) -> PlannedRelease:  # fmt: skip
    return planned_release(
        name, rho, query, bound, n=n, relation=relation, count=count,
        label=label or f"glm/{name}", purpose=_PURPOSE[name], rows_per_unit=rows_per_unit,
    )  # fmt: skip


def plan_glm(
    family: Family,
    *,
    n: int,
    k: int,
    rho: float,
    count_bound: float | None = None,
    steps: int = GLM_STEPS,
    step_size: float = GLM_STEP_SIZE,
    m: int = DEFAULT_M,
    burn_in: int = DEFAULT_BURN_IN,
    margins: bool = False,
    relation: Relation | str = "replace-one",
    warn_large_rho: bool = True,
    rows_per_unit: int | None = None,
) -> GLMPlan:
    """The plan of :func:`dpfit.algorithms.glm.dp_glm` from public inputs (module docstring).

    Parameters are those of :func:`~dpfit.algorithms.glm.dp_glm`; ``n`` is the public record
    count and ``k`` the number of columns of the design (rows of norm at most sqrt(k)).
    ``rows_per_unit`` = K plans the fit with a privacy unit (:mod:`dpfit.algorithms._glm_units`):
    ``n`` counts units, each release of per-row terms is K times as sensitive
    (:func:`dpfit.privacy.query_sensitivity` with ``rows_per_unit=K``: exact, K rows can all
    move by the row bound) and the meat is replaced by the clustered meat's two releases.

    Raises
    ------
    TypeError, ValueError
        An invalid input; nothing is charged (the plan charges nothing in any case).
    """
    rho = check_rho(rho, warn=warn_large_rho)
    n = check_int(n, "n", low=1)
    k = check_int(k, "k", low=1)
    relation = parse_relation(relation)
    steps = check_int(steps, "steps", low=1)
    step_size = check_positive(step_size, "step_size")
    m = check_int(m, "m", low=2)
    burn_in = check_int(burn_in, "burn_in", low=0)
    if (steps - burn_in) // m < 1:
        raise ValueError(
            f"steps={steps} is too few for m={m} batches after burn_in={burn_in}; "
            "increase steps or lower m"
        )
    if family.name == "poisson":
        if count_bound is None:
            raise TypeError(
                "y_bounds=(0, K) is required for the Poisson family: counts are clipped to a "
                "public K, which bounds each record's gradient"
            )
        count_bound = check_real(count_bound, "count bound K", low=0.0, high=math.inf)
    else:
        count_bound = None
    if margins and family.name == "poisson":
        raise ValueError(
            "margins: the Poisson fit's average marginal effects need no release (with an "
            "intercept they are theta_j times the released mean count); use margins=False"
        )
    clustered = rows_per_unit is not None
    K = check_int(rows_per_unit, "max_rows_per_unit", low=1) if clustered else 1
    row_bound = math.sqrt(k)
    row_clip = ROW_CLIP * row_bound
    clip = family.score_bound(count_bound) * row_bound
    y_cap = family.response_bound(count_bound)
    _check_scales(
        clip, row_clip, family.score_bound(count_bound), n=n, rho=rho, relation=relation, K=K
    )
    poisson = family.name == "poisson"  # its clips and caps follow the released mean count
    clipped = not family.exact  # its releases include the gap to the unclipped fit
    meat = ["score-scale", "cluster-meat"] if clustered else ["meat"]
    names = ["xtx", "whiten", "mean", *(["rows"] * clustered), *(["scale"] * poisson),
             "gradient", "bread", *meat,
             *(["gap", "far"] * clipped), *(["margins"] * margins)]  # fmt: skip
    table = {**GLM_SHARES, **GLM_UNIT_SHARES}
    rest = 1.0 - sum(table[name] for name in names if name != "gradient")
    shares = dict(zip(names, split(rho, [table.get(nm, rest) for nm in names]), strict=True))
    common = {"n": n, "relation": relation, "rows_per_unit": K}
    releases = [
        _planned("xtx", shares["xtx"], Query.SECOND_MOMENT, row_bound, **common),
        _planned("whiten", shares["whiten"], Query.SECOND_MOMENT, row_clip, **common),
        _planned("mean", shares["mean"], Query.BOUNDED_MEAN, y_cap, **common),
        *(
            [_planned("rows", shares["rows"], Query.BOUNDED_MEAN, 1.0, **common)]
            if clustered
            else []
        ),
        *(
            [_planned("scale", shares["scale"], Query.BOUNDED_MEAN, None, **common)]
            if poisson
            else []
        ),
        _planned(
            "gradient", shares["gradient"], Query.MEAN, None if poisson else clip,
            count=steps, **common,
        ),
        _planned(
            "bread", shares["bread"], Query.SECOND_MOMENT,
            None if poisson else math.sqrt(family.weight_bound(None)) * row_clip, **common,
        ),
        *_meat(shares, family, row_clip, K, clustered=clustered, poisson=poisson, **common),
    ]  # fmt: skip
    if clipped:  # the window of the gap follows the interval's standard errors
        releases.append(_planned("gap", shares["gap"], Query.MEAN, None, **common))
        releases.append(_planned("far", shares["far"], Query.BOUNDED_MEAN, 1.0, **common))
    if margins:
        first, second = family.margin_bounds()
        bound = math.hypot(first, first, second * row_bound)  # margin_sums' per-record terms
        releases.append(_planned("margins", shares["margins"], Query.MEAN, bound, **common))
    return GLMPlan(
        label="dp_glm", family=family, n=n, k=k, rho=rho, relation=relation,
        row_bound=row_bound, row_clip=row_clip, count_bound=count_bound, clip=clip, steps=steps,
        step_size=step_size, m=m, burn_in=burn_in, releases=tuple(releases), rows_per_unit=K,
        clustered=clustered,
    )  # fmt: skip


def _meat(
    shares: dict[str, float], family: Family, row_clip: float, K: int, *, clustered: bool,
    poisson: bool, n: int, relation: Relation, rows_per_unit: int,
) -> list[PlannedRelease]:  # fmt: skip
    """The meat's releases: the row-level meat, or with a privacy unit the clustered meat's
    score scale (terms capped at K) and meat (each unit's summed score scaled to norm at most
    1), whose records are units (:func:`dpfit.inference._cluster.release_cluster_meat`)."""
    if not clustered:
        bound = None if poisson else family.score_bound(None) * row_clip
        return [_planned("meat", shares["meat"], Query.SECOND_MOMENT, bound, n=n,
                         relation=relation, rows_per_unit=rows_per_unit)]  # fmt: skip
    return [
        _planned("score-scale", shares["score-scale"], Query.BOUNDED_MEAN, float(K), n=n,
                 relation=relation, label="unit/score-scale"),
        _planned("cluster-meat", shares["cluster-meat"], Query.SECOND_MOMENT, 1.0, n=n,
                 relation=relation, label="unit/cluster-meat"),
    ]  # fmt: skip


def _check_scales(
    clip: float, row_clip: float, score: float, *, n: int, rho: float, relation: Relation,
    K: int = 1,
) -> None:  # fmt: skip
    """Refuse, before any charge, a count bound whose releases could overflow: the clipped
    gradient sum and its noise, and the meat, a second moment of rows of norm up to
    score x row_clip, with the squares of its noise (the sandwich's variance; public only;
    :mod:`dpfit.mechanisms.limits`). With a privacy unit of K rows a unit's terms are up to
    K times (K^2 for the meat's) a row's."""
    common = {"n": n, "rho": rho, "relation": relation}
    check_public_scale(
        "y_bounds",
        score,
        lambda s: (
            *release_peaks(Query.MEAN, bound=K * s * clip / score, **common),
            *release_peaks(Query.SECOND_MOMENT, bound=K * s * row_clip, squared=True, **common),
        ),
        what=f"the clipped gradients of n = {n} records and their second moment",
    )


def run_config(
    plan: GLMPlan,
    intercept: bool,
    theta0: np.ndarray,
    level: float,
    clips: dict[str, float],
    H: NoisyMoment,
    bread: NoisyMoment,
    meat: NoisyMoment,
) -> dict[str, Any]:
    """The public inputs of the run and the noise std of every release (for its interval)."""
    return {
        "rho": plan.rho,
        "family": plan.family.name,
        "link": plan.family.link,
        "count_bound": plan.count_bound,
        "intercept": intercept,
        "n": plan.n,
        "k": plan.k,
        "relation": plan.relation.value,
        "steps": plan.steps,
        "step_size": plan.step_size,
        "m": plan.m,
        "burn_in": plan.burn_in,
        "clip": clips["gradient"],
        "row_clip": plan.row_clip,
        "weight_cap": clips["weight"],
        "meat_clip": clips["meat"],
        "start": tuple(theta0.tolist()),
        "level": level,
        "noise_std": plan.bound("gradient", clips["gradient"]).noise_std,
        "xtx_noise_std": H.noise_std,
        "bread_noise_std": bread.noise_std,
        "meat_noise_std": meat.noise_std,
    }
