"""The population interval of the private GLM, and what its releases say against it.

:func:`dpfit.algorithms.glm.dp_glm` releases, besides its iterates, the bread (the observed
Fisher information at the estimate) and the meat (the second moment of the scores) of the
sandwich in coordinates whitened by its released P. :func:`glm_population` builds the
covariance of the released estimate around the population coefficient theta* (the root of
the population score equation E[r(x, y; theta) x] = 0, what a maximum-likelihood fit
estimates, whether or not the model is correct) as the linear default does
(docs/inference.md, "The estimator and its covariance"):

    V = P A^-1 Omega A^-1 P' / n   sampling: the robust (HC0) sandwich of the MLE
      + S / m                      privacy: covariance of the m released batch means (eq. 12)

with the noise of the released A and Omega carried into the sampling part's degrees of
freedom (:func:`~dpfit.inference.whitened.noisy_sandwich`), and
Welch-Satterthwaite degrees of freedom for the sum. :func:`glm_doubts` turns the releases into the
reasons the interval may not cover (:mod:`dpfit.inference.doubts`): iterates that still
drift (an unconverged fit, or a coefficient running off to infinity under separation), a
bread or meat that its noise dominates, and too few events per coefficient. Everything here
is post-processing of releases.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._cluster import cluster_correction, few_units
from .clipping_bias import FAR, ClippingGap, far_records
from .diagnostics import iterate_drift
from .doubts import NOTE, Doubt
from .population import CovarianceEstimate, NoisyMoment, population_covariance
from .whitened import NoisySandwich, noisy_sandwich

__all__ = [
    "EVENTS_PER_COEFFICIENT",
    "GLMInference",
    "batch_inflation",
    "glm_doubts",
    "glm_population",
    "privacy_covariance",
    "spread_batch_means",
]

#: Fewer events (the rarer outcome's count, or the total count) per coefficient than this is
#: doubted: the maximum-likelihood fit's bias and the sandwich's own error are then no longer
#: small against the standard error (Peduzzi et al. 1996; King & Zeng 2001).
EVENTS_PER_COEFFICIENT = 10.0
#: The bread gives a CoverageWarning when its smallest de-spread eigenvalue is below the
#: identification level s sqrt(2) itself (:meth:`~dpfit.inference.population.NoisyMoment.
#: unidentified` at z = BREAD_WARN_Z), a note when it is only within (1 + BREAD_NOTE_Z) noise
#: s.d. of zero (the linear default's rule). On the glm-coverage quick grid (3,040 fits) the
#: note's rule, as a warning, fired on 14.4% of the fits in cells whose intervals cover;
#: the warning's rule fires on 4.7% there and on 18.5% of the fits in cells that miss
#: (docs/glm-coverage.md, "Warning triage").
BREAD_WARN_Z = 0.0
BREAD_NOTE_Z = 2.0
#: The meat gives a CoverageWarning when its noise leaves some coefficient's sampling variance
#: fewer than MEAT_WARN_DOF degrees of freedom, a note below MEAT_NOTE_DOF (the linear
#: default's rule): as a warning that fired on 6.6% of the grid's fits in covering cells,
#: MEAT_WARN_DOF on 1.6% there and on 8.6% of the fits in cells that miss.
MEAT_WARN_DOF = 3.0
MEAT_NOTE_DOF = 4.0
#: Separation is named when the drifting iterates grow in magnitude and the released slopes
#: already move the linear predictor by more than this across the public box (the rescaled
#: design's [-1, 1] per feature: sum_j |theta_j| over the slopes): e^8 ~ 3000-fold odds or
#: rates, beyond what a real effect of a bounded feature usually has, but what a separating
#: direction reaches within a few hundred steps.
SEPARATION_SPAN = 8.0
#: The iterates' spread of the linear predictor (:mod:`dpfit.algorithms._glm_spread`) above
#: which the second-order correction of their average no longer holds and the fit warns.
SPREAD_WARN = 1.0


@dataclass(frozen=True)
class GLMInference:
    """The population covariance of a GLM fit, the released moments it was built from, and
    (clipped families) the released gap between the clipped and the maximum-likelihood fit,
    in the design's coordinates."""

    population: CovarianceEstimate
    bread: NoisyMoment
    meat: NoisyMoment
    sampling: NoisySandwich
    gap: ClippingGap | None = None


def _description(traj: Any) -> str:
    c = traj.config
    return (
        "Population interval: estimate +/- t * sqrt(V_sampling + V_privacy). V_sampling is "
        "the robust sandwich H^-1 Omega H^-1 / n of the maximum-likelihood fit, with H the "
        "observed Fisher information at the released estimate and Omega the mean outer "
        "product of the per-record scores, both released privately in coordinates whitened "
        "by a private X'X/n; V_privacy is the covariance of the m = "
        f"{c['m']} batch means of the released DP-GD iterates after a burn-in of "
        f"{c['burn_in']} (Brown et al. 2024, eq. 12); Student-t with Welch-Satterthwaite "
        "degrees of freedom that include the noise of the released moments. It covers the "
        "population coefficient of the maximum-likelihood fit (the root of the population "
        "score equation), also when the link is misspecified."
        + (_CLUSTERED if c.get("clustered") else "")
    )


_CLUSTERED = (
    " With a privacy unit n is the number of units G and the sandwich is cluster-robust: "
    "Omega is the mean over units of the outer products of each unit's summed score, "
    "clipped per unit, and V_sampling is multiplied by G/(G-1), with at most G - 1 degrees "
    "of freedom (Cameron & Miller 2015)."
)


def batch_inflation(step: float, batch: int, m: int) -> float:
    """How much the covariance of the m batch means, over m, understates the variance of their
    average when consecutive iterates are correlated.

    In whitened coordinates the preconditioned descent with step eta is, to first order, the
    autoregression u_t = phi u_(t-1) + noise with phi = 1 - eta. The mean of x consecutive
    values of such a series has variance (long-run variance / x) (1 - L(x)) with
    L(x) = 2 phi (1 - phi^x) / (x (1 - phi^2)) (the finite-sum form of the AR(1) spectrum at
    zero; e.g. Brockwell & Davis 1991, section 7.1), so batches of length b understate the
    variance of the average of m b iterates by (1 - L(m b)) / (1 - L(b)): 1.07 at the default
    eta = 0.5 with batches of 18, 1.24 at eta = 0.23 (checked by simulation: 1.05 and 1.27).
    Public: a function of the step and the batch length only."""
    phi = min(max(1.0 - step, 0.0), 1.0 - 1e-9)
    if phi == 0.0:
        return 1.0

    def lost(x: int) -> float:
        return 2.0 * phi * (1.0 - phi**x) / (x * (1.0 - phi * phi))

    return (1.0 - lost(m * batch)) / max(1.0 - lost(batch), 1e-3)


def spread_batch_means(estimates: np.ndarray, config: dict[str, Any]) -> np.ndarray:
    """The m released batch means moved away from their mean by sqrt(:func:`batch_inflation`)
    at the descent's step (``config["step"]``): their mean is unchanged and their covariance
    over m is the variance of the average corrected for the iterates' autocorrelation.

    Both GLM intervals use it, so that the privacy part of the population interval and the
    privacy-only interval (``conf_int(target="sample")``, the Student-t interval of Brown et
    al. 2024, eq. 12, over these means) carry the same correction. Post-processing.
    """
    estimates = np.asarray(estimates, dtype=np.float64)
    m = estimates.shape[0]
    batch = (config["steps"] - config["burn_in"]) // m
    centre = estimates.mean(axis=0)
    return centre + math.sqrt(batch_inflation(config["step"], batch, m)) * (estimates - centre)


def privacy_covariance(estimates: np.ndarray, config: dict[str, Any]) -> np.ndarray:
    """S / m, the covariance of the m released batch means over m (Brown et al. 2024,
    eq. 12), corrected for autocorrelation (:func:`spread_batch_means`)."""
    spread = spread_batch_means(estimates, config)
    return np.atleast_2d(np.cov(spread, rowvar=False, ddof=1)) / spread.shape[0]


def sandwich_and_privacy(
    bread: NoisyMoment, meat: NoisyMoment, P: np.ndarray, n: int, estimates: np.ndarray,
    config: dict[str, Any],
) -> np.ndarray:  # fmt: skip
    """V = P A^-1 Omega A^-1 P' / n + S / m (module docstring), without degrees of freedom:
    the interval's covariance as the fit needs it before its last releases."""
    return noisy_sandwich(bread, meat, n, left=P).cov + privacy_covariance(estimates, config)


def glm_population(traj: Any) -> GLMInference:
    """The population covariance of a :func:`~dpfit.algorithms.glm.dp_glm` trajectory, in the
    design's coordinates (module docstring)."""
    c, r = traj.config, traj.releases
    bread = NoisyMoment(matrix=np.array(r["bread"]), noise_std=c["bread_noise_std"])
    meat = NoisyMoment(matrix=np.array(r["meat"]), noise_std=c["meat_noise_std"])
    P = np.array(r["whitener"])
    sampling = noisy_sandwich(bread, meat, c["n"], left=P)
    cov, dof = sampling.cov, sampling.dof
    if c.get("clustered"):  # the small-cluster correction (dpfit.inference._cluster)
        factor, cap = cluster_correction(c["n"])
        cov, dof = factor * cov, np.minimum(dof, cap)
    estimates = np.asarray(r["batch_means"])
    m = estimates.shape[0]
    privacy = privacy_covariance(estimates, c)
    population = population_covariance(
        cov,
        privacy,
        description=_description(traj),
        privacy_dof=m - 1.0,
        sampling_dof=dof,
        drift=iterate_drift(traj.iterates, burn_in=c["burn_in"]),
        covers="the population coefficients of the maximum-likelihood fit (sampling + "
        "privacy error)",
    )
    return GLMInference(
        population=population, bread=bread, meat=meat, sampling=sampling, gap=_gap(traj, bread)
    )


def _gap(traj: Any, bread: NoisyMoment) -> ClippingGap | None:
    """theta_ml - theta_C = H^-1 e_w to first order (H^-1 = P A^-1 P' from the released
    bread) and the far records' least effect, from the releases of a clipped family
    (:func:`dpfit.algorithms._glm_clipping.release_gap`); None for the logit link."""
    c, r = traj.config, traj.releases
    if "gap_excess" not in r:
        return None
    P = np.array(r["whitener"])
    to_theta = P @ np.linalg.inv(bread.shrunk()) @ P.T
    far = far_records(float(np.asarray(r["far"])[0]), c["far_noise_std"], c["n"])
    return ClippingGap(
        gap=to_theta @ np.asarray(r["gap_excess"]),
        cov=c["gap_noise_std"] ** 2 * to_theta @ to_theta.T,
        reach=np.linalg.norm(to_theta, axis=1),
        far=far * (FAR - 1.0) * c["clip"] / c["n"],
        clip=c["clip"],
        window=c["gap_window"],
    )


def events(traj: Any) -> float:
    """The released number of events: n times the rarer outcome's share (binomial) or the
    mean count (Poisson), from the released mean response (post-processing)."""
    c = traj.config
    mean = float(np.asarray(traj.releases["mean"])[0])
    share = min(mean, 1.0 - mean) if c["family"] == "binomial" else mean
    return max(share, 0.0) * c["n"] * c.get("unit_rows", 1.0)  # units: rows per unit


def glm_doubts(inference: GLMInference, traj: Any) -> list[Doubt]:
    """What the released quantities say against the interval (post-processing)."""
    population, doubts = inference.population, []
    if traj.config.get("clustered"):
        doubts.extend(d for d in (few_units(traj.config["n"], traj.config["k"]),) if d)
    if population.untrusted.any():
        worst = float(np.max(population.relative_drift))
        drift = population.drift.drift
        growing = population.untrusted & (drift * traj.estimate > 0)
        slopes = np.abs(traj.estimate[int(traj.config["intercept"]) :]).sum()
        if growing.any() and slopes > SEPARATION_SPAN:
            reason = (
                "The released iterates keep growing in magnitude in "
                f"{int(growing.sum())} coefficient(s) (a drift of up to {worst:.2g} interval "
                f"standard errors) and the slopes already span {slopes:.3g} on the linear "
                "predictor's scale across the public bounds: the data may be (quasi-)"
                "separated, so that the maximum-likelihood coefficient does not exist or is "
                "very large."
            )
            helps = ("more records", "fewer or less collinear terms")
        else:
            reason = (
                "The released DP-GD iterates have not converged: the mean of the second half "
                f"differs from the first half's by up to {worst:.2g} interval standard errors "
                f"in {int(population.untrusted.sum())} coefficient(s) (covariance().drift), "
                "so the interval is off centre."
            )
            helps = ("more steps or a larger step size", "fewer or less collinear terms")
        doubts.append(Doubt(reason, helps))
    elif inference.bread.unidentified(z=BREAD_NOTE_Z):
        doubts.append(_bread_doubt(warn=inference.bread.unidentified(z=BREAD_WARN_Z)))
    meat_dof = float(np.min(inference.sampling.meat_dof))
    if meat_dof < MEAT_NOTE_DOF:
        doubts.append(_meat_doubt(warn=meat_dof < MEAT_WARN_DOF))
    spread = float(traj.config.get("spread", 0.0))
    if spread > SPREAD_WARN:
        doubts.append(
            Doubt(
                f"The released iterates spread by {spread:.2g} on the linear predictor's scale "
                f"(its variance over the iterates, mean over the records; above {SPREAD_WARN:g} "
                "their average is no longer the maximum-likelihood fit): the privacy noise is "
                "large against the data's spread within the public bounds (bounds much wider "
                "than the data?), so the interval is off centre.",
                ("tighter bounds", "more records", "a larger rho"),
            )
        )
    gap = inference.gap
    if gap is not None and (material := gap.material(population.bse)).any():
        worst = float(np.max(np.maximum(gap.relative(population.bse),
                                        gap.far_relative(population.bse))))  # fmt: skip
        doubts.append(
            Doubt(
                "Clipping moves the estimate away from the maximum-likelihood fit: the "
                "released gap between the clipped fit and the unclipped one (or the least "
                f"effect of the records whose gradient is more than {FAR:g} x the clip) is up "
                f"to {worst:.2g} standard errors in {int(material.sum())} coefficient(s), as "
                "with counts far out in a long right tail.",
                ("more records", "a larger rho"),
            )
        )
    k, found = traj.config["k"], events(traj)
    if found < EVENTS_PER_COEFFICIENT * k:
        binomial = traj.config["family"] == "binomial"
        outcome = "the rarer outcome" if binomial else "counts"
        helps: tuple[str, ...] = ("more records", "fewer or less collinear terms")
        miscoded = ""
        if binomial and float(np.asarray(traj.releases["mean"])[0]) > 0.5:  # nearly all 1s
            miscoded = (
                " Nearly every record is an event: a response not coded 0/1 (1/2, or a "
                "continuous variable) is clipped into [0, 1] and reads so."
            )
            helps = ("a 0/1 response (recode it if it is not)", *helps)
        doubts.append(
            Doubt(
                f"There are about {found:.0f} events ({outcome}, released) for {k} "
                f"coefficients, fewer than {EVENTS_PER_COEFFICIENT:g} per coefficient: the "
                "maximum-likelihood fit is biased away from zero and its sandwich unreliable "
                f"at so few events.{miscoded}",
                helps,
            )
        )
    return doubts


def _bread_doubt(*, warn: bool) -> Doubt:
    """The released bread's smallest eigenvalue is near its noise: a CoverageWarning when it
    is below the identification level, else a note (:data:`BREAD_WARN_Z`)."""
    if warn:
        return Doubt(
            "The released Fisher information (whitened) has an eigenvalue below its noise "
            "level: some direction of the coefficients is not identified at this n and rho "
            "(or the data are nearly separated), and the sandwich may understate the sampling "
            "variance along it.",
            ("more records", "a larger rho", "fewer or less collinear terms"),
        )
    return Doubt(
        "The released Fisher information (whitened) has an eigenvalue within three noise "
        "s.d. of zero: some direction of the coefficients is weakly identified at this n and "
        "rho; its interval allows for the noise (such fits covered in the GLM coverage study).",
        ("more records", "a larger rho", "fewer or less collinear terms"),
        NOTE,
    )


def _meat_doubt(*, warn: bool) -> Doubt:
    """The released meat's noise leaves few degrees of freedom: a CoverageWarning below
    :data:`MEAT_WARN_DOF`, else a note."""
    if warn:
        return Doubt(
            "The released second moment of the scores (the sandwich's meat) is so noisy "
            f"that some coefficient's sampling variance has fewer than {MEAT_WARN_DOF:g} "
            "degrees of freedom: the interval's width is itself uncertain.",
            ("more records", "a larger rho"),
        )
    return Doubt(
        "The released second moment of the scores (the sandwich's meat) is noisy: some "
        f"coefficient's sampling variance has fewer than {MEAT_NOTE_DOF:g} degrees of freedom, "
        "and the interval's Student-t quantile allows for that.",
        ("more records", "a larger rho"),
        NOTE,
    )
