"""The GLM coverage study: populations, trials, claims (with negative controls)."""

from __future__ import annotations

from functools import partial

import numpy as np
import pandas as pd
import pytest

from dpfit.algorithms.glm_family import get_family
from dpfit.baselines import glm_mle
from dpfit.experiments import get, run
from dpfit.experiments._glm_populations import GLM_POPULATIONS, SIMULATED_GLM, glm_population
from dpfit.experiments.glm_coverage import cell_table, glm_kinds
from dpfit.experiments.verdicts import evaluate_claims

from .conftest import coverage_trials, study_claim

NAME = "glm-coverage"


_claim = partial(study_claim, NAME)


@pytest.mark.parametrize(
    "name",
    ["logit-rare", "poisson-exposure", "probit", "mroz-inlf", "recid-arrested", "crime1-narr86"],
)
def test_populations_contain_their_values_and_theta_solves_the_score(name):
    pop = glm_population(name)
    for column, (low, high) in pop.bounds.items():
        assert low <= pop.frame[column].min() and pop.frame[column].max() <= high, column
    D = np.column_stack([np.ones(len(pop.frame)), pop.frame[list(pop.x)].to_numpy()])
    y = pop.frame[pop.response].to_numpy()
    eta = D @ pop.theta + (0.0 if pop.offset is None else pop.frame[pop.offset].to_numpy())
    score = get_family(pop.family, pop.link).score(eta, y)
    np.testing.assert_allclose(D.T @ score / len(y), 0.0, atol=1e-7)  # the score equation
    if pop.K is not None:
        assert y.max() <= pop.K


@pytest.mark.parametrize("name", ["logit-interaction", "poisson-exposure", "probit"])
def test_the_reference_is_statsmodels_hc0(name):
    import statsmodels.api as sm

    pop = glm_population(name)
    sample = pop.frame.iloc[:3000]
    D = np.column_stack([np.ones(3000), sample[list(pop.x)].to_numpy()])
    y = sample[pop.response].to_numpy()
    offset = None if pop.offset is None else sample[pop.offset].to_numpy()
    links = sm.families.links
    fam = {"logit": sm.families.Binomial(), "log": sm.families.Poisson(),
           "probit": sm.families.Binomial(links.Probit())}[pop.link]  # fmt: skip
    ref = sm.GLM(y, D, family=fam, offset=offset).fit(cov_type="HC0")
    theta, se = glm_mle(D, y, pop.family, offset, pop.link)
    np.testing.assert_allclose(theta, ref.params, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(se, ref.bse, rtol=1e-6)


def test_the_rare_design_is_rare():
    assert 0.03 < glm_population("logit-rare").frame["y"].mean() < 0.05
    assert len(GLM_POPULATIONS) == 13 and len(SIMULATED_GLM) == 8


def test_kinds_read_the_reasons_of_one_warning():
    message = (
        "The population interval may not cover: The released DP-GD iterates have not "
        "converged: ... There are about 12 events (the rarer outcome, released) for 4 "
        "coefficients, fewer than 10 per coefficient: ..."
    )
    assert glm_kinds([message]) == {"drift", "events"}
    assert glm_kinds([]) == set() and glm_kinds(["new"]) == {"other"}


def test_smoke_trial_reports_every_coefficient():
    metrics = get(NAME).trial({"design": "poisson-exposure", "n": 2000, "rho": 2.0}, 3)
    assert metrics["k"] == 4
    for j in range(4):
        assert metrics[f"covers_{j}"] in (0.0, 1.0) and metrics[f"width_{j}"] > 0


#: Made-up trials for the negative controls.
_table = partial(coverage_trials, seed=28)


CELLS = [{"design": d, "n": 20000, "rho": 0.5} for d in SIMULATED_GLM]
SCALE = [{"design": d, "n": 200_000, "rho": 0.5} for d in SIMULATED_GLM]


@pytest.mark.negative_control("glm-coverage", "cell-coverage")
def test_cell_coverage_fails_on_one_silent_undercovering_cell():
    claim = _claim("cell-coverage")
    good = _table(CELLS, 0.95)
    assert claim.evaluate(good).passed
    bad = pd.concat([good, _table([{"design": "poisson", "n": 2000, "rho": 0.1}], 0.80)])
    result = claim.evaluate(bad.reset_index(drop=True))
    assert not result.passed and "poisson n=2000" in result.detail
    # the same cell warning in most of its fits is the library doing its job
    warned = _table([{"design": "poisson", "n": 2000, "rho": 0.1}], 0.80, warned=0.9)
    assert claim.evaluate(pd.concat([good, warned]).reset_index(drop=True)).passed


@pytest.mark.negative_control("glm-coverage", "silent-coverage")
def test_silent_coverage_fails_below_and_above_the_band():
    claim = _claim("silent-coverage")
    assert claim.evaluate(_table(CELLS, 0.95)).passed
    assert not claim.evaluate(_table(CELLS, 0.88)).passed  # 1120 intervals, s.e. 0.01
    assert not claim.evaluate(_table(CELLS, 0.995)).passed
    assert not claim.evaluate(_table(CELLS, 0.95, warned=1.0)).passed


@pytest.mark.negative_control("glm-coverage", "width-at-scale")
def test_width_at_scale_fails_when_one_design_is_too_wide():
    claim = _claim("width-at-scale")
    table = _table(SCALE, 0.95)
    assert claim.evaluate(table).passed
    wide = table.copy()
    wide.loc[wide["design"] == "poisson", [f"width_{j}" for j in range(4)]] = 1.4
    assert not claim.evaluate(wide).passed
    assert not claim.evaluate(table[table["design"] != "poisson"]).passed  # a design missing
    assert not claim.evaluate(table.assign(n=20000)).passed  # other cells do not count


def test_cell_table_reports_silent_coverage():
    table = cell_table(_table(CELLS[:2], 0.9, warned=0.5))
    assert list(table.columns[:4]) == ["design", "n", "rho", "fits"]
    assert (table["fits"] == 40).all() and table["silent_coverage"].between(0.7, 1.0).all()


def test_smoke_scale_runs(tmp_path):
    result = run([NAME], scale="smoke", store_path=tmp_path / "s.sqlite", jobs=1, progress=False)
    assert len(result.results[NAME]) == len(get(NAME).tasks("smoke"))


@pytest.mark.slow
def test_claims_hold_at_quick_scale(tmp_path):
    """2,320 fits (about 40 CPU-minutes on a loaded two-core machine); docs/glm.md's numbers."""
    result = run([NAME], scale="quick", store_path=tmp_path / "s.sqlite", jobs=2, progress=False)
    verdicts = evaluate_claims(get(NAME), result.results[NAME], "quick")
    assert verdicts and not any(v.failed for v in verdicts), [v.detail for v in verdicts]
