"""Public settings whose sums, noise or results would overflow are refused before any charge.

Each entry point proves from public inputs alone (:mod:`dpfit.mechanisms.limits`) that its
clipped sums, sensitivities, noisy releases, iterates and results stay finite, and otherwise
raises ONE line naming the parameter and its largest allowed value, with nothing charged,
drawn or recorded. The first tests are the exact reproductions of the findings: before
these checks, ``dp_gd`` with ``clip=1e307`` and 18 records at 1e307 raised after charging
rho = 1 (with one record at 0 it ran), ``adassp`` with ``x_bound=1e154`` likewise,
``DPLinearRegression(bounds, y_bounds, clip=1e200)`` raised OverflowError after 0.85 of
rho = 1, ``--y-bounds=-1e308,1e308`` printed infinite coefficients and charged 0.5,
y bounds of 1e160 gave infinite intervals, ``dpfit.iv`` with a 1e308 bound gave NaN and
charged 1.0, and ``make_private(clip=1e300)`` trained to infinite weights.
"""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pandas as pd
import pytest

import dpfit
from dpfit.algorithms.ambssgd import dp_ambssgd
from dpfit.algorithms.dp_gd import dp_gd
from dpfit.algorithms.ftrl import dp_ftrl
from dpfit.algorithms.ssgd import dp_ssgd
from dpfit.algorithms.two_stage import dp_two_stage_gd
from dpfit.baselines import adassp, ssp
from dpfit.baselines.fixed_clip_sgd import fixed_clip_sgd
from dpfit.baselines.friendlycore import friendlycore_2sls
from dpfit.baselines.private_grid_search import private_grid_search
from dpfit.exceptions import PrivacyWarning
from dpfit.losses import FunctionLoss
from dpfit.mechanisms import recording
from dpfit.mechanisms.limits import LIMIT, check_public_scale, largest_allowed
from dpfit.privacy import Budget, PrivacyLedger


def _refused(run, name):
    """``run(ledger)`` raises one line naming ``name`` and a largest value; nothing charged."""
    budget = Budget(rho=10.0)
    with recording() as rec, warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        with pytest.raises(ValueError) as info:
            run(PrivacyLedger(budget=budget))
    message = str(info.value)
    assert message.startswith(name) and "at most" in message and "\n" not in message, message
    assert budget.spent == 0.0 and len(rec) == 0
    return message


def test_dp_gd_clip_whose_sum_overflows_is_refused_whatever_the_records():
    X, y = np.ones((18, 1)), np.full(18, 1e307)
    first = _refused(
        lambda led: dp_gd(X, y, rho=1.0, clip=1e307, steps=3, rng=0, ledger=led), "clip"
    )
    y[0] = 0.0  # used to run: whether it failed depended on the records
    again = _refused(
        lambda led: dp_gd(X, y, rho=1.0, clip=1e307, steps=3, rng=0, ledger=led), "clip"
    )
    assert first == again and "n = 18" in first


def test_dp_gd_step_size_whose_iterates_overflow_is_refused():
    X, y = np.ones((18, 1)), np.ones(18)
    message = _refused(
        lambda led: dp_gd(X, y, rho=1.0, clip=1.0, steps=10, step_size=1e300, rng=0, ledger=led),
        "clip",
    )
    assert "or step_size at most" in message


def test_a_clip_whose_interval_overflows_is_refused():
    # the iterates stayed finite but their covariance did not: the sample interval was inf
    message = _fit_refused("clip", clip=1e160, steps=200)
    assert "squares" in message and "step_size at most" in message


@pytest.mark.parametrize("baseline", [adassp, ssp])
def test_sufficient_statistics_bounds_that_overflow_are_refused(baseline):
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((50, 2)) * 1e154, rng.standard_normal(50)
    _refused(
        lambda led: baseline(X, y, rho=1.0, x_bound=1e154, y_bound=1.0, rng=0, ledger=led),
        "x_bound",
    )
    _refused(
        lambda led: baseline(X, y, rho=1.0, x_bound=1.0, y_bound=1e307, rng=0, ledger=led),
        "y_bound",
    )


def _xy(n=200, p=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, p))
    return X, X @ np.ones(p) + 0.1 * rng.standard_normal(n)


def _fit_refused(name, **params):
    X, y = _xy()
    budget = Budget(rho=1.0)
    model = dpfit.DPLinearRegression(rho=1.0, random_state=0, **params)
    with recording() as rec, warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        with pytest.raises(ValueError) as info:
            model.fit(X, y, budget=budget)
    message = str(info.value)
    assert message.startswith(name) and "\n" not in message, message
    assert budget.spent == 0.0 and len(rec) == 0
    return message


def test_estimator_clip_whose_omega_sensitivity_overflows_is_refused():
    # clip^2 overflowed in Omega's sensitivity after 0.85 of rho = 1 was charged
    message = _fit_refused("clip", bounds=[(-1, 1)] * 2, y_bounds=(-1, 1), clip=1e200)
    assert "at most" in message


@pytest.mark.parametrize(
    "params, name",
    [
        ({"bounds": [(-1, 1)] * 2, "y_bounds": (-1e308, 1e308)}, "y_bounds"),  # width overflows
        ({"bounds": [(-1, 1)] * 2, "y_bounds": (-1e160, 1e160)}, "y_bounds half-range"),
        ({"bounds": [(-1e-160, 1e-160)] * 2, "y_bounds": (-1, 1)}, "y_bounds half-range"),
        ({"bounds": [(-1, 1)] * 2, "y_bounds": (-1e160, 1e160), "method": "adassp"}, "y_bounds"),
        ({"bounds": [(-1e-160, 1e-160)] * 2, "clip": 1.0}, "bounds"),
    ],
)
def test_bounds_whose_results_or_intervals_overflow_are_refused(params, name):
    _fit_refused(name, **params)


def test_wide_bounds_below_the_limit_give_finite_results_and_intervals():
    X, y = _xy()
    model = dpfit.DPLinearRegression(
        rho=1.0, bounds=[(-1, 1)] * 2, y_bounds=(-1e100, 1e100), random_state=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        model.fit(X, y)
    assert np.isfinite(model.coef_).all() and math.isfinite(model.intercept_)
    assert np.isfinite(model.conf_int().to_numpy()).all()


def test_cli_fit_with_overflowing_y_bounds_charges_nothing(tmp_path, capsys):
    from dpfit.cli import main

    X, y = _xy(400, 1)
    path = tmp_path / "data.csv"
    pd.DataFrame({"x": X[:, 0], "y": y}).to_csv(path, index=False)
    store = tmp_path / "b.sqlite"
    budget = dpfit.Budget.open(store, dataset="data", rho=1.0)
    argv = ["fit", str(path), "--formula", "y ~ x", "--rho", "0.5", "--seed", "0"]
    argv += ["--bound", "x=-1,1", "--y-bounds=-1e308,1e308", "--budget-store", str(store)]
    assert main(argv) == 2  # printed -inf, -inf, inf, exited 0 and charged 0.5
    assert "y_bounds" in capsys.readouterr().err
    assert budget.spent == 0.0


def _iv_frame(n=500, seed=0):
    rng = np.random.default_rng(seed)
    z1, z2, u = rng.standard_normal((3, n))
    x = z1 + z2 + u
    return pd.DataFrame({"y": 0.5 * x + u, "x": x, "z1": z1, "z2": z2})


@pytest.mark.parametrize(
    "bounds, y_bounds, name",
    [
        ({"x": (-5, 5), "z1": (-4, 4), "z2": (-1e308, 1e308)}, (-8, 8), "bounds"),
        ({"x": (-5, 5), "z1": (-4, 4), "z2": (-4, 4)}, (-1e308, 1e308), "y_bounds"),
        ({"x": (-5, 5), "z1": (-4, 4), "z2": (-4, 4)}, (-1e160, 1e160), "y_bounds half-range"),
    ],
)
def test_iv_bounds_that_overflow_are_refused_before_any_charge(bounds, y_bounds, name):
    budget = Budget(rho=1.0)
    with recording() as rec, warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        with pytest.raises(ValueError) as info:  # gave NaN and charged 1.0
            dpfit.iv(
                "y ~ 1 + [x ~ z1 + z2]",
                _iv_frame(),
                rho=1.0,
                bounds=bounds,
                y_bounds=y_bounds,
                random_state=0,
                budget=budget,
            )
    assert str(info.value).startswith(name) and "\n" not in str(info.value)
    assert budget.spent == 0.0 and len(rec) == 0


def test_iv_two_stage_clip_is_refused_before_the_standardisation_is_charged():
    # raised "two_stage/theta-gradient: the query value is not finite" after 0.1045 of rho = 1
    X, y, Z = _iv_arrays(500)
    model = dpfit.DPIVRegression(
        rho=1.0,
        method="2s-gd",
        bounds={"x0": (-5, 5), "z0": (-4, 4), "z1": (-4, 4)},
        y_bounds=(-8, 8),
        clip=(1e307, 1.0),
        random_state=0,
    )
    _refused(lambda ledger: model.fit(X, y, Z=Z, budget=ledger.budget), "clip_theta")


def test_torch_clip_whose_gradients_overflow_is_refused():
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader, TensorDataset

    from dpfit.torch import make_private

    torch.manual_seed(0)
    X, y = torch.randn(40, 3), torch.randn(40, 1)
    model = torch.nn.Linear(3, 1)  # float32: the clip used to train to infinite weights
    loader = DataLoader(TensorDataset(X, y), batch_size=10)

    def run(ledger):
        make_private(
            model,
            torch.optim.SGD(model.parameters(), lr=0.1),
            loader,
            loss_fn=torch.nn.functional.mse_loss,
            clip=1e300,
            epochs=2,
            rho=0.5,
            ledger=ledger,
            random_state=3,
        )

    _refused(run, "clip")


def _grads(w, X, y):
    return X * (X @ w - y)[:, None]


def _values(w, X, y):
    return 0.5 * (X @ w - y) ** 2


LSQ = FunctionLoss(grads=_grads, values=_values, lipschitz=1e300)


def _iv_arrays(n=100):
    frame = _iv_frame(n)
    return frame[["x"]].to_numpy(), frame["y"].to_numpy(), frame[["z1", "z2"]].to_numpy()


X0, Y0 = _xy(400, 3)
ENTRY_POINTS = {
    "dp_two_stage_gd": (
        lambda led: dp_two_stage_gd(
            *_iv_arrays(),
            rho_theta=0.5,
            rho_beta=0.5,
            clip_theta=1e307,
            clip_beta=1.0,
            steps=3,
            step_size_theta=0.5,
            step_size_beta=0.5,
            rng=0,
            ledger=led,
        ),
        "clip_theta",
    ),
    "dp_ssgd": (
        lambda led: dp_ssgd(X0, Y0, clip=1e307, step_size=0.1, rho=1.0, rng=0, ledger=led),
        "clip",
    ),
    "dp_ambssgd": (
        lambda led: dp_ambssgd(
            X0, Y0, rho=1.0, feature_scale=1.0, residual_bound=1e306, steps=2, rng=0, ledger=led
        ),
        "residual_bound",
    ),
    "dp_ftrl": (
        lambda led: dp_ftrl(
            X0,
            Y0,
            loss=LSQ,
            clip=1e300,
            epochs=1,
            batch_size=40,
            step_size=0.1,
            rho=1.0,
            rng=0,
            ledger=led,
        ),
        "clip",
    ),
    "minimize": (
        lambda led: dpfit.minimize(
            LSQ,
            (X0, Y0),
            rho=1.0,
            method="noisy-gd",
            steps=2,
            step_size=0.1,
            random_state=0,
            ledger=led,
        ),
        "lipschitz",
    ),
    "friendlycore_2sls": (
        lambda led: friendlycore_2sls(
            *_iv_arrays(), rho=1.0, radius=1.0, bound=1e306, rng=0, ledger=led
        ),
        "bound",
    ),
    "fixed_clip_sgd": (
        lambda led: fixed_clip_sgd(
            X0,
            Y0,
            rho=1.0,
            clip=1e306,
            steps=2,
            step_size=0.1,
            sampling_rate=0.5,
            rng=0,
            ledger=led,
        ),
        "clip",
    ),
    "private_grid_search": (
        lambda led: private_grid_search(
            FunctionLoss(grads=_grads, values=_values, lipschitz=1.0),
            X0,
            Y0,
            rho=1.0,
            candidates=[{"steps": 1}],
            value_bound=1e306,
            method="noisy-gd",
            rng=0,
            ledger=led,
        ),
        "value_bound",
    ),
}


@pytest.mark.parametrize("name", sorted(ENTRY_POINTS))
def test_every_entry_point_refuses_an_overflowing_setting_before_any_charge(name):
    run, parameter = ENTRY_POINTS[name]
    _refused(run, parameter)


def test_largest_allowed_is_the_boundary():
    def peaks(v):
        return (1000.0 * v, v * v)

    allowed = largest_allowed(peaks, 1e300)
    assert max(peaks(allowed)) <= LIMIT < max(peaks(math.nextafter(allowed, math.inf)))
    assert check_public_scale("x", allowed, peaks, what="test") == allowed
    with pytest.raises(ValueError, match=re.escape(f"x must be at most {allowed:.6g} ")):
        check_public_scale("x", 1e300, peaks, what="test")
