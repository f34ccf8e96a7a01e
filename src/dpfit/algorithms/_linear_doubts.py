"""What the preconditioned fit's releases say against its interval, and its gap to least squares.

:func:`released_gap` makes the two releases behind the gap between the clipped fit and least
squares (:mod:`dpfit.inference.clipping_bias`); :func:`linear_doubts` turns the releases of
:func:`~dpfit.algorithms.preconditioned_gd.preconditioned_gd` into the reasons its one
``CoverageWarning`` gives (:mod:`dpfit.inference.doubts`). Both are used by that fit only;
they live here to keep its module about the releases themselves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..inference.clipping_bias import (
    FAR,
    GAP_NOISE,
    ClippingGap,
    excess_window,
    far_records,
    release_excess,
)
from ..inference.doubts import COVERAGE, HELPS, IDENTIFICATION, Doubt
from ..inference.identification import (
    column_scale,
    swamped,
    unidentified_directions,
    unidentified_reason,
)
from ..inference.population import NoisyMoment
from ..inference.preconditioner import record_sum
from ..inference.whitened import NOISY_MEAT, NoisySandwich, release_mean
from ._linear_moments import excess_sums

__all__ = ["BREAD_Z", "HEAVY_TAILED_MEAT", "Terms", "linear_doubts", "released_gap"]

#: The whitened bread is doubted when its smallest de-spread eigenvalue is within
#: (1 + BREAD_Z) noise s.d. of zero (:meth:`~dpfit.inference.population.NoisyMoment.unidentified`).
#: Whitened, a well identified design has every eigenvalue near 1 (0.87-1.0 on the real files
#: of docs/inference.md), so z = 2 costs few false alarms, while z = 1 let noise pass a
#: direction the whitener missed (data eigenvalue 0.075, released above 0.33) and the
#: sandwich understated its variance 16-fold (Card's exper and exper^2 at n = 2000).
BREAD_Z = 2.0
#: A noisy meat (:data:`~dpfit.inference.whitened.NOISY_MEAT`) while the bread identifies every
#: direction: at an n where the curvature is well measured, the meat's noise (which grows with
#: the clip squared) can only dominate it when the clip, set from a private residual scale, is
#: far above most records' gradients, as with a heavy-tailed response; there clipping moves
#: the estimate by more than the released gap resolves. A coverage reason: on the real files
#: of docs/inference.md ("Warning triage") it fires on 2.6% of the fits in covering cells and
#: on the wealth file at n = 2e4, whose intervals cover 0.68-0.78. Beside an unidentified
#: bread (small n: everything is noisy) the same release is a note.
HEAVY_TAILED_MEAT = Doubt(
    "The released second moment of the clipped gradients (the sandwich's meat) is so noisy "
    "that some coefficient's sampling variance has fewer than 4 degrees of freedom although "
    "the curvature is well measured: the clip, set from a private residual scale, is far "
    "above most records' gradients, as with a heavy-tailed response, and clipping can move "
    "the estimate by more than the released gap shows.",
    ("a larger rho", "tighter y bounds", HELPS[-1]),
    COVERAGE,
)


def released_gap(
    D: Any,
    y: Any,
    Hh: NoisyMoment,
    P: np.ndarray,
    estimate: np.ndarray,
    clip: float,
    cov: np.ndarray,
    rhos: Mapping[str, float],
    moment: Mapping[str, Any],
) -> ClippingGap:
    """The released gap theta_ls - theta_C = P A^-1 e_w to first order (A the whitened
    bread, e_w the mean excess between C and C + w at the estimate), and the released share
    of records whose gradient exceeds FAR x C (:mod:`dpfit.inference.clipping_bias`).

    The window w makes the gap's noise s.d. at most GAP_NOISE x the interval's standard
    error in every coefficient (post-processing of the releases so far): with noise s.d. s
    per coordinate of e_w, coefficient j's is s ||(P A^-1)_j||. The share of far records is
    a mean of indicators (sensitivity 1 / n, :func:`~dpfit.inference.whitened.release_mean`).
    """
    n, ledger = moment["n"], moment["ledger"]
    to_theta = P @ np.linalg.inv(Hh.shrunk())
    reach = np.linalg.norm(to_theta, axis=1)
    se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    noise = GAP_NOISE * float(np.min(se / reach))
    window = excess_window(noise, n=n, rho=rhos["gap"], relation=ledger.relation)
    sums = record_sum(
        excess_sums, [D, y], (P, estimate, clip, window, FAR * clip), width=D.shape[1] + 1
    )
    excess, noise_std = release_excess(
        sums[:-1], window=window, rho=rhos["gap"], label="gd/clipped-excess", **moment
    )
    far, far_std = release_mean(
        sums[-1:], cap=1.0, rho=rhos["far"], label="gd/far-records", **moment
    )
    return ClippingGap(
        gap=to_theta @ excess,
        cov=noise_std**2 * to_theta @ to_theta.T,
        reach=reach,
        far=far_records(far, far_std, n) * (FAR - 1.0) * clip / n,
        clip=clip,
        window=window,
    )


def linear_doubts(
    population: Any,
    Hh: NoisyMoment,
    sampling: NoisySandwich,
    gap: ClippingGap | None,
    terms: Terms,
    clip_grows: bool = False,
) -> list[Doubt]:
    """What the released quantities say against the interval (post-processing).

    A bread that cannot be told from its noise in half of the directions or more (the noise
    swamps the data) is a coverage reason: its fits cover 0.79 on the real files of
    docs/inference.md ("Warning triage"); a few unidentified directions (collinear terms,
    named) are an identification reason, with wide intervals. A noisy meat is a coverage
    reason only where the bread identifies every direction (:data:`HEAVY_TAILED_MEAT`).

    ``terms`` holds the whitener P (theta = P u), the released X'X/n of the design and the
    term names, to name the terms behind a direction the whitened bread cannot identify
    (:mod:`dpfit.inference.identification`). ``clip_grows``: the clip still grows with n and
    rho (below its cap, :func:`~dpfit.inference.clipping_bias.growing_clip`), so that more
    records or a larger rho shrink the clipping gap; otherwise they leave the gap as it is
    and only shrink the standard errors, and the help line says so by not offering them.
    """
    doubts = []
    weak = unidentified_directions(Hh, BREAD_Z)
    if weak.shape[1]:
        doubts.append(
            Doubt(
                unidentified_reason(
                    terms.P @ weak,  # in the design's coordinates: X P u = Z u
                    column_scale(terms.xtx),
                    terms.names,
                    "the released Huber Hessian, X'X/n over the records whose gradient is not "
                    "clipped in whitened coordinates,",
                    "three",
                ),
                ("more records", "a larger rho", "fewer or less collinear terms", "tighter bounds"),
                # noise everywhere forecasts misses; a few collinear directions do not
                COVERAGE if swamped(weak.shape[1], weak.shape[0]) else IDENTIFICATION,
            )
        )
    # where the noise swamps the bread the drift is its consequence: more steps do not help
    if population.untrusted.any() and not swamped(weak.shape[1], weak.shape[0]):
        worst = float(np.max(population.relative_drift))
        doubts.append(
            Doubt(
                "The released DP-GD iterates have not converged: the mean of the second half "
                f"differs from the first half's by up to {worst:.2g} interval standard "
                f"errors in {int(population.untrusted.sum())} coefficient(s) "
                "(covariance().drift), so the interval is off centre.",
                ("more steps or a larger step size", "fewer or less collinear terms"),
            )
        )
    if sampling.noisy_meat():
        doubts.append(NOISY_MEAT if weak.shape[1] else HEAVY_TAILED_MEAT)
    if gap is not None and (material := gap.material(population.bse)).any():
        worst = float(np.max(np.maximum(gap.relative(population.bse),
                                        gap.far_relative(population.bse))))  # fmt: skip
        doubts.append(
            Doubt(
                "Clipping moves the estimate away from least squares: the released gap "
                "between the clipped fit and the least-squares coefficient (or the least "
                f"effect of the records whose gradient is more than {FAR:g} x the clip) is "
                f"about {worst:.2g} standard errors or more in {int(material.sum())} "
                "coefficient(s) (covariance().gap; the far records' part is a lower bound), "
                "as with a skewed or heavy-tailed response.",
                ("more records", "a larger rho", HELPS[-1]) if clip_grows else (HELPS[-1],),
            )
        )
    return doubts


@dataclass(frozen=True)
class Terms:
    """What names the terms behind a direction of the whitened fit: the whitener P (theta
    = P u), the released X'X/n of the rescaled design and the term names."""

    P: np.ndarray
    xtx: NoisyMoment
    names: Sequence[str]
