"""White-box per-step canary audits of DP-FTRL and DP-SGD (:func:`dpfit.algorithms.dp_ftrl`).

The canary design of :mod:`dpfit.audit.canary` on least squares, trained by ``dp_ftrl`` with
a fixed-epoch schedule: ``epochs`` = k passes of b = ``steps_per_epoch`` batches of n / b
records (n a multiple of b, so no record is skipped). The canary (last record) sits in one
batch slot j, uniform over the b slots because the schedule is a uniformly random
permutation, and contributes -clip (D') or +clip (D, the anti-canary) to the canary
coordinate of the clipped gradient sum at steps j, j + b, ..., j + (k - 1) b. Nothing else
touches that coordinate.

The released noisy mean gradients (``releases["noisy_gradients"]``) times the public batch
size are the noisy sums o = x + sigma B z; whitening with the public encoder C = B^-1 gives
u = C x / sigma + z. With b = 1 the canary joins every step and the score is the exact
linear Neyman-Pearson statistic (N(0, 1) on D, N(2 clip |C 1| / sigma, 1) on D': at most
sqrt(2 rho) if the declared sensitivity is right). With b > 1 it is the mixture likelihood
ratio over the b slots, calibrated by simulating the claimed mechanism
(:mod:`dpfit.audit.whitebox`); only the rigorous check 1 then applies.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .._validation import check_int
from ..mechanisms import NoiseSource
from ._walk import canary_response
from .canary import canary_data
from .registry import AuditTarget, Scores, register_target
from .whitebox import calibrate_mixture_llr, mixture_llr

__all__: list[str] = []

_LABEL = "ftrl/gradients"


def _mechanism(name: str, nu: Any, steps: int):
    from .. import noise

    if name == "nu-dpftrl":
        return noise.nu_dpftrl(nu, steps=steps)
    factories = {"dp-sgd": noise.dpsgd, "fichtenberger": noise.fichtenberger}
    if name not in factories:
        raise ValueError(
            f"mechanism must be one of ['dp-sgd', 'fichtenberger', 'nu-dpftrl'], got {name!r}"
        )
    return factories[name](steps)


def _slot_means(C: np.ndarray, k: int, b: int, clip: float, sigma: float) -> np.ndarray:
    """Whitened D means a0_j = C (clip 1_{j, j+b, ...}) / sigma for each slot j (D' is -a0)."""
    T = k * b
    x = np.zeros((b, T))
    for j in range(b):
        x[j, j::b] = clip
    return x @ C.T / sigma


def _run(config: Mapping[str, Any], runs: int, source: NoiseSource, data_rng) -> Scores:
    from ..algorithms.ftrl import dp_ftrl
    from ..losses import FunctionLoss
    from ..noise import calibrate

    n, k, clip, eta = config["n"], config["epochs"], config["clip"], config["step_size"]
    b = check_int(config["steps_per_epoch"], "steps_per_epoch", low=1)
    if n % b:
        raise ValueError(f"n must be a multiple of steps_per_epoch={b}, got n={n}")
    T, batch = k * b, n // b
    mech = _mechanism(config["mechanism"], config["nu"], T)
    planned = calibrate(
        mech,
        clip=clip,
        batch_size=batch,
        rho=config["rho"],
        participations=k,
        separation=b,
        order="fixed-epoch",
        relation="replace-one",
    ).noise_std
    response = canary_response(clip, eta * T**1.5 * planned / batch, eta * T * clip / batch)
    data = canary_data(n, config["d"], response=response, rng=data_rng)
    loss = FunctionLoss(grads=lambda w, X, y: X * (X @ w - y)[:, None], lipschitz=clip)

    sums, sigma = {}, None
    for alt in (False, True):
        X, y = data.side(alt)
        out = np.empty((runs, T))
        for i in range(runs):
            traj = dp_ftrl(
                X,
                y,
                loss=loss,
                clip=clip,
                epochs=k,
                batch_size=batch,
                step_size=eta,
                rho=config["rho"],
                mechanism=mech,
                rng=source,
            )
            out[i] = traj.releases["noisy_gradients"][:, data.column] * batch
            if sigma is None:
                (sigma,) = [e.noise_std for e in traj.ledger.releases if e.label == _LABEL]
        sums[alt] = out
    C = mech.encoder_matrix()
    a0 = _slot_means(C, k, b, clip, sigma)
    u0, u1 = sums[False] @ C.T / sigma, sums[True] @ C.T / sigma
    claim = {"noise_std": sigma, "canary_response": response, "steps": T}
    if b == 1:
        v = -2.0 * a0[0]
        score = lambda u: (u - a0[0]) @ v / np.linalg.norm(v)  # noqa: E731
        return Scores(null=score(u0), alt=score(u1), exact_null=True, claim=claim)
    calibration_rng = np.random.default_rng(data_rng.integers(2**63))
    cal = calibrate_mixture_llr(a0, -a0, rng=calibration_rng)
    return Scores(
        null=cal(mixture_llr(u0, a0, -a0)),
        alt=cal(mixture_llr(u1, a0, -a0)),
        exact_null=False,
        shift=cal.shift,
        claim={**claim, "calibrated_shift": cal.shift},
    )


_DEFAULTS = {
    "n": 20,
    "d": 2,
    "rho": 0.5,
    "clip": 0.1,
    "epochs": 4,
    "steps_per_epoch": 2,
    "step_size": 0.5,
}

register_target(
    AuditTarget(
        name="dp_ftrl",
        description="correlated-noise DP-FTRL (Choquette-Choo et al.); score: likelihood ratio "
        "of the released per-step noisy gradient sums on the canary coordinate",
        kind="white-box",
        defaults={**_DEFAULTS, "mechanism": "nu-dpftrl", "nu": 0.1},
        rho=lambda config: float(config["rho"]),
        run=_run,
    )
)

register_target(
    AuditTarget(
        name="dp_sgd",
        description="DP-SGD without amplification (dp_ftrl with independent noise, B = I); "
        "score: likelihood ratio of the released per-step noisy gradient sums",
        kind="white-box",
        defaults={**_DEFAULTS, "mechanism": "dp-sgd", "nu": None},
        rho=lambda config: float(config["rho"]),
        run=_run,
    )
)
