"""Preconditioned DP-GD with a population interval: the default of ``DPLinearRegression``.

With public feature bounds every row of the design the algorithm sees has ||d_i|| <= B =
sqrt(k) (k coefficients, ones column included). The fit makes these releases, in this order
(docs/inference.md; shares of rho in brackets, s = ``moment_share``):

1. **H~** = (1/n) D'D + noise ([s / 4]; the mechanism of
   :func:`~dpfit.inference.population.release_second_moment`, applied to a reduced sum by
   :func:`~dpfit.inference.population.release_moment_sum`), projected onto eigenvalues >= its
   public noise floor: Hp. It is the preconditioner P = Hp^{-1/2}.
2. Only when no ``clip`` is given: a **private clip** 3 sqrt(k) s~ from a pilot
   Hp^-1 (D'y/n + noise) and a noisy residual scale s~ ([2 x ``SCALE_SHARE``],
   :func:`_private_clip`).
3. **DP-GD in whitened coordinates** (Brown et al. 2024, Alg. 1, with rows z_i = P d_i;
   the rest of rho). There E[z z'] is about I, so a step size of 0.5 mixes in a few steps
   whatever the conditioning of the features, and 200 steps are plenty. The noise in H~
   changes only the geometry, not the fixed point: the iterates still centre on the data's
   clipped-loss minimiser theta_hat.
4. **Hh~** = (1/n) sum_i 1{g_i unclipped} d_i d_i' + noise, the Huber Hessian at the
   released estimate: the bread for the clipped-loss target ([3 s / 8]). The sandwich uses
   it with its eigenvalues de-spread within noise-level groups and raised to one noise s.d.
   (:meth:`~dpfit.inference.population.NoisyMoment.shrunk`), so that the noise in the bread
   changes the width of the interval as little as measured (docs/inference.md).
5. **Omega~** = (1/n) sum g_i g_i' of the clipped whitened gradients g_i = clip_C(z_i r_i)
   at the released estimate ([3 s / 8]; sensitivity sqrt(2) C^2 / n).

Every sum behind a release is computed by one block function of
:mod:`dpfit.models._linear_moments` per pass over the rows (steps 1 and 2's X'y together,
the residual scale, steps 4 and 5 together): on all rows at once in memory, or as one
distributed reduction on Dask arrays, where Z = D P is a lazy row-block map and the DP-GD
steps are Dask reductions too (docs/dask.md).

Covariance of the released estimate theta~ = P u~ around the population parameter:

    V = Hs^-1 Omega_d Hs^-1 / n   (the sandwich, Hs the shrunk Hh~ of step 4,
                                   Omega_d = P^-1 Omega~ P^-1 in the design's coordinates,
                                   Omega~ shrunk likewise;
                                   :func:`~dpfit.inference.whitened.whitened_sandwich`)
      + P S_u P / m               (privacy part: the m released batch means' covariance, eq. 12)

with Welch-Satterthwaite degrees of freedom (the privacy part has m - 1). Everything after
the releases is post-processing, including the checks that warn (``CoverageWarning``) when
the interval cannot be trusted: the released iterates still drift between the first and the
second half of the run (:mod:`dpfit.inference.diagnostics`; reported on the population
covariance as ``drift``), and the released Huber Hessian's or Omega~'s smallest eigenvalue
is within two noise s.d. of zero
(:meth:`~dpfit.inference.population.NoisyMoment.unidentified`).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from functools import partial
from typing import Any

import numpy as np

from .._validation import user_stacklevel
from ..algorithms import dp_gd
from ..algorithms.dp_gd import check_dp_gd_scales
from ..distributed import check_dask_rows, is_dask, map_rows
from ..exceptions import CoverageWarning
from ..inference import interval_estimates
from ..inference.diagnostics import iterate_drift
from ..inference.population import population_covariance, release_moment_sum
from ..inference.whitened import (
    NOISY_MEAT,
    gradient_clip,
    inverse_sqrt,
    release_mean,
    whitened_sandwich,
)
from ..mechanisms import (
    NoiseSource,
    check_public_scale,
    gaussian,
    noise_std_for_rho,
    release_peaks,
    rho_within,
)
from ..privacy import PrivacyLedger, Query, mean_sensitivity, split
from ._linear_moments import (
    gram_sums,
    record_sum,
    residual_scale_sum,
    sandwich_sums,
    triangle,
)

__all__ = [
    "DEFAULT_MOMENT_SHARE",
    "PRECONDITIONED_STEPS",
    "check_preconditioned_scales",
    "run_preconditioned_gd",
]

#: Share of rho for the three moment releases (H~ a quarter, Hh~ and Omega~ 3/8 each).
DEFAULT_MOMENT_SHARE = 0.2
#: Default steps and step size in whitened coordinates.
PRECONDITIONED_STEPS = 200
PRECONDITIONED_STEP_SIZE = 0.5


def _description(m: int, burn_in: int, share: float, clip: float) -> str:
    return (
        "Population interval: estimate +/- t * sqrt(V_sampling + V_privacy). V_sampling is "
        "the heteroscedasticity-robust sandwich H^-1 Omega H^-1 / n with H = X'X/n over the "
        "records whose gradient is not clipped (the Huber Hessian) and Omega = mean of the "
        "clipped per-record gradients' outer products, released privately with the "
        f"preconditioner X'X/n ({100 * share:g}% of rho in all; docs/inference.md); "
        "V_privacy is the "
        f"covariance of m = {m} batch means of the released preconditioned DP-GD iterates "
        f"after a burn-in of {burn_in} (Brown et al. 2024, eq. 12); Student-t with "
        "Welch-Satterthwaite degrees of freedom. It covers the population coefficient when "
        "the model's errors are symmetric given x or clipping is rare (clip "
        f"{clip:.3g} on whitened gradients); otherwise the Huber-type minimiser."
    )


def run_preconditioned_gd(
    D: Any,
    y: Any,
    settings: Mapping[str, Any],
    ledger: PrivacyLedger,
    source: NoiseSource,
) -> dict[str, Any]:
    """The three releases and the population covariance, in the design's units.

    ``D`` and ``y`` are NumPy arrays or row-aligned Dask arrays (with ``settings["n_public"]``);
    on Dask every sum behind a release is one distributed reduction
    (:mod:`dpfit.models._linear_moments`), Z = D P is a lazy row-block map and the DP-GD
    steps run on Dask (docs/dask.md), so for the same seed the releases are the in-memory
    ones up to the order of floating-point addition.

    Returns a mapping with ``trajectory`` (iterates in original design coordinates),
    ``estimates`` (m, k), ``estimate`` (k,), ``population`` (CovarianceEstimate),
    ``releases`` (H~ and Omega~ with their noise stds) and public ``checks`` (messages
    about the released quantities, for the summary).
    """
    n = settings["n"]
    rho, share = settings["rho"], settings["moment_share"]
    bound, clip = settings["row_bound"], settings["clip"]
    m, burn_in = settings["m"], settings["burn_in"]
    D, y = _rows(D, y, settings)
    k = D.shape[1]
    rhos = _shares(rho, share, private_clip=clip is None)
    sums = record_sum(gram_sums, [D, y], (bound,), width=triangle(k) + k)
    H = release_moment_sum(
        sums[: triangle(k)],
        bound=bound,
        rho=rhos["xtx"],
        n=n,
        ledger=ledger,
        rng=source,
        label="gd/xtx",
    )
    Hp = H.psd()
    P = inverse_sqrt(Hp)
    Z = map_rows(partial(_whiten, P=P), D, columns=k)  # each record through a public map
    if clip is None:  # from a private residual scale (module docstring, step 2)
        clip = _private_clip(D, y, sums[triangle(k) :], Hp, rhos, settings, ledger, source)
    runs = settings["runs"]
    traj = dp_gd(
        Z,
        y,
        warn_large_rho=False,  # a share of the fit's rho, which the estimator warned about
        rho=rhos["gd"],
        clip=clip,
        steps=settings["steps"] // runs,
        step_size=settings["step_size"],
        runs=runs,
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
    sums = record_sum(sandwich_sums, [D, y], (P, estimate, clip, bound), width=2 * triangle(k))
    moment = {"n": n, "ledger": ledger, "rng": source}
    # the Huber Hessian: the bread for the clipped-loss target
    Hh = release_moment_sum(
        sums[: triangle(k)], bound=bound, rho=rhos["huber"], label="gd/huber-hessian", **moment
    )
    Omega = release_moment_sum(
        sums[triangle(k) :], bound=clip, rho=rhos["omega"], label="gd/omega", **moment
    )
    sampling = whitened_sandwich(Hh, Omega, P, n)
    S_u = np.atleast_2d(np.cov(est_u, rowvar=False, ddof=1)) / m
    privacy = P @ S_u @ P
    drift = iterate_drift(traj.iterates, runs=runs, burn_in=burn_in)
    population = population_covariance(
        sampling,
        privacy,
        description=_description(m, burn_in, share, clip),
        privacy_dof=m - 1.0,
        drift=None if drift is None else drift.transform(P),
    )
    checks = []
    if population.untrusted.any():
        worst = float(np.max(population.relative_drift))
        checks.append(
            "The released DP-GD iterates have not converged: the mean of the second half "
            f"differs from the first half's by up to {worst:.2g} interval standard errors "
            f"in {int(population.untrusted.sum())} coefficient(s) (covariance().drift); "
            "the interval is off centre and may under-cover (more steps or a larger step "
            "size help)."
        )
    if Hh.unidentified():
        checks.append(
            "The released Huber Hessian (X'X/n over the records whose gradient is not "
            "clipped) has an eigenvalue within two noise s.d. of zero: some direction of "
            "the features is barely identified at this n and rho, and the sandwich may "
            "understate the sampling variance along it; population intervals may "
            "under-cover (more records, a larger rho or tighter bounds help)."
        )
    if Omega.unidentified():
        checks.append(NOISY_MEAT)
    for message in checks:  # depend on released quantities only
        warnings.warn(message, CoverageWarning, stacklevel=user_stacklevel())
    return {
        "trajectory": traj,
        "estimates": est_u @ P,
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
    sensitivity raised after DP-GD was charged). Without a given clip, C is at most
    3 sqrt(k) (q + Z s_q)^(1/2), q~'s largest release (:func:`_private_clip`).
    """
    n, clip = settings["n"], settings["clip"]
    common = {"n": n, "relation": settings["relation"]}
    shares = _shares(settings["rho"], settings["moment_share"], private_clip=clip is None)
    if clip is None:
        _, q_peak = release_peaks(Query.BOUNDED_MEAN, bound=4.0, rho=shares["scale"], **common)
        clip = gradient_clip(CLIP_MULTIPLIER, k, q_peak, q_peak)
    omega = {"rho": shares["omega"], **common}
    check_public_scale(
        "clip",
        clip,
        lambda c: release_peaks(Query.SECOND_MOMENT, bound=c, **omega),
        what=f"the second moment of n = {n} whitened gradients clipped to it (Omega) and its noise",
    )
    check_dp_gd_scales(
        clip, settings["step_size"], rho=shares["gd"], total=settings["steps"], **common
    )


#: Share of rho for each of the two releases behind the private clip (X'y/n, residual scale).
SCALE_SHARE = 0.025


def _shares(rho: float, share: float, *, private_clip: bool) -> dict[str, float]:
    """Each release's exact share of rho (:func:`dpfit.privacy.split`): H~ a quarter of
    ``share``, Hh~ and Omega~ 3/8 each, with a private clip the pilot X'y/n and the residual
    scale :data:`SCALE_SHARE` each, and DP-GD the rest."""
    scale = 2.0 * SCALE_SHARE if private_clip else 0.0
    parts = {"xtx": share / 4.0, "gd": 1.0 - share - scale}
    if private_clip:
        parts |= {"pilot": SCALE_SHARE, "scale": SCALE_SHARE}
    parts |= {"huber": share * 3.0 / 8.0, "omega": share * 3.0 / 8.0}
    return dict(zip(parts, split(rho, list(parts.values())), strict=True))


#: The clip is this many residual scales times sqrt(k) (a typical whitened ||z||).
CLIP_MULTIPLIER = 3.0


def _private_clip(
    D: Any,
    y: Any,
    xty: np.ndarray,
    Hp: np.ndarray,
    rhos: Mapping[str, float],
    settings: Mapping[str, Any],
    ledger: PrivacyLedger,
    source: NoiseSource,
) -> float:
    """Clip = 3 sqrt(k) s~ from a private residual scale s~ (needs |y| <= 1, y bounds).

    A pilot theta_0 = Hp^-1 b~ from b~ = D'y/n + noise (``xty`` = D'y; sensitivity 2 B / n,
    ||d|| <= B, |y| <= 1), then s~^2 = (1/n) sum_i min(r_i^2, 4) + noise at theta_0
    (sensitivity 4 / n, n the public count; :func:`~dpfit.inference.whitened.release_mean`),
    each with ``SCALE_SHARE`` of rho. The pilot's error only inflates s~ (a conservative
    clip); :func:`~dpfit.inference.whitened.gradient_clip` makes the clip.
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
    pilot = np.linalg.solve(Hp, b)
    q, q_std = release_mean(
        record_sum(residual_scale_sum, [D, y], (pilot,), width=1),  # one term in [0, 4]
        cap=4.0,
        rho=rhos["scale"],
        n=n,
        ledger=ledger,
        rng=source,
        label="gd/residual-scale",
    )
    return gradient_clip(CLIP_MULTIPLIER, Hp.shape[0], q, q_std)


def _whiten(block: np.ndarray, P: np.ndarray) -> np.ndarray:
    """Rows z_i = P d_i of a block (P symmetric): a public map applied record by record."""
    return block @ P


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
