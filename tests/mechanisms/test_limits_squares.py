"""Public settings that passed the first scale checks and still failed after the charge.

A second review found three: ``DPLinearRegression(bounds, y_bounds, clip=1e78)`` charged 0.9
of rho = 1 and then raised OverflowError where the sandwich squares the meat's noise s.d.
(s ~ clip^2, so clip^4); ``DPIVRegression(method="2s-gd", clip=(1, 1e200))`` charged rho and
released infinite standard errors and (-inf, inf) intervals (the iterates' squares); and
feature bounds of 1e170 with y bounds of 4 gave charged fits whose standard errors underflowed
to 0 when mapped back to the data's units (a point interval, t = inf). Each is now refused
in one line before anything is charged, and the largest (or smallest) allowed setting fits
to finite, positive standard errors. ``rho`` of 1e70 and more used to be charged and then
``summary()`` raised from the epsilon conversion.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest

import dpfit
from dpfit.algorithms.two_stage import dp_two_stage_gd
from dpfit.exceptions import PrivacyWarning
from dpfit.inference.population import CovarianceEstimate, transform
from dpfit.mechanisms import recording
from dpfit.mechanisms.limits import SMALLEST, check_smallest_factor
from dpfit.privacy import Budget, PrivacyLedger


def _xy(n=60, p=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, p))
    return X, X @ np.linspace(1.0, -0.5, p) + 0.3 * rng.standard_normal(n)


def _refused(name, fit):
    """``fit(budget)`` raises one line starting with ``name``; nothing charged or drawn."""
    budget = Budget(rho=1.0)
    with recording() as rec, warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        with pytest.raises(ValueError) as info:
            fit(budget)
    message = str(info.value)
    assert message.startswith(name) and "\n" not in message, message
    assert budget.spent == 0.0 and len(rec) == 0
    return message


def _largest(message, name="clip"):
    """The largest allowed value the message names (printed to 6 digits: less a margin)."""
    value = float(re.search(rf"{name} must be at most ([0-9.e+-]+)", message).group(1))
    return value * (1.0 - 1e-5)


def _finite_positive(model):
    """Coefficients, every released standard error and interval finite; errors > 0; the
    summary prints."""
    result = model.result_
    for target in result.targets:
        bse = result.covariance(target).bse
        assert np.isfinite(bse).all() and (bse > 0).all(), (target, bse)
        assert np.isfinite(result.conf_int(target=target).to_numpy()).all()
    assert np.isfinite(np.ravel(model.coef_)).all()
    text = str(model.summary())
    assert not {"inf", "-inf", "nan"} & set(text.split())


def _linear(**params):
    X, y = _xy()

    def fit(budget):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyWarning)
            return dpfit.DPLinearRegression(rho=1.0, random_state=1, **params).fit(
                X, y, budget=budget
            )

    return fit


def test_a_clip_whose_meat_noise_squared_overflows_is_refused_before_the_charge():
    # charged 0.9 of rho = 1, then OverflowError in the meat's de-spreading (s ** 2)
    fit = _linear(bounds=[(-1, 1)] * 2, y_bounds=(-4, 4), clip=1e78)
    message = _refused("clip", fit)
    assert "their squares" in message
    largest = _largest(message)
    assert 1e70 < largest < 1e78
    # the largest allowed clip fits, finite to the end
    at_largest = _linear(bounds=[(-1, 1)] * 2, y_bounds=(-4, 4), clip=largest)
    _finite_positive(at_largest(Budget(rho=1.0)))


@pytest.mark.parametrize("clip", [(1.0, 1e200), (1e154, 1e154)])
def test_two_stage_clips_whose_iterates_squared_overflow_are_refused(clip):
    # charged rho = 1 and released std err inf and (-inf, inf) intervals
    X, y = _xy(200)
    Z = X + 0.3 * np.random.default_rng(1).uniform(-1, 1, X.shape)

    def fit(budget, clip=clip):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyWarning)
            return dpfit.DPIVRegression(rho=1.0, method="2s-gd", clip=clip, random_state=1).fit(
                X, y, Z, budget=budget
            )

    message = _refused("clip_", fit)
    assert "iterates" in message and "squares" in message
    name = message.split(" ")[0]
    allowed = _largest(message, name)
    fixed = tuple(min(c, allowed) if f"clip_{s}" == name else min(c, 1e140)
                  for c, s in zip(clip, ("theta", "beta"), strict=True))  # fmt: skip
    _finite_positive(fit(Budget(rho=1.0), clip=fixed))


def test_dp_two_stage_gd_checks_its_iterates_before_charging():
    X, y = _xy(200)
    ledger = PrivacyLedger(budget=Budget(rho=1.0))
    with pytest.raises(ValueError, match=r"^clip_beta must be at most .* or step_size at most"):
        dp_two_stage_gd(
            X, y, X, rho_theta=0.5, rho_beta=0.5, clip_theta=1.0, clip_beta=1e200, steps=20,
            step_size_theta=1.0, step_size_beta=0.5, rng=0, ledger=ledger,
        )  # fmt: skip
    assert ledger.budget.spent == 0.0 and len(ledger) == 0


@pytest.mark.parametrize(
    "params",
    [
        {"bounds": [(-1e170, 1e170)] * 2, "y_bounds": (-4, 4)},  # bse 0 for both slopes
        {"bounds": [(-1e200, 1e200), (-1, 1)], "y_bounds": (-4, 4), "method": "adassp"},
        {"bounds": [(-1, 1)] * 2, "y_bounds": (-1e-150, 1e-150)},  # every variance underflows
        {"bounds": [(-1e150, 1e150)] * 2, "y_bounds": (-1e-5, 1e-5), "clip": 1.0},
    ],
)
def test_bounds_whose_variances_underflow_in_the_original_units_are_refused(params):
    X, y = _xy()
    scale = max(hi for _, hi in params["bounds"])
    X[:, 0] *= scale / 2  # data at the bounds' scale: before, a charged fit with bse 0
    message = _refused(
        "bounds and y_bounds",
        lambda budget: dpfit.DPLinearRegression(rho=1.0, random_state=1, **params).fit(
            X, y, budget=budget
        ),
    )
    assert "at least 6.41e-145" in message


def test_bounds_just_inside_the_floor_fit_to_positive_standard_errors():
    # the smallest factor, y's half-range over x's, just above sqrt(SMALLEST)
    half = 4.0 / (1.01 * SMALLEST**0.5)
    X, y = _xy(200)
    X[:, 0] *= half / 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        model = dpfit.DPLinearRegression(
            rho=1.0, bounds=[(-half, half), (-1, 1)], y_bounds=(-4, 4), random_state=1
        ).fit(X, y)
    _finite_positive(model)


@pytest.mark.parametrize("scaled", ["x", "all"])
def test_iv_bounds_whose_variances_underflow_are_refused(scaled):
    rng = np.random.default_rng(0)
    n = 200
    df = pd.DataFrame({"z": rng.uniform(-1, 1, n), "w": rng.uniform(-1, 1, n)})
    df["x"] = df.z + 0.3 * rng.uniform(-1, 1, n)
    df["y"] = df.x - 0.5 * df.w + 0.3 * rng.standard_normal(n)
    B = 1e170
    df["x"] *= B / 2
    bounds = {"x": (-B, B), "z": (-2, 2), "w": (-2, 2)}
    y_bounds = (-4, 4) if scaled == "x" else (-1e-10, 1e-10)
    _refused(
        "bounds and y_bounds",
        lambda budget: dpfit.iv(
            "y ~ w + [x ~ z]",
            df,
            rho=1.0,
            budget=budget,
            bounds=bounds,
            y_bounds=y_bounds,
            random_state=1,
        ),
    )


def test_check_smallest_factor_is_the_boundary():
    floor = SMALLEST**0.5
    check_smallest_factor("x", floor * 1.0000001, what="w", fix="f")
    with pytest.raises(ValueError, match=r"^x: w is "):
        check_smallest_factor("x", floor * 0.99, what="w", fix="f")
    with pytest.raises(ValueError):
        check_smallest_factor("x", float("nan"), what="w", fix="f")


def test_a_covariance_that_underflows_in_the_map_back_is_never_released():
    # the last line behind the checks: a variance of 0 or inf in the original units raises
    estimate = CovarianceEstimate(target="population", cov=np.eye(2), dof=np.inf, description="")
    assert np.allclose(transform(estimate, np.diag([2.0, 3.0])).bse, [2.0, 3.0])
    for J in (np.diag([1.0, 1e-200]), np.diag([1.0, 1e200])):
        with pytest.raises(ValueError, match="does not map back to the original units"):
            transform(estimate, J)


@pytest.mark.parametrize("rho", [1e70, 1e300])
def test_a_fit_at_a_huge_rho_prints_its_summary_and_statement(rho):
    # charged, then summary() raised ValueError from the epsilon root finder (rho >= 5e69)
    X, y = _xy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        model = dpfit.DPLinearRegression(
            rho=rho, bounds=[(-1, 1)] * 2, y_bounds=(-4, 4), random_state=1
        ).fit(X, y)
    text = str(model.summary())
    epsilon = model.result_.epsilon(1e-5)
    assert epsilon == pytest.approx(rho, rel=1e-15) and epsilon >= model.result_.ledger.rho
    assert f"({epsilon:.4g}, 1e-05) via CKS 2020" in text
    statement = model.result_.ledger.statement()
    assert statement.count(f"({epsilon:.4g}, 1e-05)-DP") == 2  # CKS and the exact curve


def test_cli_failure_after_noise_was_drawn_is_one_line(tmp_path, monkeypatch, capsys):
    from dpfit.algorithms import preconditioned_gd
    from dpfit.cli import main

    X, y = _xy(200, 1)
    path = tmp_path / "d.csv"
    pd.DataFrame({"x": X[:, 0], "y": y}).to_csv(path, index=False)
    store = tmp_path / "b.sqlite"
    budget = dpfit.Budget.open(store, dataset="d", rho=1.0)

    def broken(*args, **kwargs):  # an internal failure after the first releases
        raise OverflowError(34, "Numerical result out of range: 1.2345e300")

    monkeypatch.setattr(preconditioned_gd, "noisy_sandwich", broken)
    argv = ["fit", str(path), "--formula", "y ~ x", "--rho", "0.5", "--seed", "0"]
    argv += ["--bound", "x=-1,1", "--y-bounds=-4,4", "--budget-store", str(store)]
    assert main(argv) == 1  # a raw traceback before
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 or all("warning" in line for line in err[:-1])
    assert "internal error (OverflowError" in err[-1] and "1.2345e300" not in err[-1]
    assert 0.0 < budget.spent <= 0.5  # what was drawn stays charged
