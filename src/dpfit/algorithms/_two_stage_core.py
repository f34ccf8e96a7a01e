"""Shared steps of the two-stage gradient-descent family (:mod:`dpfit.algorithms.two_stage`).

One loop (:func:`iterate`) serves Algorithms 1-3 of Liang et al. (2025); a stage's release
is either the Gaussian mechanism (:func:`gaussian_release`) or the identity (non-private).
Per-example clipping uses the rank-1 structure: ||z r^T||_F = ||z|| ||r||, so no
n x q x p tensor is built. Both stages' clipped sums at (Theta^(t), beta^(t)) come from one
kernel call: in memory :class:`TwoStageSums` (buffers allocated once), on Dask
:func:`dpfit.algorithms._kernels.two_stage_sums` (one distributed reduction).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._floats import quiet_floats
from .._validation import check_array, check_positive
from ..distributed import is_dask
from ..mechanisms import (
    check_descent_scale,
    clip_factors,
    gaussian,
    noise_std_for_rho,
    release_peaks,
    rho_within,
    row_norms,
    scale_rows,
)
from ..privacy import GaussianEntry, PrivacyLedger, Query, mean_sensitivity, split
from ._kernels import two_stage_sums
from .trajectory import Trajectory

__all__: list[str] = []

_Release = Callable[[np.ndarray], np.ndarray]

#: Why the two-stage family refuses add/remove (the message of its ValueError).
REPLACE_ONE_ONLY = (
    "relation must be 'replace-one': two-stage GD averages over the public n, which "
    "add/remove neighbours would change (use replace-one)"
)


def _clipped_outer_sum_in_place(
    features: np.ndarray, R: np.ndarray, feature_norms: np.ndarray, clip: float | None
) -> tuple[np.ndarray, int]:
    """:func:`~dpfit.algorithms._iv_kernels.clipped_outer_sum` for a 2-D ``R``, which is scaled in
    place: the same operations and results, without its two n x k temporaries."""
    if clip is None:
        return features.T @ R, 0
    factors = clip_factors(feature_norms * row_norms(R), clip)
    positive = factors > 0
    np.multiply(R, factors[:, None], out=R)
    if not positive.all():  # some row is zeroed (the zero rule): its features as well
        features = scale_rows(features, positive)
        R[~positive] = 0.0
    return features.T @ R, int(np.count_nonzero(factors < 1.0))


class TwoStageSums:
    """``sums(Theta, beta) -> (G1, clipped1, g2, clipped2)`` for in-memory X, y, Z.

    The arithmetic of :func:`~dpfit.algorithms._iv_kernels.two_stage_block`, bit for bit, in
    buffers allocated once (W = Z Theta, the first-stage residuals W - X, the second-stage
    residuals), with the row norms of Z computed once: a step allocates no n x p array
    (the block function allocates four).
    """

    def __init__(self, X, y, Z, *, clip_theta, clip_beta, first: bool) -> None:
        n, p = X.shape
        self._X, self._y, self._Z = X, y, Z
        self._clip_theta, self._clip_beta, self._first = clip_theta, clip_beta, first
        self._z_norms = row_norms(Z) if first else None
        self._W, self._s = np.empty((n, p)), np.empty((n, 1))
        self._R = np.empty((n, p)) if first else None

    def __call__(self, theta: np.ndarray, beta: np.ndarray):
        W, s = self._W, self._s
        with quiet_floats():
            np.matmul(self._Z, theta, out=W)  # w_i = Theta^T z_i
            w_norms = row_norms(W)
            np.matmul(W, beta, out=s[:, 0])
            np.subtract(s[:, 0], self._y, out=s[:, 0])
            if self._first:
                R = np.subtract(W, self._X, out=self._R)
                g1, c1 = _clipped_outer_sum_in_place(self._Z, R, self._z_norms, self._clip_theta)
            else:
                g1, c1 = np.zeros(theta.shape), 0
            g2, c2 = _clipped_outer_sum_in_place(W, s, w_norms, self._clip_beta)
        return g1, c1, g2[:, 0], c2


def identity(value: np.ndarray) -> np.ndarray:
    """The release of a non-private stage: the exact value."""
    return value


def iterate(
    X: Any,
    y: Any,
    Z: Any,
    *,
    steps: int,
    step_size_theta: float,
    step_size_beta: float,
    clip_theta: float | None,
    clip_beta: float | None,
    release_theta: _Release,
    release_beta: _Release,
    first_stage: np.ndarray | None = None,
    n: int | None = None,
) -> dict[str, np.ndarray]:
    """The shared loop of Algorithms 1-3: one (released) gradient step per stage per iteration.

    With ``first_stage`` (shape (steps, q, p)) the Theta used at step t is ``first_stage[t]``
    and no first-stage gradient is computed (Algorithm 3 with a public first stage). Sums are
    divided by the public ``n`` (default: the rows of in-memory data).
    """
    p, q = X.shape[1], Z.shape[1]
    n = X.shape[0] if n is None else n
    kernel = two_stage_sums if is_dask(X) else TwoStageSums
    sums = kernel(X, y, Z, clip_theta=clip_theta, clip_beta=clip_beta, first=first_stage is None)
    theta = np.zeros((q, p))
    beta = np.zeros(p)
    thetas = np.empty((steps, q, p))
    betas = np.empty((steps, p))
    clipped = np.zeros((steps, 2))
    for t in range(steps):
        used = theta if first_stage is None else first_stage[t]
        g1, c1, g2, c2 = sums(used, beta)  # both at (Theta^(t), beta^(t)) (Jacobi order)
        clipped[t] = c1 / n, c2 / n
        if first_stage is None:
            theta = theta - step_size_theta * release_theta(g1 / n)
        beta = beta - step_size_beta * release_beta(g2 / n)
        thetas[t] = theta if first_stage is None else used
        betas[t] = beta
    return {"theta": thetas, "beta": betas, "clipped": clipped}


def check_stage_scale(
    clip: float,
    *,
    step_size: float,
    steps: int,
    releases: int,
    n: int,
    rho: float,
    relation,
    name: str,
) -> None:
    """Refuse, before any charge, one stage's clip (parameter ``name``) or step size whose
    clipped sum, noisy release, iterates or their squares could overflow.

    The stage releases its noisy mean gradient ``releases`` times, calibrated together to
    ``rho``; each run of ``steps`` starts at 0 and moves by at most ``step_size`` x the noisy
    release per step (:func:`dpfit.mechanisms.check_descent_scale`), and the interval is a
    covariance of the iterates (their squares). With ``clip=(1, 1e200)`` the iterates of
    beta reached 1e203 and their covariance inf after the whole rho was charged.
    """
    check_descent_scale(
        clip,
        lambda c: release_peaks(
            Query.MEAN, bound=c, n=n, rho=rho, relation=relation, count=releases
        ),
        step_size=step_size,
        steps=steps,
        what=f"the clipped gradient sum of n = {n} records and its noise",
        name=name,
    )


def gaussian_release(
    *,
    clip: float,
    n: int,
    rho: float,
    releases: int,
    calibration: str,
    ledger,
    source,
    label: str,
    step_size: float,
    steps: int,
    name: str = "clip",
) -> tuple[_Release, float, GaussianEntry]:
    """One stage's noisy mean clipped gradient, its noise std and the entry of all its releases.

    ``"exact"`` calibrates each of the ``releases`` releases to rho / releases; ``"paper"``
    (Prop. 3.1) is the exact calibration for half of rho. The share is
    :func:`~dpfit.mechanisms.rho_within`'s, so the ledger's exact total of the releases stays
    within rho (rho / releases can round up). Nothing is charged here; a clip (parameter
    ``name``) or ``step_size`` whose clipped sum, noisy release or iterates of ``steps``
    steps (and their squares) could overflow is refused first (:func:`check_stage_scale`).
    """
    spent = rho if calibration == "exact" else rho / 2.0
    sensitivity = mean_sensitivity(clip, n, ledger.relation)  # 2 gamma / n (replace-one)
    # the share is validated here (a rho below the floor is named as such), then the scales
    noise_std = noise_std_for_rho(sensitivity, rho_within(sensitivity, spent, count=releases))
    check_stage_scale(
        clip, step_size=step_size, steps=steps, releases=releases, n=n, rho=spent,
        relation=ledger.relation, name=name,
    )  # fmt: skip
    total = GaussianEntry(
        label=label,
        sensitivity=sensitivity,
        noise_std=noise_std,
        count=releases,
        relation=ledger.relation,
    )

    def release(value: np.ndarray) -> np.ndarray:
        return gaussian(
            value,
            sensitivity=sensitivity,
            noise_std=noise_std,
            ledger=ledger,
            rng=source,
            label=label,
        )

    return release, noise_std, total


def concatenate_runs(outs: list[dict[str, np.ndarray]], steps: int) -> dict[str, np.ndarray]:
    """Stack independent runs in run order; ``final`` is the mean of their last beta iterates."""
    out = {key: np.concatenate([o[key] for o in outs]) for key in ("theta", "beta", "clipped")}
    out["final"] = out["beta"][steps - 1 :: steps].mean(axis=0)
    return out


def check_first_stage(value: Any, steps: int, q: int, p: int) -> np.ndarray:
    arr = np.asarray(value)
    if arr.ndim == 2:
        arr = check_array(arr, "first_stage", ndim=2)
        arr = np.broadcast_to(arr, (steps, *arr.shape))
    else:
        arr = check_array(arr, "first_stage", ndim=3)
    if arr.shape != (steps, q, p):
        raise ValueError(
            f"first_stage must have shape ({q}, {p}) or ({steps}, {q}, {p}), got {arr.shape}"
        )
    return arr


def trajectory(out: dict, ledger: PrivacyLedger, config: dict, source) -> Trajectory:
    """Package a run: beta iterates, released Theta path, non-private clipping diagnostics
    (``config["algorithm"]`` names the run and becomes :attr:`Trajectory.algorithm`)."""
    public = {k: v for k, v in config.items() if k != "algorithm"}
    return Trajectory(
        algorithm=config["algorithm"],
        iterates=out["beta"],
        estimate=out.get("final", out["beta"][-1]),
        ledger=ledger,
        config=public,
        noise_backend="none" if source is None else source.backend,
        seeded=True if source is None else source.seeded,
        releases={"theta": out["theta"]},
        diagnostics={
            "fraction_clipped_theta": out["clipped"][:, 0].copy(),
            "fraction_clipped_beta": out["clipped"][:, 1].copy(),
        },
    )


def stage_budgets(rho: float | None, rho_theta: float | None, rho_beta: float | None) -> tuple:
    """(rho_theta, rho_beta): the two stages' budgets, given as ``rho`` (the total, split in
    two exact halves by :func:`dpfit.privacy.split`) or as both per-stage budgets."""
    if rho is not None:
        if rho_theta is not None or rho_beta is not None:
            raise TypeError("give rho, or rho_theta and rho_beta, not both")
        rho_theta, rho_beta = split(check_positive(rho, "rho"), 2)
    elif rho_theta is None or rho_beta is None:
        raise TypeError("give rho (the total), or both rho_theta and rho_beta")
    return check_positive(rho_theta, "rho_theta"), check_positive(rho_beta, "rho_beta")
