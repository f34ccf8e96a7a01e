"""How far the noisy descent's iterates spread on the linear predictor's scale, and the step
that keeps them close.

Noisy gradient descent on a loss that is not quadratic is not centred on its minimiser: its
iterates theta_t = theta_hat + delta_t spread around the fit, and the mean of the gradient
over that spread is not the gradient at the mean. The fit corrects the shift to second order
(:func:`iterate_spread`), which holds while the spread of the linear
predictor, c0 = (1/n) sum_i d_i' S d_i (S the covariance of the iterates), is small against
the curvature scale of the link (about 1 for logit and log). The spread grows with the step
size: in coordinates u = P^-1 theta whitened by the released P, where the Fisher information
at the start is w0 I, a step of size eta is the autoregression
u <- u - eta (u - u_hat) - (eta / w0) P' xi with xi ~ N(0, sigma^2 I), whose stationary
covariance is eta / (2 - eta) sigma^2 P'P / w0^2, so

    c0(eta) ~ eta / (2 - eta) * sigma^2 tr(P'P) / w0^2,

while the covariance of the iterates' *average* over T steps, sigma^2 P'P / (w0^2 T), does not
depend on eta. With public bounds much wider than the data, X'X/n has eigenvalues far below
its bound's, tr(P'P) is large, and at the default eta = 0.5 the predictor spreads by several
units: the average of the iterates is then biased by many standard errors (measured: c0 ~ 6
at 1000 steps with bounds 10x the data's range, 0.6 at eta = 0.1, 0.14 at eta = 0.03), and
more steps make it worse, since sigma^2 grows with the steps at a fixed rho.

:func:`spread_step` therefore lowers the step, from released quantities only, until the
forecast spread is at most :data:`SPREAD`, but not below the step at which every batch of the
interval still spans :data:`MIXING` autocorrelation times of the iterates (1 / eta steps;
Brown et al. 2024's batch means need batches long against it). :func:`iterate_spread` is the
spread the iterates actually had (post-processing), which the fit's warning reads.
"""

from __future__ import annotations

import numpy as np

__all__ = ["MIXING", "SPREAD", "iterate_spread", "spread_step"]

#: The forecast spread of the linear predictor (its variance over the iterates, averaged over
#: the records) the step aims at: well inside the range where the second-order shift holds.
SPREAD = 0.25
#: Each of the m batches after the burn-in spans at least this many autocorrelation times
#: (1 / eta steps) of the iterates, so that the batch means are close to independent.
MIXING = 4.0


def spread_step(
    step_size: float, *, noise_std: float, P: np.ndarray, weight: float, steps: int,
    burn_in: int, m: int, per_unit: float = 1.0,
) -> float:  # fmt: skip
    """The step of the descent: ``step_size``, lowered so that the forecast spread (module
    docstring) is at most :data:`SPREAD`, and never below the mixing floor (nor above
    ``step_size``). Public: ``noise_std`` is the gradient release's, ``P`` the released
    whitener, ``weight`` the Fisher weight w0 at the released mean and ``per_unit`` the
    released mean number of rows per privacy unit (1 without a unit: with one, the sums
    are per unit, and tr(P'P) measures a unit's summed spread, ``per_unit`` rows')."""
    base = noise_std**2 * float(np.sum(P * P)) / weight**2 / per_unit  # per unit of eta/(2-eta)
    target = 2.0 * SPREAD / (base + SPREAD)  # eta / (2 - eta) * base = SPREAD
    floor = MIXING * m / max(steps - burn_in, 1)
    return float(min(step_size, max(target, floor)))


def iterate_spread(iterates: np.ndarray, P: np.ndarray, burn_in: int) -> float:
    """c0 = tr(S (P P')^-1), the variance of the linear predictor over the iterates after the
    burn-in averaged over the records (P' X'X P / n is about I, so X'X/n ~ (P P')^-1; the
    released X'X/n itself can be noisier than its small eigenvalues). With a privacy unit
    the sums are per unit, and the fit divides this by the mean number of rows per unit.

    It sets the fit's second-order shift: with iterates theta_hat + delta_t of covariance S,
    the stationary condition E[grad(theta_hat + delta)] = 0 gives, for a canonical link
    (gradient (1/n) sum (mu_i - y_i) d_i),

        E[delta] = -(1/2) H^-1 (1/n) sum_i mu''(eta_i) (d_i' S d_i) d_i
                 ~ -(c0 / 2) H^-1 (1/n) sum_i mu''(eta_i) d_i.

    For the log link mu'' = mu, so with an intercept H^-1 (1/n) sum mu_i d_i = e_1 and the
    estimate is shifted by c0 / 2 in the intercept; for the logit link
    (1/n) sum mu''_i d_i is part of the margins release. (At n = 2000, rho = 0.5 a Poisson
    intercept's batch means sit 1.1 standard errors low without the shift.)"""
    kept = np.asarray(iterates[burn_in:], dtype=np.float64)
    if kept.shape[0] < 2:
        return 0.0
    whitened = np.linalg.solve(P, kept.T)  # u_t = P^-1 theta_t
    return float(np.trace(np.atleast_2d(np.cov(whitened))))
