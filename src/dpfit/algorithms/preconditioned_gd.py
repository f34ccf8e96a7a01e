"""Preconditioned DP-GD with a population interval: the default of ``DPLinearRegression``.

With public feature bounds every row of the design the algorithm sees has ||d_i|| <= B =
sqrt(k) (k coefficients, ones column included). The fit makes these releases, in this order
(docs/inference.md; every share of rho from
:func:`~dpfit.algorithms._preconditioned_plan.release_shares`, whose exact sum is at most rho):

1. **H~** = (1/n) D'D + noise (:func:`~dpfit.inference.population.release_moment_sum`) and
   **G~** = (1/n) sum z1_i z1_i' + noise of the rows whitened by P1 = H~^-1/2 and clipped to
   2 sqrt(k): the two-stage whitener P = P1 G~^-1/2 (theta = P u, z_i = P' d_i;
   :func:`~dpfit.inference.preconditioner.release_whitener`), so that E[z z'] is close to I
   even for nearly collinear columns.
2. Only when no ``clip`` is given: a **private clip** 3 sqrt(k) s~ from a pilot
   P P' (D'y/n + noise) and a noisy residual scale s~ (:func:`_private_clip`). With
   ``target="least-squares"`` (the default) it grows with n
   (:func:`~dpfit.inference.clipping_bias.growing_clip`): the privacy variance is kept at a
   quarter of the sampling variance, so that at large n the clip exceeds (nearly) every
   record's gradient and the clipped fit is least squares; ``target="huber"`` keeps 3 sqrt(k)
   s~ (a Huber-type fit).
3. **DP-GD in whitened coordinates** (Brown et al. 2024, Alg. 1, rows z_i, started at the
   pilot; the rest of rho). There a step size of 0.5 mixes in a few steps and 200 steps are
   plenty.
4. **Hh~** = (1/n) sum_i 1{g_i unclipped} z_i z_i' + noise (rows clipped to 2 sqrt(k)), the
   Huber Hessian at the released estimate in whitened coordinates: the bread for the
   clipped-loss target, de-spread within noise-level groups
   (:meth:`~dpfit.inference.population.NoisyMoment.shrunk`).
5. **Omega~** = (1/n) sum g_i g_i' of the whitened gradients clipped at the meat's clip (the
   fit's clip, or less where that would make the meat's noise exceed a tenth of its entries;
   :func:`~dpfit.inference.clipping_bias.second_moment_clip`).
6. **The gap to least squares** (:mod:`dpfit.inference.clipping_bias`): the mean clipped
   excess between the clip and a window above it, and the share of records whose gradient
   exceeds 1.5 x the clip (:func:`_released_gap`).

Every sum behind a release is computed by one block function of
:mod:`dpfit.algorithms._linear_moments` per pass over the rows:
row block by row block in memory (the design may be a :class:`~dpfit.distributed.RowMap`, the
estimator's public rescaling computed per block and never held whole: the fit holds the
whitened Z = D P and one block), or as one distributed reduction on Dask arrays, where Z is a
lazy row-block map and the DP-GD steps are Dask reductions too (docs/dask.md).

Covariance of the released estimate theta~ = P u~ around the population parameter:

    V = P A^-1 Omega~ A^-1 P' / n  (the sandwich, A the shrunk whitened Hh~;
                                    :func:`~dpfit.inference.whitened.noisy_sandwich`)
      + P S_u P' / m               (privacy part: the m released batch means' covariance, eq. 12)

with Welch-Satterthwaite degrees of freedom that include the noise of A and Omega~ (the
delta method) and of the batch means (m - 1). Everything after the releases is
post-processing, including the one ``CoverageWarning`` that lists the reasons the interval
may not cover (:mod:`dpfit.inference.doubts`): the released iterates still drift between the
halves of the run (:mod:`dpfit.inference.diagnostics`), the whitened Huber Hessian is not
identified, the meat's noise leaves too few degrees of freedom, or (target least squares)
the released gap to least squares is material.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from .._validation import check_array
from ..distributed import RowMap, is_dask, map_rows
from ..inference import interval_estimates
from ..inference.clipping_bias import CLIP_GROWTH, MEAT_NOISE, growing_clip, second_moment_clip
from ..inference.diagnostics import iterate_drift
from ..inference.doubts import warn_doubts
from ..inference.population import (
    CovarianceEstimate,
    NoisyMoment,
    population_covariance,
    release_moment_sum,
)
from ..inference.preconditioner import ROW_CLIP, record_sum, release_whitener, triangle, whiten
from ..inference.whitened import GD_CLIP_MULTIPLIER as CLIP_MULTIPLIER
from ..inference.whitened import gradient_clip, noisy_sandwich, release_mean
from ..mechanisms import NoiseSource, gaussian, make_noise_source, noise_std_for_rho, rho_within
from ..privacy import PrivacyLedger, Relation, mean_sensitivity, parse_relation, public_n
from ..privacy.ledger import prepare_ledger
from ._kernels import check_data
from ._linear_doubts import Terms, linear_doubts, released_gap
from ._linear_moments import gram_sums, residual_scale_sum, sandwich_sums
from ._preconditioned_plan import (
    DEFAULT_MOMENT_SHARE,
    PRECONDITIONED_STEP_SIZE,
    PRECONDITIONED_STEPS,
    release_shares,
)
from .dp_gd import dp_gd
from .trajectory import Trajectory

__all__ = ["PreconditionedTrajectory", "preconditioned_gd"]

_COVERS = {
    "least-squares": "the population least-squares coefficients (sampling + privacy error)",
    "huber": "the population coefficients of the Huber-type fit clipped at {clip:.3g} "
    "(in whitened units; sampling + privacy error; least squares only when the errors are "
    "symmetric given x)",
}


@dataclass(frozen=True, kw_only=True)
class PreconditionedTrajectory(Trajectory):
    """A :class:`Trajectory` of the preconditioned fit, with its population interval.

    ``iterates`` are DP-GD's released iterates in whitened coordinates u (theta = P u);
    ``estimate`` is the mean of the interval's ``estimates``, in the design's units.

    Attributes
    ----------
    estimates : ndarray of shape (m, k)
        The m batch (or run) estimates behind the privacy part, in the design's units.
    population : CovarianceEstimate
        The population covariance (sandwich + privacy part), with the released gap to least
        squares.
    xtx, omega : NoisyMoment
        The released X'X/n and the released meat Omega~ (whitened), with their noise.
    clip : float
        The clip DP-GD used (whitened gradients; given, or from the private residual scale).
    checks : tuple of str
        Public messages about the released quantities (the one ``CoverageWarning``'s reasons).
    """

    estimates: np.ndarray
    population: CovarianceEstimate
    xtx: NoisyMoment
    omega: NoisyMoment
    clip: float
    checks: tuple[str, ...] = ()


def preconditioned_gd(
    X: Any,
    y: Any,
    *,
    rho: float,
    row_bound: float,
    clip: float | None = None,
    moment_share: float = DEFAULT_MOMENT_SHARE,
    steps: int = PRECONDITIONED_STEPS,
    step_size: float = PRECONDITIONED_STEP_SIZE,
    runs: int = 1,
    interval: str = "batched-means",
    m: int = 10,
    burn_in: int = 0,
    interval_variant: str = "formal",
    target: str = "least-squares",
    terms: Sequence[str] | None = None,
    relation: Relation | str = "replace-one",
    n_public: int | None = None,
    ledger: PrivacyLedger | None = None,
    rng: NoiseSource | int | None = None,
) -> PreconditionedTrajectory:
    """Preconditioned DP-GD and the releases behind its population interval (module docstring).

    ``X`` is the design the fit sees (public rescaling and ones column applied, rows of norm
    at most ``row_bound``), ``y`` the response in [-1, 1]; both NumPy arrays or row-aligned
    Dask arrays (``n_public`` required): on Dask every sum behind a release is one
    distributed reduction (:mod:`dpfit.algorithms._linear_moments`), Z = X P is a lazy
    row-block map and the DP-GD steps run on Dask (docs/dask.md), so for the same seed the
    releases are the in-memory ones up to the order of floating-point addition. ``steps`` is
    the total over ``runs`` runs; ``interval``, ``m``, ``burn_in`` and ``interval_variant``
    build the privacy part (:func:`dpfit.inference.interval_estimates`); ``clip=None`` makes
    the clip from a private residual scale; ``terms`` names the columns in warnings. The
    estimator checks the public inputs' scales before anything is charged
    (:func:`~dpfit.algorithms._preconditioned_plan.check_preconditioned_scales`).
    """
    relation = parse_relation(relation)
    ledger = prepare_ledger(ledger, relation, rho, name="preconditioned_gd")
    source = make_noise_source(rng)
    D, y, rows = _checked(X, y, n_public=n_public, relation=relation)  # Dask: persisted
    n = rows if is_dask(D) else public_n(rows, n_public, relation)
    bound = row_bound
    k = D.shape[1]
    rhos = release_shares(rho, moment_share, private_clip=clip is None)
    sums = record_sum(gram_sums, [D, y], (bound,), width=triangle(k) + k)
    H = release_moment_sum(
        sums[: triangle(k)], bound=bound, rho=rhos["xtx"], n=n, ledger=ledger, rng=source,
        label="gd/xtx",
    )  # fmt: skip
    row_clip = ROW_CLIP * math.sqrt(k)
    P = release_whitener(
        D, y, H, row_clip=row_clip, rho=rhos["whiten"], n=n, ledger=ledger, rng=source,
        label="gd/whitened-xtx",
    )  # fmt: skip
    Z = map_rows(partial(whiten, P=P), D, columns=k)  # each record through a public map
    meat_clip, start, grows = clip, None, False
    if clip is None:  # from a private residual scale (module docstring, step 2)
        clip, scale, pilot = _private_clip(
            D,
            y,
            sums[triangle(k) :],
            P,
            rhos,
            n=n,
            bound=bound,
            relation=relation,
            ledger=ledger,
            source=source,
        )
        start = np.linalg.solve(P, pilot)  # descent starts at the released pilot (whitened)
        meat_clip = clip
        if target == "least-squares":
            kept = (steps // runs - burn_in) * runs
            base = clip
            clip = growing_clip(
                base, scale, n=n, rho=rhos["gd"], releases=steps, averaged=max(kept, 1)
            )
            grows = clip < CLIP_GROWTH * base  # below its cap: more n or rho enlarge it
            meat_clip = min(clip, second_moment_clip(meat_clip, scale, n=n, rho=rhos["omega"],
                                                     noise=MEAT_NOISE))  # fmt: skip
    traj = dp_gd(
        Z,
        y,
        warn_large_rho=False,  # a share of the fit's rho, which the estimator warned about
        rho=rhos["gd"],
        clip=clip,
        steps=steps // runs,
        step_size=step_size,
        runs=runs,
        theta0=start,
        relation=relation,
        n_public=n_public,
        ledger=ledger,
        rng=source,
    )
    est_u = interval_estimates(traj, interval, m=m, burn_in=burn_in, variant=interval_variant)
    u = est_u.mean(axis=0)
    estimate = P @ u
    sums = record_sum(
        sandwich_sums, [D, y], (P, estimate, clip, row_clip, meat_clip), width=2 * triangle(k)
    )
    moment = {"n": n, "ledger": ledger, "rng": source}
    # the Huber Hessian in whitened coordinates: the bread for the clipped-loss target
    Hh = release_moment_sum(
        sums[: triangle(k)], bound=row_clip, rho=rhos["hessian"], label="gd/huber-hessian",
        **moment,
    )  # fmt: skip
    Omega = release_moment_sum(
        sums[triangle(k) :], bound=meat_clip, rho=rhos["omega"], label="gd/omega", **moment
    )
    sampling = noisy_sandwich(Hh, Omega, n, left=P)
    S_u = np.atleast_2d(np.cov(est_u, rowvar=False, ddof=1)) / m
    privacy = P @ S_u @ P.T
    gap = released_gap(D, y, Hh, P, estimate, clip, sampling.cov + privacy, rhos, moment)
    drift = iterate_drift(traj.iterates, runs=runs, burn_in=burn_in)
    population = population_covariance(
        sampling.cov,
        privacy,
        description=_description(m, burn_in, moment_share, clip, target),
        privacy_dof=m - 1.0,
        sampling_dof=sampling.dof,
        drift=None if drift is None else drift.transform(P),
        gap=gap,
        covers=_COVERS[target].format(clip=clip),
    )
    names = Terms(P, H, terms or [f"x{j}" for j in range(k)])
    gap_checked = gap if target == "least-squares" else None
    checks = warn_doubts(linear_doubts(population, Hh, sampling, gap_checked, names, grows))
    return PreconditionedTrajectory(
        algorithm="preconditioned_gd",
        iterates=traj.iterates,
        estimate=estimate,
        ledger=ledger,
        config={**traj.config, "steps": steps, "runs": runs, "moment_share": moment_share},
        noise_backend=traj.noise_backend,
        seeded=traj.seeded,
        diagnostics=traj.diagnostics,
        estimates=est_u @ P.T,
        population=population,
        xtx=H,
        omega=Omega,
        clip=clip,
        checks=tuple(checks),
    )


def _checked(X: Any, y: Any, *, n_public: int | None, relation: Relation) -> tuple[Any, Any, int]:
    """:func:`~dpfit.algorithms._kernels.check_data`, or for a design read block by block
    (a :class:`~dpfit.distributed.RowMap` of checked data through a public row map, as
    :class:`~dpfit.DPLinearRegression` passes it) the design as it is, the response checked."""
    if not isinstance(X, RowMap):
        return check_data(X, y, n_public=n_public, relation=relation)
    y = check_array(y, "y", ndim=1)
    if y.shape[0] != X.shape[0]:
        raise ValueError("X and y must have the same number of rows")
    return X, y, X.shape[0]


def _description(m: int, burn_in: int, share: float, clip: float, target: str) -> str:
    covers = (
        "It covers the population least-squares coefficient; the fit warns when the released "
        "gap between the clipped fit and least squares is material against the interval."
        if target == "least-squares"
        else "It covers the Huber-type minimiser of the clipped loss, which is the "
        "least-squares coefficient only when the errors are symmetric given x."
    )
    return (
        "Population interval: estimate +/- t * sqrt(V_sampling + V_privacy). V_sampling is "
        "the heteroscedasticity-robust sandwich H^-1 Omega H^-1 / n with H = X'X/n over the "
        "records whose gradient is not clipped (the Huber Hessian) and Omega = mean of the "
        "clipped per-record gradients' outer products, released privately in coordinates "
        f"whitened by the preconditioner X'X/n ({100 * share:g}% of rho in all; "
        "docs/inference.md); V_privacy is the "
        f"covariance of m = {m} batch means of the released preconditioned DP-GD iterates "
        f"after a burn-in of {burn_in} (Brown et al. 2024, eq. 12); Student-t with "
        "Welch-Satterthwaite degrees of freedom that include the noise of the released "
        f"moments. Gradients are clipped at {clip:.3g} (whitened). {covers}"
    )


def _private_clip(
    D: Any,
    y: Any,
    xty: np.ndarray,
    P: np.ndarray,
    rhos: Mapping[str, float],
    *,
    n: int,
    bound: float,
    relation: Relation,
    ledger: PrivacyLedger,
    source: NoiseSource,
) -> tuple[float, float, np.ndarray]:
    """Clip = 3 sqrt(k) s~ from a private residual scale s~ (needs |y| <= 1, y bounds).

    A pilot theta_0 = P^2 b~ from b~ = D'y/n + noise (``xty`` = D'y; sensitivity 2 B / n,
    ||d|| <= B, |y| <= 1; P^2 the inverse of the preconditioner), then s~^2 = (1/n) sum_i
    min(r_i^2, 4) + noise at theta_0 (sensitivity 4 / n, n the public count;
    :func:`~dpfit.inference.whitened.release_mean`), with the shares ``rhos["pilot"]`` and
    ``rhos["scale"]``. The pilot's error only inflates s~ (a conservative clip);
    :func:`~dpfit.inference.whitened.gradient_clip` makes the clip. Returns the clip, the
    residual scale s~ it is made of and the pilot (released: post-processing of b~).
    """
    sens_b = mean_sensitivity(bound, n, relation)
    b = gaussian(
        xty / n,
        sensitivity=sens_b,
        noise_std=noise_std_for_rho(sens_b, rho_within(sens_b, rhos["pilot"])),
        ledger=ledger,
        rng=source,
        label="gd/xty-pilot",
    )
    pilot = P @ (P.T @ b)
    q, q_std = release_mean(
        record_sum(residual_scale_sum, [D, y], (pilot,), width=1),  # one term in [0, 4]
        cap=4.0,
        rho=rhos["scale"],
        n=n,
        ledger=ledger,
        rng=source,
        label="gd/residual-scale",
    )
    clip = gradient_clip(CLIP_MULTIPLIER, P.shape[0], q, q_std)
    return clip, clip / (CLIP_MULTIPLIER * math.sqrt(P.shape[0])), pilot
