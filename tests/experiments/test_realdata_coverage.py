"""The real-data coverage study: populations, trials, claims (with negative controls), tables."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

from dpfit.experiments import get, run
from dpfit.experiments._realdata_populations import POPULATIONS, nice_bounds, population
from dpfit.experiments.realdata_coverage import REAL_FILES, warning_kinds
from dpfit.experiments.realdata_tables import calibration_table, markdown
from dpfit.experiments.verdicts import evaluate_claims

from .conftest import coverage_trials, study_claim

NAME = "realdata-coverage"


_claim = partial(study_claim, NAME)


@pytest.mark.parametrize("name", POPULATIONS)
def test_each_population_has_bounds_containing_every_value_and_its_ols(name):
    pop = population(name)
    for column, (low, high) in pop.bounds.items():
        assert low <= pop.frame[column].min() and pop.frame[column].max() <= high, column
    assert pop.y_bounds[0] <= pop.frame[pop.response].min() <= pop.frame[pop.response].max()
    assert pop.frame[pop.response].max() <= pop.y_bounds[1]
    D = np.column_stack([np.ones(len(pop.frame)), pop.frame[list(pop.x)].to_numpy()])
    y = pop.frame[pop.response].to_numpy()
    if pop.z:  # 2SLS: the instrumented moment conditions hold at theta*
        Z = np.column_stack([np.ones(len(y)), pop.frame[[*pop.z, *pop.x[1:]]].to_numpy()])
        np.testing.assert_allclose(Z.T @ (y - D @ pop.theta) / len(y), 0.0, atol=1e-6)
    else:
        np.testing.assert_allclose(D.T @ (y - D @ pop.theta) / len(y), 0.0, atol=1e-6)


def test_nice_bounds_round_outwards():
    assert nice_bounds(np.array([-502.3, 1536.8])) == (-600.0, 1600.0)
    assert nice_bounds(np.array([4.605, 7.785])) == (4.6, 7.8)


def test_real_files_are_eight_and_the_wealth_response_is_skewed():
    assert len(REAL_FILES) == 8 and "k401ksubs" in REAL_FILES
    y = population("k401ksubs").frame["nettfa"]
    assert ((y - y.mean()) ** 3).mean() / y.std() ** 3 > 5


def test_warning_kinds_read_the_reasons_of_one_warning():
    message = (
        "The population interval may not cover: The released DP-GD iterates have not "
        "converged: ... Clipping moves the estimate away from least squares: ... What would "
        "help: more records."
    )
    assert warning_kinds([message]) == {"drift", "clipping"}
    assert warning_kinds([]) == set()
    assert warning_kinds(["something new"]) == {"other"}


@pytest.mark.parametrize("design", ["k401ksubs", "adassp-k401ksubs", "iv-k401ksubs"])
def test_smoke_trial_reports_every_coefficient(design):
    metrics = get(NAME).trial({"design": design, "n": 2000, "rho": 1.0}, 3)
    k = int(metrics["k"])
    assert k == population(design.removeprefix("adassp-")).theta.size
    for j in range(k):
        assert metrics[f"covers_{j}"] in (0.0, 1.0) and metrics[f"width_{j}"] > 0
    assert metrics["warned"] in (0.0, 1.0)


#: Made-up trials for the negative controls.
_table = partial(coverage_trials, seed=26)


SCALE_CELLS = [{"design": d, "n": 20000, "rho": 1.0} for d in REAL_FILES]


@pytest.mark.negative_control("realdata-coverage", "silent-misses")
def test_silent_misses_fails_when_one_coefficient_is_silently_missed_often():
    claim = _claim("silent-misses")
    good = _table(SCALE_CELLS, 0.95)
    assert claim.evaluate(good).passed
    bad = good.copy()
    rows = bad.index[bad["design"] == "cps91"]
    bad.loc[rows[:14], "covers_2"] = 0.0  # 14 of 40 silent misses: p < 0.001 against 0.10
    result = claim.evaluate(bad)
    assert not result.passed and "cps91" in result.detail
    # the same misses in warned fits are not silent: the claim holds
    bad.loc[rows[:14], "warned"] = 1.0
    assert claim.evaluate(bad).passed


@pytest.mark.negative_control("realdata-coverage", "silent-coverage")
def test_silent_coverage_fails_below_and_above_the_band():
    claim = _claim("silent-coverage")
    assert claim.evaluate(_table(SCALE_CELLS, 0.95)).passed
    assert not claim.evaluate(_table(SCALE_CELLS, 0.88)).passed  # 1280 intervals, s.e. 0.009
    assert not claim.evaluate(_table(SCALE_CELLS, 0.995)).passed
    # warned fits do not count: every fit warned leaves nothing to judge
    assert not claim.evaluate(_table(SCALE_CELLS, 0.95, warned=1.0)).passed


@pytest.mark.negative_control("realdata-coverage", "silent-at-scale")
def test_silent_at_scale_needs_six_files_with_80_percent_silent_fits():
    claim = _claim("silent-at-scale")
    table = _table(SCALE_CELLS, 0.95)
    assert claim.evaluate(table).passed
    noisy = table["design"].isin(REAL_FILES[:3])
    assert not claim.evaluate(table.assign(warned=np.where(noisy, 1.0, 0.0))).passed
    two = table["design"].isin(REAL_FILES[:2])
    assert claim.evaluate(table.assign(warned=np.where(two, 1.0, 0.0))).passed
    # other cells do not count
    assert not claim.evaluate(table.assign(n=2000)).passed


def test_calibration_table_counts_false_alarms_and_misses():
    table = _table(SCALE_CELLS[:2], 0.9, warned=0.5)
    table["warn_drift"] = np.where(table["warned"] > 0, 1.0, np.nan)
    out = calibration_table(table).set_index("warning")
    warned = table["warned"] > 0
    covers = table[[f"covers_{j}" for j in range(4)]].to_numpy()
    assert out.loc["drift", "fits"] == warned.sum()
    assert out.loc["drift", "share"] == pytest.approx(covers[warned].mean())
    assert out.loc["no warning", "share"] == pytest.approx(1 - covers[~warned].mean())
    assert markdown(out.reset_index()).count("\n") == 3


def test_smoke_scale_runs(tmp_path):
    result = run([NAME], scale="smoke", store_path=tmp_path / "s.sqlite", jobs=1, progress=False)
    assert len(result.results[NAME]) == len(get(NAME).tasks("smoke"))


@pytest.mark.slow
def test_claims_hold_at_quick_scale(tmp_path):
    """3,360 fits (about 35 CPU-minutes); the numbers are docs/inference.md's."""
    result = run([NAME], scale="quick", store_path=tmp_path / "s.sqlite", jobs=2, progress=False)
    verdicts = evaluate_claims(get(NAME), result.results[NAME], "quick")
    assert verdicts and not any(v.failed for v in verdicts), [v.detail for v in verdicts]
