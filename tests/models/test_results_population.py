"""The statsmodels-like result API for the population target: bse, t, p, cov, tests, summary.

Oracle: statsmodels' OLS results with the same covariance (``cov_type="fixed scale"`` is not
needed: we feed the same covariance matrix to its Wald machinery by hand), and closed forms.
"""

import math
import pickle

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpfit.inference.population import (
    CovarianceEstimate,
    population_covariance,
    sample_covariance,
    transform,
)
from dpfit.models import Result
from dpfit.privacy import GaussianEntry, PrivacyLedger

COV = np.array([[0.04, 0.01, 0.0], [0.01, 0.09, 0.02], [0.0, 0.02, 0.25]])
EST = np.array([1.0, 0.3, -0.2])


def _result(dof=math.inf, **kw):
    ledger = PrivacyLedger()
    ledger.charge(GaussianEntry(label="demo/release", sensitivity=1.0, noise_std=2.0))
    rng = np.random.default_rng(0)
    fields = {
        "names": ["Intercept", "educ", "female"],
        "estimate": EST,
        "interval_estimates": EST + 0.1 * rng.standard_normal((10, 3)),
        "interval_method": "Batch means.",
        "n": 500,
        "ledger": ledger,
        "model": "Test model",
        "method": "a test release",
        "noise_backend": "fast",
        "seeded": False,
        "config": {},
        "population": CovarianceEstimate(
            target="population", cov=COV, dof=dof, description="Sandwich plus privacy."
        ),
    }
    return Result(**{**fields, **kw})


def test_bse_tvalues_pvalues_conf_int_normal():
    res = _result()
    se = np.sqrt(np.diag(COV))
    np.testing.assert_allclose(res.bse, se)
    with pytest.warns(DeprecationWarning, match="use Result.bse"):
        np.testing.assert_allclose(res.std_errors, se)
    np.testing.assert_allclose(res.tvalues, EST / se)
    np.testing.assert_allclose(res.pvalues, 2 * stats.norm.sf(np.abs(EST / se)))
    ci = res.conf_int(0.1)
    np.testing.assert_allclose(ci["upper"] - EST, stats.norm.ppf(0.95) * se)
    assert list(res.cov_params().index) == ["Intercept", "educ", "female"]
    np.testing.assert_allclose(res.cov_params(), COV)
    assert res.nobs == 500 and res.targets == ("population", "sample")


def test_student_t_with_dof():
    res = _result(dof=[5.0, 7.0, math.inf])
    se = np.sqrt(np.diag(COV))
    half = res.conf_int()["upper"] - EST
    np.testing.assert_allclose(
        half,
        [stats.t.ppf(0.975, 5) * se[0], stats.t.ppf(0.975, 7) * se[1], 1.959963984540054 * se[2]],
    )
    np.testing.assert_allclose(res.pvalues[:2], 2 * stats.t.sf(np.abs(EST / se)[:2], [5, 7]))


def test_wald_and_f_test_match_closed_form_and_statsmodels():
    import statsmodels.api as sm

    res = _result()
    R = np.array([[0, 1.0, 0], [0, 0, 1.0]])
    diff = R @ EST
    w = diff @ np.linalg.solve(R @ COV @ R.T, diff)
    test = res.wald_test("educ = 0, female = 0")
    assert test.statistic == pytest.approx(w) and test.df_num == 2
    assert test.pvalue == pytest.approx(stats.chi2.sf(w, 2))
    assert res.wald_test(["educ", "female"]).statistic == pytest.approx(w)
    assert res.wald_test(R).statistic == pytest.approx(w)
    f = res.f_test(R)
    assert f.statistic == pytest.approx(w / 2) and f.pvalue == pytest.approx(stats.chi2.sf(w, 2))
    # statsmodels' Wald test given the same params and covariance
    rng = np.random.default_rng(1)
    X = sm.add_constant(rng.standard_normal((50, 2)))
    sm_res = sm.OLS(rng.standard_normal(50), X).fit()
    sm_test = sm_res.wald_test(R, cov_p=COV, scalar=True, use_f=False)
    # statsmodels tests its own params; shift ours to compare the quadratic form
    shifted = R @ sm_res.params
    assert sm_test.statistic == pytest.approx(shifted @ np.linalg.solve(R @ COV @ R.T, shifted))
    assert "female = 0" in str(test)
    with pytest.raises(ValueError, match="restrictions"):
        res.wald_test(["nope"])
    with pytest.raises(ValueError, match="q"):
        res.wald_test(R, q=[1.0])


def test_sample_target_is_brown_eq12_and_labelled():
    res = _result()
    cov = res.covariance("sample")
    assert cov.target == "sample" and (cov.dof == 9).all()
    est = res.interval_estimates
    np.testing.assert_allclose(cov.bse, est.std(axis=0, ddof=1) / np.sqrt(10))
    text = res.summary().as_text()
    assert "Interval covers:" in text and "population coefficients" in text
    assert "std err" in text and "P>|z|" in text  # normal-based: infinite df
    sample = " ".join(res.summary(target="sample").as_text().split())
    assert "clipped-loss minimiser only" in sample
    # a population interval was released: the sample view points to it, never denies it
    assert "No population interval was released" not in sample
    assert "conf_int(target='population') does" in sample


def test_summary_without_population_names_sample_target():
    res = _result(population=None)
    text = res.summary().as_text()
    assert "clipped-loss minimiser only" in text
    assert "No population interval was released" in text
    with pytest.raises(ValueError, match="no population"):
        res.bse  # noqa: B018


def test_population_covariance_satterthwaite_and_transform():
    samp = np.diag([1.0, 4.0])
    priv = np.diag([1.0, 0.0])
    cov = population_covariance(samp, priv, description="x", privacy_dof=9)
    assert cov.dof[0] == pytest.approx((2.0**2) * 9 / 1.0) and math.isinf(cov.dof[1])
    J = np.array([[1.0, 2.0], [0.0, 3.0]])
    moved = transform(cov, J)
    np.testing.assert_allclose(moved.cov, J @ (samp + priv) @ J.T)
    assert moved.dof[0] == cov.dof[0] and math.isinf(moved.dof[1])
    s = sample_covariance([[0.0, 1.0], [2.0, 1.0]], "two")
    assert s.dof.tolist() == [1.0, 1.0]


def test_population_survives_pickle():
    res = _result(dof=[3.0, 4.0, 5.0])
    back = pickle.loads(pickle.dumps(res))
    pd.testing.assert_frame_equal(back.conf_int(), res.conf_int())
