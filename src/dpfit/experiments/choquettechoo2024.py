"""Choquette-Choo et al. (2024), "Correlated noise provably beats independent noise": Figs. 1-4.

* ``choquettechoo2024-fig4-epsilon``: Figure 4 with epsilon on the x-axis, data-free: the
  prefix-sum error of every calibrated mechanism (DP-SGD with and without amplification,
  TreeAgg with restarts, nu-DP-FTRL, the optimal BLT, the multi-epoch optimal factorisation
  ME, amplified banded MF with optimised bands) at equal privacy.

* ``choquettechoo2024-fig1``: 1-D mean estimation, DP-SGD vs the optimal beta* (Thm. 2.1),
  simulated stationary variance against the closed forms and Figure 1's exact ratio.
* ``choquettechoo2024-fig2``: linear regression, Noisy-SGD vs nu-Noisy-FTRL (nu = eta mu):
  the exact LTI formula, the Thm. C.15 upper bound, and LTI and random-design simulations,
  all swept over d, d_eff and eta, with fitted log-log slopes against the paper's
  (settings of docs/choquettechoo2024.md: G = 1, rho = 1/2, no label noise,
  theta_0 = theta*, T in mixing times 1/(eta lambda_min)).
* ``choquettechoo2024-fig4-linreg`` / ``-fig4-digits``: the offline substitutes of Section 4
  for Figure 4 (CIFAR-10 and StackOverflow need downloads): DP-SGD (no amplification) vs
  nu = 0 vs nu-DP-FTRL (nu by the data-free prefix-error rule) at equal (epsilon, 1e-5),
  20 epochs in a fixed order, clip 1, over a learning-rate grid with interior optima.
* ``choquettechoo2024-fig3``: the bound of Theorem 3.1 against the condition number for
  DP-SGD, nu-DP-FTRL and "Optimized", a second-order cone program solved with cvxpy and
  CLARABEL (the ``convex`` extra).
"""

from __future__ import annotations

import numpy as np

from . import _choquettechoo2024_claims as claims
from . import _choquettechoo2024_epsilon as epsilon_curve
from . import _choquettechoo2024_fig3 as fig3
from . import _choquettechoo2024_plots as plots
from . import _choquettechoo2024_trials as trials
from .registry import Claim, Experiment, docstring_claim, register

__all__ = ["EXPERIMENTS"]

PAPER = (
    "Choquette-Choo, Dvijotham, Pillutla, Ganesh, Steinke, Thakurta (2024), "
    "Correlated noise provably beats independent noise for differentially private learning"
)
_THEORY_PRIVACY = (
    "Noisy-FTRL theory simulation: the correlated noise is one Gaussian release charged at "
    "rho = 1/2 with per-step sensitivity 1 (the paper's zero-out convention, add/remove), added "
    "to unclipped dynamics; the simulated errors are non-private diagnostics. Seeded noise."
)


def _claim(name: str, evaluate, paper: str = "", deviation: bool = False) -> Claim:
    """A claim whose statement is its evaluator's docstring, with the paper's words beside it."""
    return docstring_claim(name, evaluate, paper=paper, deviation=deviation)


_FIG1_LEFT = (
    "Fig. 1 (left): DP-FTRL (beta*) is never worse than DP-SGD but is orders of magnitude "
    "better at eta -> 0 or eta -> 1 (caption)."
)
_FIG2_VALUES = (
    "Fig. 2 and Thm. C.15/C.18: the random-design risk lies between the LTI lower bound and "
    "the upper bound; nu-Noisy-FTRL far below Noisy-SGD."
)
_FIG4 = (
    "Fig. 4 (CIFAR-10, StackOverflow; not offline): nu-DP-FTRL outperforms the efficient "
    "anytime mechanisms and DP-SGD, nearly equalling ME."
)
_FIG2_SLOPES = (
    "Fig. 2 (fitted slopes): Noisy-SGD vs d 1.00, vs d_eff 0.18, vs eta 1.27; nu-Noisy-FTRL "
    "vs d_eff 0.94, vs eta 2.03."
)


def _fig1() -> Experiment:
    def grid(etas, horizon, dim):
        return [
            {"eta": e, "mechanism": m, "horizon": horizon, "dim": dim}
            for e in etas
            for m in ("dp-sgd", "optimal")
        ]

    return Experiment(
        name="choquettechoo2024-fig1",
        paper=PAPER,
        figure="Figure 1",
        description=(
            "Mean estimation with z = E z (pure DP term): stationary E[delta^2] of noisy SGD with "
            "independent noise and with the optimal anti-correlated beta*_t = (-1)^t "
            "binom(1/2, t)(1-eta)^t, simulated (T = horizon / eta, 64 independent coordinates, "
            "second half) and exact; ratio 4 eta (2-eta) K(1-eta)^2 / pi^2."
        ),
        grid={
            "smoke": grid([0.1, 0.5], 100, 8),
            "quick": grid([0.01, 0.03, 0.1, 0.3, 0.5, 0.9, 1.5], 400, 64),
            "paper": grid([0.003, 0.01, 0.03, 0.1, 0.3, 0.5, 0.9, 1.2, 1.5, 1.9], 1000, 64),
        },
        replicates={"smoke": 1, "quick": 3, "paper": 5},
        trial=trials.mean_estimation,
        claims=[
            _claim(
                "closed-forms",
                claims.fig1_closed_forms,
                "Thm. 2.1: the stationary error of DP-SGD and of the optimal beta* in closed form.",
            ),
            _claim("ratio", claims.fig1_ratio, _FIG1_LEFT),
            _claim("no-gain-near-eta-1", claims.fig1_no_gain_near_one, _FIG1_LEFT, True),
        ],
        plot=plots.fig1,
        privacy=_THEORY_PRIVACY,
    )


def _fig2() -> Experiment:
    base = {"d": 128, "alpha": 1.0, "eta": 0.02}

    def points(kind, mixing_times, sweeps):
        return [
            {
                **base,
                sweep: v,
                "sweep": sweep,
                "kind": kind,
                "mechanism": m,
                "mixing_times": mixing_times,
            }
            for sweep, values in sweeps.items()
            for v in values
            for m in ("dp-sgd", "nu-dpftrl")
        ]

    alphas = [0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    formula = points(
        "formula",
        0,
        {
            "d": [16, 32, 64, 128, 256, 512],
            "alpha": alphas,
            "eta": [0.005, 0.01, 0.02, 0.05, 0.1],
        },
    )
    # Simulated sweeps: T = mixing_times / (eta lambda_min), so the cost grows with d and 1/eta;
    # d stops at 256 (at d = 512 the paper-scale noise matrix alone would take 1.3 GB).
    quick = {"d": [16, 32, 64, 128, 256], "alpha": alphas, "eta": [0.01, 0.02, 0.05, 0.1]}
    paper = {**quick, "eta": [0.005, 0.01, 0.02, 0.05, 0.1]}
    return Experiment(
        name="choquettechoo2024-fig2",
        paper=PAPER,
        figure="Figure 2",
        description=(
            "Linear regression, H = diag(k^-alpha), rho = 1/2: stationary excess risk "
            "(1/2)||theta - theta*||_H^2 of Noisy-SGD and nu-Noisy-FTRL (nu = eta lambda_min) "
            "over d, d_eff (alpha) and eta around d = 128, alpha = 1, eta = 0.02: the exact LTI "
            "formula, the Thm. C.15 upper bound, and LTI and random-design (x ~ N(0, H)) "
            "simulations on the same noise, T = 8 (quick) or 12 (paper) mixing times "
            "1/(eta lambda_min), the first 2 discarded; log-log slopes against the paper's."
        ),
        grid={
            "smoke": points("formula", 0, {"d": [16, 32], "alpha": [0.5, 1.0], "eta": [0.01, 0.02]})
            + points("sim", 4, {"d": [16]}),
            "quick": formula + points("sim", 8, quick),
            "paper": formula + points("sim", 12, paper),
        },
        replicates={"smoke": 1, "quick": 3, "paper": 4},
        trial=trials.linear_regression,
        claims=[
            _claim("lti-values", claims.fig2_lti_values, _FIG2_VALUES),
            _claim("random-design-bracket", claims.fig2_random_design, _FIG2_VALUES),
            _claim("formula-slopes-deviate", claims.fig2_formula_slopes, _FIG2_SLOPES, True),
            _claim("simulated-slopes", claims.fig2_simulated_slopes, _FIG2_SLOPES),
            _claim(
                "eta-slopes-below-paper", claims.fig2_eta_slopes_below_paper, _FIG2_SLOPES, True
            ),
        ],
        plot=plots.fig2,
        privacy=_THEORY_PRIVACY,
    )


_FIG4_CLAIMS = [
    _claim("nu-beats-dp-sgd", claims.nu_beats_dpsgd, _FIG4),
    _claim("damping-helps", claims.damping_helps, _FIG4),
    _claim("interior-optima", claims.no_edge_optimum, _FIG4),
]


def _fig4(dataset: str, lrs: list[float], smoke_lrs: list[float]) -> Experiment:
    def grid(epochs, rates, eps_values=(2.0, 8.0)):
        return [
            {
                "dataset": dataset,
                "data_seed": 0,
                "epochs": epochs,
                "batch_size": 50,
                "epsilon": e,
                "mechanism": m,
                "lr": lr,
            }
            for e in eps_values
            for m in ("dp-sgd", "nu=0", "nu-dpftrl")
            for lr in rates
        ]

    what = (
        "synthetic linear regression (n = 20,000, d = 200, x ~ N(0, diag(1/k)), label noise "
        "0.1; metric: population excess risk)"
        if dataset == "linreg"
        else "sklearn digits softmax regression (1500 / 297 split, pixels / 16 and a bias, "
        "650 parameters; metric: test accuracy)"
    )
    return Experiment(
        name=f"choquettechoo2024-fig4-{dataset}",
        paper=PAPER,
        figure="Figure 4 (offline substitute)",
        description=(
            f"Private training on {what}: DP-SGD vs nu = 0 vs nu-DP-FTRL at equal "
            "(epsilon, 1e-5), batch 50, 20 epochs in a fixed order, clip 1, plain SGD, over "
            "a learning-rate grid; the best learning rate per mechanism and epsilon."
        ),
        grid={
            "smoke": grid(1, smoke_lrs, (8.0,)),
            "quick": grid(20, lrs),
            "paper": grid(20, lrs),
        },
        replicates={"smoke": 1, "quick": 3, "paper": 5},
        trial=trials.private_training,
        claims=_FIG4_CLAIMS,
        plot=plots.fig4,
        privacy=(
            "dp_ftrl: one Gaussian release per run, (epsilon, 1e-5)-DP exactly (Gaussian-DP "
            "calibration) under replace-one with the multi-epoch (k = 20, b) sensitivity; "
            "no amplification. The learning rate is picked on test data (the paper's protocol; "
            "tuning is not private). Seeded noise."
        ),
    )


def _fig4_epsilon() -> Experiment:
    def grid(steps, epochs, per_epoch, batch, n, eps_values):
        return [
            {
                "steps": steps,
                "epochs": epochs,
                "per_epoch": per_epoch,
                "batch": batch,
                "n": n,
                "epsilon": e,
                "mechanism": m,
            }
            for e in eps_values
            for m in epsilon_curve.MECHANISMS
        ]

    eps_values = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
    return Experiment(
        name="choquettechoo2024-fig4-epsilon",
        paper=PAPER,
        figure="Figure 4, epsilon on the x-axis (data-free)",
        description=(
            "Expected RMSE of the T noisy prefix sums of the mean clipped gradient, per "
            "coordinate, at equal (epsilon, 1e-5) under add/remove, for DP-SGD with and "
            "without Poisson amplification, TreeAgg restarted every epoch, nu-DP-FTRL, the "
            "optimal BLT, the multi-epoch optimal dense factorisation (ME) and amplified "
            "banded MF (bands optimised, band width chosen per epsilon, cyclic Poisson), with "
            "CIFAR-10's batches (b = 100 of B = 500 from n = 50,000): k = 20 epochs "
            "(T = 2000) at paper scale, k = 10 (T = 1000) at quick scale."
        ),
        grid={
            "smoke": grid(100, 4, 25, 100, 2500, (0.5, 4.0)),
            "quick": grid(1000, 10, 100, 500, 50_000, eps_values),
            "paper": grid(2000, 20, 100, 500, 50_000, eps_values),
        },
        replicates={"smoke": 1, "quick": 1, "paper": 1},
        trial=epsilon_curve.privacy_utility,
        claims=[
            _claim("blt-matches-nu", epsilon_curve.blt_matches_nu),
            _claim("correlation-beats-independent", epsilon_curve.correlation_beats_independent),
            _claim("me-is-best-unamplified", epsilon_curve.me_is_best_unamplified),
            _claim("low-epsilon-crossover", epsilon_curve.low_epsilon_crossover),
            _claim(
                "amplified-banded-follows", epsilon_curve.amplified_banded_follows_the_better_side
            ),
        ],
        plot=epsilon_curve.plot,
        privacy=(
            "No data: each point is the expected error of a mechanism calibrated to "
            "(epsilon, 1e-5) under add/remove exactly as a private run would be (Gaussian-DP "
            "for one Gaussian release; PLD via dp_accounting for the amplified ones)."
        ),
    )


def _fig3() -> Experiment:
    def grid(kappas, points, t_max):
        return [{"kappa": float(k), "points": points, "t_max": t_max} for k in kappas]

    return Experiment(
        name="choquettechoo2024-fig3",
        paper=PAPER,
        figure="Figure 3",
        description=(
            "The bound (10) of Theorem 3.1 on the asymptotic suboptimality of a mu-strongly "
            "convex, L-smooth objective (L = G = 1, sigma_sgd = 0, eta = 1/L) against the "
            "condition number kappa = L/mu, for DP-SGD, nu-DP-FTRL (nu = eta mu) and "
            "'Optimized' (alternating the psi cone program and the closed-form B); Zames-Falb "
            "multiplier with T_max = 50 taps, frequencies on a grid geometric from eta mu / 100 "
            "to pi."
        ),
        grid={
            "smoke": grid([1.0, 10.0], 40, 10),
            "quick": grid(np.logspace(0, 3, 7), 200, 50),
            "paper": grid(np.logspace(0, 3, 13), 1000, 50),
        },
        replicates={"smoke": 1, "quick": 1, "paper": 1},
        trial=fig3.bound_vs_kappa,
        claims=[
            docstring_claim(
                "gap-grows",
                fig3.gap_grows,
                scales=("smoke", "quick", "paper"),
            ),
            docstring_claim(
                "optimized-grows-slower",
                fig3.optimized_grows_slower,
                scales=("smoke", "quick", "paper"),
            ),
            docstring_claim(
                "bound-is-valid",
                fig3.bound_is_valid,
                scales=("smoke", "quick", "paper"),
            ),
        ],
        plot=fig3.plot,
        privacy=(
            "No data and no noise: each point is the optimal value of a convex program, a "
            "bound for a mechanism calibrated to rho = 1 (every curve scales as 1/rho)."
        ),
    )


EXPERIMENTS = [
    register(_fig1()),
    register(_fig2()),
    register(_fig4("linreg", [0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0], [0.03, 0.3])),
    register(_fig4("digits", [0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0], [0.1, 1.0])),
    register(_fig4_epsilon()),
    register(_fig3()),
]
