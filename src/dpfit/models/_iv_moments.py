"""Noisy-moment 2SLS with a population interval: the default of ``DPIVRegression``.

Two charged releases on the (standardised, public-bounded) rows a_i = (1, design columns, y)
(docs/inference.md):

1. **M~** = (1/n) sum a_i a_i' + noise (:func:`~dpfit.inference.population.release_second_moment`,
   share 1 - ``OMEGA_SHARE`` of rho; rows clipped to the public norm C = min(B, 3 sqrt(k)),
   B the row bound implied by the public column bounds and the released standardisation, so
   the replace-one sensitivity is sqrt(2) C^2 / n; released as C^2 times the release of
   a_i / C with bound 1, so that every ledger entry is exactly data-independent). 2SLS is
   computed from its blocks
   (:func:`~dpfit.inference.population_iv.two_sls_from_moments`): no iterations, hence no
   truncation bias (the 20-step DP-2S-GD default was biased by -0.66 s.e. before any noise).
2. **Omega~** = (1/n) sum g_i g_i' of the 2SLS scores g_i = z_i e_i at the released beta
   (share ``OMEGA_SHARE``; g_i clipped to ``OMEGA_CLIP`` sqrt(q) s_e, s_e^2 = the residual
   second moment read off M~: post-processing).

Covariance around the population beta*: the robust sandwich G Omega~ G' / n plus the exact
first-order law of the moment noise G C G' s^2 (:mod:`dpfit.inference.population_iv`);
normal quantiles. The released M~ also gives the first stage's strength (Stock & Yogo's
test, :mod:`dpfit.inference.iv_identification`), which the one ``CoverageWarning`` reports
with the other reasons (:func:`_identification_doubts`, the far-row count), and which the
result keeps for its identification tests (:mod:`dpfit.models._result_iv`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..inference.clipping_bias import FAR, GAP_SE, far_records
from ..inference.doubts import IDENTIFICATION, Doubt, warn_doubts
from ..inference.identification import describe_directions
from ..inference.iv_identification import FirstStage, ReleasedMoments, first_stage
from ..inference.population import (
    NoisyMoment,
    population_covariance,
    release_second_moment,
    second_moment_sensitivity,
)
from ..inference.population_iv import (
    MomentTwoSLS,
    moment_noise_covariance,
    two_sls_from_moments,
)
from ..inference.whitened import release_mean
from ..mechanisms import NoiseSource, clip_rows, rho_within
from ..privacy import PrivacyLedger, split_rest

__all__: list[str] = []

#: Share of the fit's rho spent on Omega~, and on the count of rows far beyond the row clip
#: (the rest, 80% as before the count, on M~).
OMEGA_SHARE = 0.12
FAR_SHARE = 0.08
#: Rows are clipped to ROW_CLIP sqrt(k) (k columns, intercept included) when the public bounds
#: allow larger rows: standardised rows have mean squared norm about k.
ROW_CLIP = 3.0
#: 2SLS scores are clipped to OMEGA_CLIP sqrt(q) s_e.
OMEGA_CLIP = 4.0
#: Below Stock & Yogo's tabulated cases, the instruments count as weak when the first-stage
#: F (or Cragg-Donald statistic) is below this rule of thumb (Staiger & Stock 1997).
WEAK_F = 10.0


def moment_shares(rho: float) -> dict[str, float]:
    """The fit's shares of rho: M~, Omega~ and the far-row count, exact sum at most rho."""
    return split_rest(rho, {"omega": OMEGA_SHARE, "far": FAR_SHARE}, rest="moments")


def row_clip(k: int, row_bound: float | None) -> float:
    """The public row-norm clip: min(row bound, ROW_CLIP sqrt(k)).

    It does not grow with n, unlike the linear default's gradient clip: the moments' noise is
    quadratic in the clip, and a clip with C^4 / (n rho) = r widened the intervals of the
    simulated IV designs by about 20% at n = 2e4, rho = 5 while the skewed file it was meant
    for warned anyway (docs/inference.md). Rows far beyond it are counted privately instead.
    """
    clip = ROW_CLIP * math.sqrt(k)
    return clip if row_bound is None else min(clip, row_bound)


def description(clip: float) -> str:
    return (
        "Population interval: estimate +/- z * sqrt(V_sampling + V_privacy). The estimate is "
        "2SLS computed from a privately released second-moment matrix of (design, y) "
        f"(rows clipped to norm {clip:.3g} in standardised units); V_sampling is the "
        "heteroscedasticity-robust 2SLS sandwich with a privately released Omega (as "
        "linearmodels' IV2SLS cov_type='robust'); V_privacy is the exact first-order law of "
        "the moment noise (docs/inference.md). It covers the population coefficients when "
        "the first stage is strong relative to the noise (otherwise a CoverageWarning)."
    )


def _release_scaled(
    rows: np.ndarray, scale: float, *, rho: float, n: int, ledger, source, label: str
) -> NoisyMoment:
    """(1/n) sum a_i a_i' released as scale^2 x the release of the rows a_i / scale, bound 1.

    The clip ``scale`` comes from earlier releases (post-processing), so releasing the
    rescaled rows with the fixed bound 1 keeps every ledger entry's sensitivity and rho
    exactly data-independent (float rounding included); the result is the same mechanism
    as bound ``scale`` on the original rows. The share is lowered by the ulps by which the
    charge Delta^2 / (2 sigma^2) could round above it (:func:`dpfit.mechanisms.rho_within`).
    """
    rho = rho_within(second_moment_sensitivity(1.0, n, ledger.relation), rho)
    with np.errstate(all="ignore"):
        unit = release_second_moment(
            rows / scale, bound=1.0, rho=rho, n=n, ledger=ledger, rng=source, label=label
        )
    return NoisyMoment(matrix=unit.matrix * scale**2, noise_std=unit.noise_std * scale**2)


def fit_moments(
    A: np.ndarray,
    x_idx: list[int],
    z_idx: list[int],
    y_idx: int,
    *,
    rho: float,
    n: int,
    clip: float,
    ledger: PrivacyLedger,
    source: NoiseSource,
    names: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The two releases and the population covariance, in the columns' (standardised) units.

    ``names`` are the regressors' names (x0, x1, ... without them), for the warnings.

    Returns a mapping with ``estimate`` (p,), ``population`` (CovarianceEstimate), the
    releases and public ``checks`` (messages about released quantities only).
    """
    k = A.shape[1]
    rhos = moment_shares(rho)
    M = _release_scaled(
        A, clip, rho=rhos["moments"], n=n, ledger=ledger, source=source, label="iv/moments",
    )  # fmt: skip
    fit = two_sls_from_moments(M.matrix, x_idx, z_idx, y_idx, zz_floor=M.floor)
    c = np.zeros(k)
    c[y_idx] = 1.0
    np.subtract.at(c, x_idx, fit.beta)
    scale2 = max(float(c @ M.matrix @ c), M.floor * float(c @ c), 1e-12)
    score_clip = OMEGA_CLIP * math.sqrt(len(z_idx) * scale2)
    with np.errstate(all="ignore"):
        Ac = clip_rows(A / clip, 1.0) * clip  # the rows exactly as M~ saw them
        scores = Ac[:, z_idx] * (Ac @ c)[:, None]
    Omega = _release_scaled(
        scores, score_clip, rho=rhos["omega"], n=n, ledger=ledger, source=source,
        label="iv/omega",
    )  # fmt: skip
    with np.errstate(all="ignore"):
        outside = np.count_nonzero(np.einsum("ij,ij->i", A, A) > (FAR * clip) ** 2)
    far, far_std = release_mean(
        outside, cap=1.0, rho=rhos["far"], n=n, ledger=ledger, rng=source, label="iv/far-rows"
    )
    sampling = fit.G @ Omega.psd() @ fit.G.T / n
    noise = moment_noise_covariance(k, x_idx, z_idx, y_idx, fit.beta)
    privacy = M.noise_std**2 * fit.G @ noise @ fit.G.T
    population = population_covariance(
        (sampling + sampling.T) / 2.0,
        (privacy + privacy.T) / 2.0,
        description=description(clip),
        covers="the population 2SLS coefficients (sampling + privacy error), when the first "
        "stage is strong against the noise and few rows are clipped (else a warning)",
    )
    moments = ReleasedMoments(
        matrix=M.matrix, noise_std=M.noise_std, n=n, x_idx=tuple(x_idx), z_idx=tuple(z_idx),
        y_idx=y_idx,
    )  # fmt: skip
    stage = first_stage(moments) if moments.endogenous and moments.excluded else None
    names = names or [f"x{j}" for j in range(len(x_idx))]
    doubts = _identification_doubts(M, moments, stage, fit, population.bse, names)
    if (count := far_records(far, far_std, n)) > 0:
        doubts.append(
            Doubt(
                f"Rows far beyond the row clip: about {count:.3g} or more (a private count) "
                f"lie more than {FAR:g} x the clip from the origin in standardised units, and "
                "clipping them can move 2SLS away from the population coefficient (a skewed "
                "or heavy-tailed variable, e.g. wealth).",
                ("more records", "a larger rho"),
            )
        )
    checks = warn_doubts(doubts)  # released quantities only
    return {
        "estimate": fit.beta,
        "population": population,
        "releases": {"moments": M, "omega": Omega},
        "moments": moments,
        "first_stage": stage,
        "omega": Omega.psd(),
        "checks": checks,
        "clip": clip,
    }


def _identification_doubts(
    M: NoisyMoment,
    moments: ReleasedMoments,
    stage: FirstStage | None,
    fit: MomentTwoSLS,
    bse: np.ndarray,
    names: Sequence[str],
) -> list[Doubt]:
    """What the released moments say against the Wald interval (post-processing).

    Weak instruments (Stock & Yogo 2005: the first-stage F or Cragg-Donald statistic,
    noise-corrected, below the critical value for 10% maximal size, or below 10 where it is not
    tabulated here); a direction of the coefficients whose 2SLS curvature Q'WQ is within two
    noise s.d. of zero, named by its terms (``names``, the regressors;
    :mod:`dpfit.inference.identification`); else an attenuation by the moment noise that is
    material against the interval (more than GAP_SE standard errors, as for the clipping gap).
    An instrument block M_zz below its noise floor is not a reason: 2SLS weights the moments by
    the floored inverse and G uses the same weight, which costs efficiency, not validity.
    """
    doubts = []
    if stage is not None:
        critical = stage.critical or WEAK_F
        if not stage.statistic >= critical:
            doubts.append(
                Doubt(
                    f"The instruments are weak: the {stage.name} is {stage.statistic:.3g} "
                    f"(privacy noise s.d. {stage.noise_sd:.2g}), below {critical:g} (Stock & "
                    "Yogo 2005), so the Wald interval can be off centre and too short; the "
                    "Anderson-Rubin set (ar_interval(), in the summary's notes) stays valid.",
                    ("stronger instruments", "more records"),
                )
            )
    unidentified = fit.unidentified(M.noise_std)
    if unidentified:
        scale = np.sqrt(np.maximum(np.diag(M.matrix)[list(moments.x_idx)], M.floor))
        terms = describe_directions(fit.weakest[:, None], scale, names)
        doubts.append(
            Doubt(
                "The data do not identify every direction of the coefficients at this n and "
                f"rho: {terms} (the released 2SLS curvature Q'WQ has an eigenvalue within two "
                "noise s.d. of zero along it: collinear terms, or for an endogenous term "
                "alone, instruments too weak for the noise), so the estimate along it is mostly "
                "noise and the intervals of those terms are wide.",
                (
                    "more records",
                    "a larger rho",
                    "stronger instruments",
                    "fewer or less collinear terms",
                ),
                IDENTIFICATION,
            )
        )
    bias = np.abs(fit.attenuation_bias(M.noise_std)) / np.maximum(bse, 1e-300)
    # along an unidentified direction the attenuation is its consequence, said above
    if not unidentified and not float(bias.max()) <= GAP_SE:
        attenuation = M.noise_std**2 * fit.weight_trace / max(float(fit.strength[0]), 1e-300)
        doubts.append(
            Doubt(
                "The first stage is weak relative to the privacy noise: the noise attenuates "
                f"beta by up to {float(bias.max()):.2g} standard errors (expected attenuation "
                f"about {100 * attenuation:.2g}%).",
                ("more records", "a larger rho", "stronger instruments"),
            )
        )
    return doubts
