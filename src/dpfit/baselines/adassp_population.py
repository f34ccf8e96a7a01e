"""AdaSSP with a population interval: what ``DPLinearRegression(method="adassp")`` runs.

:func:`adassp_population` runs AdaSSP and the releases behind its population interval and
returns them as an :class:`AdasspTrajectory`; the estimator's method table
(:mod:`dpfit.models._adassp_population`) resolves its settings and builds the result. It
sits beside :func:`~dpfit.baselines.adassp`, whose releases it adds to.

AdaSSP (Wang 2018, Alg. 2; :func:`dpfit.baselines.adassp`) releases X'X and X'y with
Gaussian noise and solves a ridge system. Its error around the population coefficient theta*
has three parts (docs/inference.md, "AdaSSP: population intervals"):

    theta_ad - theta* = (theta_hat - theta*)       sampling: OLS on the (clipped) data
                      + (theta_ad - theta_hat)     privacy noise and the ridge's shrinkage

With the design the algorithm sees (public rescaling, ones column; ||d_i|| <= B = sqrt(k),
|y_i| <= 1), H = X'X / n, the released H~ = H + W / n (W symmetric, upper triangle
N(0, s_XX^2)), b~ = X'y / n + w / n (w ~ N(0, s_Xy^2 I)) and the ridge lambda, to first
order in the noise

    theta_ad - theta_hat = H^-1 (w / n - (W / n) theta_hat) - (lambda / n) H^-1 theta_ad,

whose covariance is H^-1 (s_b^2 I + s_H^2 (|theta|^2 I + theta theta' - diag(theta^2)))
H^-1 with s_b = s_Xy / n and s_H = s_XX / n (entry (i, l) of Cov(W theta) is
s^2 theta_i theta_l off the diagonal and s^2 |theta|^2 on it), and whose mean is the ridge's
bias -(lambda / n) H^-1 theta_ad. The sampling part is the heteroscedasticity-robust (HC0)
sandwich H^-1 Omega H^-1 / n with Omega = (1/n) sum e_i^2 d_i d_i'.

Releases, in this order (shares of ``rho``; s = ``moment_share``, default 0.2):

1. AdaSSP itself ([1 - s]: lambda_min, X'X and X'y, a third each).
2. A residual scale q~ = (1/n) sum min(e_i^2, 1) + noise at the AdaSSP estimate
   ([s / 8]; one term moves by at most 1, so the sensitivity is 1 / n;
   :func:`~dpfit.inference.whitened.release_mean`, as for the DP-GD default's clip).
3. The share f~ of responses at the public y bounds (|y_i| = 1 after rescaling: clipped)
   ([s / 16]; sensitivity 1 / n). AdaSSP fits the clipped responses, whose least-squares
   coefficient moves away from theta* when clipping is uneven (heavy tails,
   heteroscedasticity); the sandwich does not see that shift, so the fit warns when
   f~ sqrt(n) > 1 (:data:`CLIPPED_Y_LIMIT`).
4. Omega~ = (1/n) sum g_i g_i' of the whitened gradients g_i = clip_C(P d_i e_i), P =
   H~^-1/2 from the released X'X (post-processing), C = 6 sqrt(k) sqrt(q~)
   (:func:`~dpfit.inference.whitened.gradient_clip`), grown with n as far as the meat's
   noise allows (:func:`~dpfit.inference.clipping_bias.second_moment_clip`: a meat clipped
   below a heavy tail's gradients understates the sampling variance)
   ([13 s / 16]; :func:`~dpfit.inference.population.release_second_moment`, sensitivity
   sqrt(2) C^2 / n). Whitening makes ||P d_i|| about sqrt(k) for every design, so a clip
   relative to the residual scale rarely binds and the noise stays small against Omega.
   With 6 (not 3 or 4) residual scales the clip keeps the HC0 standard errors within 2% of
   the unclipped ones under t(3) and heteroscedastic errors (within 8% with 4; measured
   without noise at n = 2e5 on the designs of docs/inference.md by
   ``python -m dpfit.experiments._adassp_coverage --clip-check``).

Covariance around theta*: V = Hs^-1 Omega_d Hs^-1 / n + Hs^-1 N Hs^-1 + beta beta', with Hs
the released H~ de-spread and raised to one noise s.d. (:meth:`NoisyMoment.shrunk`, the
bread), Omega_d = P^-1 Os P^-1 with Os the released Omega~ given the same treatment (the
sandwich of the DP-GD default, :func:`~dpfit.inference.whitened.whitened_sandwich`), N the
noise law above at theta_ad, and beta =
(lambda / n) Hs^-1 theta_ad the ridge's estimated bias, added as a square so that the
normal interval keeps its level when the ridge binds (a root-mean-squared-error interval).
Student-t quantiles, with Satterthwaite degrees of freedom from the noise of the released
bread and meat (:func:`~dpfit.inference.whitened.noisy_sandwich`; the privacy part and the
ridge's bias are treated as known). Everything after the releases is post-processing, including the
checks (:mod:`dpfit.inference.doubts`): the ridge is not negligible against the released
smallest eigenvalue (a note), the bread is not identified (an ``IdentificationWarning``),
the released Omega's noise leaves fewer than four degrees of freedom (a note), or many
responses were clipped to the y bounds (a ``CoverageWarning``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import check_X_y, user_stacklevel
from ..algorithms.trajectory import Trajectory
from ..exceptions import SideConditionWarning
from ..inference.clipping_bias import MEAT_NOISE, second_moment_clip
from ..inference.doubts import IDENTIFICATION, NOTE, Doubt, warn_doubts
from ..inference.identification import (
    column_scale,
    describe_directions,
    unidentified_directions,
    unidentified_reason,
)
from ..inference.population import (
    CovarianceEstimate,
    NoisyMoment,
    release_second_moment,
    sandwich,
    welch_dof,
)
from ..inference.whitened import MEAT_CLIP_MULTIPLIER as CLIP_MULTIPLIER
from ..inference.whitened import (
    NOISY_MEAT,
    NoisySandwich,
    gradient_clip,
    inverse_sqrt,
    noisy_sandwich,
    release_mean,
)
from ..mechanisms import NoiseSource, clip_rows, make_noise_source
from ..privacy import PrivacyLedger, Relation, parse_relation, portions, public_n, split_rest
from ..privacy.ledger import prepare_ledger
from .adassp import adassp

__all__ = [
    "ADASSP_LABEL",
    "ADASSP_MOMENT_SHARE",
    "AdasspTrajectory",
    "adassp_population",
    "adassp_shares",
    "warn_unidentified",
]

ADASSP_LABEL = "AdaSSP (Wang 2018, Alg. 2), zCDP"
#: Default share of rho for the population interval's own releases (residual scale, Omega).
ADASSP_MOMENT_SHARE = 0.2
#: How that share is divided: an eighth for the residual scale behind the clip, a sixteenth
#: for the share of responses at the y bounds, the rest (13/16) for Omega.
PARTS = {"scale": 2, "clipped_y": 1, "omega": 13}
#: Warn when the released share f~ of clipped responses has f~ sqrt(n) above this. Chosen on
#: the designs of docs/inference.md ("AdaSSP: population intervals"): the two cells that
#: under-cover (f = 0.35% and 0.9% at n = 2e5) have f sqrt(n) = 1.6 and 4.0; the covering
#: cells 0.5 or less, except t(3) errors at n = 2e4 (1.3, a false alarm).
CLIPPED_Y_LIMIT = 1.0
#: Residuals enter the residual scale as min(e^2, RESIDUAL_CAP) (|y| <= 1 after rescaling).
RESIDUAL_CAP = 1.0
#: The ridge's bias counts as not negligible above this share of the released eigenvalue.
RIDGE_TOLERANCE = 0.1
#: A released smallest eigenvalue within this many noise s.d. of zero draws a warning.
UNIDENTIFIED_SDS = 3.0


def adassp_shares(rho: float, moment_share: float) -> dict[str, float]:
    """Every release's share of rho (``scale``, ``clipped_y``, ``omega``; AdaSSP the rest),
    their exact sum at most rho (:func:`dpfit.privacy.split_rest`)."""
    return split_rest(rho, portions(moment_share, PARTS), rest="adassp")


def warn_unidentified(traj: Trajectory, n: int, names: Sequence[str]) -> None:
    """Warn when AdaSSP's released smallest eigenvalue of X'X cannot be told from zero,
    naming the terms behind the released X'X's least eigenvector.

    The values are AdaSSP's own charged releases (Wang 2018, Alg. 2, lines 3-4), so the
    warning is post-processing. A column that is constant in the data (collinear with the
    intercept) makes the true value 0; the estimate along that direction is then set by the
    ridge.
    """
    lambda_min = float(traj.releases["lambda_min"][0])
    noise_std = traj.config["noise_std_lambda_min"]
    if lambda_min >= UNIDENTIFIED_SDS * noise_std:
        return
    H = _released_xtx(traj, n)
    least = np.linalg.eigh(H.matrix)[1][:, :1]
    warnings.warn(
        f"AdaSSP's private smallest eigenvalue of X'X (in the bounds' [-1, 1] units, intercept "
        f"included) is {lambda_min:.3g}, within {UNIDENTIFIED_SDS:g} noise s.d. "
        f"({noise_std:.3g}) of zero: at this n and rho the data do not identify some "
        f"direction of the coefficients ({describe_directions(least, column_scale(H), names)}"
        "), and the estimate along it is AdaSSP's ridge, not the data's; drop or pool terms, "
        "or spend more rho",
        SideConditionWarning,
        stacklevel=user_stacklevel(),
    )


def _released_xtx(traj: Any, n: int) -> NoisyMoment:
    """AdaSSP's released X'X as X'X/n with its noise s.d."""
    return NoisyMoment(matrix=traj.releases["xtx"] / n, noise_std=traj.config["noise_std_xtx"] / n)


@dataclass(frozen=True, kw_only=True)
class AdasspTrajectory(Trajectory):
    """AdaSSP's :class:`Trajectory` (its releases, ledger and noise stds) with the releases
    behind its population interval.

    Attributes
    ----------
    population : CovarianceEstimate
        The population covariance: sandwich, AdaSSP's noise law and the ridge's bias.
    clip : float
        The meat's clip on the whitened gradients (from the private residual scale).
    clipped_y : float
        The released share of responses at the public y bounds.
    checks : tuple of str
        Public messages about the released quantities (the ``CoverageWarning``'s reasons).
    """

    population: CovarianceEstimate
    clip: float
    clipped_y: float
    checks: tuple[str, ...] = ()


def adassp_population(
    X: Any,
    y: Any,
    *,
    rho: float,
    x_bound: float,
    moment_share: float = ADASSP_MOMENT_SHARE,
    terms: Sequence[str] | None = None,
    relation: Relation | str = "replace-one",
    n_public: int | None = None,
    ledger: PrivacyLedger | None = None,
    rng: NoiseSource | int | None = None,
) -> AdasspTrajectory:
    """AdaSSP and the releases behind its population covariance, in the design's units.

    ``X`` is the design AdaSSP sees (rows of norm at most ``x_bound``, clipped to it by
    AdaSSP), ``y`` the response in [-1, 1] (clipped to it); ``moment_share`` of ``rho`` buys
    the interval's releases (module docstring), the rest AdaSSP; ``terms`` names the
    columns in warnings.
    """
    relation = parse_relation(relation)
    ledger = prepare_ledger(ledger, relation, rho, name="adassp_population")
    source = make_noise_source(rng)
    D, y = check_X_y(X, y)
    n = public_n(D.shape[0], n_public, relation)
    names = terms or [f"x{j}" for j in range(D.shape[1])]
    share = moment_share
    rhos = adassp_shares(rho, share)
    traj = adassp(
        D,
        y,
        rho=rhos["adassp"],
        x_bound=x_bound,
        y_bound=1.0,  # the response was mapped into [-1, 1] by its public bounds
        relation=relation,
        n_public=n_public,
        ledger=ledger,
        rng=source,
    )
    theta = traj.estimate
    H = _released_xtx(traj, n)
    ridge = float(traj.releases["ridge"][0]) / n
    P = inverse_sqrt(H.psd())
    release = {"n": n, "ledger": ledger, "rng": source}
    with np.errstate(all="ignore"):
        residuals = y - D @ theta
        scale_sum = np.clip(residuals**2, 0.0, RESIDUAL_CAP).sum()
    q, q_std = release_mean(
        scale_sum,
        cap=RESIDUAL_CAP,
        rho=rhos["scale"],
        label="adassp/residual-scale",
        **release,
    )
    clip = gradient_clip(CLIP_MULTIPLIER, D.shape[1], q, q_std)
    scale = clip / (CLIP_MULTIPLIER * math.sqrt(D.shape[1]))
    clip = second_moment_clip(clip, scale, n=n, rho=rhos["omega"], noise=MEAT_NOISE)
    clipped_y, _ = release_mean(
        np.count_nonzero(np.abs(y) >= 1.0 - 1e-12),  # at the bound: clipped (public rule)
        cap=1.0,
        rho=rhos["clipped_y"],
        label="adassp/clipped-y",
        **release,
    )
    with np.errstate(all="ignore"):  # record arithmetic: only the clipped rows leave it
        gradients = clip_rows((D @ P) * residuals[:, None], clip)
    Omega = release_second_moment(
        gradients,
        bound=clip,
        rho=rhos["omega"],
        n=n,
        ledger=ledger,
        rng=source,
        label="adassp/omega",
    )
    sandwich_ = noisy_sandwich(H, Omega, n, right=np.linalg.inv(P))
    sampling = sandwich_.cov
    bread = H.shrunk()
    s_b = traj.config["noise_std_xty"] / n
    law = s_b**2 * np.eye(theta.size) + H.noise_std**2 * (
        (theta @ theta) * np.eye(theta.size) + np.outer(theta, theta) - np.diag(theta**2)
    )
    privacy = sandwich(bread, law, 1)
    bias = ridge * np.linalg.solve(bread, theta)
    parts = {"sampling": sampling, "privacy": privacy, "ridge bias": np.outer(bias, bias)}
    population = CovarianceEstimate(
        target="population",
        cov=sampling + privacy + parts["ridge bias"],
        dof=welch_dof([(sampling, sandwich_.dof), (privacy + parts["ridge bias"], math.inf)]),
        description=_description(share, clip),
        parts=parts,
        covers="the population least-squares coefficients of the data clipped to the public "
        "bounds (sampling + privacy error)",
    )
    doubts = _doubts(H, sandwich_, ridge, names)
    if clipped_y * math.sqrt(n) > CLIPPED_Y_LIMIT:
        doubts.append(
            Doubt(
                f"About {100 * clipped_y:.2g}% of the responses lie at the public y bounds "
                "(a private share): AdaSSP fits the responses clipped to them, whose "
                "least-squares coefficient differs from the population one when clipping is "
                "uneven (heavy tails, heteroscedastic errors), and at this n the shift can "
                "exceed the standard error. When the bounds are the response's own range (a "
                "0/1 outcome) nothing was clipped and this does not apply.",
                ("wider y bounds",),
            )
        )
    checks = warn_doubts(doubts)  # depend on released quantities only
    warn_unidentified(traj, n, names)
    return AdasspTrajectory(
        algorithm="adassp_population",
        iterates=traj.iterates,
        estimate=traj.estimate,
        ledger=ledger,
        config={**traj.config, "moment_share": moment_share},
        noise_backend=traj.noise_backend,
        seeded=traj.seeded,
        releases=traj.releases,
        diagnostics=traj.diagnostics,
        population=population,
        clip=clip,
        clipped_y=clipped_y,
        checks=tuple(checks),
    )


def _description(share: float, clip: float) -> str:
    return (
        "Population interval: estimate +/- z * sqrt(V_sampling + V_privacy + bias^2). "
        "V_sampling is the heteroscedasticity-robust sandwich H^-1 Omega H^-1 / n, with H "
        "AdaSSP's released X'X/n and Omega the mean of the per-record gradients' outer "
        f"products (whitened, clipped at {clip:.3g}), released with {100 * share:g}% of rho; "
        "V_privacy is the first-order law of AdaSSP's noise in X'X and X'y at the estimate, "
        "and bias is the estimated shrinkage of AdaSSP's ridge (zero when the ridge is 0); "
        "Student-t quantiles whose degrees of freedom carry the noise of the released "
        "bread and meat (docs/inference.md, 'AdaSSP: population intervals'). It covers "
        "the population least-squares coefficient of the data clipped to the public bounds."
    )


def _doubts(
    H: NoisyMoment, sampling: NoisySandwich, ridge: float, names: Sequence[str]
) -> list[Doubt]:
    """What the releases say against the interval (post-processing); ``names`` are the
    terms, to name those behind a direction H cannot identify."""
    doubts = []
    smallest = max(H.min_eigenvalue(), H.identified)
    if ridge > RIDGE_TOLERANCE * smallest:
        doubts.append(
            Doubt(
                f"AdaSSP's ridge ({ridge:.3g} on X'X/n in the bounds' units) is not "
                "negligible against the released smallest eigenvalue of X'X/n "
                f"({smallest:.3g}): the estimate is shrunk towards zero, and the interval adds "
                "that bias as a square, which makes it wide and conservative.",
                ("more records", "a larger rho"),
                NOTE,
            )
        )
    if H.unidentified():
        doubts.append(
            Doubt(
                unidentified_reason(unidentified_directions(H, 1.0), column_scale(H), names,
                                    "AdaSSP's released X'X/n", "two"),
                ("more records", "a larger rho", "fewer or less collinear terms", "tighter bounds"),
                IDENTIFICATION,
            )
        )
    if sampling.noisy_meat():
        doubts.append(NOISY_MEAT)
    return doubts
