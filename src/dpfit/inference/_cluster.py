"""Cluster-robust population intervals for a fit with a privacy unit.

Rows of one unit (a person's years, a patient's visits) are correlated, so the
heteroscedasticity-robust sandwich, which treats rows as independent, understates the
sampling variance. The cluster-robust sandwich (Liang & Zeger 1986; Arellano 1987;
Cameron & Miller 2015, "A Practitioner's Guide to Cluster-Robust Inference", J. Human
Resources 50(2)) replaces the meat by the outer products of each unit's *summed* scores:

    V = H^-1 Omega H^-1 / G,   Omega = (1/G) sum_u s_u s_u',   s_u = sum_{i in u} d_i e_i,

with G units and H = X'X / G. Here Omega is a private release (:func:`release_cluster_meat`):
each unit's summed score, whitened by the public-after-release P = H~^-1/2, is clipped to
norm C (per-unit clipping: the bound does not grow with the unit's rows) and the mean of
their outer products is released with the second-moment sensitivity of one term, sqrt(2)
C^2 / G (replace-one unit) or C^2 / G (add/remove unit). The clip is a multiple of a private
score scale (:data:`CLIP_MULTIPLIER`), grown with G as far as the meat's noise allows
(:func:`~dpfit.inference.clipping_bias.second_moment_clip`).

Small-cluster correction (:func:`cluster_correction`): the sandwich is multiplied by
G / (G - 1) (the CR1 factor of Stata's ``vce(cluster)`` without its (N - 1) / (N - k) row
factor, which needs the private row count; with many rows per parameter it is about 1),
and the interval uses Student-t quantiles with at most G - 1 degrees of freedom (Cameron &
Miller 2015, section VI.C), fewer where the noise of the released bread and meat warrants
(Satterthwaite, :func:`~dpfit.inference.whitened.noisy_sandwich`). With entity fixed
effects removed by the within transformation the same correction applies: clustering by
the entity makes the within estimator's sandwich consistent without a degrees-of-freedom
adjustment for the absorbed effects (Stock & Watson 2008, Econometrica 76(1)).
"""

from __future__ import annotations

import math

import numpy as np

from ..mechanisms import NoiseSource
from ..privacy import PrivacyLedger
from .clipping_bias import MEAT_NOISE, second_moment_clip
from .doubts import Doubt
from .population import NoisyMoment, release_second_moment
from .whitened import gradient_clip, release_mean

__all__ = [
    "CLIP_MULTIPLIER",
    "FEW_UNITS",
    "cluster_correction",
    "few_units",
    "release_cluster_meat",
]

#: The per-unit score clip is this many score scales (times sqrt(k)): a unit's summed score
#: varies with its size and its rows' correlation, so the clip sits further out than a
#: row's (6 residual scales for AdaSSP's row-level meat).
CLIP_MULTIPLIER = 8.0
#: Fewer units than this per coefficient (or than :data:`MIN_UNITS` in all) draws a
#: coverage warning: the cluster-robust sandwich is biased down with few clusters
#: (Cameron & Miller 2015, section VI).
FEW_UNITS = 10
MIN_UNITS = 50


def release_cluster_meat(
    scores: np.ndarray,
    *,
    max_rows: int,
    rho_scale: float,
    rho_meat: float,
    n: int,
    ledger: PrivacyLedger,
    rng: NoiseSource,
) -> tuple[NoisyMoment, float]:
    """Release the clustered meat (1/n) sum_u clip_C(s_u) clip_C(s_u)' and return it with C.

    Two releases, each bounding one unit's term (the units are the records here):

    1. the score scale q~ = (1/n) sum_u min(|s_u|^2 / k, K) (K = ``max_rows``: a unit of K
       rows whose residuals are of the response's own range), sensitivity K / n
       (:func:`~dpfit.inference.whitened.release_mean`), at ``rho_scale``;
    2. the meat with every s_u clipped to C = :data:`CLIP_MULTIPLIER` sqrt(k) sqrt(q~), grown
       with n (:func:`~dpfit.inference.clipping_bias.second_moment_clip`), at ``rho_meat``
       (:func:`~dpfit.inference.population.release_second_moment` on s_u / C with bound 1,
       scaled back by C^2: the same mechanism, with a charge that does not depend on the
       released scale).

    ``n`` is the public number of units that divides the sums.
    """
    k = scores.shape[1]
    with np.errstate(all="ignore"):
        terms = np.minimum(np.einsum("ij,ij->i", scores, scores) / k, float(max_rows))
    q, q_std = release_mean(
        terms.sum(), cap=float(max_rows), rho=rho_scale, n=n, ledger=ledger, rng=rng,
        label="unit/score-scale",
    )  # fmt: skip
    clip = gradient_clip(CLIP_MULTIPLIER, k, q, q_std)
    scale = clip / (CLIP_MULTIPLIER * math.sqrt(k))
    clip = second_moment_clip(clip, scale, n=n, rho=rho_meat, noise=MEAT_NOISE)
    with np.errstate(all="ignore"):
        unit_rows = scores / clip  # released at bound 1 and scaled back: the charge is fixed
    meat = release_second_moment(
        unit_rows, bound=1.0, rho=rho_meat, n=n, ledger=ledger, rng=rng, label="unit/cluster-meat"
    )
    square = clip * clip
    return NoisyMoment(matrix=meat.matrix * square, noise_std=meat.noise_std * square), clip


def cluster_correction(n_units: float) -> tuple[float, float]:
    """The small-cluster factor G / (G - 1) and the degrees-of-freedom cap G - 1 (module
    docstring); ``n_units`` is public or a released count (at least 2 is assumed)."""
    g = max(float(n_units), 2.0)
    return g / (g - 1.0), g - 1.0


def few_units(n_units: float, k: int) -> Doubt | None:
    """A doubt when there are fewer than :data:`FEW_UNITS` units per coefficient or fewer
    than :data:`MIN_UNITS` in all (public or released counts only)."""
    if n_units >= max(FEW_UNITS * k, MIN_UNITS):
        return None
    return Doubt(
        f"Only about {n_units:.0f} units for {k} coefficients: with few clusters the "
        "cluster-robust sandwich understates the variance (Cameron & Miller 2015), even "
        "with its small-cluster correction.",
        ("more units", "fewer or less collinear terms"),
    )
