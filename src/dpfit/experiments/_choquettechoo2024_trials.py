"""Trials of the Choquette-Choo et al. (2024) reproductions (docs/choquettechoo2024.md).

Every noise vector comes from the library's privacy path: a :func:`dpfit.noise.correlated_noise`
stream charged to a ledger (FFT mode: precomputed once, identical to the streaming modes up to
1e-12). The theory simulations (Figures 1 and 2) are Noisy-FTRL in the paper's convention:
per-step sensitivity G = 1 (zero-out, i.e. add/remove), rho = 1/2, no clipping and no label
noise (docs/choquettechoo2024.md), so they release the noise added to a zero query; their errors are
**non-private** simulation diagnostics. The offline substitutes of Figure 4 are real private
training runs (:func:`dpfit.algorithms.dp_ftrl`, replace-one, (epsilon, delta) met exactly).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from scipy import signal

from ..algorithms import dp_ftrl
from ..losses import FunctionLoss, SquaredLoss
from ..mechanisms import make_noise_source
from ..noise import calibrate, correlated_noise, dpsgd, nu_dpftrl, optimal_mean_estimation
from ..privacy import PrivacyLedger
from ..theory.ftrl import (
    lti_excess_risk,
    lti_upper_bound,
    mean_estimation_variance,
    power_law_eigenvalues,
)

__all__: list[str] = []

RHO = 0.5  # docs/choquettechoo2024.md: sigma_dp^2 = gamma^2 for rho = 1/2
DELTA = 1e-5


def _noise_matrix(mechanism, dim: int, seed: int) -> np.ndarray:
    """The (T, dim) correlated noise of ``mechanism`` at rho = 1/2 (G = 1, zero-out)."""
    cal = calibrate(mechanism, clip=1.0, batch_size=1, rho=RHO, relation="add-remove")
    stream = correlated_noise(
        mechanism,
        dim=dim,
        clip=1.0,
        batch_size=1,
        noise_std=cal.noise_std,
        ledger=PrivacyLedger(relation="add-remove"),
        rng=make_noise_source(seed),
        mode="fft",
        max_buffer_bytes=1 << 30,
    )
    zero = np.zeros(dim)
    return np.array([stream.privatize(zero) for _ in range(mechanism.steps)])


# ---------------------------------------------------------------- Figure 1: mean estimation


def mean_estimation(params: Mapping[str, Any], seed: int) -> dict[str, float]:
    """Stationary E[delta^2] of noisy SGD on 1-D mean estimation, simulated and exact.

    ``dim`` independent scalar problems share one run; T = ``horizon`` / eta steps, the first
    half discarded (docs/choquettechoo2024.md, stationarity).
    """
    eta, mech_name = float(params["eta"]), str(params["mechanism"])
    steps = math.ceil(float(params["horizon"]) / eta)
    if mech_name == "dp-sgd":
        mech = dpsgd(steps)
    else:
        mech = optimal_mean_estimation(eta, steps=steps)
    W = _noise_matrix(mech, int(params["dim"]), seed)
    delta = signal.lfilter([-eta], [1.0, -(1.0 - eta)], W, axis=0)  # delta_0 = 0
    simulated = float(np.mean(delta[steps // 2 :] ** 2))
    theory = mean_estimation_variance(eta, rho=RHO, mechanism=mech_name)
    return {"simulated": simulated, "theory": theory, "steps": float(steps)}


# ---------------------------------------------------------------- Figure 2: linear regression


def _spectrum(params: Mapping[str, Any]) -> np.ndarray:
    return power_law_eigenvalues(int(params["d"]), float(params["alpha"]))


def _nu(params: Mapping[str, Any], lam: np.ndarray) -> float | None:
    """nu = eta mu for nu-Noisy-FTRL (docs/choquettechoo2024.md), None for Noisy-SGD."""
    return float(params["eta"]) * float(lam.min()) if params["mechanism"] == "nu-dpftrl" else None


#: Burn-in of the Figure 2 simulations, in mixing times 1/(eta lambda_min): theta_0 = theta*,
#: so the slowest direction's variance is 1 - e^-4 of its stationary value after it, and its
#: deficit averaged over the window that follows (6 mixing times at quick scale) is e^-4 / 12,
#: 0.15 % (less in every faster direction).
BURN_IN = 2.0
_CHUNK = 8192  # rows of x drawn (and iterates kept) at a time in the random-design loop


def _lti_risk(W: np.ndarray, lam: np.ndarray, eta: float, burn: int) -> float:
    """LTI surrogate (x x^T replaced by H): one AR(1) filter per eigendirection, window mean."""
    total = 0.0
    for j, lj in enumerate(lam):
        delta = signal.lfilter([-eta], [1.0, -(1.0 - eta * lj)], W[:, j])[burn:]
        total += lj * float(delta @ delta)
    return float(0.5 * total / (W.shape[0] - burn))


def _random_design_risk(W: np.ndarray, lam: np.ndarray, eta: float, burn: int, seed: int) -> float:
    """x_t ~ N(0, H), no label noise: delta <- delta - eta (x x^T delta + w_t), window mean.

    The recursion is sequential in t (the multiplicative term x x^T delta), so it is one
    Python step per t; the x rows and the iterates are handled in chunks of ``_CHUNK``.
    """
    data = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
    root = np.sqrt(lam)
    steps = W.shape[0]
    d = np.zeros(lam.size)
    total = 0.0
    for s in range(0, steps, _CHUNK):
        X = data.standard_normal((min(_CHUNK, steps - s), lam.size)) * root
        kept = np.empty_like(X)
        for i, (x, w) in enumerate(zip(X, W[s : s + len(X)], strict=True)):
            d = d - (eta * float(x @ d)) * x - eta * w
            kept[i] = d
        tail = kept[max(burn - s, 0) :]
        total += float(np.sum((tail * tail) @ lam))
    return 0.5 * total / (steps - burn)


def _simulate_regression(params, lam, nu, seed: int) -> dict[str, float]:
    """LTI and random-design simulations on the same noise (common random numbers).

    T = ``mixing_times`` / (eta lambda_min) steps from theta_0 = theta*; the excess risk is
    averaged after a burn-in of ``BURN_IN`` mixing times (the slowest eigendirection, and
    for nu-Noisy-FTRL (nu = eta lambda_min) the memory of the noise, decay at that rate).
    """
    eta = float(params["eta"])
    mixing = 1.0 / (eta * float(lam.min()))
    steps = math.ceil(float(params["mixing_times"]) * mixing)
    burn = math.ceil(BURN_IN * mixing)
    mech = dpsgd(steps) if nu is None else nu_dpftrl(nu, steps=steps)
    W = _noise_matrix(mech, lam.size, seed)
    return {
        "lti_simulated": _lti_risk(W, lam, eta, burn),
        "random_simulated": _random_design_risk(W, lam, eta, burn, seed),
        "steps": float(steps),
    }


def linear_regression(params: Mapping[str, Any], seed: int) -> dict[str, float]:
    """Stationary excess risk (1/2)||theta - theta*||_H^2: LTI formula, bound, or simulations.

    ``kind``: ``"formula"`` (exact LTI value and Thm. C.15 bound) or ``"sim"`` (also the LTI
    and random-design simulations, :func:`_simulate_regression`).
    """
    lam = _spectrum(params)
    nu = _nu(params, lam)
    eta = float(params["eta"])
    out = {
        "lti_formula": lti_excess_risk(lam, eta, rho=RHO, nu=nu),
        "d_eff": float(lam.sum() / lam.max()),
    }
    if eta * 3 * lam.sum() < 1:
        out["upper_bound"] = lti_upper_bound(lam, eta, rho=RHO, nu=nu)
    if params["kind"] == "sim":
        out.update(_simulate_regression(params, lam, nu, seed))
    return out


# ---------------------------------------------------------------- Figure 4: offline substitutes


@functools.lru_cache(maxsize=2)
def synthetic_regression(data_seed: int, n: int = 20_000, d: int = 200):
    """x ~ N(0, diag(1/k)), theta* with unit H-norm, label noise 0.1 (docs/choquettechoo2024.md)."""
    rng = np.random.default_rng([2024, 4, data_seed])
    lam = 1.0 / np.arange(1, d + 1)
    theta = rng.standard_normal(d)
    theta /= math.sqrt(float(theta**2 @ lam))
    X = rng.standard_normal((n, d)) * np.sqrt(lam)
    y = X @ theta + 0.1 * rng.standard_normal(n)
    return X, y, theta, lam


@functools.lru_cache(maxsize=2)
def digits(data_seed: int):
    """sklearn digits: pixels / 16 (a public scaling) plus a bias column, 1500 / 297 split."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X = np.column_stack([X / 16.0, np.ones(len(X))])
    order = np.random.default_rng([2024, 44, data_seed]).permutation(len(X))
    tr, te = order[:1500], order[1500:]
    return X[tr], y[tr].astype(float), X[te], y[te].astype(int)


def _softmax_grads(theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    W = theta.reshape(X.shape[1], 10)
    Z = X @ W
    P = np.exp(Z - Z.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    P[np.arange(len(y)), y.astype(int)] -= 1.0
    return (X[:, :, None] * P[:, None, :]).reshape(len(y), -1)


SOFTMAX = FunctionLoss(grads=_softmax_grads, n_params=65 * 10, lipschitz=1.0)
SQUARED = SquaredLoss(x_bound=1.0, y_bound=1.0, radius=1.0)  # constants unused: clip = 1


def _mechanism_kwargs(name: str) -> dict[str, Any]:
    if name == "nu=0":
        return {"mechanism": "fichtenberger"}
    if name == "nu-dpftrl":
        return {"mechanism": "nu-dpftrl"}  # nu from select_nu(T, k, b): data-free
    return {"mechanism": "dp-sgd"}


def private_training(params: Mapping[str, Any], seed: int) -> dict[str, float]:
    """One private training run of Section 4 at (epsilon, 1e-5) and one learning rate."""
    dataset = params["dataset"]
    common = dict(
        clip=1.0,
        epsilon=float(params["epsilon"]),
        delta=DELTA,
        epochs=int(params["epochs"]),
        batch_size=int(params["batch_size"]),
        step_size=float(params["lr"]),
        noise_mode="fft",
        rng=seed,
        **_mechanism_kwargs(str(params["mechanism"])),
    )
    if dataset == "linreg":
        X, y, theta_star, lam = synthetic_regression(int(params["data_seed"]))
        traj = dp_ftrl(X, y, loss=SQUARED, **common)
        err = traj.estimate - theta_star
        metric = float(0.5 * err**2 @ lam)  # population excess risk (H is known)
        if not math.isfinite(metric):
            metric = math.inf
        return {"excess_risk": metric, "nu": float(traj.config["nu"] or 0.0)}
    Xtr, ytr, Xte, yte = digits(int(params["data_seed"]))
    traj = dp_ftrl(Xtr, ytr, loss=SOFTMAX, **common)
    W = traj.estimate.reshape(65, 10)
    accuracy = float(np.mean(np.argmax(Xte @ W, axis=1) == yte))
    return {"accuracy": accuracy, "nu": float(traj.config["nu"] or 0.0)}
