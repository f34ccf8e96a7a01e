"""Result and Summary: frozen, term-indexed, only public/released content, three renderings."""

import dataclasses
import pickle

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpfit
from dpfit.models import Result, Summary
from dpfit.privacy import GaussianEntry, PrivacyLedger


def _result(**kw):
    ledger = PrivacyLedger()
    ledger.charge(GaussianEntry(label="demo/release", sensitivity=1.0, noise_std=2.0, count=4))
    estimates = np.array([[1.0, 10.0], [2.0, 12.0], [3.0, 14.0]])
    fields = {
        "names": ["Intercept", "x"],
        "estimate": estimates.mean(axis=0),
        "interval_estimates": estimates,
        "interval_method": "Student-t over three released estimates.",
        "n": 1000,
        "ledger": ledger,
        "model": "Test model",
        "method": "a test release",
        "response": "y",
        "noise_backend": "fast",
        "seeded": False,
        "config": {"clip": 1.5, "steps": 4},
        "notes": ["A method note."],
        "diagnostics": {"fraction_clipped": 0.125},
    }
    return Result(**{**fields, **kw})


def test_conf_int_is_the_t_interval_indexed_by_name():
    res = _result()
    ci = res.conf_int(0.05, target="sample")
    half = stats.t.ppf(0.975, 2) * np.array([1.0, 2.0]) / np.sqrt(3)  # s = (1, 2), m = 3
    np.testing.assert_allclose(ci["upper"] - res.params, half, rtol=1e-12)
    np.testing.assert_allclose(res.params - ci["lower"], half, rtol=1e-12)
    assert list(ci.index) == ["Intercept", "x"] and list(ci.columns) == ["lower", "upper"]
    assert res.params["x"] == 12.0 and res.m == 3
    with pytest.raises(ValueError, match="alpha"):
        res.conf_int(1.5)
    with pytest.raises(ValueError, match=r"target='population'.*no population"):
        res.conf_int()  # the default target needs a released population covariance
    with pytest.raises(ValueError, match="target"):
        res.conf_int(target="theta")


def test_result_is_frozen_and_readonly():
    res = _result()
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.n = 5
    with pytest.raises(ValueError, match="read-only"):
        res.estimate[0] = 0.0
    with pytest.raises(TypeError):
        res.config["clip"] = 0.0


def test_result_pickles_without_its_cache():
    res = _result()
    _ = res.params
    back = pickle.loads(pickle.dumps(res))
    assert back.summary().as_text() == res.summary().as_text()
    pd.testing.assert_series_equal(back.params, res.params)


def test_result_checks_shapes():
    with pytest.raises(ValueError, match="estimate must have shape"):
        _result(estimate=[1.0])
    with pytest.raises(ValueError, match="m >= 2"):
        _result(interval_estimates=[[1.0, 2.0]])


def test_ledger_with_a_budget_is_stored_as_a_snapshot():
    ledger = PrivacyLedger(budget=dpfit.Budget(rho=1.0))
    ledger.charge(GaussianEntry(label="a", sensitivity=1.0, noise_std=1.0))
    res = _result(ledger=ledger)
    assert res.ledger.budget is None and res.rho == pytest.approx(0.5)


def test_summary_content_is_public_and_released_only():
    res = _result()
    text = res.summary().as_text()
    for piece in [
        "Test model results",
        "Dep. variable:",
        "1000 (public)",
        "rho = 0.5",
        f"({res.epsilon(1e-5):.4g}, 1e-05) via CKS 2020",
        "replace-one",
        "Seeded noise:          no",
        f"dpfit version:         {dpfit.__version__}",
        "Intercept",
        "[0.025",
        "0.975]",
        "clip:",
        "[1] Student-t over three released estimates.",
        "[4] A method note.",  # after the interval, no-population and fast-backend notes
    ]:
        assert piece in text, piece
    assert text.rstrip().endswith("not chosen on this data.")  # the privacy statement is last
    assert "[5] Privacy: 0.5-zCDP" in text
    for forbidden in ["R-squared", "F-statistic", "Cond. No", "Date", "Time", "NON-PRIVATE"]:
        assert forbidden not in text
    assert "0.125" not in text  # the non-private diagnostic is absent by default


def test_summary_shows_diagnostics_only_when_asked_and_labelled():
    text = _result().summary(diagnostics=True).as_text()
    assert "NON-PRIVATE diagnostics" in text and "do not publish" in text
    assert "fraction_clipped: 0.125" in text


def test_summary_flags_experimental_and_seeded():
    text = _result(experimental=True, seeded=True).summary().as_text()
    assert "[1] EXPERIMENTAL interval" in text
    assert "seeded generator" in text


def test_no_interval_result():
    res = _result(interval_estimates=None, interval_method="Point estimate only.")
    with pytest.raises(ValueError, match="point estimate only"):
        res.conf_int(target="sample")
    with pytest.raises(ValueError, match="no population"):
        res.conf_int()
    assert "[0.025" not in res.summary().as_text()


def test_default_delta_follows_public_n():
    assert _result().default_delta == 1e-5
    assert _result(n=2_000_000).default_delta == 1e-8


def test_renderings():
    summary = _result().summary(0.1)
    assert isinstance(summary, Summary)
    assert str(summary) == summary.as_text()
    html = summary.as_html()
    assert html.startswith("<table") and "<th>Intercept</th>" in html and "[0.05" in html
    assert summary._repr_html_() == html
    latex = summary.as_latex()
    assert r"\begin{tabular}" in latex and r"\caption{Test model results}" in latex
    assert r"clip: & 1.5 \\" in latex
    assert _result()._repr_html_() == _result().summary().as_html()


def test_html_and_latex_escape_names():
    res = _result(names=["Intercept", "I(x ** 2) & <b>_"])
    assert "&lt;b&gt;" in res.summary().as_html()
    assert r"I(x ** 2) \& <b>\_" in res.summary().as_latex()


def test_snapshot_keeps_parallel_and_filter_entries():
    # A Result snapshots a ledger that has a budget; compositions used to break the copy.
    from dpfit.mechanisms import gaussian, make_noise_source
    from dpfit.privacy import privacy_filter

    ledger = PrivacyLedger(budget=dpfit.Budget(rho=3.0))
    src = make_noise_source(0)
    with ledger.parallel("par", rho_per_block=1.0) as blocks:
        gaussian(np.zeros(1), sensitivity=1.0, noise_std=1.0, ledger=blocks.block(), rng=src,
                 label="par/q")  # fmt: skip
    with privacy_filter(ledger, label="filt", rho=1.0) as filt:
        gaussian(np.zeros(1), sensitivity=1.0, noise_std=2.0, ledger=filt.ledger, rng=src,
                 label="filt/q")  # fmt: skip
    res = _result(ledger=ledger)
    assert res.ledger.budget is None and res.ledger.entries == ledger.entries
    assert res.rho == ledger.rho == 1.5  # the parallel block's 0.5 and the filter's bound 1.0
