"""Preconditioned DP-GD with a population interval: the default of ``DPLinearRegression``.

With public feature bounds every row of the design the algorithm sees has ||d_i|| <= B =
sqrt(k) (k coefficients, ones column included). The fit makes these releases, in this order
(docs/inference.md; every share of rho from :func:`release_shares`, whose exact sum is at most rho):

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
:mod:`dpfit.models._linear_moments` per pass over the rows: on all rows at once in memory,
or as one distributed reduction on Dask arrays, where Z = D P is a lazy row-block map and
the DP-GD steps are Dask reductions too (docs/dask.md).

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
from collections.abc import Mapping
from functools import partial
from typing import Any

import numpy as np

from ..algorithms import dp_gd
from ..algorithms.dp_gd import check_dp_gd_scales
from ..distributed import check_dask_rows, is_dask, map_rows
from ..inference import interval_estimates
from ..inference.clipping_bias import (
    CLIP_GROWTH,
    MEAT_NOISE,
    growing_clip,
    second_moment_clip,
)
from ..inference.diagnostics import iterate_drift
from ..inference.doubts import warn_doubts
from ..inference.population import population_covariance, release_moment_sum
from ..inference.preconditioner import (
    ROW_CLIP,
    record_sum,
    release_whitener,
    triangle,
    whiten,
)
from ..inference.whitened import GD_CLIP_MULTIPLIER as CLIP_MULTIPLIER
from ..inference.whitened import gradient_clip, noisy_sandwich, release_mean
from ..mechanisms import (
    NoiseSource,
    check_public_scale,
    gaussian,
    noise_std_for_rho,
    release_peaks,
    rho_within,
)
from ..privacy import PrivacyLedger, Query, mean_sensitivity, portions, split_rest
from ._linear_doubts import Terms, linear_doubts, released_gap
from ._linear_moments import gram_sums, residual_scale_sum, sandwich_sums

__all__ = [
    "DEFAULT_MOMENT_SHARE",
    "LINEAR_TARGETS",
    "PRECONDITIONED_STEPS",
    "release_shares",
    "run_preconditioned_gd",
]

#: Share of rho for the four moment releases, divided among them by MOMENT_WEIGHTS (H~ and
#: the whitened H~ a fifth each, Hh~ and Omega~ 3/10 each).
DEFAULT_MOMENT_SHARE = 0.25
MOMENT_WEIGHTS = {"xtx": 2, "whiten": 2, "hessian": 3, "omega": 3}
#: Default steps and step size in whitened coordinates.
PRECONDITIONED_STEPS = 200
PRECONDITIONED_STEP_SIZE = 0.5
#: What the default fit estimates (``target``): the population least-squares coefficient
#: (a clip that grows with n, and a warning when the released gap to least squares is
#: material), or the Huber-type minimiser of the loss clipped at 3 sqrt(k) residual scales.
LINEAR_TARGETS = ("least-squares", "huber")
#: Shares of rho for the releases behind the gap to least squares: the clipped excess in a
#: window above the clip, and the count of records far beyond it (the more telling one:
#: its detection threshold, 3.29 / sqrt(2 rho_far) records, sets which heavy tails are
#: caught).
GAP_SHARE = 0.02
FAR_SHARE = 0.08
_COVERS = {
    "least-squares": "the population least-squares coefficients (sampling + privacy error)",
    "huber": "the population coefficients of the Huber-type fit clipped at {clip:.3g} "
    "(in whitened units; sampling + privacy error; least squares only when the errors are "
    "symmetric given x)",
}


def release_shares(rho: float, moment_share: float, private_clip: bool) -> dict[str, float]:
    """Every release's share of rho, their exact sum at most rho, DP-GD's the rest
    (:func:`dpfit.privacy.split_rest`)."""
    fractions = {**portions(moment_share, MOMENT_WEIGHTS), "gap": GAP_SHARE, "far": FAR_SHARE}
    if private_clip:
        fractions.update(pilot=SCALE_SHARE, scale=SCALE_SHARE)
    return split_rest(rho, fractions, rest="gd")


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


def run_preconditioned_gd(
    D: Any,
    y: Any,
    settings: Mapping[str, Any],
    ledger: PrivacyLedger,
    source: NoiseSource,
) -> dict[str, Any]:
    """The releases and the population covariance, in the design's units.

    ``D`` and ``y`` are NumPy arrays or row-aligned Dask arrays (with ``settings["n_public"]``);
    on Dask every sum behind a release is one distributed reduction
    (:mod:`dpfit.models._linear_moments`), Z = D P is a lazy row-block map and the DP-GD
    steps run on Dask (docs/dask.md), so for the same seed the releases are the in-memory
    ones up to the order of floating-point addition.

    Returns a mapping with ``trajectory`` (iterates in original design coordinates),
    ``estimates`` (m, k), ``estimate`` (k,), ``population`` (CovarianceEstimate, with the
    released gap to least squares), ``releases`` (H~ and Omega~ with their noise stds) and
    public ``checks`` (messages about the released quantities, for the summary).
    """
    n = settings["n"]
    rho, share = settings["rho"], settings["moment_share"]
    bound, clip = settings["row_bound"], settings["clip"]
    m, burn_in, target = settings["m"], settings["burn_in"], settings["target"]
    D, y = _rows(D, y, settings)
    k = D.shape[1]
    rhos = release_shares(rho, share, private_clip=clip is None)
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
    steps, runs = settings["steps"], settings["runs"]
    meat_clip, start, grows = clip, None, False
    if clip is None:  # from a private residual scale (module docstring, step 2)
        clip, scale, pilot = _private_clip(
            D, y, sums[triangle(k) :], P, settings, rhos, ledger, source
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
        step_size=settings["step_size"],
        runs=runs,
        theta0=start,
        relation=settings["relation"],
        n_public=settings["n_public"],
        ledger=ledger,
        rng=source,
    )
    est_u = interval_estimates(
        traj, settings["interval"], m=m, burn_in=burn_in, variant=settings["interval_variant"]
    )
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
        description=_description(m, burn_in, share, clip, target),
        privacy_dof=m - 1.0,
        sampling_dof=sampling.dof,
        drift=None if drift is None else drift.transform(P),
        gap=gap,
        covers=_COVERS[target].format(clip=clip),
    )
    terms = Terms(P, H, settings.get("terms") or [f"x{j}" for j in range(k)])
    gap_checked = gap if target == "least-squares" else None
    checks = warn_doubts(linear_doubts(population, Hh, sampling, gap_checked, terms, grows))
    return {
        "trajectory": traj,
        "estimates": est_u @ P.T,
        "estimate": estimate,
        "population": population,
        "releases": {"xtx": H, "omega": Omega},
        "checks": checks,
        "clipped": traj.diagnostics["fraction_clipped"],
        "clip": clip,
    }


def check_preconditioned_scales(settings: Mapping[str, Any], k: int) -> None:
    """Refuse, before any charge, settings whose releases could overflow (public only).

    The moment releases have rows of norm <= sqrt(k) and scale terms in [0, 4], so only the
    clip matters: DP-GD's clipped gradient sum and iterates (:func:`check_dp_gd_scales`)
    and Omega~, a second moment of rows clipped to C (n C^2; the overflow of C^2 in its
    sensitivity raised after DP-GD was charged), with its noise s.d. s ~ C^2 squared (the
    sandwich de-spreads the meat by s^2 and weighs its degrees of freedom by V^2: C^4
    overflowed there after 0.9 of rho was charged). Without a given clip, C is at most
    3 sqrt(k) (q + Z s_q)^(1/2), q~'s largest release (:func:`_private_clip`), times
    :data:`~dpfit.inference.clipping_bias.CLIP_GROWTH` for the least-squares target (the
    clip grows with n up to that factor; the meat's clip is at most C).
    """
    n, clip = settings["n"], settings["clip"]
    common = {"n": n, "relation": settings["relation"]}
    shares = release_shares(settings["rho"], settings["moment_share"], private_clip=clip is None)
    if clip is None:
        _, q_peak = release_peaks(Query.BOUNDED_MEAN, bound=4.0, rho=shares["scale"], **common)
        clip = gradient_clip(CLIP_MULTIPLIER, k, q_peak, q_peak)
        if settings["target"] == "least-squares":
            clip *= CLIP_GROWTH
    omega = {"rho": shares["omega"], "squared": True, **common}
    check_public_scale(
        "clip",
        clip,
        lambda c: release_peaks(Query.SECOND_MOMENT, bound=c, **omega),
        what=f"the second moment of n = {n} whitened gradients clipped to it (Omega), its "
        "noise and their squares (the sandwich's variance)",
    )
    check_dp_gd_scales(
        clip, settings["step_size"], rho=shares["gd"], total=settings["steps"], **common
    )


#: Share of rho for each of the two releases behind the private clip (X'y/n, residual scale).
SCALE_SHARE = 0.025


def _private_clip(
    D: Any,
    y: Any,
    xty: np.ndarray,
    P: np.ndarray,
    settings: Mapping[str, Any],
    rhos: Mapping[str, float],
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
    n, bound = settings["n"], settings["row_bound"]
    relation = settings["relation"]
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


def _rows(D: Any, y: Any, settings: Mapping[str, Any]) -> tuple[Any, Any]:
    """NumPy arrays, or the Dask design and response checked (the declared n against the
    row count under replace-one, before anything is charged) and persisted on the workers
    once for all the passes of the fit (:func:`dpfit.distributed.check_dask_rows`)."""
    if not is_dask(D):
        return np.asarray(D, dtype=np.float64), np.asarray(y, dtype=np.float64)
    (D, y), _ = check_dask_rows(
        {"X": (D, 2), "y": (y, 1)},
        n_public=settings["n_public"],
        relation=settings["relation"],
    )
    return D, y
