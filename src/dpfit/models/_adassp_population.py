"""``DPLinearRegression(method="adassp")``: its settings and its result.

:func:`resolve_adassp` and :func:`run_adassp` are the method's two steps in the estimator's
method table (:mod:`._linear_methods`); the algorithm, AdaSSP with the releases behind its
population interval (Wang 2018, Alg. 2; docs/inference.md, "AdaSSP: population intervals"),
is :func:`dpfit.baselines.adassp_population.adassp_population`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..baselines import adassp
from ..baselines._sufficient_statistics import sensitivities
from ..baselines.adassp_population import (
    ADASSP_LABEL,
    ADASSP_MOMENT_SHARE,
    RESIDUAL_CAP,
    adassp_population,
    adassp_shares,
    warn_unidentified,
)
from ..mechanisms import NoiseSource
from ..mechanisms.plan import ReleasePlan, planned_release
from ..privacy import PrivacyLedger, Query, split

__all__ = ["ADASSP_LABEL", "ADASSP_MOMENT_SHARE", "adassp_plan", "resolve_adassp", "run_adassp"]

#: AdaSSP's releases and those of its population interval, in the order they are made:
#: label -> (query, what it is for).
_RELEASES = {
    "adassp/lambda_min": (Query.EIGENVALUE, "smallest eigenvalue of X'X: AdaSSP's ridge"),
    "adassp/xtx": (Query.SECOND_MOMENT_SUM, "X'X: AdaSSP's normal equations"),
    "adassp/xty": (Query.SUM, "X'y: AdaSSP's normal equations"),
    "adassp/residual-scale": (Query.BOUNDED_MEAN, "mean squared residual, capped: the meat's clip"),
    "adassp/clipped-y": (Query.BOUNDED_MEAN, "share of responses at the y bounds"),
    "adassp/omega": (Query.SECOND_MOMENT, "second moment of the whitened clipped gradients: "
                     "the sandwich's meat"),
}  # fmt: skip



def resolve_adassp(config: Any, scaling: Any, n: int, p: int) -> dict[str, Any]:
    """AdaSSP needs public bounds on every feature and on y; its interval is a population one.

    The estimator's default ``interval`` asks for the population interval (``moment_share``
    of rho, default 0.2); ``interval=None`` releases AdaSSP's point estimate alone with the
    whole rho. The iterate-based constructions do not apply (AdaSSP has no iterates) and are
    refused. Public only: nothing here reads the data.
    """
    if scaling.x_bounds is None or scaling.y_bounds is None:
        raise ValueError(
            "method='adassp' needs public bounds for every feature (bounds) and for the "
            "response (y_bounds); they are never read off the data"
        )
    if config.interval not in (None, "batched-means"):
        raise ValueError(
            f"interval={config.interval!r} does not apply to method='adassp': it has no "
            "iterates; its population interval comes from the released sufficient "
            "statistics (leave interval at its default) or set interval=None for the "
            "point estimate alone"
        )
    interval = config.interval is not None
    if not interval and config.moment_share is not None:
        raise ValueError(
            "moment_share is the share of rho for method='adassp''s population interval; "
            "with interval=None there is none: leave it None"
        )
    share = ADASSP_MOMENT_SHARE if config.moment_share is None else config.moment_share
    for name in ("clip", "steps", "step_size", "burn_in"):
        if getattr(config, name) is not None:
            raise ValueError(f"{name} does not apply to method='adassp'; leave it None")
    if config.target != "least-squares":
        raise ValueError(
            "method='adassp' clips no gradients: its estimate is least squares on the "
            "bounded data, so target='huber' does not apply"
        )
    return {
        "rho": config.rho,
        "relation": config.relation,
        "n_public": config.n_public,
        "x_bound": scaling.max_row_norm,
        "interval": interval,
        "moment_share": share if interval else None,
        "n": n if config.n_public is None else config.n_public,
    }


def run_adassp(
    D: np.ndarray,
    y: np.ndarray,
    settings: Mapping[str, Any],
    ledger: PrivacyLedger,
    source: NoiseSource,
) -> dict[str, Any]:
    """AdaSSP on the rescaled design, with its population interval unless ``interval=None``.

    Returns ``trajectory`` (AdaSSP's), ``population`` (None without an interval), the
    public ``shown`` settings, ``checks`` (warned messages), ``label`` and ``text`` (what
    the interval is) for the result.
    """
    shown: dict[str, Any] = {
        "x_bound (rescaled rows)": settings["x_bound"],
        "y_bound (rescaled)": 1.0,
    }
    common = {"relation": settings["relation"], "n_public": settings["n_public"]}
    if settings["interval"]:
        traj = adassp_population(
            D,
            y,
            rho=settings["rho"],
            x_bound=settings["x_bound"],
            moment_share=settings["moment_share"],
            terms=settings.get("terms"),
            **common,
            ledger=ledger,
            rng=source,
        )
        shown["moment_share"] = settings["moment_share"]
        shown["clip"] = f"{traj.clip:.6g} (on whitened gradients |e_i| * ||P x_i||)"
        shown["responses at the y bounds (private share)"] = f"{traj.clipped_y:.3g}"
        out = {"trajectory": traj, "population": traj.population, "checks": traj.checks}
        label = f"{ADASSP_LABEL}, with a population interval"
        text = (
            "AdaSSP releases one estimate and no iterates: its interval is the population "
            "one (conf_int(target='population')); there is no sample interval."
        )
    else:
        traj = adassp(
            D,
            y,
            rho=settings["rho"],
            x_bound=settings["x_bound"],
            y_bound=1.0,  # the response was mapped into [-1, 1] by its public bounds
            **common,
            ledger=ledger,
            rng=source,
        )
        out = {"trajectory": traj, "population": None, "checks": ()}
        label = ADASSP_LABEL
        text = "AdaSSP releases a point estimate only; no interval (interval=None)."
        names = settings.get("terms") or [f"x{j}" for j in range(D.shape[1])]
        warn_unidentified(traj, settings["n"], names)
    return {**out, "shown": shown, "label": label, "text": text}


def adassp_plan(settings: Mapping[str, Any], k: int, *, label: str) -> ReleasePlan:
    """The plan of one AdaSSP fit with the public ``settings`` of :func:`resolve_adassp` on a
    design of ``k`` columns: AdaSSP's three releases (a third of its share each, with its
    sensitivities), then, with the interval, the residual scale, the share of responses at
    the y bounds and the meat (its clip set at run time from the residual scale)."""
    n, relation, rho = settings["n"], settings["relation"], settings["rho"]
    rhos = adassp_shares(rho, settings["moment_share"]) if settings["interval"] else {}
    third = split(rhos.get("adassp", rho), 3)[0]
    # AdaSSP's own sensitivities (its helper); the interval's follow from their bounds
    sens = {**sensitivities(settings["x_bound"], 1.0, relation, n=n, p=k),
            "residual-scale": None, "clipped-y": None, "omega": None}  # fmt: skip
    shares = {"lambda_min": third, "xtx": third, "xty": third}
    bounds: dict[str, float | None] = {"lambda_min": None, "xtx": None, "xty": None}
    if settings["interval"]:
        shares.update({"residual-scale": rhos["scale"], "clipped-y": rhos["clipped_y"],
                       "omega": rhos["omega"]})  # fmt: skip
        bounds.update({"residual-scale": RESIDUAL_CAP, "clipped-y": 1.0, "omega": None})
    releases = []
    for name, share in shares.items():
        query, purpose = _RELEASES[f"adassp/{name}"]
        releases.append(planned_release(
            name, share, query, bounds[name], n=n, relation=relation, label=f"adassp/{name}",
            purpose=purpose, sensitivity=sens[name],
        ))  # fmt: skip
    return ReleasePlan(label=label, rho=rho, relation=relation, n=n, releases=tuple(releases))
