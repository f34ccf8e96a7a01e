"""Fixed-clip DP-SGD for least squares: the classical baseline of DP-AMBSSGD.

Song et al. (2013), Bassily et al. (2014), Abadi et al. (2016), as compared in
docs/varshney2022.md: ``steps`` iterations; at each, every record joins
the batch independently with probability ``sampling_rate`` q (Poisson sampling, from the
noise source, independent of the data); the per-example gradients ``x (<x, w> - y)`` are
clipped to the fixed public ``clip`` C, summed, noised, divided by the public expected batch
size q n, and w moves by ``step_size`` times that. The estimate is the tail average of the
last half of the iterates.

Privacy (replace-one, public n). The clipped sum has L2 sensitivity 2C whether or not the
replaced record was sampled, plus the float64 rounding allowance of a sum of m terms
(Casacuberta et al. 2022; :func:`dpfit.privacy.sum_sensitivity` with ``n=m``), where m is the
step's batch size: drawn independently of the data and the same for neighbours, so the noise
std may follow it. Each step is a Gaussian mechanism of cost rho / steps and the run is
rho-zCDP by composition. The sampling is real Poisson sampling, so an RDP or PLD
accountant could claim amplification; dpfit's zCDP ledger does not (zCDP does not amplify
under subsampling): this baseline pays the full cost, and its ledger entries
are flagged ``subsampled``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._floats import quiet_floats
from .._validation import check_int, check_positive, check_real, check_rho, check_X_y
from ..algorithms._kernels import least_squares_block
from ..algorithms.ambssgd import replace_one_only
from ..algorithms.onepass import tail_average
from ..algorithms.trajectory import Trajectory
from ..mechanisms import (
    check_noisy_sum_scale,
    gaussian,
    make_noise_source,
    noise_std_for_rho,
    noise_std_within,
    row_norms,
)
from ..privacy import Relation, public_n, split, sum_sensitivity
from ..privacy.ledger import prepare_ledger

__all__ = ["fixed_clip_sgd"]


@quiet_floats()
def fixed_clip_sgd(
    X: Any,
    y: Any,
    *,
    rho: float,
    clip: float,
    steps: int,
    step_size: float,
    sampling_rate: float,
    relation: Relation | str = "replace-one",
    n_public: int | None = None,
    ledger: Any = None,
    rng: Any = None,
) -> Trajectory:
    """Poisson-sampled DP-SGD with a fixed clip, charged its full zCDP cost.

    Parameters
    ----------
    X : array-like of shape (n, d)
        Covariates.
    y : array-like of shape (n,)
        Responses.
    rho : float
        zCDP budget of the whole run; each step gets rho / steps.
    clip : float
        C, the fixed per-example gradient clip (public; e.g. sqrt(d) (||w*|| + sigma)).
    steps : int
        Number of noisy steps (each a fresh Poisson sample).
    step_size : float
        Learning rate.
    sampling_rate : float
        q in (0, 1]: each record's independent probability of joining a step's batch.
    relation : {"replace-one"}, default="replace-one"
        Only replace-one (the mean divides by the public q n).
    n_public : int, optional
        The public number of records; if given, it must equal the number of rows (n is
        public under replace-one, :func:`dpfit.privacy.public_n`).
    ledger, rng
        As for :func:`dpfit.algorithms.dp_ambssgd`.

    Returns
    -------
    Trajectory
        Every iterate, the tail average, the ledger (``steps`` subsampled Gaussian entries).

    Examples
    --------
    >>> import warnings
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((20_000, 2))
    >>> y = X @ np.array([1.0, -1.0]) + 0.1 * rng.standard_normal(20_000)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     traj = fixed_clip_sgd(X, y, rho=1.0, clip=4.0, steps=200, step_size=0.2,
    ...                           sampling_rate=0.05, rng=0)
    >>> np.round(traj.estimate, 1), round(traj.ledger.rho, 12)
    (array([ 1., -1.]), 1.0)
    """
    rho = check_rho(rho)
    relation = replace_one_only(relation, "fixed_clip_sgd")
    clip = check_positive(clip, "clip")
    steps = check_int(steps, "steps", low=1)
    eta = check_positive(step_size, "step_size")
    q = check_real(sampling_rate, "sampling_rate", low=0.0, high=1.0, high_open=False)
    X, y = check_X_y(X, y)
    n, d = public_n(X.shape[0], n_public, relation), X.shape[1]
    multiplier = noise_std_for_rho(1.0, rho / steps)  # noise std / sensitivity, every step
    per_step = split(rho, steps)[0]  # each step charged at most this: steps of it fit in rho
    if not math.isfinite(multiplier * sum_sensitivity(clip, relation, n=n)):  # largest batch
        raise ValueError("noise scale not finite: rho is too small for this clip")
    check_noisy_sum_scale(  # before any charge: no batch's noisy sum can overflow
        clip, summands=n, noise_std=multiplier * sum_sensitivity(clip, relation, n=n)
    )
    source = make_noise_source(rng)
    sampler = source.spawn(1)[0].generator  # batches: independent of the data and the noise
    ledger = prepare_ledger(ledger, relation, rho, name="fixed_clip_sgd")
    norms = row_norms(X)
    expected_batch = q * n
    w = np.zeros(d)
    iterates = np.empty((steps, d))
    for t in range(steps):
        rows = np.flatnonzero(sampler.random(n) < q)
        sums = least_squares_block(  # the clipped gradient sum and the number clipped
            np.take(X, rows, axis=0), np.take(y, rows), w, clip, np.take(norms, rows)
        )
        sens = sum_sensitivity(clip, relation, n=max(rows.size, 1))  # rows.size terms summed
        noisy = gaussian(
            sums[:-1],
            sensitivity=sens,
            noise_std=noise_std_within(sens, multiplier * sens, per_step),
            ledger=ledger,
            rng=source,
            label="fixed_clip_sgd/gradient_sum",
            subsampled=True,
        )
        w = w - eta * noisy / expected_batch
        iterates[t] = w
    config = {
        "n": n,
        "d": d,
        "clip": clip,
        "steps": steps,
        "step_size": eta,
        "sampling_rate": q,
        "noise_multiplier": multiplier,
        "relation": relation.value,
        "rho": rho,
    }
    return Trajectory(
        algorithm="fixed_clip_sgd",
        iterates=iterates,
        estimate=tail_average(iterates),
        ledger=ledger,
        config=config,
        noise_backend=source.backend,
        seeded=source.seeded,
    )
