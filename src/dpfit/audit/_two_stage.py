"""Black-box canary audits of DP two-stage gradient descent for IV (Liang et al. 2025).

The canary owns a dedicated instrument/regressor pair (:func:`dpfit.audit.canary_iv_data`).

* ``dp_two_stage_gd`` (Alg. 1) scores the released first stage Theta_T[c, c']: the
  first-stage per-example gradient is z_i (Theta^T z_i - x_i)^T, whose (c, c') entry is zero
  for every record but the canary, and the canary's regressor is so large that its clipped
  gradient points along (c, c') to within 1e-9. The claim audited is the rho_theta of the T
  first-stage releases (the score is a post-processing of them alone).
* ``dp_second_stage_gd`` (Alg. 3, public first stage) scores beta_T[c'] with the public
  Theta = I, so w_i = Theta^T z_i has coordinate c' zero for all records but the canary's
  w = e_c'. The claim audited is the rho of the T beta releases.

Both coordinates follow the random walk of :mod:`dpfit.audit._walk` exactly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..mechanisms import NoiseSource, noise_std_for_rho
from ..privacy import Relation, mean_sensitivity
from ._walk import canary_response, declared_noise, run_sides, walk_scores
from .canary import canary_iv_data
from .registry import AuditTarget, Scores, register_target

__all__: list[str] = []


def _response(rho: float, clip: float, n: int, steps: int, eta: float) -> float:
    sigma = noise_std_for_rho(mean_sensitivity(clip, n, "replace-one"), rho / steps)
    return canary_response(clip, eta * sigma * math.sqrt(steps), eta * steps * clip / n)


def _run_two_stage(config: Mapping[str, Any], runs: int, source: NoiseSource, data_rng) -> Scores:
    from ..algorithms.two_stage import dp_two_stage_gd

    n, steps, eta, clip = (
        config["n"],
        config["steps"],
        config["step_size_theta"],
        config["clip_theta"],
    )
    regressor = 1e3 * _response(config["rho_theta"], clip, n, steps, eta)
    data = canary_iv_data(n, response=regressor, regressor=regressor, rng=data_rng)

    def one(alt: bool) -> tuple[float, Any]:
        X, y, Z = data.side(alt)
        traj = dp_two_stage_gd(
            X,
            y,
            Z,
            rho_theta=config["rho_theta"],
            rho_beta=config["rho_beta"],
            clip_theta=clip,
            clip_beta=config["clip_beta"],
            steps=steps,
            step_size_theta=eta,
            step_size_beta=config["step_size_beta"],
            rng=source,
        )
        return traj.releases["theta"][-1, data.instrument, data.column], traj.ledger

    null, alt, ledger = run_sides(one, runs)
    return walk_scores(
        null,
        alt,
        start=0.0,
        step_size=eta,
        noise_stds=declared_noise(ledger, "two_stage/theta-gradient"),
        clip_over_n=clip / n,
        relation=Relation.REPLACE_ONE,
        extra={"canary_regressor": regressor},
    )


def _run_second_stage(
    config: Mapping[str, Any], runs: int, source: NoiseSource, data_rng
) -> Scores:
    from ..algorithms.two_stage import dp_second_stage_gd

    n, steps, eta, clip = config["n"], config["steps"], config["step_size"], config["clip"]
    response = _response(config["rho"], clip, n, steps, eta)
    data = canary_iv_data(n, response=response, regressor=1.0, rng=data_rng)

    def one(alt: bool) -> tuple[float, Any]:
        X, y, Z = data.side(alt)
        traj = dp_second_stage_gd(
            X,
            y,
            Z,
            first_stage=np.eye(2),
            rho=config["rho"],
            clip=clip,
            steps=steps,
            step_size=eta,
            rng=source,
        )
        return traj.iterates[-1, data.column], traj.ledger

    null, alt, ledger = run_sides(one, runs)
    return walk_scores(
        null,
        alt,
        start=0.0,
        step_size=eta,
        noise_stds=declared_noise(ledger, "two_stage/beta-gradient"),
        clip_over_n=clip / n,
        relation=Relation.REPLACE_ONE,
        extra={"canary_response": response},
    )


register_target(
    AuditTarget(
        name="dp_two_stage_gd",
        description="DP-2S-GD for IV (Liang et al. Alg. 1); score: released first stage "
        "Theta_T on the canary's instrument/regressor pair; claim: rho_theta",
        kind="black-box",
        defaults={
            "n": 50,
            "rho_theta": 0.5,
            "rho_beta": 0.5,
            "clip_theta": 0.1,
            "clip_beta": 0.1,
            "steps": 10,
            "step_size_theta": 0.5,
            "step_size_beta": 0.5,
        },
        rho=lambda config: float(config["rho_theta"]),
        run=_run_two_stage,
    )
)

register_target(
    AuditTarget(
        name="dp_second_stage_gd",
        description="DP-2S-GD-beta with a public first stage (Liang et al. Alg. 3); score: "
        "final beta on the canary's regressor",
        kind="black-box",
        defaults={"n": 50, "rho": 0.5, "clip": 0.1, "steps": 10, "step_size": 0.5},
        rho=lambda config: float(config["rho"]),
        run=_run_second_stage,
    )
)
