"""When the population interval says it cannot be trusted: its two checks, measured.

See docs/inference.md, "When the interval says it cannot be trusted".

The default linear fit (:mod:`dpfit.algorithms.preconditioned_gd`) warns (``CoverageWarning``)
when (a) the released iterates still drift between the two halves of the run
(:mod:`dpfit.inference.diagnostics`) or (b) the released Huber Hessian's smallest eigenvalue
cannot be told from zero (:meth:`~dpfit.inference.population.NoisyMoment.unidentified`; the
bread is released in the coordinates of the two-stage whitener, and the ratios below are
mapped back to the coefficients). Each trial fits once and
records both warnings, coverage of theta* (synthetic designs of
:mod:`dpfit.experiments.inference_coverage`; none for the bundled Card data), the previous
floor rule (:meth:`~dpfit.inference.population.NoisyMoment.floor_binds`) for comparison,
the data's own smallest eigenvalue over the floor, and the smallest ratio over the slopes of
the sandwich standard error built on the released bread to the one built on the noise-free
bread (same released meat): with the bread the fit uses
(:meth:`~dpfit.inference.population.NoisyMoment.shrunk`) and with the previous
projection onto the floor (:meth:`~dpfit.inference.population.NoisyMoment.psd`).

``data``: ``"card"`` is the demo's wage equation (``dpfit demo``); the others are designs of
the coverage study. ``steps`` / ``step_size`` None are the defaults (200, 0.5). Run with
``dpfit reproduce inference-coverage-diagnostics --out DIR``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..exceptions import CoverageWarning, IdentificationWarning, LargeBudgetWarning
from ..inference.population import NoisyMoment, sandwich
from ..inference.whitened import inverse_sqrt
from ..mechanisms import recording
from ..models import DPLinearRegression, ols
from .inference_coverage import _draw
from .registry import Claim, ClaimResult, Experiment, register

__all__ = ["EXPERIMENT"]


def _matrix(upper: np.ndarray) -> np.ndarray:
    k = round((math.sqrt(8 * upper.size + 1) - 1) / 2)
    out = np.empty((k, k))
    out[np.triu_indices(k)] = upper
    out.T[np.triu_indices(k)] = upper
    return out


def _fit(params: Mapping[str, Any], seed: int) -> tuple[Any, np.ndarray | None]:
    kw = {k: params[k] for k in ("steps", "step_size") if params.get(k) is not None}
    rho = float(params["rho"])
    if params["data"] == "card":
        from ..datasets.real import WAGE_BOUNDS, WAGE_FORMULA, WAGE_Y_BOUNDS, load_card

        res = ols(
            WAGE_FORMULA,
            load_card(),
            rho=rho,
            bounds=WAGE_BOUNDS,
            y_bounds=WAGE_Y_BOUNDS,
            random_state=seed,
            **kw,
        )
        return res, None
    data = _draw(str(params["data"]), int(params["n"]), np.random.default_rng([seed, 1]))
    model = DPLinearRegression(
        rho=rho, bounds=data["bounds"], y_bounds=data["y_bounds"], random_state=seed, **kw
    )
    return model.fit(data["X"], data["y"]).result_, data["theta"]


def _trial(params: Mapping[str, Any], seed: int) -> dict[str, float]:
    with recording() as rec, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CoverageWarning)
        warnings.simplefilter("always", IdentificationWarning)  # recorded, not raised
        warnings.simplefilter("ignore", LargeBudgetWarning)
        res, theta = _fit(params, seed)
    messages = [str(w.message) for w in caught if issubclass(w.category, CoverageWarning)]
    by_label = {r.entry.label: r for r in rec.releases}
    moments = {
        name: (
            NoisyMoment(matrix=_matrix(np.asarray(r.output)), noise_std=float(r.entry.noise_std)),
            _matrix(np.asarray(r.value)),
        )
        for name, r in (
            (n, by_label[f"gd/{n}"]) for n in ("xtx", "whitened-xtx", "huber-hessian", "omega")
        )
    }
    hessian, exact = moments["huber-hessian"]  # released in whitened coordinates
    P = inverse_sqrt(moments["xtx"][0].preconditioner())
    P = P @ inverse_sqrt(moments["whitened-xtx"][0].preconditioner())  # theta = P u
    meat = moments["omega"][0].shrunk()
    n = res.nobs

    def se(bread: np.ndarray) -> np.ndarray:
        return np.diag(P @ sandwich(bread, meat, n) @ P.T)

    exact_se = se(exact)
    ratio = np.sqrt(se(hessian.shrunk()) / exact_se)
    ratio_psd = np.sqrt(se(hessian.psd()) / exact_se)
    covers = math.nan
    if theta is not None:
        ci = res.conf_int(0.05).to_numpy()
        covers = float(np.mean((ci[:, 0] <= theta) & (theta <= ci[:, 1])))
    return {
        "covers": covers,
        "drift_warned": float(any("not converged" in m for m in messages)),
        "floor_warned": float(any("Huber Hessian" in m for m in messages)),
        "floor_old_rule": float(hessian.floor_binds()),
        "true_over_floor": float(np.linalg.eigvalsh(exact)[0] / hessian.floor),
        "se_ratio_min": float(ratio[1:].min()),
        "se_ratio_psd": float(ratio_psd[1:].min()),
        "max_relative_drift": float(np.max(res.covariance("population").relative_drift)),
    }


def diagnostics_table(results: pd.DataFrame) -> pd.DataFrame:
    """Per setting: warning rates, coverage, and the floor rule's inputs (means)."""
    keys = ["data", "n", "rho", "steps", "step_size"]
    frame = results.assign(
        **{k: results[k].astype(object).fillna("default") for k in ("steps", "step_size")}
    )
    return (
        frame.groupby(keys, dropna=False)
        .agg(
            coverage=("covers", "mean"),
            drift_warned=("drift_warned", "mean"),
            floor_warned=("floor_warned", "mean"),
            floor_old_rule=("floor_old_rule", "mean"),
            true_over_floor=("true_over_floor", "mean"),
            se_ratio_min=("se_ratio_min", "mean"),
            se_ratio_psd=("se_ratio_psd", "mean"),
            max_relative_drift=("max_relative_drift", "median"),
            reps=("covers", "size"),
        )
        .reset_index()
    )


def _claim(results: pd.DataFrame) -> ClaimResult:
    table = diagnostics_table(results)
    default = (table["steps"] == "default") & (table["step_size"] == "default")
    numbers = {
        f"{r.data} n={r.n} rho={r.rho:g} steps={r.steps} step={r.step_size} {m}": float(
            getattr(r, m)
        )
        for r in table.itertuples()
        for m in ("drift_warned", "floor_warned", "coverage")
    }
    slow = table[~default]
    # Converged defaults in the valid regime (the floor check silent in most fits): the
    # drift check fires in <= 5% of fits; not converged: >= 80%. Where the floor binds,
    # the whitened problem is ill-conditioned along that direction and mixes slowly, so
    # drift warnings there are not false alarms. Both groups must be non-empty: a claim
    # about no converged (or no unconverged) setting judges nothing.
    quiet = table[default & (table["data"] != "card") & (table["floor_warned"] < 0.5)]
    numbers["converged settings judged"] = float(len(quiet))
    numbers["unconverged settings judged"] = float(len(slow))
    passed = bool(
        len(quiet) > 0
        and len(slow) > 0
        and (quiet["drift_warned"] <= 0.05).all()
        and (slow["drift_warned"] >= 0.8).all()
    )
    return ClaimResult(
        passed=passed,
        numbers=numbers,
        detail=f"{len(quiet)} converged and {len(slow)} unconverged settings judged (at "
        "least one each required); drift warning rates by setting in the numbers",
    )


def _settings() -> list[dict]:
    cells = [
        {"data": "card", "n": 3010, "rho": 0.25},
        {"data": "card", "n": 3010, "rho": 1.0},
        {"data": "isotropic", "n": 2000, "rho": 0.5},
        {"data": "heteroscedastic", "n": 2000, "rho": 0.5},
        {"data": "t3", "n": 2000, "rho": 0.5},
        {"data": "isotropic", "n": 2000, "rho": 0.05},
        {"data": "isotropic", "n": 300, "rho": 0.5},
        {"data": "isotropic", "n": 20000, "rho": 0.5},
    ]
    slow = [
        {"data": "isotropic", "n": 2000, "rho": 0.5, "steps": 100, "step_size": 0.02},
        {"data": "isotropic", "n": 2000, "rho": 0.5, "steps": 100, "step_size": 0.05},
        {"data": "isotropic", "n": 2000, "rho": 0.5, "steps": 200, "step_size": 0.05},
    ]
    return [{"steps": None, "step_size": None, **c} for c in cells] + slow


EXPERIMENT = register(
    Experiment(
        name="inference-coverage-diagnostics",
        paper="dpfit, beyond the papers: when population intervals warn (docs/inference.md)",
        figure="diagnostics table (docs/inference.md)",
        description=(
            "Warning rates of the population interval's convergence (drift) and "
            "noise-floor checks, with coverage, on converged and unconverged fits."
        ),
        grid={"smoke": _settings()[:1], "quick": _settings(), "paper": _settings()},
        replicates={"smoke": 2, "quick": 40, "paper": 200},
        trial=_trial,
        privacy="Each trial is one fit at rho (replace-one, public n); seeded noise.",
        claims=[
            Claim(
                name="drift-check",
                statement=(
                    "The drift check fires in at most 5% of converged default fits where the "
                    "noise-floor check is silent, and in at least 80% of fits that have not "
                    "converged; at least one setting of each kind is judged."
                ),
                evaluate=_claim,
            )
        ],
    )
)
