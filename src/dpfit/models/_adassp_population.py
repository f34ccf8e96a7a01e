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
from ..baselines.adassp_population import (
    ADASSP_LABEL,
    ADASSP_MOMENT_SHARE,
    adassp_population,
    warn_unidentified,
)
from ..mechanisms import NoiseSource
from ..privacy import PrivacyLedger

__all__ = ["ADASSP_LABEL", "ADASSP_MOMENT_SHARE", "resolve_adassp", "run_adassp"]


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
