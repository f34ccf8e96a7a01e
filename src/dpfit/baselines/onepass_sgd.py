"""Non-private one-pass tail-averaged mini-batch SGD with DP-AMBSSGD's schedule.

The reference that isolates the cost of privacy (docs/varshney2022.md, baselines): the same
permutation, the same T blocks of ``s + b`` records and the same step size eta as
:func:`dpfit.algorithms.dp_ambssgd`, but the gradient of the b batch records is neither clipped nor
noised, and the s DP-STAT records are skipped. With the same ``rng`` and data, it reads exactly the
gradient batches the private run reads.

Everything here reads the raw data and is **not** differentially private: the returned
trajectory's ledger is empty.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._deprecation import renamed_keyword
from .._validation import check_positive
from ..algorithms.onepass import one_pass_data, tail_average
from ..algorithms.trajectory import Trajectory
from ..mechanisms import make_noise_source
from ..privacy import PrivacyLedger
from ..theory.ambssgd import ambssgd_schedule

__all__ = ["onepass_sgd"]


def onepass_sgd(
    X: Any,
    y: Any = None,
    *,
    feature_scale: float,
    hessian_norm: float = 1.0,
    condition_number: float = 1.0,
    steps: int | None = None,
    steps_factor: float = 1.0,
    stat_fraction: float = 1.0 / 11.0,
    step_size: float | None = None,
    n_public: int | None = None,
    shuffle: bool | None = None,
    rng: Any = None,
    n: int | None = None,
) -> Trajectory:
    """One pass of plain mini-batch SGD on squared loss with DP-AMBSSGD's schedule (NOT private).

    Parameters are those of :func:`dpfit.algorithms.dp_ambssgd` that set the schedule and
    the data (see there, ``n_public`` included: the number of records of a stream);
    ``rng`` only draws the permutation. ``n`` is the deprecated name of ``n_public``.

    Returns
    -------
    Trajectory
        Iterates w_1..w_T, the tail average, and an empty ledger (nothing is private).

    Examples
    --------
    >>> import warnings
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((20_000, 3))
    >>> y = X @ np.array([1.0, 2.0, -1.0]) + 0.1 * rng.standard_normal(20_000)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     traj = onepass_sgd(X, y, feature_scale=np.sqrt(5), rng=0)
    >>> np.round(traj.estimate, 2), traj.ledger.rho
    (array([ 1.,  2., -1.]), 0.0)
    """
    check_positive(feature_scale, "feature_scale")
    n_public = renamed_keyword(n_public, n, new="n_public", old="n")
    data = one_pass_data(X, y, n=n_public, shuffle=shuffle)
    sched = ambssgd_schedule(
        data.n,
        feature_scale=feature_scale,
        hessian_norm=hessian_norm,
        condition_number=condition_number,
        steps=steps,
        steps_factor=steps_factor,
        stat_fraction=stat_fraction,
        step_size=step_size,
    )
    source = make_noise_source(rng)
    T, s, b, eta = sched.steps, sched.stat_size, sched.batch_size, sched.step_size
    w = np.zeros(data.d)
    iterates = np.empty((T, data.d))
    parts = data.segments([s, b] * T, source.generator)
    for t in range(T):
        next(parts)  # the DP-STAT records of the private run: unused here
        Xb, yb = next(parts)
        w = w - eta * (Xb.T @ (Xb @ w - yb)) / b
        iterates[t] = w
    config = {
        "n": data.n,
        "d": data.d,
        "steps": T,
        "stat_size": s,
        "batch_size": b,
        "step_size": eta,
        "shuffle": data.shuffle,
        "private": False,
    }
    return Trajectory(
        algorithm="onepass_sgd",
        iterates=iterates,
        estimate=tail_average(iterates),
        ledger=PrivacyLedger(),
        config=config,
        noise_backend=source.backend,
        seeded=source.seeded,
    )
