"""Black-box canary audit of full-batch DP-GD (:func:`dpfit.algorithms.dp_gd`).

With the canary design (:mod:`dpfit.audit.canary`) the canary coordinate c of DP-GD's
iterates is a random walk (Brown et al. 2024, Alg. 1):

    theta_t[c] = theta_{t-1}[c] - eta * (g_t[c] + lambda_t xi_t),   xi_t ~ N(0, 1),

where g_t[c] is the mean clipped gradient on coordinate c: +clip/n on D (the anti-canary
saturates the clip; 0 under add/remove, where D has no canary) and -clip/n on D'. So the
final iterate's coordinate is exactly N(m0, s0^2) on D with m0 = theta_0[c] - eta T g[c] and
s0 = eta sqrt(sum_t lambda_t^2), lambda_t the noise std *declared in the ledger*, and the
standardised shift on D' is sqrt(T) (2 clip / n) / lambda = sqrt(2 rho) when the
calibration is right. The final iterate is a sufficient statistic of the T releases on this
coordinate, so the black-box audit is as strong as a white-box one here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..mechanisms import NoiseSource
from ..privacy import Relation, parse_relation
from .canary import canary_data
from .registry import AuditTarget, Scores, register_target

__all__: list[str] = []

_LABEL = "dp_gd/gradient"


def canary_response(clip: float, null_sd: float, drift: float) -> float:
    """A canary response so large that its residual exceeds ``clip`` with certainty.

    The canary coordinate stays within |drift| + 40 null sd of 0 except with probability
    below 1e-300, so a response of clip + |drift| + 40 sd + 1 keeps the canary saturated.
    """
    return clip + abs(drift) + 40.0 * null_sd + 1.0


def _declared_noise(ledger: Any, label: str) -> np.ndarray:
    """The noise std of every release labelled ``label``, as declared in the ledger."""
    return np.array([e.noise_std for e in ledger.entries if e.label == label])


def _run(config: Mapping[str, Any], runs: int, source: NoiseSource, data_rng) -> Scores:
    from ..algorithms import dp_gd, dp_gd_noise_std

    relation = parse_relation(config["relation"])
    n, steps, eta, clip = config["n"], config["steps"], config["step_size"], config["clip"]
    rho = config["rho"]
    planned = dp_gd_noise_std(rho=rho, clip=clip, n=n, total_steps=steps, relation=relation)
    g_null = clip / n if relation is Relation.REPLACE_ONE else 0.0
    response = canary_response(clip, eta * planned * math.sqrt(steps), eta * steps * clip / n)
    data = canary_data(n, config["d"], response=response, relation=relation, rng=data_rng)

    finals: dict[bool, np.ndarray] = {}
    declared = None
    for alt in (False, True):
        X, y = data.side(alt)
        out = np.empty(runs)
        for i in range(runs):
            traj = dp_gd(
                X,
                y,
                rho=rho,
                clip=clip,
                steps=steps,
                step_size=eta,
                relation=relation,
                n_public=data.n_public if relation is Relation.ADD_REMOVE else None,
                rng=source,
            )
            out[i] = traj.iterates[-1, data.column]
            if declared is None:
                declared = _declared_noise(traj.ledger, _LABEL)
        finals[alt] = out
    null_mean = -eta * steps * g_null
    null_sd = eta * math.sqrt(float(np.sum(declared**2)))
    return Scores(
        null=(finals[False] - null_mean) / null_sd,
        alt=(finals[True] - null_mean) / null_sd,
        exact_null=True,
        claim={
            "noise_std": float(declared.max()),
            "null_mean": null_mean,
            "null_sd": null_sd,
            "canary_response": response,
        },
    )


register_target(
    AuditTarget(
        name="dp_gd",
        description="full-batch DP-GD (Brown et al. Alg. 1); score: final iterate's canary "
        "coordinate",
        kind="black-box",
        defaults={
            "n": 50,
            "d": 2,
            "rho": 0.5,
            "clip": 0.1,
            "steps": 10,
            "step_size": 0.5,
            "relation": "replace-one",
        },
        rho=lambda config: float(config["rho"]),
        run=_run,
    )
)
