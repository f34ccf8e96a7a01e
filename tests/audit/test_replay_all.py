"""Layer C (reliability 3.3) across the library: record on D, replay on a worst-case neighbour.

For every private estimator and algorithm of dpfit, run once on D while recording every
mechanism call, then run on a neighbouring D' with every mechanism output replayed from the
recording, and assert:

1. the same sequence of mechanism calls (``replaying`` raises on any difference in count,
   label, sensitivity, noise or shape): no data-dependent control flow;
2. for every call, ||value_D - value_D'||_2 <= declared sensitivity, with no slack (the
   declared value carries the float rounding allowance; at large n and in other summation
   orders: ``tests/audit/test_replay_large_n.py``), and some call
   moves by a sizeable share of it (the neighbour is a real test); for a streamed matrix
   release (DP-FTRL) the distance is ||C (G - G')||_F with the mechanism's public encoder C;
3. every released output and its post-processing (iterates, estimates, intervals, summary
   text) is bit-identical, so nothing but the frozen releases feeds them (catches intervals
   or normalisations read off the raw data, reliability P2/P9);
4. the total rho charged is the sum of the calls' Delta^2 / (2 sigma^2) (or, for a parallel
   composition, the ledger's max over blocks) and equals the requested rho.

Neighbours replace (or, under add/remove, add) a record at the bound corners, whose gradient
saturates every clip. The same seed is used on both sides so that data-independent public
randomness (shuffles, schedules) is the same, as it is for the neighbouring datasets in
the privacy definition.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpfit
from dpfit.algorithms.ambssgd import dp_ambssgd
from dpfit.algorithms.dp_gd import dp_gd
from dpfit.algorithms.ftrl import dp_ftrl
from dpfit.algorithms.glm import dp_glm
from dpfit.algorithms.ssgd import dp_ssgd
from dpfit.algorithms.two_stage import dp_second_stage_gd, dp_two_stage_gd
from dpfit.baselines import adassp, ssp
from dpfit.exceptions import PrivacyWarning
from dpfit.losses import FunctionLoss, SquaredLoss
from dpfit.mechanisms import recording, replaying
from dpfit.noise import dpsgd, nu_dpftrl, tree_aggregation

RHO = 0.5


def _linear(n: int, p: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    return X, X @ np.linspace(1.0, -1.0, p) + 0.5 * rng.standard_normal(n)


def _replace_last(X, y, x_row, y_value):
    X2, y2 = X.copy(), y.copy()
    X2[-1], y2[-1] = x_row, y_value
    return X2, y2


def _add(X, y, x_row, y_value):
    return np.vstack([X, x_row]), np.append(y, y_value)


def _iv(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, 2))
    u = rng.standard_normal(n)
    X = np.column_stack([z[:, 0] + z[:, 1] + u, np.ones(n)])
    y = 0.5 * X[:, 0] + u + rng.standard_normal(n)
    return X, y, np.column_stack([z, np.ones(n)])


def _iv_neighbour(X, y, Z):
    X2, y2, Z2 = X.copy(), y.copy(), Z.copy()
    X2[-1], y2[-1], Z2[-1] = [60.0, 1.0], -500.0, [-40.0, 40.0, 1.0]
    return X2, y2, Z2


@dataclass
class Case:
    """How to run one private entry point on data and what it releases."""

    run: Callable[..., dict[str, Any]]
    data: tuple
    neighbour: tuple
    rho: float = RHO
    encoder: np.ndarray | None = None  # for streamed matrix releases
    parallel: bool = False  # rho is a parallel composition (max over blocks)
    exact: bool = True  # states exactly rho
    min_share: float = 0.25
    extra: dict = field(default_factory=dict)


def _traj(traj) -> dict[str, Any]:
    out = {"iterates": traj.iterates, "estimate": traj.estimate, "rho": traj.rho}
    out["rho_spent"] = traj.rho_spent  # realised; a privacy filter states its bound as rho
    out.update({f"release:{k}": v for k, v in traj.releases.items()})
    return out


def _model(model) -> dict[str, Any]:
    return {
        "coef": model.coef_,
        "intercept": model.intercept_,
        "conf_int": model.conf_int(target=model.result_.targets[0])
        if model.result_.targets
        else None,
        "summary": model.summary().as_text(),
        "rho": model.privacy_.rho,
    }


X0, Y0 = _linear(40, 3)
CORNER = ([30.0, -30.0, 30.0], -1e3)
ONE_PASS = _linear(2400, 3, seed=1)
KL = _linear(20_000, 3, seed=2)
KL = (KL[0] / np.linalg.norm(KL[0], axis=1, keepdims=True), np.clip(KL[1], -1, 1))
KL_LOSS = SquaredLoss(y_bound=1.0, radius=2.0)  # L0 = 3, L1 = 1
LSQ_LOSS = FunctionLoss(grads=lambda w, X, y: X * (X @ w - y)[:, None], lipschitz=1.0)
IV = _iv(60)
FTRL_MECHANISMS = {
    "nu-dpftrl": nu_dpftrl(0.1, steps=8),
    "dp-sgd": dpsgd(8),
    "tree": tree_aggregation(8),
}
IV_MODEL = (IV[0][:, :1], IV[1], IV[2][:, :2])
IV_MODEL_NEIGHBOUR = (lambda X, y, Z: (X[:, :1], y, Z[:, :2]))(*_iv_neighbour(*IV))
IV_BOUNDS = {"x0": (-5, 5), "z0": (-4, 4), "z1": (-4, 4)}
IV_FRAME = pd.DataFrame({"y": IV[1], "x": IV[0][:, 0], "z1": IV[2][:, 0], "z2": IV[2][:, 1]})
IV_FRAME_NEIGHBOUR = IV_FRAME.copy()
IV_FRAME_NEIGHBOUR.iloc[-1] = [-500.0, 60.0, -40.0, 40.0]
FRAME = pd.DataFrame({"wage": Y0, "educ": X0[:, 0], "exper": X0[:, 1]})
FRAME_NEIGHBOUR = FRAME.copy()
FRAME_NEIGHBOUR.iloc[-1] = [1e3, -30.0, 30.0]


def _dpfit_fit(**params):
    def run(X, y):
        return _model(dpfit.DPLinearRegression(rho=RHO, random_state=4, **params).fit(X, y))

    return run


def _minimize(**options):
    def run(X, y):
        return _traj(dpfit.minimize(KL_LOSS, (X, y), rho=RHO, random_state=11, **options))

    return run


def _ftrl(name):
    def run(X, y):
        return _traj(
            dp_ftrl(
                X,
                y,
                loss=LSQ_LOSS,
                clip=1.0,
                epochs=4,
                batch_size=20,
                step_size=0.5,
                rho=RHO,
                mechanism=FTRL_MECHANISMS[name],
                rng=9,
            )
        )

    return run


def _iv_model(**params):
    def run(X, y, Z):
        model = dpfit.DPIVRegression(rho=RHO, random_state=8, **params).fit(X, y, Z=Z)
        return _model(model)

    return run


def _iv_formula(frame):
    bounds = {"x": (-5, 5), "z1": (-4, 4), "z2": (-4, 4)}
    res = dpfit.iv(
        "y ~ 1 + [x ~ z1 + z2]", frame, rho=RHO, bounds=bounds, y_bounds=(-8, 8), random_state=2
    )
    return {"params": res.params, "conf_int": res.conf_int(), "summary": res.summary().as_text()}


def _ols(frame):
    res = dpfit.ols("wage ~ educ + exper", frame, rho=RHO, clip=5.0, steps=200, random_state=2)
    return {
        "params": res.params,
        "conf_int": res.conf_int(target="sample"),  # no bounds: no population interval
        "summary": res.summary().as_text(),
    }


Y_BINARY = (Y0 > 0).astype(float)
Y_COUNTS = np.floor(np.abs(Y0) * 2)
GLM_BOUNDS = {"bounds": [(-3, 3)] * 3, "steps": 30, "m": 5, "burn_in": 0}
GLM_FRAME = pd.DataFrame({"any": Y_BINARY, "educ": X0[:, 0], "exper": X0[:, 1]})
GLM_FRAME_NEIGHBOUR = GLM_FRAME.copy()
GLM_FRAME_NEIGHBOUR.iloc[-1] = [1e3, -30.0, 30.0]


def _glm_model(model_class, **params):
    def run(X, y):
        return _model(model_class(rho=RHO, random_state=5, **GLM_BOUNDS, **params).fit(X, y))

    return run


def _logit_formula(frame):
    res = dpfit.logit(
        "any ~ educ + exper", frame, rho=RHO, bounds={"educ": (-3, 3), "exper": (-3, 3)},
        steps=30, m=5, burn_in=0, random_state=2,
    )  # fmt: skip
    return {
        "params": res.params,
        "conf_int": res.conf_int(),
        "margeff": res.get_margeff(),
        "summary": res.summary().as_text(),
    }


CASES = {
    "dp_glm-logit": Case(
        run=lambda X, y: _traj(
            dp_glm(X, y, rho=RHO, steps=30, m=5, burn_in=0, margins=True, rng=3)
        ),
        data=(X0, Y_BINARY),
        neighbour=_replace_last(X0, Y_BINARY, *CORNER),
    ),
    "dp_glm-poisson-add-remove": Case(
        run=lambda X, y: _traj(
            dp_glm(
                X,
                y,
                rho=RHO,
                family="poisson",
                count_bound=8.0,
                steps=30,
                m=5,
                burn_in=0,
                relation="add-remove",
                n_public=41,
                rng=3,
            )
        ),
        data=(X0, Y_COUNTS),
        neighbour=_add(X0, Y_COUNTS, [30.0, -30.0, 30.0], 1e3),
    ),
    "DPLogisticRegression": Case(
        run=_glm_model(dpfit.DPLogisticRegression),
        data=(X0, Y_BINARY),
        neighbour=_replace_last(X0, Y_BINARY, *CORNER),
    ),
    "DPLogisticRegression-probit": Case(
        run=_glm_model(dpfit.DPLogisticRegression, link="probit"),
        data=(X0, Y_BINARY),
        neighbour=_replace_last(X0, Y_BINARY, *CORNER),
    ),
    "DPPoissonRegressor": Case(
        run=_glm_model(dpfit.DPPoissonRegressor, y_bounds=(0, 8)),
        data=(X0, Y_COUNTS),
        neighbour=_replace_last(X0, Y_COUNTS, [30.0, -30.0, 30.0], 1e3),
    ),
    "logit-formula": Case(run=_logit_formula, data=(GLM_FRAME,), neighbour=(GLM_FRAME_NEIGHBOUR,)),
    "dp_gd": Case(
        run=lambda X, y: _traj(dp_gd(X, y, rho=RHO, clip=1.0, steps=15, runs=2, rng=3)),
        data=(X0, Y0),
        neighbour=_replace_last(X0, Y0, *CORNER),
    ),
    "dp_gd-add-remove": Case(
        run=lambda X, y: _traj(
            dp_gd(X, y, rho=RHO, clip=1.0, steps=15, relation="add-remove", n_public=41, rng=3)
        ),
        data=(X0, Y0),
        neighbour=_add(X0, Y0, *CORNER),
    ),
    "DPLinearRegression-batched-means": Case(
        run=_dpfit_fit(clip=5.0, steps=300),
        data=(X0, Y0),
        neighbour=_replace_last(X0, Y0, *CORNER),
    ),
    "DPLinearRegression-independent-runs-bounds": Case(
        run=_dpfit_fit(
            total_steps=300, interval="independent-runs", bounds=[(-3, 3)] * 3, y_bounds=(-6, 6)
        ),
        data=(X0, Y0),
        neighbour=_replace_last(X0, Y0, *CORNER),
    ),
    "DPLinearRegression-checkpoints-formal": Case(
        run=_dpfit_fit(clip=5.0, steps=300, interval="checkpoints", interval_variant="formal"),
        data=(X0, Y0),
        neighbour=_replace_last(X0, Y0, *CORNER),
    ),
    "DPLinearRegression-add-remove": Case(
        run=_dpfit_fit(clip=5.0, steps=300, relation="add-remove", n_public=41),
        data=(X0, Y0),
        neighbour=_add(X0, Y0, *CORNER),
    ),
    "DPLinearRegression-adassp": Case(
        run=_dpfit_fit(method="adassp", interval=None, bounds=[(-3, 3)] * 3, y_bounds=(-6, 6)),
        data=(X0, Y0),
        neighbour=_replace_last(X0, Y0, *CORNER),
    ),
    "ols-formula": Case(run=_ols, data=(FRAME,), neighbour=(FRAME_NEIGHBOUR,)),
    "adassp": Case(
        run=lambda X, y: _traj(adassp(X, y, rho=RHO, x_bound=5.0, y_bound=8.0, rng=5)),
        data=(X0, Y0),
        neighbour=_replace_last(X0, Y0, *CORNER),
    ),
    "ssp": Case(
        run=lambda X, y: _traj(ssp(X, y, rho=RHO, x_bound=5.0, y_bound=8.0, rng=5)),
        data=(X0, Y0),
        neighbour=_replace_last(X0, Y0, *CORNER),
    ),
    "dp_two_stage_gd": Case(
        run=lambda X, y, Z: _traj(
            dp_two_stage_gd(
                X,
                y,
                Z,
                rho_theta=0.25,
                rho_beta=0.25,
                clip_theta=2.0,
                clip_beta=2.0,
                steps=10,
                step_size_theta=0.5,
                step_size_beta=0.5,
                runs=2,
                rng=6,
            )
        ),
        data=IV,
        neighbour=_iv_neighbour(*IV),
    ),
    "dp_second_stage_gd": Case(
        run=lambda X, y, Z: _traj(
            dp_second_stage_gd(
                X,
                y,
                Z,
                first_stage=np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]),
                rho=RHO,
                clip=2.0,
                steps=10,
                step_size=0.5,
                rng=6,
            )
        ),
        data=IV,
        neighbour=_iv_neighbour(*IV),
    ),
    "DPIVRegression-bounds": Case(
        run=_iv_model(method="2s-gd", bounds=IV_BOUNDS, y_bounds=(-8, 8), steps=10, m=3),
        data=IV_MODEL,
        neighbour=IV_MODEL_NEIGHBOUR,
    ),
    "DPIVRegression-moments": Case(
        run=_iv_model(bounds=IV_BOUNDS, y_bounds=(-8, 8)),
        data=IV_MODEL,
        neighbour=IV_MODEL_NEIGHBOUR,
    ),
    "DPIVRegression-batched-means": Case(
        run=_iv_model(method="2s-gd", steps=40, interval="batched-means", m=4, burn_in=0),
        data=IV_MODEL,
        neighbour=IV_MODEL_NEIGHBOUR,
    ),
    "iv-formula": Case(run=_iv_formula, data=(IV_FRAME,), neighbour=(IV_FRAME_NEIGHBOUR,)),
    **{
        f"dp_ftrl-{name}": Case(
            run=_ftrl(name),
            data=(X0, Y0),
            neighbour=_replace_last(X0, Y0, *CORNER),
            encoder=FTRL_MECHANISMS[name].encoder_matrix(),
        )
        for name in FTRL_MECHANISMS
    },
    **{
        f"minimize-{name}": Case(
            run=_minimize(**options),
            data=KL,
            neighbour=_replace_last(*KL, [40.0, -40.0, 10.0], -1e3),
        )
        for name, options in {
            "noisy-gd": {"method": "noisy-gd", "steps": 12},
            "adaptive-gd": {"method": "adaptive-gd"},
            "kl-spider": {"method": "kl-spider", "gamma": 1.0, "kappa": 2.0, "loss_bound": 1.0},
            "proximal-point": {
                "method": "proximal-point",
                "gamma": 1.0,
                "kappa": 3.0,
                "loss_bound": 1.0,
                "inner_cap": 8,
            },
        }.items()
    },
    "dp_ambssgd": Case(
        run=lambda X, y: _traj(
            dp_ambssgd(
                X,
                y,
                rho=RHO,
                feature_scale=np.sqrt(5.0),
                residual_bound=40.0,
                steps=4,
                accounting="parallel",
                rng=7,
            )
        ),
        data=ONE_PASS,
        neighbour=_replace_last(*ONE_PASS, [30.0, -30.0, 30.0], -1e3),
        parallel=True,
    ),
    "dp_ssgd": Case(
        run=lambda X, y: _traj(dp_ssgd(X, y, clip=1.0, step_size=0.01, rho=RHO, rng=7)),
        data=ONE_PASS,
        neighbour=_replace_last(*ONE_PASS, [30.0, -30.0, 30.0], -1e3),
        parallel=True,
    ),
}


def _distance(release_d, release_dp, encoder):
    diff = np.atleast_1d(release_d.value - release_dp.value)
    if encoder is not None and diff.ndim == 2:
        return float(np.linalg.norm(encoder @ diff))  # Frobenius norm of C (G - G')
    return float(np.linalg.norm(diff))


def _assert_identical(a, b, key):
    if isinstance(a, pd.DataFrame | pd.Series):
        assert a.equals(b), key
    elif isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b, err_msg=key)
    else:
        assert a == b, key


def _run(case: Case, data: tuple) -> dict[str, Any]:
    with warnings.catch_warnings():  # e.g. one-pass side-condition warnings on tiny data
        warnings.simplefilter("ignore", PrivacyWarning)
        return case.run(*data)


def _opposite_corner_first(data: tuple) -> tuple | None:
    """A second neighbour type: the first record replaced by the opposite corner."""
    X, y = data if len(data) == 2 and isinstance(data[0], np.ndarray) else (None, None)
    if X is None or X.shape[1] != 3:
        return None
    X2, y2 = X.copy(), y.copy()
    X2[0], y2[0] = [-40.0, 40.0, -40.0], 1e3
    return X2, y2


NEIGHBOURS = [(name, "corner-last") for name in sorted(CASES)] + [
    (name, "opposite-corner-first")
    for name in sorted(CASES)
    if _opposite_corner_first(CASES[name].data) is not None
    and "add-remove" not in name  # add/remove neighbours add a record instead
]


@pytest.mark.parametrize("name, kind", NEIGHBOURS)
def test_record_replay_on_a_worst_case_neighbour(name, kind):
    case = CASES[name]
    neighbour = case.neighbour if kind == "corner-last" else _opposite_corner_first(case.data)
    with recording() as rec:
        out_d = _run(case, case.data)
    with replaying(rec) as rep:  # raises ReplayMismatchError on any change in the calls
        out_dp = _run(case, neighbour)
    assert len(rec) > 0 and rec.entries == rep.entries
    shares = [
        _distance(a, b, case.encoder) / a.entry.sensitivity
        for a, b in zip(rec.releases, rep.releases, strict=True)
    ]
    assert max(shares) <= 1.0, name
    assert max(shares) > case.min_share, f"{name}: the neighbour moved no query"
    for key in out_d:
        _assert_identical(out_d[key], out_dp[key], f"{name}: {key}")
    charged = out_d.get("rho")
    if charged is not None:
        assert charged <= case.rho * (1 + 1e-12)
        if case.exact:
            assert charged == pytest.approx(case.rho, rel=1e-12)
        if not case.parallel:
            total = math.fsum(
                e.sensitivity**2 / (2 * e.noise_std**2) * e.count for e in rec.entries
            )
            assert total == pytest.approx(out_d.get("rho_spent", charged), rel=1e-12)


DP_GD_MODULE = __import__("dpfit.algorithms.dp_gd", fromlist=["public_n"])


def _actual_n_normaliser(monkeypatch):
    # Pitfall P2: divide the clipped sum by the private n instead of the public count.
    monkeypatch.setattr(DP_GD_MODULE, "public_n", lambda n, n_public, relation: n)


def _half_sensitivity(monkeypatch):
    real = DP_GD_MODULE.mean_sensitivity
    monkeypatch.setattr(
        DP_GD_MODULE, "mean_sensitivity", lambda clip, n, rel: real(clip, n, "add-remove")
    )


def _data_dependent_steps(monkeypatch):
    real = DP_GD_MODULE._descend

    def descend(X, y, theta0, *, steps, **kw):  # one step more when some |y| is large
        return real(X, y, theta0, steps=steps + int(np.abs(y).max() > 100), **kw)

    monkeypatch.setattr(DP_GD_MODULE, "_descend", descend)


@pytest.mark.parametrize(
    "mutate, case",
    [
        (_actual_n_normaliser, "dp_gd-add-remove"),
        (_half_sensitivity, "dp_gd"),
        (_data_dependent_steps, "dp_gd"),
    ],
)
def test_replay_catches_broken_variants(mutate, case, monkeypatch):
    mutate(monkeypatch)
    case = CASES[case]
    # ReplayMismatchError is an AssertionError; an extra release may hit the budget first
    with pytest.raises((AssertionError, dpfit.BudgetExceededError)):
        with recording() as rec:
            _run(case, case.data)
        with replaying(rec) as rep:
            _run(case, case.neighbour)
        for a, b in zip(rec.releases, rep.releases, strict=True):
            assert np.linalg.norm(a.value - b.value) <= a.entry.sensitivity


def test_torch_make_private_replays_on_a_neighbour():
    # The optional PyTorch path (dpfit.torch.make_private): the library's fixed-order batches,
    # k = 2 epochs of b = 2 batches, its own clipping and one charged nu-DP-FTRL stream; the
    # neighbour replaces a record.
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader, TensorDataset

    from dpfit.torch import make_private

    def train(X, y):
        torch.manual_seed(0)
        model = torch.nn.Linear(3, 1, dtype=torch.float64)
        loader = DataLoader(
            TensorDataset(torch.from_numpy(X), torch.from_numpy(y)[:, None]), batch_size=10
        )
        run = make_private(
            model,
            torch.optim.SGD(model.parameters(), lr=0.1),
            loader,
            loss_fn=torch.nn.functional.mse_loss,
            clip=1.0,
            epochs=2,
            rho=0.5,
            noise="nu-dpftrl",
            noise_mode="regenerate",
            random_state=3,
        )
        for _ in range(2):
            for _ in run.data_loader:
                run.optimizer.step()
        weights = np.concatenate([p.detach().numpy().ravel() for p in model.parameters()])
        return weights, run

    X, y = _linear(20, 3, seed=5)
    X2, y2 = X.copy(), y.copy()
    X2[0], y2[0] = [30.0, -30.0, 30.0], -1e3
    with recording() as rec:
        w1, run = train(X, y)
    with replaying(rec) as rep:
        w2, _ = train(X2, y2)
    (a,), (b,) = rec.releases, rep.releases
    moved = np.linalg.norm(run.stream.mechanism.encoder_matrix() @ (a.value - b.value))
    assert 0.25 * a.entry.sensitivity < moved <= a.entry.sensitivity
    np.testing.assert_array_equal(w1, w2)
    assert run.ledger.rho == pytest.approx(0.5, rel=1e-12)
