"""The glm-bootstrap study: the bootstrap from releases, its trial, and claims with negative
controls."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpfit.algorithms.glm import dp_glm
from dpfit.experiments import get, glm_bootstrap, run
from dpfit.experiments._glm_bootstrap import _covariates, parametric_bootstrap
from dpfit.experiments.glm_bootstrap import DESIGNS, comparison_table
from dpfit.experiments.verdicts import evaluate_claims
from dpfit.inference.doubts import COVERAGE, NOTE, Doubt
from dpfit.inference.population_glm import glm_population

NAME = "glm-bootstrap"
pytestmark = pytest.mark.filterwarnings("ignore::dpfit.PrivacyWarning")


def _claim(name):
    (claim,) = [c for c in get(NAME).claims if c.name == name]
    return claim


def test_simulated_covariates_have_the_released_moments():
    """Rows [1, z]: z's mean and covariance are those of X'X/n (clipping to [-1, 1] is far)."""
    mean, cov = np.array([0.1, -0.2]), np.array([[0.04, 0.01], [0.01, 0.09]])
    xtx = np.zeros((3, 3))
    xtx[0, 0], xtx[0, 1:], xtx[1:, 0] = 1.0, mean, mean
    xtx[1:, 1:] = cov + np.outer(mean, mean)
    D = _covariates(xtx, 200_000, np.random.default_rng(0))
    assert (D[:, 0] == 1).all() and np.abs(D).max() <= 1.0
    np.testing.assert_allclose(D[:, 1:].mean(axis=0), mean, atol=0.003)  # s.e. <= 0.0007
    np.testing.assert_allclose(np.cov(D[:, 1:], rowvar=False), cov, atol=0.002)


def test_the_bootstrap_spread_matches_the_sandwich_on_a_correct_model():
    """A correctly specified logit at n = 4000: the replicates' s.d. estimates the same
    sampling + privacy error as the sandwich (30 replicates: relative s.e. of an s.d. 0.13,
    so within a factor 1.6 either way is a 3.5 s.e. band)."""
    gen = np.random.default_rng(1)  # synthetic data, not privacy noise
    n = 4000
    D = np.column_stack([np.ones(n), gen.uniform(-1, 1, (n, 2))])
    y = (gen.uniform(size=n) < 1 / (1 + np.exp(-(0.3 + D[:, 1] - 0.5 * D[:, 2])))).astype(float)
    traj = dp_glm(D, y, rho=0.5, rng=2, margins=True, warn_large_rho=False)
    boot = parametric_bootstrap(traj, replicates=30, seed=3, params={"margins": True})
    sandwich = np.sqrt(np.diag(glm_population(traj).population.cov))
    ratio = boot.std / sandwich
    assert ((ratio > 1 / 1.6) & (ratio < 1.6)).all(), ratio
    lower, upper = boot.interval(0.05)
    assert (lower < boot.estimate).all() and (boot.estimate < upper).all()


def test_the_bootstrap_needs_an_intercept():
    gen = np.random.default_rng(4)
    D = gen.uniform(-1, 1, (500, 2))
    traj = dp_glm(D, (D[:, 0] > 0).astype(float), rho=1.0, intercept=False, rng=0,
                  warn_large_rho=False)  # fmt: skip
    with pytest.raises(ValueError, match="intercept"):
        parametric_bootstrap(traj, replicates=2, seed=0)


def test_smoke_trial_reports_both_methods():
    metrics = get(NAME).trial({"design": "logit-balanced", "n": 2000, "rho": 0.5, "B": 3}, 5)
    for j in range(4):
        assert metrics[f"covers_{j}"] in (0.0, 1.0) and metrics[f"bs_covers_{j}"] in (0.0, 1.0)
        assert metrics[f"width_{j}"] > 0 and metrics[f"bs_width_{j}"] > 0


@pytest.mark.parametrize(("shown", "warned"), [(NOTE, 0.0), (COVERAGE, 1.0)])
def test_only_a_coverage_reason_counts_as_a_warning(monkeypatch, shown, warned):
    """A note (e.g. the bread's or meat's looser rule) is not a CoverageWarning."""
    doubt = Doubt("a reason", ("more records",), shown)
    monkeypatch.setattr(glm_bootstrap, "glm_doubts", lambda inference, traj: [doubt])
    metrics = get(NAME).trial({"design": "logit-balanced", "n": 2000, "rho": 0.5, "B": 3}, 5)
    assert metrics["warned"] == warned


def _table(coverage, boot_coverage, designs=DESIGNS, warned=0.0, fits=40, k=4):
    rng = np.random.default_rng(22)
    rows = []
    for design in designs:
        for _ in range(fits):
            row = {"design": design, "n": 2000, "rho": 0.5, "k": float(k),
                   "warned": float(rng.random() < warned)}  # fmt: skip
            for j in range(k):
                row[f"covers_{j}"] = float(rng.random() < coverage)
                row[f"bs_covers_{j}"] = float(rng.random() < boot_coverage)
                row[f"width_{j}"], row[f"bs_width_{j}"] = 1.1, 1.2
            rows.append(row)
    return pd.DataFrame(rows)


@pytest.mark.negative_control("glm-bootstrap", "sandwich-coverage")
def test_sandwich_coverage_fails_outside_the_band():
    claim = _claim("sandwich-coverage")
    assert claim.evaluate(_table(0.95, 0.95)).passed
    assert not claim.evaluate(_table(0.88, 0.95)).passed
    assert not claim.evaluate(_table(0.995, 0.95)).passed
    assert not claim.evaluate(_table(0.95, 0.95, warned=1.0)).passed  # no silent fit


@pytest.mark.negative_control("glm-bootstrap", "bootstrap-misses-overdispersion")
def test_bootstrap_claim_fails_when_the_bootstrap_covers_or_the_sandwich_misses():
    claim = _claim("bootstrap-misses-overdispersion")
    assert claim.evaluate(_table(0.95, 0.80)).passed
    assert not claim.evaluate(_table(0.95, 0.95)).passed  # the bootstrap covers
    assert not claim.evaluate(_table(0.85, 0.80)).passed  # the sandwich misses too
    assert not claim.evaluate(_table(0.95, 0.80, designs=("probit",))).passed  # no such design


def test_comparison_table_has_both_methods():
    table = comparison_table(_table(0.95, 0.9), silent_only=False)
    assert len(table) == len(DESIGNS) and (table["fits"] == 40).all()
    assert (table["bootstrap_coverage"] < table["sandwich_coverage"] + 0.1).all()
    assert {"sandwich_width", "bootstrap_width", "sandwich_mc_se"} <= set(table.columns)


@pytest.mark.slow
def test_claims_hold_at_quick_scale(tmp_path):
    """100 fits with 25 private refits each (about 18 CPU-minutes); docs/glm-coverage.md."""
    result = run([NAME], scale="quick", store_path=tmp_path / "s.sqlite", jobs=2, progress=False)
    verdicts = evaluate_claims(get(NAME), result.results[NAME], "quick")
    assert verdicts and not any(v.failed for v in verdicts), [v.detail for v in verdicts]
