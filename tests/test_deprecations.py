"""Renamed public names: the old spelling gives the same result, with a DeprecationWarning
naming the new one; both spellings at once are refused."""

from __future__ import annotations

import numpy as np
import pytest

from dpfit import algorithms as alg
from dpfit import baselines
from dpfit.privacy import split


def _data(n=3000, seed=0):
    gen = np.random.default_rng(seed)  # synthetic data, not privacy noise
    X = gen.uniform(-1.0, 1.0, (n, 2))
    return X, X @ np.array([1.0, -0.5]) + 0.1 * gen.standard_normal(n)


def _stream(X, y, size=500):
    return iter([(X[i : i + size], y[i : i + size]) for i in range(0, len(y), size)])


ONE_PASS = {
    "dp_ambssgd": lambda X, y, **kw: alg.dp_ambssgd(
        X, y, rho=1.0, feature_scale=2.0, residual_bound=3.0, rng=1, **kw
    ),
    "dp_ssgd": lambda X, y, **kw: alg.dp_ssgd(X, y, rho=1.0, clip=2.0, step_size=0.01, rng=1, **kw),
    "onepass_sgd": lambda X, y, **kw: baselines.onepass_sgd(X, y, feature_scale=2.0, rng=1, **kw),
}


@pytest.mark.filterwarnings("ignore::dpfit.exceptions.SideConditionWarning")
@pytest.mark.parametrize("name", sorted(ONE_PASS))
def test_n_is_the_deprecated_name_of_n_public(name):
    X, y = _data()
    run = ONE_PASS[name]
    new = run(_stream(X, y), None, n_public=len(y), shuffle=False)
    with pytest.warns(DeprecationWarning, match=r"n= is deprecated.*use n_public="):
        old = run(_stream(X, y), None, n=len(y), shuffle=False)
    np.testing.assert_array_equal(old.iterates, new.iterates)
    assert old.config == new.config
    with pytest.raises(TypeError, match="not both"):
        run(_stream(X, y), None, n=len(y), n_public=len(y), shuffle=False)


def test_the_deprecation_points_at_the_callers_line():
    X, y = _data()
    with pytest.warns(DeprecationWarning) as record:
        ONE_PASS["onepass_sgd"](_stream(X, y), None, n=len(y), shuffle=False)
    assert record[0].filename == __file__


def test_dp_two_stage_gd_takes_the_total_rho():
    """rho, as every algorithm: the two stages get its exact halves (privacy.split)."""
    gen = np.random.default_rng(2)
    Z = gen.standard_normal((2000, 1))
    u = gen.standard_normal(2000)
    X = Z + (u + gen.standard_normal(2000))[:, None]
    y = 0.5 * X[:, 0] + u
    kw = dict(clip_theta=5.0, clip_beta=5.0, steps=10, step_size_theta=1.0, step_size_beta=0.5)
    total = alg.dp_two_stage_gd(X, y, Z, rho=1.3, rng=3, **kw)
    theta, beta = split(1.3, 2)
    halves = alg.dp_two_stage_gd(X, y, Z, rho_theta=theta, rho_beta=beta, rng=3, **kw)
    np.testing.assert_array_equal(total.iterates, halves.iterates)
    assert total.rho <= 1.3 and total.config["rho_theta"] == theta
    with pytest.raises(TypeError, match="not both"):
        alg.dp_two_stage_gd(X, y, Z, rho=1.0, rho_theta=0.5, rho_beta=0.5, **kw)
    with pytest.raises(TypeError, match="give rho"):
        alg.dp_two_stage_gd(X, y, Z, rho_theta=0.5, **kw)


@pytest.mark.parametrize("name", ["dp_ftrl", "fixed_clip_sgd", "friendlycore_2sls"])
def test_n_public_is_accepted_and_checked(name):
    """n is public under replace-one: n_public, where given, must be the number of rows."""
    from dpfit.losses import SquaredLoss

    X, y = _data(600)
    Z = X[:, :2] + 0.1
    runs = {
        "dp_ftrl": lambda **kw: alg.dp_ftrl(
            X, y, loss=SquaredLoss(x_bound=2.0, y_bound=3.0), clip=2.0, epochs=1,
            batch_size=100, step_size=0.1, rho=1.0, rng=1, **kw,
        ),
        "fixed_clip_sgd": lambda **kw: baselines.fixed_clip_sgd(
            X, y, rho=1.0, clip=2.0, steps=5, step_size=0.1, sampling_rate=0.1, rng=1, **kw
        ),
        "friendlycore_2sls": lambda **kw: baselines.friendlycore_2sls(
            X, y, Z, rho=1.0, radius=5.0, bound=6.0, rng=1, **kw
        ),
    }  # fmt: skip
    run = runs[name]
    np.testing.assert_array_equal(run(n_public=600).estimate, run().estimate)
    with pytest.raises(ValueError, match="n_public must equal"):
        run(n_public=599)
    with pytest.raises(ValueError, match="replace-one"):
        run(relation="add-remove", n_public=600)


def test_baselines_ols_is_the_deprecated_name_of_nonprivate_ols():
    X, y = _data(200)
    D = np.column_stack([np.ones(len(y)), X])
    with pytest.warns(DeprecationWarning, match=r"dpfit\.baselines\.nonprivate_ols"):
        old = baselines.ols(D, y)
    new = baselines.nonprivate_ols(D, y)
    np.testing.assert_array_equal(old.params, new.params)
    assert baselines.ols.__name__ == "ols" and "nonprivate_ols" in baselines.ols.__doc__


def test_std_errors_is_the_deprecated_name_of_bse():
    X, y = _data(200)
    D = np.column_stack([np.ones(len(y)), X])
    fits = [
        baselines.nonprivate_ols(D, y),
        baselines.two_sls(X[:, :1], y, X[:, 1:] + X[:, :1], cov_type="robust"),
    ]
    for fit in fits:
        with pytest.warns(DeprecationWarning, match="use bse"):
            np.testing.assert_array_equal(fit.std_errors, fit.bse)


def test_order_is_the_deprecated_name_of_the_ftrl_schedule():
    """dp_ftrl's batch schedule is `schedule`; `order` is dpfit.noise's participation pattern."""
    from dpfit.losses import SquaredLoss

    X, y = _data(400)
    kw = dict(
        loss=SquaredLoss(x_bound=2.0, y_bound=3.0), clip=1.0, epochs=2, batch_size=50,
        step_size=0.1, rho=1.0, rng=0,
    )  # fmt: skip
    new = alg.dp_ftrl(X, y, schedule="reshuffle", **kw)
    with pytest.warns(DeprecationWarning, match="use schedule="):
        old = alg.dp_ftrl(X, y, order="reshuffle", **kw)
    np.testing.assert_array_equal(old.iterates, new.iterates)
    assert new.config["schedule"] == "reshuffle"
    plan = alg.plan_ftrl(400, 2, **{k: v for k, v in kw.items() if k != "rng"})
    with pytest.warns(DeprecationWarning, match="FtrlPlan.schedule"):
        assert plan.order == plan.schedule == "fixed"
    with pytest.raises(TypeError, match="not both"):
        alg.dp_ftrl(X, y, order="fixed", schedule="fixed", **kw)


def _runs_fit(**kw):
    import dpfit

    X, y = _data(2000, seed=4)
    model = dpfit.DPLinearRegression(rho=1.0, clip=2.0, step_size=0.3, m=4,
                                     interval="independent-runs", random_state=0, **kw)
    return model.fit(X, y)  # fmt: skip


def test_steps_counting_all_independent_runs_is_deprecated_for_total_steps():
    """steps= is one run's steps everywhere (dp_gd, DPIVRegression); DPLinearRegression with
    interval="independent-runs" counted all m runs with it: that use warns and names
    total_steps, with the same fit."""
    import warnings

    import dpfit

    new = _runs_fit(total_steps=400)
    with pytest.warns(DeprecationWarning, match=r"use total_steps=400 \(same meaning\)") as rec:
        old = _runs_fit(steps=400)
    assert rec[0].filename == __file__  # the caller's line
    np.testing.assert_array_equal(old.coef_, new.coef_)
    np.testing.assert_array_equal(old.result_.conf_int(target="sample"),
                                  new.result_.conf_int(target="sample"))  # fmt: skip
    with pytest.raises(TypeError, match="not both"):
        _runs_fit(steps=100, total_steps=400)
    with warnings.catch_warnings():  # one run: steps is that run's, as ever
        warnings.simplefilter("error", DeprecationWarning)
        dpfit.DPLinearRegression(rho=1.0, clip=2.0, step_size=0.3, steps=400,
                                 random_state=0).fit(*_data(2000, seed=4))  # fmt: skip


def test_fit_steps_is_the_deprecated_cli_spelling_of_total_steps(tmp_path, capsys):
    """dpfit fit --steps counted all runs' steps, while steps= in the library is one run's:
    --total-steps is the spelling, and --steps still runs the same fit with a note on
    stderr naming it; both at once are refused."""
    from dpfit.cli import main

    gen = np.random.default_rng(7)  # synthetic data, not privacy noise
    x = gen.uniform(0, 10, 2000)
    path = tmp_path / "d.csv"
    path.write_text("x,y\n" + "".join(f"{a},{2 * a + b}\n" for a, b in
                                       zip(x, gen.standard_normal(2000), strict=True)))  # fmt: skip
    args = ["fit", str(path), "--formula", "y ~ x", "--rho", "0.5", "--seed", "1",
            "--bound", "x=0,10", "--y-bounds", "-5,25"]  # fmt: skip
    out = {}
    for flag in ("--total-steps", "--steps"):
        assert main([*args, flag, "40"]) == 0
        out[flag] = capsys.readouterr()
    assert out["--total-steps"].out == out["--steps"].out  # the same fit
    assert "deprecated" not in out["--total-steps"].err
    assert "--steps is deprecated; use --total-steps 40" in out["--steps"].err
    assert main([*args, "--steps", "40", "--total-steps", "40"]) != 0
    assert "give --total-steps only" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["fit", "--help"])
    shown = " ".join(capsys.readouterr().out.split())  # argparse wraps the help
    assert "deprecated: the old spelling of --total-steps" in shown
