"""Seeded fingerprints of every estimator and formula entry point, to diff before and after a
refactor.

Each case is one seeded call (a fit, or a call that must fail). Its fingerprint holds the
exact float64 bits (``float.hex``) of the estimates, standard errors and intervals, the
warnings (category and text), the notes, the ledger's total rho and every release it holds
(label, sensitivity, noise std, count; a composed entry is listed by its components, so a
change of ledger layout alone shows up only under ``ledger_layout``), or the error's type and
message. Two runs of the same code give the same JSON byte for byte.

Command (about a minute on two cores)::

    PYTHONPATH=src python benchmarks/fit_fingerprints.py --json OUT.json
    python benchmarks/fit_fingerprints.py --diff BEFORE.json AFTER.json
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

import dpfit
from dpfit.algorithms import dp_ambssgd, dp_two_stage_gd
from dpfit.baselines import adassp
from dpfit.losses import SquaredLoss


def _hex(values: Any) -> Any:
    if values is None:
        return None
    array = np.asarray(values, dtype=np.float64)
    return [float(v).hex() for v in array.ravel()]


def _releases(entry: Any) -> list[list[Any]]:
    parts = getattr(entry, "components", None)
    if parts is not None and not isinstance(parts, property):
        return [row for part in parts for row in _releases(part)]
    blocks = getattr(entry, "blocks", None)
    if blocks is not None:  # a parallel composition: its blocks' entries
        listed = [[[row for e in block for row in _releases(e)], k] for block, k in blocks]
        return [["parallel", entry.label, float(entry.rho).hex(), listed]]
    return [
        [
            entry.label,
            float(getattr(entry, "sensitivity", float("nan"))).hex(),
            float(getattr(entry, "noise_std", float("nan"))).hex(),
            int(getattr(entry, "count", 1)),
        ]
    ]


def _ledger(ledger: Any) -> dict[str, Any]:
    return {
        "rho": float(ledger.rho).hex(),
        "releases": [row for entry in ledger.entries for row in _releases(entry)],
        "ledger_layout": [type(entry).__name__ for entry in ledger.entries],
    }


def _try(fn: Callable[[], Any]) -> Any:
    try:
        return _hex(np.asarray(fn(), dtype=np.float64))
    except Exception as exc:  # the fingerprint records what a user sees
        return f"{type(exc).__name__}: {exc}"


def _result(res: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "params": _try(lambda: res.params),
        "bse": _try(lambda: res.bse),
        "conf_int": _try(lambda: res.conf_int()),
        "conf_int_sample": _try(lambda: res.conf_int(target="sample")),
        "notes": [str(n) for n in getattr(res, "notes", ())],
    }
    if getattr(res, "ledger", None) is not None:
        out.update(_ledger(res.ledger))
    return out


def _model(model: Any) -> dict[str, Any]:
    out = {"coef": _hex(model.coef_), "intercept": _hex(getattr(model, "intercept_", None))}
    result = getattr(model, "result_", None)
    if result is not None:
        out.update(_result(result))
    elif getattr(model, "privacy_", None) is not None:
        out.update(_ledger(model.privacy_))
    return out


def _trajectory(traj: Any) -> dict[str, Any]:
    iterates = _hex(traj.iterates)
    return {"estimate": _hex(traj.estimate), "iterates": iterates, **_ledger(traj.ledger)}


def _linear_frame(n: int = 3000, seed: int = 0) -> pd.DataFrame:
    gen = np.random.default_rng(seed)  # synthetic data, not privacy noise
    df = pd.DataFrame({"x": gen.uniform(0, 10, n), "w": gen.uniform(-1, 1, n)})
    df["g"] = pd.Categorical(gen.choice(["a", "b"], n), categories=["a", "b"])
    df["y"] = 1.0 + 0.5 * df.x - 0.7 * df.w + 0.4 * (df.g == "b") + gen.normal(0, 1, n)
    return df


def _iv_frame(n: int = 3000, seed: int = 5) -> pd.DataFrame:
    gen = np.random.default_rng(seed)  # synthetic data, not privacy noise
    z = gen.integers(0, 2, n).astype(float)
    u = gen.standard_normal(n)
    w = np.clip(gen.standard_normal(n), -4, 4)
    x = 1 + 2 * z + 0.5 * w + u + gen.standard_normal(n)
    y = 1 + 0.5 * x - 0.3 * w + u + gen.standard_normal(n)
    return pd.DataFrame({"x": x, "w": w, "z": z, "y": y})


def _glm_frame(n: int = 4000, seed: int = 0) -> pd.DataFrame:
    gen = np.random.default_rng(seed)  # synthetic data, not privacy noise
    df = pd.DataFrame({"x": gen.uniform(-1, 1, n), "z": gen.uniform(0, 10, n)})
    eta = -0.5 + df.x + 0.1 * df.z
    df["y"] = (gen.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(int)
    df["c"] = gen.poisson(np.exp(0.2 + 0.5 * df.x + 0.05 * df.z))
    return df


LIN = _linear_frame()
IVF = _iv_frame()
GLMF = _glm_frame()
B = {"x": (0, 10), "w": (-1, 1)}
YB = (-8, 16)
IVB = {"x": (-8, 11), "w": (-4, 4), "z": (0, 1)}
IVYB = (-10, 14)
GB = {"x": (-1, 1), "z": (0, 10)}
NAN = LIN.assign(x=LIN.x.where(LIN.index != 7))


def _ols(formula: str = "y ~ x + w", data: Any = LIN, **kw: Any) -> Callable[[], Any]:
    return lambda: _result(dpfit.ols(formula, data, **{"rho": 1.0, "random_state": 0, **kw}))


def _iv(formula: str = "y ~ w + [x ~ z]", **kw: Any) -> Callable[[], Any]:
    params = {"rho": 2.0, "bounds": IVB, "y_bounds": IVYB, "random_state": 0, **kw}
    return lambda: _result(dpfit.iv(formula, IVF, **params))


def _lin_model(**kw: Any) -> Callable[[], Any]:
    params = {"rho": 1.0, "random_state": 1, **kw}
    return lambda: _model(dpfit.DPLinearRegression(**params).fit(LIN[["x", "w"]], LIN["y"]))


def _iv_model(**kw: Any) -> Callable[[], Any]:
    params = {"rho": 2.0, "bounds": IVB, "y_bounds": IVYB, "random_state": 0, **kw}
    return lambda: _model(
        dpfit.DPIVRegression(**params).fit(IVF[["w", "x"]], IVF["y"], Z=IVF[["w", "z"]])
    )


def _glm(call: Callable[..., Any], formula: str, **kw: Any) -> Callable[[], Any]:
    params = {"rho": 2.0, "bounds": GB, "random_state": 1, **kw}
    return lambda: _result(call(formula, GLMF, **params))


def _minimize(**kw: Any) -> Callable[[], Any]:
    gen = np.random.default_rng(3)  # synthetic data, not privacy noise
    X = gen.standard_normal((500, 3)) / 2
    y = np.clip(X @ np.array([1.0, -1.0, 0.5]), -1, 1)
    params = {"rho": 1.0, "random_state": 0, **kw}
    return lambda: _trajectory(dpfit.minimize(SquaredLoss(radius=2.0), (X, y), **params))


def _adassp() -> Any:
    X = LIN[["x", "w"]].to_numpy() / 10
    y = np.clip(LIN["y"].to_numpy() / 16, -1, 1)
    gen = np.random.default_rng(4)
    return _trajectory(adassp(X, y, rho=1.0, x_bound=1.5, y_bound=1.0, rng=gen))


def _ambssgd(**kw: Any) -> Callable[[], Any]:
    gen = np.random.default_rng(6)  # synthetic data, not privacy noise
    X = gen.standard_normal((20_000, 3))
    y = X @ np.array([1.0, -1.0, 0.5]) + 0.1 * gen.standard_normal(20_000)
    params = {"rho": 0.5, "feature_scale": 5 ** 0.5, "residual_bound": 40.0, "rng": 1, **kw}
    return lambda: _trajectory(dp_ambssgd(X, y, **params))


def _two_stage(**kw: Any) -> Callable[[], Any]:
    gen = np.random.default_rng(7)  # synthetic data, not privacy noise
    Z = gen.standard_normal((2000, 1))
    u = gen.standard_normal(2000)
    X = Z + (u + gen.standard_normal(2000))[:, None]
    y = 0.5 * X[:, 0] + u + gen.standard_normal(2000)
    params = {"rho_theta": 1.0, "rho_beta": 1.0, "clip_theta": 5.0, "clip_beta": 5.0,
              "steps": 20, "step_size_theta": 1.0, "step_size_beta": 0.5, "rng": 1, **kw}
    return lambda: _trajectory(dp_two_stage_gd(X, y, Z, **params))  # fmt: skip


def _budgeted() -> Any:
    budget = dpfit.Budget(rho=1.0)
    first = _result(dpfit.ols("y ~ x + w", LIN, rho=0.6, budget=budget, bounds=B, y_bounds=YB,
                              random_state=0))  # fmt: skip
    return {"first": first, "remaining": float(budget.remaining).hex()}


def _over_budget() -> Any:
    budget = dpfit.Budget(rho=0.5)
    dpfit.ols("y ~ x + w", LIN, rho=1.0, budget=budget, bounds=B, y_bounds=YB, random_state=0)


CASES: dict[str, Callable[[], Any]] = {
    # dpfit.ols, method="gd"
    "ols/gd/preconditioned/private-clip": _ols(bounds=B, y_bounds=YB),
    "ols/gd/preconditioned/huber": _ols(bounds=B, y_bounds=YB, target="huber"),
    "ols/gd/preconditioned/given-clip": _ols(bounds=B, y_bounds=YB, clip=2.0),
    "ols/gd/preconditioned/moment-share": _ols(bounds=B, y_bounds=YB, moment_share=0.3),
    "ols/gd/preconditioned/no-check": _ols(bounds=B, y_bounds=YB, bounds_check=0),
    "ols/gd/preconditioned/check-0.1": _ols(bounds=B, y_bounds=YB, bounds_check=0.1),
    "ols/gd/preconditioned/steps": _ols(bounds=B, y_bounds=YB, steps=300, m=15),
    "ols/gd/preconditioned/add-remove": _ols(
        bounds=B, y_bounds=YB, relation="add-remove", n_public=3000
    ),
    "ols/gd/preconditioned/categorical": _ols(
        "y ~ x + w + C(g, levels=['a', 'b'])", bounds=B, y_bounds=YB
    ),
    "ols/gd/preconditioned/no-intercept": _ols("y ~ 0 + x + w", bounds=B, y_bounds=YB),
    "ols/gd/preconditioned/large-rho": _ols(bounds=B, y_bounds=YB, rho=50.0),
    "ols/gd/plain/bounds": _ols(bounds=B, y_bounds=YB, precondition=False),
    "ols/gd/plain/checkpoints": _ols(
        bounds=B, y_bounds=YB, precondition=False, interval="checkpoints"
    ),
    "ols/gd/plain/independent-runs": _ols(
        bounds=B, y_bounds=YB, precondition=False, interval="independent-runs", total_steps=1000
    ),
    "ols/gd/plain/formal": _ols(
        bounds=B, y_bounds=YB, precondition=False, interval_variant="formal"
    ),
    "ols/gd/plain/no-interval": _ols(bounds=B, y_bounds=YB, precondition=False, interval=None),
    "ols/gd/no-bounds": _ols(clip=5.0, step_size=0.01),
    "ols/gd/no-bounds/y-bounds-only": _ols(clip=5.0, step_size=0.01, y_bounds=YB),
    "ols/gd/tight-bounds-warns": _ols(bounds={"x": (0, 5), "w": (-1, 1)}, y_bounds=YB),
    "ols/gd/nan-zero-record": _ols(data=NAN.assign(x=NAN.x.fillna(0)), bounds=B, y_bounds=YB),
    # dpfit.ols, other methods
    "ols/adassp/population": _ols(method="adassp", bounds=B, y_bounds=YB),
    "ols/adassp/point": _ols(method="adassp", bounds=B, y_bounds=YB, interval=None),
    "ols/adassp/moment-share": _ols(method="adassp", bounds=B, y_bounds=YB, moment_share=0.3),
    "ols/adassp/no-check": _ols(method="adassp", bounds=B, y_bounds=YB, bounds_check=0),
    "ols/ambssgd": _ols(method="ambssgd", bounds=B, y_bounds=YB, interval=None, steps=2),
    "ols/budget": _budgeted,
    # dpfit.ols errors
    "error/ols/bad-rho-negative": _ols(rho=-1.0, bounds=B, y_bounds=YB),
    "error/ols/bad-rho-nan": _ols(rho=float("nan"), bounds=B, y_bounds=YB),
    "error/ols/bad-rho-str": _ols(rho="1", bounds=B, y_bounds=YB),
    "error/ols/nan-cell": _ols(data=NAN, bounds=B, y_bounds=YB),
    "error/ols/missing-clip": _ols(),
    "error/ols/adassp-missing-bounds": _ols(method="adassp"),
    "error/ols/precondition-without-bounds": _ols(clip=1.0, precondition=True),
    "error/ols/bad-method": _ols(method="sgd", bounds=B, y_bounds=YB),
    "error/ols/over-budget": _over_budget,
    "error/ols/bad-bounds-check": _ols(bounds=B, y_bounds=YB, bounds_check=1.5),
    "error/ols/unknown-column": _ols("y ~ x + nope", bounds=B, y_bounds=YB),
    "error/ols/moment-share-plain": _ols(
        bounds=B, y_bounds=YB, precondition=False, moment_share=0.3
    ),
    # DPLinearRegression
    "DPLinearRegression/default-bounds": _lin_model(bounds=B, y_bounds=YB),
    "DPLinearRegression/plain-clip": _lin_model(clip=5.0, step_size=0.01),
    "DPLinearRegression/adassp": _lin_model(method="adassp", bounds=B, y_bounds=YB),
    "DPLinearRegression/ambssgd": _lin_model(
        method="ambssgd", bounds=B, y_bounds=YB, interval=None, steps=2
    ),
    "DPLinearRegression/ambssgd/step-size": _lin_model(
        method="ambssgd", bounds=B, y_bounds=YB, interval=None, steps=4, step_size=0.3
    ),
    "ols/ambssgd/no-check": _ols(
        method="ambssgd", bounds=B, y_bounds=YB, interval=None, steps=2, bounds_check=0
    ),
    "error/ols/ambssgd-interval": _ols(method="ambssgd", bounds=B, y_bounds=YB, steps=2),
    # dpfit.iv and DPIVRegression
    "iv/moments": _iv(),
    "iv/moments/no-check": _iv(bounds_check=0),
    "iv/moments/no-intercept": _iv("y ~ 0 + w + [x ~ z]"),
    "iv/2s-gd": _iv(method="2s-gd"),
    "iv/2s-gd/paper": _iv(method="2s-gd", noise_calibration="paper"),
    "iv/2s-gd/no-check": _iv(method="2s-gd", bounds_check=0),
    "iv/2s-gd/batched-means": _iv(method="2s-gd", interval="batched-means", steps=400),
    "iv/2s-gd/no-interval": _iv(method="2s-gd", interval=None),
    "iv/2s-gd/no-bounds": lambda: _result(
        dpfit.iv("y ~ w + [x ~ z]", IVF, rho=1.0, method="2s-gd", random_state=0)
    ),
    "error/iv/bad-rho": _iv(rho=0.0),
    "error/iv/two-roles": _iv("y ~ w + [x ~ w]"),
    "iv/no-bounds": lambda: _result(dpfit.iv("y ~ w + [x ~ z]", IVF, rho=1.0, random_state=0)),
    "DPIVRegression/moments": _iv_model(),
    "DPIVRegression/2s-gd": _iv_model(method="2s-gd"),
    # GLM family
    "glm/logit": _glm(dpfit.logit, "y ~ x + z"),
    "glm/probit": _glm(dpfit.probit, "y ~ x + z"),
    "glm/poisson": _glm(dpfit.poisson, "c ~ x + z", y_bounds=(0, 30)),
    "glm/logit/margins": _glm(dpfit.logit, "y ~ x + z", margins=True),
    "error/glm/logit-no-bounds": lambda: _result(dpfit.logit("y ~ x", GLMF, rho=1.0)),
    "error/glm/poisson-no-y-bounds": _glm(dpfit.poisson, "c ~ x + z"),
    "DPLogisticRegression": lambda: _model(
        dpfit.DPLogisticRegression(rho=2.0, bounds=[(-1, 1), (0, 10)], random_state=1).fit(
            GLMF[["x", "z"]].to_numpy(), GLMF["y"].to_numpy()
        )
    ),
    "DPPoissonRegressor": lambda: _model(
        dpfit.DPPoissonRegressor(
            rho=2.0, bounds=[(-1, 1), (0, 10)], y_bounds=(0, 30), random_state=1
        ).fit(GLMF[["x", "z"]].to_numpy(), GLMF["c"].to_numpy())
    ),
    # dpfit.minimize and AdaSSP
    "minimize/adaptive-gd": _minimize(),
    "minimize/noisy-gd": _minimize(method="noisy-gd", steps=20),
    "minimize/kl-spider": _minimize(method="kl-spider", gamma=1.0, kappa=2.0, loss_bound=1.0),
    "error/minimize/bad-rho": _minimize(rho=-2.0),
    "baselines/adassp": _adassp,
    # the algorithms behind the estimators' methods
    "algorithms/dp_ambssgd/paper": _ambssgd(),
    "algorithms/dp_ambssgd/parallel": _ambssgd(accounting="parallel", steps=4),
    "algorithms/dp_two_stage_gd": _two_stage(),
    "algorithms/dp_two_stage_gd/runs-paper": _two_stage(runs=3, noise_calibration="paper"),
}


def fingerprint(name: str) -> dict[str, Any]:
    """Run one case and record what it returns, warns and raises."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = {"value": CASES[name]()}
        except Exception as exc:  # the fingerprint records what a user sees
            out = {"error": f"{type(exc).__name__}: {exc}"}
    out["warnings"] = [f"{w.category.__name__}: {w.message}" for w in caught]
    return out


def _changed(before: Any, after: Any, path: str = "") -> list[str]:
    if isinstance(before, dict) and isinstance(after, dict):
        keys = sorted(set(before) | set(after))
        return [p for k in keys for p in _changed(before.get(k), after.get(k), f"{path}/{k}")]
    return [] if before == after else [path]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the fingerprints here")
    parser.add_argument("--diff", nargs=2, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--only", nargs="*", help="case names to run")
    args = parser.parse_args(argv)
    if args.diff:
        before, after = (json.load(open(path)) for path in args.diff)
        changed = _changed(before, after)
        layout = [p for p in changed if p.endswith("ledger_layout")]
        for path in changed:
            print(("layout  " if path in layout else "CHANGED ") + path)
        print(f"{len(before)} cases; {len(changed) - len(layout)} changed values, "
              f"{len(layout)} ledger layouts")  # fmt: skip
        return int(len(changed) > len(layout))
    names = args.only or list(CASES)
    out = {name: fingerprint(name) for name in names}
    text = json.dumps(out, indent=1, sort_keys=True)
    if args.json:
        with open(args.json, "w") as fh:
            fh.write(text + "\n")
    else:
        sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
