"""Black-box canary audits of the full-batch gradient-descent algorithms on least squares.

* ``dp_gd``: :func:`dpfit.algorithms.dp_gd` (Brown et al. 2024, Alg. 1).
* ``noisy_gd``: :func:`dpfit.minimize` with ``method="noisy-gd"`` (the fixed-schedule
  baseline of Menart et al. 2024) on the least-squares loss with Lipschitz bound ``clip``,
  so per-example gradients are clipped at ``clip``.

Both release w_t = w_{t-1} - eta (mean clipped gradient + noise), so the canary coordinate
of the final iterate follows the random walk of :mod:`dpfit.audit._walk` exactly.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..mechanisms import NoiseSource, noise_std_for_rho
from ..privacy import Relation, mean_sensitivity, parse_relation
from ._walk import canary_response, declared_noise, run_sides, walk_scores
from .canary import canary_data
from .registry import AuditTarget, Scores, register_target

__all__: list[str] = []

_DEFAULTS = {
    "n": 50,
    "d": 2,
    "rho": 0.5,
    "clip": 0.1,
    "steps": 10,
    "step_size": 0.5,
    "relation": "replace-one",
}

#: fit(X, y, config, n_public, source) -> Trajectory
_Fit = Callable[[np.ndarray, np.ndarray, Mapping[str, Any], Any, NoiseSource], Any]


def _gd_runner(fit: _Fit, label: str):
    def run(config: Mapping[str, Any], runs: int, source: NoiseSource, data_rng) -> Scores:
        relation = parse_relation(config["relation"])
        n, steps, eta, clip = config["n"], config["steps"], config["step_size"], config["clip"]
        planned = noise_std_for_rho(mean_sensitivity(clip, n, relation), config["rho"] / steps)
        response = canary_response(clip, eta * planned * math.sqrt(steps), eta * steps * clip / n)
        data = canary_data(n, config["d"], response=response, relation=relation, rng=data_rng)
        n_public = data.n_public if relation is Relation.ADD_REMOVE else None

        def one(alt: bool) -> tuple[float, Any]:
            X, y = data.side(alt)
            traj = fit(X, y, config, n_public, source)
            return traj.iterates[-1, data.column], traj.ledger

        null, alt, ledger = run_sides(one, runs)
        return walk_scores(
            null,
            alt,
            start=0.0,
            step_size=eta,
            noise_stds=declared_noise(ledger, label),
            clip_over_n=clip / n,
            relation=relation,
            extra={"canary_response": response},
        )

    return run


def _fit_dp_gd(X, y, config, n_public, source):
    from ..algorithms.dp_gd import dp_gd

    return dp_gd(
        X,
        y,
        rho=config["rho"],
        clip=config["clip"],
        steps=config["steps"],
        step_size=config["step_size"],
        relation=config["relation"],
        n_public=n_public,
        rng=source,
    )


def _least_squares_gradients(w: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    return X * (X @ w - y)[:, None]


def _fit_noisy_gd(X, y, config, n_public, source):
    from ..losses import FunctionLoss
    from ..optimize import minimize

    loss = FunctionLoss(grads=_least_squares_gradients, lipschitz=config["clip"])
    return minimize(
        loss,
        (X, y),
        rho=config["rho"],
        method="noisy-gd",
        steps=config["steps"],
        step_size=config["step_size"],
        relation=config["relation"],
        n_public=n_public,
        random_state=source,
    )


register_target(
    AuditTarget(
        name="dp_gd",
        description="full-batch DP-GD (Brown et al. Alg. 1); score: final iterate's canary "
        "coordinate",
        kind="black-box",
        defaults=_DEFAULTS,
        rho=lambda config: float(config["rho"]),
        run=_gd_runner(_fit_dp_gd, "dp_gd/gradient"),
    )
)

register_target(
    AuditTarget(
        name="noisy_gd",
        description="dpfit.minimize(method='noisy-gd') on least squares with Lipschitz bound "
        "clip (Menart et al. baseline); score: final iterate's canary coordinate",
        kind="black-box",
        defaults=_DEFAULTS,
        rho=lambda config: float(config["rho"]),
        run=_gd_runner(_fit_noisy_gd, "noisy_gd/gradient"),
    )
)
