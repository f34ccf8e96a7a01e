"""Per-step canary audit of one-pass DP-AMBSSGD (Varshney et al. 2022; :func:`dp_ambssgd`).

The records are read in a fixed, data-independent order (``shuffle=False``; privacy holds
for any such order, and the adversary may choose it). The canary of
:mod:`dpfit.audit.canary` is placed first in the gradient batch of block 0, so:

* it is read by exactly one release, the noisy mean gradient of block 0, whose canary
  coordinate o_0 = -(w_1 - w_0)[c] / eta is recovered from the released iterates;
* its response exceeds every clip the private DP-STAT search can return (at most
  ``clip_multiplier * residual_bound``), so its clipped gradient is +zeta_0 (D, the
  anti-canary) or -zeta_0 (D') on coordinate c, and no other record touches c;
* the release's noise std is alpha * 2 zeta_0 / b with alpha = 1 / sqrt(2 rho) under
  ``accounting="parallel"`` (zeta_0 is itself released).

The score s = (zeta_0 / b - o_0) / (alpha 2 zeta_0 / b) is therefore exactly N(0, 1) on D and
N(1 / alpha, 1) = N(sqrt(2 rho), 1) on D' when the calibration is right (with the paper's
accounting, alpha = 1 / sqrt(rho) and the gradient release costs only half the claim). The
score uses released per-step quantities, so this target is white-box; the tail-averaged
final estimate mixes the canary's step with noise whose scale depends on the released clips.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..exceptions import SideConditionWarning
from ..mechanisms import NoiseSource
from .canary import canary_data
from .registry import AuditTarget, Scores, register_target

__all__: list[str] = []


def _run(config: Mapping[str, Any], runs: int, source: NoiseSource, data_rng) -> Scores:
    from ..algorithms.ambssgd import dp_ambssgd
    from ..theory.ambssgd import ambssgd_schedule

    n, r_x, bound = config["n"], config["feature_scale"], config["residual_bound"]
    sched = ambssgd_schedule(
        n,
        feature_scale=r_x,
        hessian_norm=1.0,
        condition_number=1.0,
        steps=config["steps"],
        steps_factor=1.0,
        stat_fraction=1.0 / 11.0,
        step_size=None,
    )
    multiplier = r_x * math.sqrt(math.log(n))  # the default clip multiplier (a = 1/2)
    response = 2.0 * multiplier * bound + 1.0
    data = canary_data(n, config["d"], response=response, rng=data_rng)
    position = sched.stat_size  # first gradient record of block 0
    order = np.r_[np.arange(position), n - 1, np.arange(position, n - 1)]

    def one(alt: bool) -> float:
        X, y = data.side(alt)
        with warnings.catch_warnings():  # small blocks: DP-STAT's side condition may warn
            warnings.simplefilter("ignore", SideConditionWarning)
            traj = dp_ambssgd(
                X[order],
                y[order],
                rho=config["rho"],
                feature_scale=r_x,
                residual_bound=bound,
                steps=config["steps"],
                accounting=config["accounting"],
                shuffle=False,
                rng=source,
            )
        eta, b = traj.config["step_size"], traj.config["batch_size"]
        alpha, zeta = traj.config["noise_multiplier"], traj.releases["clip"][0]
        released = -traj.iterates[0, data.column] / eta  # w_0 = 0
        return (zeta / b - released) / (alpha * 2.0 * zeta / b)

    null = np.array([one(False) for _ in range(runs)])
    alt = np.array([one(True) for _ in range(runs)])
    return Scores(
        null=null,
        alt=alt,
        exact_null=True,
        claim={"canary_response": response, "batch_size": sched.batch_size},
    )


register_target(
    AuditTarget(
        name="dp_ambssgd",
        description="one-pass DP-AMBSSGD (Varshney et al. Alg. 2), fixed order; score: the "
        "released noisy gradient of the canary's block on its coordinate",
        kind="white-box",
        defaults={
            "n": 2200,
            "d": 2,
            "rho": 0.5,
            "steps": 2,
            "feature_scale": 2.0,
            "residual_bound": 10.0,
            "accounting": "parallel",
        },
        rho=lambda config: float(config["rho"]),
        run=_run,
    )
)
