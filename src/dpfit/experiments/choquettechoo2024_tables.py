"""Choquette-Choo et al. (2024): Tables 1-4 and Figure 1's middle and right panels.

Everything here is computed, not simulated: the exact stationary risk of the LTI surrogate of
linear regression (:func:`dpfit.theory.ftrl.lti_excess_risk`, Appendix C), the sensitivity
of a noise-coefficient sequence over T steps (the squared norm of its reciprocal's first T
coefficients, eq. 5) and the coefficients themselves (:mod:`dpfit.noise.toeplitz`).

* ``choquettechoo2024-tables``: Table 1 and Table 4 (how the asymptotic suboptimality of
  Noisy-SGD and nu-Noisy-FTRL scales with eta, d, d_eff and rho: checked as shapes "up to
  constants", each as the spread of log(exact / shape) over a grid), Table 2 (prior choices
  of beta whose sensitivity diverges with T, and damped ones whose does not) and Table 3
  (which coefficient matrices are "anytime": the first coefficients do not depend on T).
* ``choquettechoo2024-fig1-coefficients``: the optimal beta* for mean estimation in time
  (anti-correlated: beta*_0 = 1, every later coefficient negative) and in frequency
  (|B(w)|^2 = |1 - (1 - eta) e^{iw}|: eta at w = 0, 2 - eta at w = pi).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..noise.toeplitz import anti_pgd, nu_dpftrl_coefficients, optimal_mean_estimation
from ..theory.ftrl import effective_dimension, lti_excess_risk, power_law_eigenvalues
from ._stats import series_slope
from .choquettechoo2024 import PAPER
from .registry import ClaimResult, Experiment, docstring_claim, register

__all__ = ["EXPERIMENTS"]

RHO = 0.5
#: Constant-factor band of a Theta(.) shape: exact / shape varies by at most this factor over
#: the grid (a wrong exponent in eta or d moves it by 10x or more over these grids).
SHAPE_FACTOR = 4.0


def _spectrum(params: Mapping[str, Any]) -> np.ndarray:
    d, alpha = int(params["d"]), float(params["alpha"])
    return np.ones(d) if alpha == 0 else power_law_eigenvalues(d, alpha)


def _coefficients(mechanism: str, nu: float, steps: int) -> np.ndarray:
    """The reciprocal c of beta (its noise's sensitivity coefficients), first ``steps``."""
    if mechanism == "anti-pgd":
        return np.asarray(anti_pgd(steps, damping=nu).inverse)
    return nu_dpftrl_coefficients(nu, steps)[1]


def tables_trial(params: Mapping[str, Any], seed: int) -> dict[str, float]:
    """One computed cell: a risk (Tables 1/4), a sensitivity (Table 2) or a prefix (Table 3).

    ``seed`` is unused: nothing is random.
    """
    table = str(params["table"])
    if table == "risk":
        lam, eta = _spectrum(params), float(params["eta"])
        d_eff = effective_dimension(lam)
        return {
            "sgd": lti_excess_risk(lam, eta, rho=RHO),
            "ftrl": lti_excess_risk(lam, eta, rho=RHO, nu=eta * float(lam.min())),
            "d_eff": d_eff,
            "log2": math.log(1.0 / (eta * float(lam.min()))) ** 2,
        }
    steps, nu, mechanism = int(params["steps"]), float(params["nu"]), str(params["mechanism"])
    if table == "sensitivity":
        return {"gamma_sq": float(np.sum(_coefficients(mechanism, nu, steps) ** 2))}
    if table == "anytime":
        short = _coefficients(mechanism, nu, 100)
        return {
            "prefix_gap": float(np.max(np.abs(_coefficients(mechanism, nu, steps)[:100] - short)))
        }
    raise ValueError(f"unknown table {table!r}")


def _spread(values: pd.Series) -> float:
    return float(np.log(values.max() / values.min()))


def _risk(results: pd.DataFrame) -> pd.DataFrame:
    rows = results[results["table"] == "risk"].copy()
    rows["sgd_shape"] = rows["eta"] * rows["d"] / RHO
    rows["ftrl_shape"] = rows["eta"] ** 2 * rows["d_eff"] * rows["log2"] / RHO
    rows["lower_shape"] = rows["eta"] ** 2 * rows["d_eff"] / RHO
    return rows


def table1_shapes(results: pd.DataFrame) -> ClaimResult:
    """Tables 1/4, up to constants: over every (eta, d, spectrum) of the grid, the exact risk
    of Noisy-SGD over eta d / rho varies by less than a factor 4 (Theta), and nu-Noisy-FTRL's
    (nu = eta lambda_min) lies between the lower bound's shape eta^2 d_eff / rho over 4
    (Omega) and the upper shape eta^2 d_eff log^2(1/(eta lambda_min)) / rho (O, constant 1).
    Noisy-SGD's own risk over the FTRL upper shape is reported (it exceeds 1 at small eta)."""
    rows = _risk(results)
    sgd = _spread(rows["sgd"] / rows["sgd_shape"])
    lower = float((rows["ftrl"] / rows["lower_shape"]).min())
    upper = float((rows["ftrl"] / rows["ftrl_shape"]).max())
    sgd_upper = float((rows["sgd"] / rows["ftrl_shape"]).max())
    limit = math.log(SHAPE_FACTOR)
    return ClaimResult(
        passed=bool(sgd < limit and lower >= 1 / SHAPE_FACTOR and upper <= 1.0),
        numbers={
            "log spread: Noisy-SGD / (eta d / rho)": sgd,
            "limit": limit,
            "min nu-FTRL / (eta^2 d_eff / rho)": lower,
            "max nu-FTRL / (eta^2 d_eff log^2 / rho)": upper,
            "max Noisy-SGD / (eta^2 d_eff log^2 / rho)": sgd_upper,
        },
    )


def table4_ratio(results: pd.DataFrame) -> ClaimResult:
    """Table 4, lambda_k = 1 (d_eff = d): nu-Noisy-FTRL over Noisy-SGD ~ eta log^2(1/eta), so
    Noisy-FTRL wins at small eta: the ratio over eta log^2(1/eta) varies by less than a
    factor 4 over the grid, and the ratio itself falls below 1 at the smallest eta."""
    rows = _risk(results)
    flat = rows[rows["alpha"] == 0]
    ratio = flat["ftrl"] / flat["sgd"]
    shape = flat["eta"] * np.log(1.0 / flat["eta"]) ** 2
    spread = _spread(ratio / shape)
    smallest = float(ratio[flat["eta"] == flat["eta"].min()].max())
    return ClaimResult(
        passed=bool(spread < math.log(SHAPE_FACTOR) and smallest < 1.0),
        numbers={
            "log spread: ratio / (eta log^2(1/eta))": spread,
            "ratio at smallest eta": smallest,
        },
    )


def table2_sensitivity(results: pd.DataFrame) -> ClaimResult:
    """Table 2: the sensitivity gamma_T^2 of Fichtenberger et al.'s beta (nu = 0) grows like
    log T (its slope against ln T within 2% of 1/pi over T = 10^2..10^6) and anti-PGD's like
    T (log-log slope within 0.01 of 1), so both have F_inf = infinity; nu-Noisy-FTRL's and
    damped anti-PGD's converge (gamma_T^2 changes by < 1e-3 relative from T = 10^5 to 10^6)."""
    rows = results[results["table"] == "sensitivity"]
    numbers: dict[str, float] = {}
    ok = True
    for (mech, nu), g in rows.groupby(["mechanism", "nu"]):
        series = g.set_index("steps")["gamma_sq"].sort_index()
        label = f"{mech} nu={nu:g}"
        if nu == 0 and mech == "nu-dpftrl":
            slope = float(np.polyfit(np.log(series.index.to_numpy(float)), series.to_numpy(), 1)[0])
            numbers[f"{label}: slope vs ln T"], numbers["1/pi"] = slope, 1 / math.pi
            ok &= abs(slope * math.pi - 1) < 0.02
        elif nu == 0:
            slope = series_slope(series).value
            numbers[f"{label}: log-log slope"] = slope
            ok &= abs(slope - 1) < 0.01
        else:
            change = float(abs(series.iloc[-1] / series.iloc[-2] - 1))
            numbers[f"{label}: gamma^2 at largest T"] = float(series.iloc[-1])
            numbers[f"{label}: relative change, last decade"] = change
            ok &= change < 1e-3
    return ClaimResult(passed=bool(ok), numbers=numbers)


def table3_anytime(results: pd.DataFrame) -> ClaimResult:
    """Table 3, "anytime": nu-DP-FTRL's and anti-PGD's coefficients for a horizon T begin with
    those for T = 100 exactly (max |difference| = 0), so B need not know T in advance."""
    rows = results[results["table"] == "anytime"]
    worst = float(rows["prefix_gap"].max())
    return ClaimResult(passed=bool(worst == 0.0), numbers={"max |prefix difference|": worst})


def _risk_grid(etas, ds, alphas) -> list[dict]:
    return [
        {"table": "risk", "eta": e, "d": d, "alpha": a} for e in etas for d in ds for a in alphas
    ]


def _sens_grid(steps) -> list[dict]:
    cells = [("nu-dpftrl", 0.0), ("nu-dpftrl", 0.01), ("anti-pgd", 0.0), ("anti-pgd", 0.01)]
    sens = [
        {"table": "sensitivity", "mechanism": m, "nu": nu, "steps": t}
        for m, nu in cells
        for t in steps
    ]
    anytime = [
        {"table": "anytime", "mechanism": m, "nu": nu, "steps": t}
        for m, nu in cells
        for t in (1000, max(steps))
    ]
    return sens + anytime


_TABLES_PAPER = (
    "Table 1/4: Noisy-SGD F_inf = Theta(eta d / rho); nu-Noisy-FTRL "
    "O(eta^2 d_eff log^2(1/(eta mu)) / rho); lower bound Omega(eta^2 d_eff / rho); at "
    "lambda_k = 1 the ratio FTRL / SGD is eta log^2(1/eta). Table 2: Fichtenberger et al.'s "
    "beta has sensitivity ~ log T and F_inf = infinity; nu-Noisy-FTRL's damping makes it "
    "finite. Table 3: nu-DP-FTRL is anytime."
)

TABLES = Experiment(
    name="choquettechoo2024-tables",
    paper=PAPER,
    figure="Tables 1-4",
    description=(
        "Computed, not simulated: the exact stationary risk of the LTI surrogate (Appendix C; "
        "rho = 1/2, G = 1, ||H|| = 1) of Noisy-SGD and nu-Noisy-FTRL (nu = eta lambda_min) "
        "over eta, d and the spectrum (lambda_k = 1, 1/k, 1/k^2), against the shapes of "
        "Tables 1 and 4; the sensitivity gamma_T^2 = sum_{t<T} c_t^2 of Fichtenberger et al.'s "
        "and anti-PGD's coefficients with and without damping (Table 2); the coefficients' "
        "independence of the horizon (Table 3)."
    ),
    grid={
        "smoke": _risk_grid([0.01, 0.1], [16], [0.0, 1.0]) + _sens_grid([100, 1000]),
        "quick": _risk_grid([1e-3, 1e-2, 0.1], [16, 64], [0.0, 1.0, 2.0])
        + _sens_grid([10**k for k in range(2, 7)]),
        "paper": _risk_grid([1e-3, 3e-3, 1e-2, 3e-2, 0.1], [16, 64, 256], [0.0, 1.0, 2.0])
        + _sens_grid([10**k for k in range(2, 8)]),
    },
    replicates={"smoke": 1, "quick": 1, "paper": 1},
    trial=tables_trial,
    claims=[
        docstring_claim(
            "table1-shapes",
            table1_shapes,
            paper=_TABLES_PAPER,
        ),
        docstring_claim(
            "table4-ratio",
            table4_ratio,
            paper=_TABLES_PAPER,
        ),
        docstring_claim(
            "table2-sensitivity",
            table2_sensitivity,
            paper=_TABLES_PAPER,
        ),
        docstring_claim(
            "table3-anytime",
            table3_anytime,
            paper=_TABLES_PAPER,
            scales=("smoke", "quick", "paper"),
        ),
    ],
    privacy="None: closed forms and coefficient sequences, no data and no noise.",
)


# ---------------------------------------------------------------- Figure 1, middle and right


def coefficients_trial(params: Mapping[str, Any], seed: int) -> dict[str, float]:
    """beta* for learning rate eta: its signs and decay (time) and |B(w)|^2 (frequency)."""
    eta, steps = float(params["eta"]), int(params["steps"])
    beta = np.asarray(optimal_mean_estimation(eta, steps=steps).beta)
    spectrum = np.abs(np.fft.rfft(beta, n=8 * steps)) ** 2  # |B(w)|^2 on [0, pi]
    w = np.linspace(0.0, np.pi, spectrum.size)
    exact = np.abs(1.0 - (1.0 - eta) * np.exp(1j * w))
    t = min(1000, steps - 1)  # (1 - eta)^t stays a normal float up to t = 1000 for eta <= 1/2
    tail = beta[t] / ((1.0 - eta) ** t * t**-1.5)  # -> -1/(2 sqrt(pi)), error ~ 3/(8t)
    return {
        "beta_0": float(beta[0]),
        "largest_later": float(beta[1:][beta[1:] != 0].max()),  # the far tail underflows
        "tail_constant": float(tail),
        "spectrum_at_0": float(spectrum[0]),
        "spectrum_at_pi": float(spectrum[-1]),
        "spectrum_error": float(np.max(np.abs(spectrum - exact))),
    }


def fig1_coefficients(results: pd.DataFrame) -> ClaimResult:
    """Figure 1 (middle): beta* is anti-correlated (beta*_0 = 1, every later coefficient < 0)
    with |beta*_t| (1 - eta)^-t t^(3/2) -> 1/(2 sqrt(pi)); (right) its spectrum |B(w)|^2 is
    |1 - (1 - eta) e^{iw}|: eta at w = 0 (low frequencies suppressed), 2 - eta at pi; the
    truncated sequence's spectrum within 1e-3 of it at every eta of the grid (eta < 1)."""
    ok, numbers = True, {}
    for _, row in results.sort_values("eta").iterrows():
        eta = float(row["eta"])
        label = f"eta={eta:g}"
        numbers[f"{label}: largest later beta"] = float(row["largest_later"])
        numbers[f"{label}: tail constant"] = float(row["tail_constant"])
        numbers[f"{label}: |B(0)|^2"] = float(row["spectrum_at_0"])
        numbers[f"{label}: spectrum error"] = float(row["spectrum_error"])
        ok &= row["beta_0"] == 1.0 and row["largest_later"] < 0
        ok &= abs(row["tail_constant"] * 2 * math.sqrt(math.pi) + 1) < 0.05
        ok &= (
            abs(row["spectrum_at_0"] - eta) < 1e-3 and abs(row["spectrum_at_pi"] - (2 - eta)) < 1e-3
        )
        ok &= row["spectrum_error"] < 1e-3
    return ClaimResult(passed=bool(ok), numbers=numbers)


def coefficients_plot(results: pd.DataFrame) -> list:
    """Figure 1 (middle): -beta*_t against t; (right): |B(w)|^2 against w, one line per eta."""
    import matplotlib.pyplot as plt

    fig, (time, freq) = plt.subplots(1, 2, figsize=(9.0, 3.6))
    w = np.linspace(0.0, np.pi, 400)
    for eta in sorted(results["eta"].unique()):
        beta = np.asarray(optimal_mean_estimation(float(eta), steps=300).beta)
        t = np.arange(1, beta.size)
        time.plot(t, -beta[1:], label=f"eta = {eta:g}")
        freq.plot(w, np.abs(1.0 - (1.0 - eta) * np.exp(1j * w)), label=f"eta = {eta:g}")
    time.set(xscale="log", yscale="log", xlabel="t", ylabel="-beta*_t (t >= 1: all negative)")
    time.set_ylim(1e-8, 1.0)
    time.set_title("Fig. 1 (middle): optimal coefficients in time", fontsize="small")
    freq.set(xlabel="frequency w", ylabel="|B(w)|^2", ylim=(0, 2.05))
    freq.set_title("Fig. 1 (right): in frequency (low frequencies suppressed)", fontsize="small")
    time.legend(fontsize="x-small")
    fig.tight_layout()
    return [fig]


FIG1_COEFFICIENTS = Experiment(
    name="choquettechoo2024-fig1-coefficients",
    paper=PAPER,
    figure="Figure 1, middle and right",
    description=(
        "The optimal noise coefficients beta*_t = (-1)^t binom(1/2, t)(1 - eta)^t of mean "
        "estimation (Thm. 2.1) in time and in frequency, computed over T steps."
    ),
    grid={
        "smoke": [{"eta": 0.1, "steps": 2000}],
        "quick": [{"eta": e, "steps": 20_000} for e in (0.001, 0.01, 0.1, 0.5)],
        "paper": [{"eta": e, "steps": 100_000} for e in (0.0003, 0.001, 0.01, 0.1, 0.5)],
    },
    replicates={"smoke": 1, "quick": 1, "paper": 1},
    trial=coefficients_trial,
    plot=coefficients_plot,
    claims=[
        docstring_claim(
            "anti-correlated-low-pass",
            fig1_coefficients,
            paper=(
                "Fig. 1 (middle, right): the optimal noise is anti-correlated, so the "
                "algorithm cancels out previously added noise; its spectrum suppresses low "
                "frequencies."
            ),
            scales=("smoke", "quick", "paper"),
        )
    ],
    privacy="None: coefficient sequences, no data and no noise.",
)

EXPERIMENTS = [register(e) for e in (TABLES, FIG1_COEFFICIENTS)]
