"""The cluster-coverage study (privacy units): designs, trials, claims (with negative controls)."""

from __future__ import annotations

from functools import partial

import pandas as pd
import pytest

from dpfit.experiments import get, run
from dpfit.experiments.cluster_coverage import cell_table, panel_sample
from dpfit.experiments.verdicts import evaluate_claims

from .conftest import coverage_trials, study_claim

NAME = "cluster-coverage"


_claim = partial(study_claim, NAME)


def test_panels_have_the_declared_sizes_and_correlation():
    frame = panel_sample("vary", 0.8, False, 4000, 1)
    sizes = frame.groupby("unit").size()
    assert sizes.min() == 1 and sizes.max() == 50
    # intra-unit correlation of x: between-unit share of its variance, 0.8 (s.e. about 0.01)
    means = frame.groupby("unit")["x"].transform("mean")
    pairs = frame.assign(m=means)[sizes.reindex(frame["unit"]).to_numpy() >= 20]
    assert pairs["m"].var() / pairs["x"].var() == pytest.approx(0.8, abs=0.06)
    fixed = panel_sample("fixed", 0.0, True, 300, 2)
    assert (fixed.groupby("unit").size() == 10).all()


def test_smoke_trial_reports_every_coefficient_and_the_row_level_control():
    metrics = get(NAME).trial(
        {"sizes": "vary", "corr": 0.4, "entity": False, "n_units": 500, "rho": 1.0}, 0
    )
    assert metrics["k"] == 2 and metrics["row_covers_slope"] in (0.0, 1.0)
    for j in range(2):
        assert metrics[f"covers_{j}"] in (0.0, 1.0) and metrics[f"width_{j}"] > 0


#: Made-up trials for the negative controls.
_table = partial(coverage_trials, seed=29, k=2, width=1.5, row=0.95)


CELLS = [
    {"sizes": s, "corr": c, "entity": False, "n_units": 5000, "rho": 1.0}
    for s in ("fixed", "vary")
    for c in (0.0, 0.8)
]


@pytest.mark.negative_control("cluster-coverage", "cell-coverage")
def test_cell_coverage_fails_on_one_silent_undercovering_cell():
    claim = _claim("cell-coverage")
    good = _table(CELLS, 0.95)
    assert claim.evaluate(good).passed
    one = [{**CELLS[0], "n_units": 500}]
    result = claim.evaluate(pd.concat([good, _table(one, 0.80)]).reset_index(drop=True))
    assert not result.passed and "fixed/c=0.0 G=500" in result.detail
    warned = _table(one, 0.80, warned=0.9)
    assert claim.evaluate(pd.concat([good, warned]).reset_index(drop=True)).passed


@pytest.mark.negative_control("cluster-coverage", "silent-coverage")
def test_silent_coverage_fails_below_and_above_the_band():
    claim = _claim("silent-coverage")
    assert claim.evaluate(_table(CELLS, 0.95)).passed
    assert not claim.evaluate(_table(CELLS, 0.88)).passed  # 320 intervals, s.e. 0.018
    assert not claim.evaluate(_table(CELLS, 1.0)).passed
    assert not claim.evaluate(_table(CELLS, 0.95, warned=1.0)).passed


@pytest.mark.negative_control("cluster-coverage", "row-level-undercovers")
def test_row_level_control_fails_when_the_row_level_interval_covers():
    claim = _claim("row-level-undercovers")
    assert claim.evaluate(_table(CELLS, 0.95, row=0.6)).passed
    assert not claim.evaluate(_table(CELLS, 0.95, row=0.95)).passed
    assert not claim.evaluate(_table(CELLS[:1], 0.95, row=0.6)).passed  # no c = 0.8 cell


def test_cell_table_reports_silent_coverage_and_the_control():
    table = cell_table(_table(CELLS[:2], 0.9, warned=0.5, row=0.5))
    assert (table["fits"] == 40).all() and table["silent_coverage"].between(0.7, 1.0).all()
    assert table["row_level_slope_coverage"].between(0.3, 0.7).all()


def test_smoke_scale_runs(tmp_path):
    result = run([NAME], scale="smoke", store_path=tmp_path / "s.sqlite", jobs=1, progress=False)
    assert len(result.results[NAME]) == len(get(NAME).tasks("smoke"))


@pytest.mark.slow
def test_claims_hold_at_quick_scale(tmp_path):
    """792 fits: 8 minutes with jobs=1 on a loaded two-core machine (docs/privacy-units.md)."""
    result = run([NAME], scale="quick", store_path=tmp_path / "s.sqlite", jobs=2, progress=False)
    verdicts = evaluate_claims(get(NAME), result.results[NAME], "quick")
    assert verdicts and not any(v.failed for v in verdicts), [v.detail for v in verdicts]
