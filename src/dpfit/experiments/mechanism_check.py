"""A paper-free experiment that exercises the whole harness: the Gaussian mechanism's noise.

Each trial releases a zero vector of dimension ``dim`` through
:func:`dpfit.mechanisms.gaussian`, calibrated by :func:`~dpfit.mechanisms.noise_std_for_rho`
to cost exactly ``rho`` for L2 sensitivity ``sensitivity``, and records the empirical noise
variance next to the prediction ``sensitivity^2 / (2 rho)`` (Bun & Steinke 2016, Prop. 1.6)
and the rho the ledger was charged.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..mechanisms import gaussian, make_noise_source, noise_std_for_rho, rho_within
from ..privacy import Budget, PrivacyLedger
from .registry import Claim, ClaimResult, Experiment, register

__all__ = ["EXPERIMENT"]

#: Half-width of the variance check in standard errors. With N normal draws the sample
#: variance ratio s^2/sigma^2 has standard error sqrt(2/N); at 5 standard errors a false
#: failure has probability < 6e-7 per cell, so the claim can fail only on a real bug.
_Z = 5.0


def _trial(params, seed: int) -> dict[str, float]:
    rho, sensitivity, dim = float(params["rho"]), float(params["sensitivity"]), int(params["dim"])
    ledger = PrivacyLedger(budget=Budget(rho=rho))
    noise_std = noise_std_for_rho(sensitivity, rho_within(sensitivity, rho))  # charged <= rho
    out = gaussian(
        np.zeros(dim),
        sensitivity=sensitivity,
        noise_std=noise_std,
        ledger=ledger,
        rng=make_noise_source(seed),
        label="mechanism_check/zero",
    )
    predicted = sensitivity**2 / (2.0 * rho)
    empirical = float(np.mean(out**2))  # the mean is known (0), so no degree of freedom is lost
    return {
        "empirical_variance": empirical,
        "predicted_variance": predicted,
        "variance_ratio": empirical / predicted,
        "ledger_rho": ledger.rho,
    }


def _cells(results: pd.DataFrame) -> pd.DataFrame:
    """Per (rho, sensitivity) cell: pooled variance ratio and its sampling standard error."""
    draws = results["dim"].astype(float)
    pooled = results.assign(weighted=results["variance_ratio"] * draws, draws=draws)
    cells = pooled.groupby(["rho", "sensitivity"], as_index=False)[["weighted", "draws"]].sum()
    cells["ratio"] = cells["weighted"] / cells["draws"]
    cells["se"] = np.sqrt(2.0 / cells["draws"])
    return cells


def _variance_claim(results: pd.DataFrame) -> ClaimResult:
    cells = _cells(results)
    z = ((cells["ratio"] - 1.0) / cells["se"]).abs()
    worst = int(z.to_numpy().argmax())
    return ClaimResult(
        passed=bool((z <= _Z).all()),
        numbers={
            "cells": float(len(cells)),
            "worst |ratio - 1| / se": float(z.iloc[worst]),
            "worst ratio": float(cells["ratio"].iloc[worst]),
            "tolerance (se)": _Z,
        },
        detail="pooled empirical / predicted noise variance per (rho, sensitivity) cell",
    )


def _ledger_claim(results: pd.DataFrame) -> ClaimResult:
    rel = ((results["ledger_rho"] - results["rho"]) / results["rho"]).abs()
    return ClaimResult(
        passed=bool((rel <= 1e-12).all()),
        numbers={"max relative error": float(rel.max()), "trials": float(len(results))},
    )


def _plot(results: pd.DataFrame) -> list:
    """Left: empirical vs predicted variance (log-log); right: their ratio with 5-se bars."""
    import matplotlib.pyplot as plt

    cells = _cells(results).assign(predicted=lambda c: c["sensitivity"] ** 2 / (2.0 * c["rho"]))
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.0, 3.8))
    for k, (sens, group) in enumerate(cells.groupby("sensitivity")):
        label = f"sensitivity {sens:g}"
        left.plot(group["predicted"], group["ratio"] * group["predicted"], "o", label=label)
        dodge = 1.12**k  # side by side at the same rho (log axis)
        right.errorbar(group["rho"] * dodge, group["ratio"], yerr=_Z * group["se"], fmt="o")
    span = [cells["predicted"].min(), cells["predicted"].max()]
    left.plot(span, span, "k--", lw=1, label="y = x")
    left.set(xscale="log", yscale="log", xlabel="predicted variance Δ²/(2ρ)")
    left.set(ylabel="empirical noise variance", title="Gaussian mechanism calibration")
    right.axhline(1.0, color="k", ls="--", lw=1)
    right.set(xscale="log", xlabel="ρ (zCDP)", ylabel="empirical / predicted variance")
    right.set(title=f"ratio, bars = ±{_Z:g} standard errors")
    left.tick_params(which="minor", labelbottom=False, labelleft=False)
    left.legend(fontsize="small")
    fig.tight_layout()
    return [fig]


def _grid(rhos, sensitivities, dim) -> list[dict]:
    return [{"rho": r, "sensitivity": s, "dim": dim} for r in rhos for s in sensitivities]


EXPERIMENT = register(
    Experiment(
        name="mechanism-check",
        paper="Bun & Steinke 2016, Prop. 1.6 (the Gaussian mechanism in zCDP)",
        figure="calibration check (no paper figure)",
        description=(
            "Releases a zero vector through dpfit.mechanisms.gaussian calibrated to rho and an "
            "L2 sensitivity; compares the empirical noise variance with sensitivity^2/(2 rho) "
            "and checks the ledger is charged exactly rho."
        ),
        grid={
            "smoke": _grid([0.1, 1.0], [1.0], 2_000),
            "quick": _grid([0.01, 0.1, 1.0, 4.0], [0.5, 1.0, 2.0], 20_000),
            "paper": _grid([0.001, 0.01, 0.1, 1.0, 5.0], [0.25, 0.5, 1.0, 2.0, 4.0], 10**5),
        },
        replicates={"smoke": 2, "quick": 5, "paper": 20},
        trial=_trial,
        claims=[
            Claim(
                name="variance",
                statement=(
                    "The empirical noise variance equals sensitivity^2/(2 rho) within "
                    f"{_Z:g} sampling standard errors in every (rho, sensitivity) cell."
                ),
                evaluate=_variance_claim,
                scales=("smoke", "quick", "paper"),
            ),
            Claim(
                name="ledger",
                statement="Each release charges the ledger exactly rho (relative error <= 1e-12).",
                evaluate=_ledger_claim,
                scales=("smoke", "quick", "paper"),
            ),
        ],
        plot=_plot,
        privacy=(
            "One Gaussian release per trial, rho-zCDP with rho from the grid (replace-one); "
            "seeded noise, for calibration only."
        ),
    )
)
