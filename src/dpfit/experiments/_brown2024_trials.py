"""Trials of the Brown et al. (2024) reproductions (Section 4 of the paper).

Global defaults (Section 4): theta* uniform on the unit sphere, x ~ N(0, I_p) (or the
anisotropic design of App. B), xi ~ N(0, 1), p = 10, clip = 5 sqrt(p), rho = 0.015, eta = 0.2
(our choice), theta_0 = 0, no intercept. Choices the paper leaves open are listed in
docs/brown2024.md and recorded in each experiment's grid.

Seeds: figures measured on a fixed dataset (4, 5/6, 7, 10/11) draw it from
``data_seed`` in the params, and each trial's seed drives only the algorithm's noise.
Elsewhere, data and noise come from two independent streams of the trial seed.

Metrics are errors against theta* / theta_hat, coverage indicators and the fraction of
clipped gradients: evaluation quantities that read the data, i.e. **non-private**
simulation diagnostics, never inputs of a private computation.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..algorithms import dp_gd
from ..baselines import adassp, nonprivate_ols
from ..datasets import LinearDesign, draw_linear_design
from ..exceptions import LargeBudgetWarning, NonPrivateWarning
from ..inference import confidence_interval
from ..paper_only import adassp_paper
from ..theory import expected_interval_length, final_iterate_error, huber_target

__all__: list[str] = []

STEP_SIZE = 0.2
#: A zCDP budget so large that DP-GD's noise is negligible (std ~ 1e-6 of the rho = 0.05 run's):
#: the noise-free GD path with the same steps and clip, whose error is the (1 - eta)^T bias.
NOISELESS_RHO = 1e12
BURN_IN = 20
M = 10
#: Interval constructions as (metric prefix, construction, variant).
CI_METHODS = (
    ("bm", "batched-means", "experimental"),
    ("cp", "checkpoints", "experimental"),
    ("ir", "independent-runs", "experimental"),
    ("cp_formal", "checkpoints", "formal"),
    ("ir_formal", "independent-runs", "formal"),
)


def _streams(seed: int) -> tuple[np.random.Generator, int]:
    """A data generator and a noise seed, independent children of the trial seed."""
    data, noise = np.random.SeedSequence(seed).spawn(2)
    return np.random.default_rng(data), int(noise.generate_state(1)[0] >> np.uint64(1))


@functools.lru_cache(maxsize=8)
def fixed_dataset(n: int, p: int, design: str, data_seed: int) -> LinearDesign:
    """The dataset a fixed-data figure is measured on (cached per worker process)."""
    return draw_linear_design(n, p, design=design, rng=np.random.default_rng([2024, data_seed]))


@functools.lru_cache(maxsize=8)
def _targets(n: int, p: int, design: str, data_seed: int, clip: float) -> tuple:
    data = fixed_dataset(n, p, design, data_seed)
    return nonprivate_ols(data.X, data.y), huber_target(data.X, data.y, clip=clip)


def _clip(params: Mapping[str, Any]) -> float:
    """``clip`` if given, else ``clip_mult`` * sqrt(p) (default 5 sqrt(p))."""
    if "clip" in params:
        return float(params["clip"])
    return float(params.get("clip_mult", 5.0)) * math.sqrt(int(params["p"]))


def _run(data: LinearDesign, params: Mapping[str, Any], seed: int, **kwargs: Any):
    return dp_gd(
        data.X,
        data.y,
        rho=float(params["rho"]),
        clip=_clip(params),
        step_size=float(params.get("step_size", STEP_SIZE)),
        rng=seed,
        **{"steps": int(params["steps"]), **kwargs},
    )


def _public_bounds(p: int, design: str) -> tuple[float, float]:
    """Public bounds for AdaSSP from the design's known scale s (Cov <= s I, ||theta*|| = 1).

    ||x|| <= sqrt(s p) + 4 sqrt(s) fails with probability < e^-8 per record (Gaussian
    concentration of the norm); |y| <= 5 sqrt(s + 1) is five standard deviations.
    """
    s = 1.0 if design == "isotropic" else 2.0
    return math.sqrt(s * p) + 4.0 * math.sqrt(s), 5.0 * math.sqrt(s + 1.0)


def error_vs_dimension(params: Mapping[str, Any], seed: int) -> dict[str, float]:
    """Figs. 1/9: n = 100 p; DP-GD (final iterate), OLS and AdaSSP, errors against theta*."""
    p = int(params["p"])
    design = str(params["design"])
    gen, noise_seed = _streams(seed)
    data = draw_linear_design(int(params["n_per_p"]) * p, p, design=design, rng=gen)
    traj = _run(data, params, noise_seed)
    with warnings.catch_warnings():  # the same GD without noise: its error is the bias alone
        warnings.simplefilter("ignore", LargeBudgetWarning)
        noiseless = _run(data, {**params, "rho": NOISELESS_RHO}, noise_seed)
    theta_hat = nonprivate_ols(data.X, data.y).params
    rho = float(params["rho"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NonPrivateWarning)
        paper = adassp_paper(data.X, data.y, rho=rho, allow_nonprivate=True, rng=noise_seed + 1)
    x_bound, y_bound = _public_bounds(p, design)
    public = adassp(data.X, data.y, rho=rho, x_bound=x_bound, y_bound=y_bound, rng=noise_seed + 2)

    def err(theta: np.ndarray) -> float:
        return float(np.linalg.norm(theta - data.theta_star))

    return {
        "err_dpgd": err(traj.estimate),
        "err_dpgd_vs_ols": float(np.linalg.norm(traj.estimate - theta_hat)),
        "err_dpgd_noise": float(np.linalg.norm(traj.estimate - noiseless.estimate)),
        "err_gd_vs_ols": float(np.linalg.norm(noiseless.estimate - theta_hat)),
        "err_ols": err(theta_hat),
        "err_adassp": err(paper.estimate),
        "err_adassp_public": err(public.estimate),
        "fraction_clipped": traj.diagnostics["fraction_clipped"],
    }


def cost_of_privacy(params: Mapping[str, Any], seed: int) -> dict[str, float]:
    """Figs. 2/8: privacy error ||theta_T - theta_hat||, sampling error ||theta_hat - theta*||.

    ``privacy_error_pred`` is the exact root-mean-square privacy error of the unclipped final
    iterate on this dataset (:func:`~dpfit.theory.final_iterate_error`): the (1 - eta)^T bias
    floor plus the stationary noise, which falls like 1/n.
    """
    gen, noise_seed = _streams(seed)
    data = draw_linear_design(int(params["n"]), int(params["p"]), rng=gen)
    traj = _run(data, params, noise_seed)
    theta_hat = nonprivate_ols(data.X, data.y).params
    privacy = float(np.linalg.norm(traj.estimate - theta_hat))
    sampling = float(np.linalg.norm(theta_hat - data.theta_star))
    predicted = final_iterate_error(
        data.X.T @ data.X / data.X.shape[0],
        step_size=float(params.get("step_size", STEP_SIZE)),
        noise_std=float(traj.config["noise_std"]),
        steps=int(params["steps"]),
        theta0=np.zeros(data.X.shape[1]),
        theta_hat=theta_hat,
    )
    return {
        "privacy_error": privacy,
        "privacy_error_pred": float(np.sqrt(predicted)),
        "sampling_error": sampling,
        "ratio": privacy / sampling,
        "fraction_clipped": traj.diagnostics["fraction_clipped"],
    }


def clipping_fraction(params: Mapping[str, Any], seed: int) -> dict[str, float]:
    """Fig. 3: the fraction of the T n per-example gradients clipped (n = 100 p)."""
    gen, noise_seed = _streams(seed)
    p = int(params["p"])
    data = draw_linear_design(int(params["n_per_p"]) * p, p, rng=gen)
    traj = _run(data, params, noise_seed)
    return {"fraction_clipped": traj.diagnostics["fraction_clipped"]}


def _fixed(params: Mapping[str, Any]) -> tuple[int, int, str, int]:
    return (
        int(params["n"]),
        int(params["p"]),
        str(params.get("design", "isotropic")),
        int(params["data_seed"]),
    )


def bias_variance(params: Mapping[str, Any], seed: int) -> dict[str, float]:
    """Figs. 4/7: one DP-GD run on the fixed dataset; theta_T - theta_hat per coordinate."""
    key = _fixed(params)
    data = fixed_dataset(*key)
    traj = _run(data, params, seed)
    theta_hat, theta_hub = _targets(*key, _clip(params))
    dev = traj.estimate - theta_hat.params
    out = {f"dev_{j}": float(d) for j, d in enumerate(dev)}
    out["error"] = float(np.linalg.norm(dev))
    out["error_vs_huber"] = float(np.linalg.norm(traj.estimate - theta_hub))
    out["fraction_clipped"] = traj.diagnostics["fraction_clipped"]
    return out


def intervals(params: Mapping[str, Any], seed: int) -> dict[str, float]:
    """Figs. 5/6 and 10/11: one algorithm run of each construction at a total step count.

    Batched means and checkpoints share one run of ``total`` steps; independent runs are
    m runs of total / m steps (NaN metrics when total / m <= burn-in, where the paper omits
    them). Every run is calibrated to its own ``total`` releases. Coverage is of theta_hat
    (the paper's target) and of the Huber minimiser (the target under clipping, Section 2.5).
    """
    key = _fixed(params)
    data = fixed_dataset(*key)
    clip, total, p = _clip(params), int(params["total"]), key[1]
    theta_hat, theta_hub = _targets(*key, clip)
    single = _run(data, {**params, "steps": total}, seed)
    runs = None
    if total // M > BURN_IN:
        runs = _run(data, {**params, "steps": total // M}, seed + 1, runs=M)
    out: dict[str, float] = {"fraction_clipped": single.diagnostics["fraction_clipped"]}
    for prefix, construction, variant in CI_METHODS:
        traj = runs if construction == "independent-runs" else single
        if traj is None:
            lower = upper = np.full(p, np.nan)
        else:
            _, lower, upper = confidence_interval(traj, construction, m=M, variant=variant)
        for j in range(p):
            out[f"{prefix}_cover_{j}"] = _covers(lower[j], upper[j], theta_hat.params[j])
            out[f"{prefix}_len_{j}"] = float(upper[j] - lower[j])
        if variant == "experimental":
            for j in range(p):
                out[f"{prefix}_hub_{j}"] = _covers(lower[j], upper[j], theta_hub[j])
    out.update(_predicted_lengths(data, single.config["noise_std"], total))
    if runs is not None:
        out["ir_pred_len"] = _predicted_length(data, runs.config["noise_std"], total // M - BURN_IN)
    ols_ci = theta_hat.conf_int(0.05)
    out["ols_len"] = float(np.mean(ols_ci[:, 1] - ols_ci[:, 0]))
    return out


def _covers(lower: float, upper: float, target: float) -> float:
    if np.isnan(lower):
        return math.nan
    return float(lower <= target <= upper)


def _predicted_length(data: LinearDesign, noise_std: float, length: int) -> float:
    """Lemma 2.3's predicted mean length over coordinates on this dataset's Sigma (stationary)."""
    Sigma = data.X.T @ data.X / data.X.shape[0]
    law = {"step_size": STEP_SIZE, "noise_std": noise_std, "m": M, "length": length}
    return float(np.mean(expected_interval_length(Sigma, **law)))


def _predicted_lengths(data: LinearDesign, noise_std: float, total: int) -> dict[str, float]:
    """Predicted lengths of the experimental batched means and checkpoints."""
    return {
        "bm_pred_len": _predicted_length(data, noise_std, (total - BURN_IN) // M),
        "cp_pred_len": _predicted_length(data, noise_std, 1),
    }
