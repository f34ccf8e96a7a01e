"""Choosing T, step sizes, clips and noise of DP-2S-GD from public quantities (Thm 3.1, eqs. 3-8).

Two criteria pick the number of iterations T:

``"paper"``
    Theorem 3.1's eq. 7 with unit constants: minimise kappa^{T/2} + A sqrt(T),
    A = sqrt(p)(sqrt q + sqrt tau)^3 / (n sqrt(rmin)), over T <= Tmax (Remark 3.7). Its
    constants are so pessimistic that it often returns T = 1.
``"linearised"`` (default; ours, not the paper's)
    The mean squared error of the linearised iteration around (Theta_hat, beta_hat):

        E(T)^2 = B^2 kappa^T + p alpha lambda2^2 / (h_lo (2 - alpha h_lo))
                 + B^2 (zz_hi / h_lo) q p eta lambda1^2 / (zz_lo (2 - eta zz_lo)),

    with lambda_k = lambda_k(T) the calibrated noise std (proportional to sqrt(T)) and B a
    public bound on ||beta_hat||. The second term is the stationary variance of
    beta <- beta - alpha (H (beta - beta_hat) + nu) bounded with the smallest eigenvalue;
    the third propagates the stationary first-stage error through
    d beta ~ H^{-1} Theta^T S dTheta beta_hat (||H^{-1} Theta^T S|| <= sqrt(zz_hi / h_lo)).
    It ignores clipping bias, so it is a guide, not a bound.

Everything is a function of public inputs (no data is read), so tuning with it is free.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._validation import check_delta, check_int, check_option, check_positive
from ..mechanisms import noise_std_for_rho
from ..privacy import GaussianEntry, mean_sensitivity, zcdp_to_approx_dp
from .two_stage import (
    Spectra,
    _check_pair,
    contraction_rates,
    error_bound,
    heuristic_clip,
    iteration_regimes,
    step_sizes,
)

__all__ = ["CRITERIA", "TwoStageRecommendation", "recommend_hyperparameters"]

CRITERIA = ("linearised", "paper")


@dataclass(frozen=True, slots=True, kw_only=True)
class TwoStageRecommendation:
    """Hyperparameters of :func:`~dpfit.algorithms.two_stage.dp_two_stage_gd`.

    ``predicted_error`` is the chosen criterion at ``steps`` (heuristic); ``regimes`` holds T1,
    T2 and Tmax of Remark 3.7; ``rho`` is the zCDP cost with the chosen noise calibration and
    ``epsilon`` its CKS conversion at ``delta``.
    """

    steps: int
    step_size_theta: float
    step_size_beta: float
    clip_theta: float
    clip_beta: float
    noise_std_theta: float
    noise_std_beta: float
    kappa: float
    criterion: str
    predicted_error: float
    regimes: dict[str, float]
    rho: float
    epsilon: float
    delta: float

    def algorithm_kwargs(self) -> dict[str, float | int]:
        """Keyword arguments for ``dp_two_stage_gd`` (add the data, the budgets and rng)."""
        return {
            "steps": self.steps,
            "step_size_theta": self.step_size_theta,
            "step_size_beta": self.step_size_beta,
            "clip_theta": self.clip_theta,
            "clip_beta": self.clip_beta,
        }


def _stage_entries(
    clips: tuple[np.ndarray, np.ndarray],
    n: int,
    rhos: tuple[float, float],
    steps: np.ndarray,
    share: float,
) -> list[list[GaussianEntry]]:
    """The two stages' entries (count T) for each T in ``steps`` (entries derive rho)."""
    return [
        [
            GaussianEntry(
                label=label,
                sensitivity=mean_sensitivity(float(g), n),
                count=int(T),
                noise_std=noise_std_for_rho(mean_sensitivity(float(g), n), share * r / T),
            )
            for g, T in zip(clip, steps, strict=True)
        ]
        for label, clip, r in zip(("theta", "beta"), clips, rhos, strict=True)
    ]


def recommend_hyperparameters(
    n: int,
    p: int,
    q: int,
    *,
    rho_theta: float,
    rho_beta: float,
    spectra: Spectra,
    beta_norm: float = 1.0,
    criterion: str = "linearised",
    preset: str = "paper",
    tau: float = 5.0,
    max_steps: int = 200,
    clips: tuple[float, float] | None = None,
    noise_calibration: str = "exact",
    delta: float = 1e-5,
) -> TwoStageRecommendation:
    """Steps, step sizes, clips and noise std of DP-2S-GD from public quantities.

    Parameters
    ----------
    n, p, q : int
        Public sample size and dimensions (q >= p).
    rho_theta, rho_beta : float
        The stage budgets.
    spectra : Spectra
        Public bounds on eig(Z^T Z / n) and eig(H) (or :func:`.concentration_terms`).
    beta_norm : float, default=1
        Public bound B on ||beta_hat|| (used by the ``"linearised"`` criterion).
    criterion : {"linearised", "paper"}, default="linearised"
        How T is chosen (module docstring).
    preset : {"paper", "optimal", "max"}, default="paper"
        Step-size rule of :func:`.step_sizes`.
    tau : float, default=5
        Confidence parameter of the paper's bounds.
    max_steps : int, default=200
        Largest T considered.
    clips : (float, float), optional
        (gamma1, gamma2), e.g. from :func:`.bound_based_clips`; default :func:`.heuristic_clip`
        at each candidate T.
    noise_calibration : {"exact", "paper"}, default="exact"
        As in ``dp_two_stage_gd``.
    delta : float, default=1e-5
        delta of the reported (epsilon, delta).

    Returns
    -------
    TwoStageRecommendation

    Notes
    -----
    Privacy: a function of public inputs only; it reads no data, so using it costs nothing.

    Examples
    --------
    >>> rec = recommend_hyperparameters(2191, 1, 4, rho_theta=0.5, rho_beta=0.5,
    ...     spectra=Spectra(zz=(0.35, 1.75), h=(1.5, 2.0)))
    >>> round(rec.step_size_theta, 3), 5 <= rec.steps <= 50
    (0.571, True)
    """
    n, p, q = check_int(n, "n"), check_int(p, "p"), check_int(q, "q", low=p)
    r1, r2 = check_positive(rho_theta, "rho_theta"), check_positive(rho_beta, "rho_beta")
    if not isinstance(spectra, Spectra):
        raise TypeError(f"spectra must be a Spectra, got {type(spectra).__name__}")
    bound = check_positive(beta_norm, "beta_norm")
    criterion = check_option(criterion, "criterion", CRITERIA)
    max_steps = check_int(max_steps, "max_steps")
    calibration = check_option(noise_calibration, "noise_calibration", ("exact", "paper"))
    delta = check_delta(delta)
    eta, alpha = step_sizes(spectra, preset)
    k_theta, k_beta, kappa = contraction_rates(spectra, eta, alpha)
    if kappa >= 1.0:
        raise ValueError(f"the {preset!r} step sizes do not contract (kappa = {kappa:.3g})")
    regimes = iteration_regimes(n=n, p=p, q=q, rho_theta=r1, rho_beta=r2, kappa=kappa, tau=tau)
    cap = max_steps if criterion == "linearised" else max(1, min(max_steps, int(regimes["Tmax"])))
    grid = np.arange(1, cap + 1)
    if clips is None:
        g = np.array([heuristic_clip(n, q, int(T), tau=tau) for T in grid])
        clip_grid = (g, g)
    else:
        g1, g2 = _check_pair(clips, "clips")
        clip_grid = (np.full(cap, g1), np.full(cap, g2))
    share = 1.0 if calibration == "exact" else 0.5  # Prop. 3.1's lambda spends half
    theta_entries, beta_entries = _stage_entries(clip_grid, n, (r1, r2), grid, share)
    if criterion == "paper":
        terms = error_bound(
            grid,
            n=n,
            p=p,
            q=q,
            rho_theta=r1,
            rho_beta=r2,
            kappa_theta=k_theta,
            kappa_beta=k_beta,
            tau=tau,
        )
        score = terms["optimisation"] + terms["privacy"]
        predicted = terms["total"]
    else:
        (zlo, zhi), (hlo, _) = spectra.zz, spectra.h
        lam1 = np.array([e.noise_std for e in theta_entries])
        lam2 = np.array([e.noise_std for e in beta_entries])
        var_beta = p * alpha * lam2**2 / (hlo * (2.0 - alpha * hlo))
        var_theta = bound**2 * (zhi / hlo) * q * p * eta * lam1**2 / (zlo * (2.0 - eta * zlo))
        predicted = np.sqrt(bound**2 * kappa**grid + var_beta + var_theta)
        score = predicted
    best = int(np.argmin(score))
    e1, e2 = theta_entries[best], beta_entries[best]
    rho = math.fsum([e1.rho, e2.rho])
    return TwoStageRecommendation(
        steps=int(grid[best]),
        step_size_theta=eta,
        step_size_beta=alpha,
        clip_theta=float(clip_grid[0][best]),
        clip_beta=float(clip_grid[1][best]),
        noise_std_theta=e1.noise_std,
        noise_std_beta=e2.noise_std,
        kappa=kappa,
        criterion=criterion,
        predicted_error=float(predicted[best]),
        regimes=regimes,
        rho=rho,
        epsilon=zcdp_to_approx_dp(rho, delta),
        delta=delta,
    )
