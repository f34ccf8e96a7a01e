"""Public schedules of the KL algorithms (Menart et al. 2024), privacy recalibrated.

Every quantity here is a function of public inputs only: n, the dimension d, rho, the KL
parameters (gamma, kappa), the loss constants (L0 Lipschitz, L1 smooth, L1w weakly convex),
the public loss bound F0 >= F(w0) - F* and the failure probability beta (which affects only
utility thresholds, never privacy). Noise scales are derived from the budget and the
sensitivity with :func:`dpfit.mechanisms.noise_std_for_rho`, never copied from the paper,
whose constants are off by a factor 2-4 under replace-one (Lemma 8; docs/menart2024.md,
Departures).

Presets (docs/menart2024.md, Departures): ``"theory"`` keeps the paper's constants (c_K = 64 and the
paper-style floor 16 (a' + b') gamma L0 sqrt(K d ln(1/beta')) / (n sqrt rho), with a', b' the
recalibrated noise multipliers); ``"practical"`` uses c_K = 4 and the Laurent-Massart floor gamma z
s_tot / (1 - thr_frac), z = sqrt(d) + sqrt(2 ln(1/beta')). c_K < 64 is heuristic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._validation import check_int, check_option, check_positive, check_real
from ..mechanisms import noise_std_for_rho, rho_within
from ..privacy import Relation, mean_sensitivity, parse_relation, split
from .kl_adaptive import AdaptiveGDParams, adaptive_gd_params

__all__ = [
    "PRESETS",
    "AdaptiveGDParams",
    "KLPreset",
    "ProximalSchedule",
    "SpiderSchedule",
    "adaptive_gd_params",
    "proximal_schedule",
    "spider_schedule",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class KLPreset:
    """Constants of KL-Spider's schedule (none of them affects privacy)."""

    c_K: float  # noqa: N815 - the paper's symbol
    step_frac: float = 0.25
    thr_frac: float = 0.875
    floor: str = "paper"


PRESETS = {
    "theory": KLPreset(c_K=64.0, floor="paper"),
    "practical": KLPreset(c_K=4.0, floor="laurent-massart"),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class SpiderSchedule:
    """The data-independent schedule of calibrated KL-Spider (Alg. 1; docs/menart2024.md).

    Per-phase arrays have length K: ``targets`` Phi_k, ``steps`` T_k (at most T_k normalised
    steps and T_k - 1 difference queries), ``step_lengths`` s_k, ``thresholds``,
    ``difference_noise`` sigma_k (NaN where no difference can be queried). The anchors have
    noise ``anchor_noise`` and cost ``rho_anchor / K`` each; the differences of phase k cost
    ``rho_difference / (K' (T_k - 1))`` each, so the worst-case total is exactly rho (less
    only in the corner case kappa < 2 with every T_k = 1, where the differences' share is
    unused).
    ``radius`` is B_det = sum_k T_k s_k, the deterministic ball around w0 that holds every
    iterate. ``is_nontrivial`` is False when the target floor reaches F0 (nothing to do).
    """

    n: int
    dim: int
    rho: float
    relation: Relation
    loss_bound: float
    K: int
    fail_prob_step: float
    floor: float
    is_nontrivial: bool
    anchor_noise: float
    rho_anchor: float
    rho_difference: float
    targets: np.ndarray
    steps: np.ndarray
    step_lengths: np.ndarray
    thresholds: np.ndarray
    difference_noise: np.ndarray

    @property
    def radius(self) -> float:
        """B_det = sum_k T_k s_k: every iterate lies within it of w0 (exact, deterministic)."""
        return float(np.sum(self.steps * self.step_lengths))

    @property
    def max_steps(self) -> int:
        """Largest possible number of normalised steps, sum_k T_k."""
        return int(np.sum(self.steps))


def _kl_inputs(n, dim, rho, gamma, lipschitz, loss_bound, fail_prob, relation):
    return (
        check_int(n, "n", low=1),
        check_int(dim, "dim", low=1),
        check_positive(rho, "rho"),
        check_positive(gamma, "gamma"),
        check_positive(lipschitz, "lipschitz"),
        check_positive(loss_bound, "loss_bound"),
        check_real(fail_prob, "fail_prob", low=0.0, high=1.0),
        parse_relation(relation),
    )


def _log_effective(n, dim, rho, gamma, lipschitz, log_F0, kappa) -> float:
    """G = ln(F0) + kappa ln(n sqrt(rho) / (gamma L0 sqrt d)); G <= 0: already at target."""
    return log_F0 + kappa * math.log(n * math.sqrt(rho) / (gamma * lipschitz * math.sqrt(dim)))


def _check_length(count: float, max_steps: int, what: str, kappa: float) -> None:
    if not count <= max_steps:
        raise ValueError(
            f"schedule too long: {what} would exceed max_steps={max_steps} "
            f"(n sqrt(rho) is too large for kappa = {kappa:g}); raise max_steps or lower rho"
        )


def spider_schedule(
    *,
    n: int,
    dim: int,
    rho: float,
    gamma: float,
    kappa: float,
    lipschitz: float,
    smoothness: float,
    loss_bound: float,
    fail_prob: float = 0.05,
    preset: str = "practical",
    relation: Relation | str = Relation.REPLACE_ONE,
    anchor_share: float = 0.5,
    max_steps: int = 1_000_000,
) -> SpiderSchedule:
    """Schedule of KL-Spider (Menart et al. 2024, Alg. 1) with noise for exactly rho.

    Follows Alg. 1 with the corrections of docs/menart2024.md (Departures):
    F0 <- min(F0, (gamma L0)^kappa); a = F0^((kappa-2)/kappa) gamma^2 L1;
    c = 1 + 1/(c_K a); K = ceil((1 + c_K a) G); Phi_k = max(Phi_{k-1}/c, floor);
    T_k = ceil((F0/Phi_k)^((2-kappa)/kappa)); s_k = step_frac Phi_k^(1/kappa)/(gamma L1);
    threshold thr_frac Phi_k^(1/kappa)/gamma. All powers are taken in log space.

    Parameters
    ----------
    anchor_share : float, default=0.5
        Share of rho for the K anchors when difference queries can occur (kappa < 2); with
        kappa = 2 every T_k = 1 and the anchors get all of rho.
    max_steps : int, default=1_000_000
        Refuse schedules with more phases or steps than this (``ValueError``).

    Raises
    ------
    ValueError
        Invalid inputs, or a schedule longer than ``max_steps``.
    """
    n, dim, rho, gamma, L0, F0, beta, relation = _kl_inputs(
        n, dim, rho, gamma, lipschitz, loss_bound, fail_prob, relation
    )
    kappa = check_real(kappa, "kappa", low=1.0, high=2.0, low_open=False, high_open=False)
    L1 = check_positive(smoothness, "smoothness")
    anchor_share = check_real(anchor_share, "anchor_share", low=0.0, high=1.0)
    max_steps = check_int(max_steps, "max_steps", low=1)
    p = PRESETS[check_option(preset, "preset", PRESETS)]
    log_F0 = min(math.log(F0), kappa * math.log(gamma * L0))
    G = _log_effective(n, dim, rho, gamma, L0, log_F0, kappa)
    a = math.exp((kappa - 2.0) / kappa * log_F0) * gamma**2 * L1
    K = math.ceil((1.0 + p.c_K * a) * G) if G > 0 else 0
    _check_length(K, max_steps, "the number of phases K", kappa)
    differences = kappa < 2.0
    # exact shares (split): the anchors' and the differences' charges never sum above rho
    rho_A, rho_D = split(rho, [anchor_share, 1.0 - anchor_share]) if differences else (rho, 0.0)
    K_safe = max(K, 1)
    # beta' = beta / (2 * bound on total steps) (halved for T_k rounded up), log space.
    log_beta_step = math.log(beta / (2 * K_safe)) + (2.0 - kappa) * min(
        0.0,
        math.log(gamma * L0 * math.sqrt(K_safe * dim) / (n * math.sqrt(rho))) - log_F0 / kappa,
    )
    log_inv_beta = -log_beta_step
    sensitivity = mean_sensitivity(L0, n, relation)
    anchor_noise = noise_std_for_rho(sensitivity, rho_within(sensitivity, rho_A, K_safe))
    sf = relation.sum_factor
    a_mult = sf * math.sqrt(rho / (2.0 * rho_A))
    b_mult = sf * p.step_frac * math.sqrt(rho / (2.0 * rho_D)) if differences else 0.0
    if p.floor == "paper":
        log_floor = kappa * math.log(
            16.0
            * (a_mult + b_mult)
            * gamma
            * L0
            * math.sqrt(K_safe * dim * log_inv_beta)
            / (n * math.sqrt(rho))
        )
    else:  # Laurent-Massart: ||N(0, s^2 I_d)|| <= s z with z = sqrt d + sqrt(2 ln 1/beta')
        diff_total = (
            b_mult * math.exp(log_F0 / kappa) * math.sqrt(K_safe) / (gamma * n * math.sqrt(rho))
        )
        z = math.sqrt(dim) + math.sqrt(2.0 * log_inv_beta)
        log_floor = kappa * math.log(
            gamma * z * math.hypot(anchor_noise, diff_total) / (1.0 - p.thr_frac)
        )
    log_floor = min(log_floor, log_F0)
    nontrivial = K > 0 and log_floor < log_F0
    k = np.arange(1, K + 1) if nontrivial else np.arange(0)
    log_phi = np.maximum(log_F0 - k * math.log1p(1.0 / (p.c_K * a)), log_floor)
    exponent = (2.0 - kappa) / kappa * (log_F0 - log_phi)
    _check_length(float(np.sum(np.exp(np.minimum(exponent, 700.0)))), max_steps, "the steps", kappa)
    steps = np.ceil(np.exp(exponent) * (1.0 - 1e-12)).clip(min=1.0)  # ceil, robust to ulp noise
    root = np.exp(log_phi / kappa)
    step_lengths = p.step_frac * root / (gamma * L1)
    queries = steps - 1.0
    k_diff = int(np.count_nonzero(queries))
    difference_noise = np.full(len(k), np.nan)
    phase = split(rho_D, k_diff)[0] if k_diff else 0.0  # each phase's exact share of rho_D
    for i in np.flatnonzero(queries):
        sens = mean_sensitivity(L1 * step_lengths[i], n, relation)
        difference_noise[i] = noise_std_for_rho(sens, rho_within(sens, phase, int(queries[i])))
    return SpiderSchedule(
        n=n,
        dim=dim,
        rho=rho,
        relation=relation,
        loss_bound=math.exp(log_F0),
        K=K,
        fail_prob_step=math.exp(log_beta_step),
        floor=math.exp(log_floor),
        is_nontrivial=nontrivial,
        anchor_noise=anchor_noise,
        rho_anchor=rho_A,
        rho_difference=rho_D if k_diff else 0.0,
        targets=np.exp(log_phi),
        steps=steps.astype(np.int64),
        step_lengths=step_lengths,
        thresholds=p.thr_frac * root / gamma,
        difference_noise=difference_noise,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class ProximalSchedule:
    """Schedule of the private proximal point method (Alg. 2) with inner noisy GD (Alg. 4).

    ``T`` outer steps, each a rho/T-zCDP call of Alg. 4 with ``inner_steps`` = T_in
    (capped; ``inner_steps_uncapped`` is Thm 9's value) iterates w_1..w_{T_in}, i.e. T_in - 1
    gradient releases of noise ``inner_noise`` (rho/T spent exactly). The prox term is
    L1w ||w - w_{t-1}||^2; iterates are projected on the ball of radius ``prox_radius`` =
    L0/(2 L1w) around the centre, so every iterate lies within ``radius`` = T L0/(2 L1w) of w0.
    """

    n: int
    dim: int
    rho: float
    relation: Relation
    loss_bound: float
    weak_convexity: float
    T: int
    fail_prob_step: float
    inner_steps: int
    inner_steps_uncapped: int
    inner_noise: float
    prox_radius: float
    is_nontrivial: bool

    @property
    def radius(self) -> float:
        """T L0 / (2 L1w): deterministic bound on the distance of every iterate from w0."""
        return self.T * self.prox_radius


def proximal_schedule(
    *,
    n: int,
    dim: int,
    rho: float,
    gamma: float,
    kappa: float,
    lipschitz: float,
    loss_bound: float,
    weak_convexity: float | None = None,
    fail_prob: float = 0.05,
    relation: Relation | str = Relation.REPLACE_ONE,
    inner_cap: int = 200,
    max_steps: int = 1_000_000,
) -> ProximalSchedule:
    """Schedule of Alg. 2 + Alg. 4 (Thm 2), calibrated to exactly rho.

    T = ceil((1 + 32 F0^((kappa-2)/kappa) gamma^2 L1w) G), beta' = beta/T, inner budget rho/T,
    T_in = min(inner_cap, ceil(n^2 (rho/T) ln^2(2/beta') / d)) (>= 2), and the T_in - 1 inner
    releases cost (rho/T)/(T_in - 1) each (docs/menart2024.md, Departures; the paper's sigma
    spends < half).

    Parameters
    ----------
    weak_convexity : float, optional
        L1w > 0. ``None`` or 0 (a convex loss) selects dpfit's default
        F0^((2-kappa)/kappa) / (32 gamma^2), which makes T's multiplier 2.
    inner_cap : int, default=200
        Cap on T_in (privacy holds for any T_in: the noise uses the T_in actually run).
    """
    n, dim, rho, gamma, L0, F0, beta, relation = _kl_inputs(
        n, dim, rho, gamma, lipschitz, loss_bound, fail_prob, relation
    )
    kappa = check_real(kappa, "kappa", low=2.0, high=math.inf, low_open=False)
    inner_cap = check_int(inner_cap, "inner_cap", low=2)
    max_steps = check_int(max_steps, "max_steps", low=1)
    log_F0 = min(math.log(F0), kappa * math.log(gamma * L0))
    if weak_convexity is None or weak_convexity == 0:
        L1w = math.exp((2.0 - kappa) / kappa * log_F0) / (32.0 * gamma**2)
    else:
        L1w = check_positive(weak_convexity, "weak_convexity")
    G = _log_effective(n, dim, rho, gamma, L0, log_F0, kappa)
    mult = 1.0 + 32.0 * math.exp((kappa - 2.0) / kappa * log_F0) * gamma**2 * L1w
    T = math.ceil(mult * G) if G > 0 else 0
    _check_length(T, max_steps, "the number of outer steps T", kappa)
    T_safe = max(T, 1)
    beta_step = beta / T_safe
    uncapped = n**2 * (rho / T_safe) * math.log(2.0 / beta_step) ** 2 / dim
    inner = int(max(2, min(inner_cap, math.ceil(uncapped))))
    sensitivity = mean_sensitivity(L0, n, relation)
    per_call = split(rho, T_safe)[0]  # T exact shares of rho, of inner - 1 releases each
    noise = noise_std_for_rho(sensitivity, rho_within(sensitivity, per_call, inner - 1))
    return ProximalSchedule(
        n=n,
        dim=dim,
        rho=rho,
        relation=relation,
        loss_bound=math.exp(log_F0),
        weak_convexity=L1w,
        T=T,
        fail_prob_step=beta_step,
        inner_steps=inner,
        inner_steps_uncapped=int(min(math.ceil(uncapped), 2**62)),
        inner_noise=noise,
        prox_radius=L0 / (2.0 * L1w),
        is_nontrivial=T > 0,
    )
