"""``DPLinearRegression(method="adassp")``: its default population interval.

The interval is the HC0 sandwich of AdaSSP's released X'X and a released gradient second
moment, plus the first-order law of AdaSSP's noise and its ridge's estimated bias
(src/dpfit/baselines/adassp_population.py; docs/inference.md, "AdaSSP: population intervals").
"""

import re
import warnings

import numpy as np
import pandas as pd
import pytest

import dpfit
from dpfit.exceptions import CoverageWarning, LargeBudgetWarning
from dpfit.experiments._nss_interval import robust_ols
from dpfit.mechanisms import recording, replaying

THETA = np.array([1.0, 0.5, -0.5])
BOUNDED = {"bounds": [(-1, 1)] * 2, "y_bounds": (-2, 4)}


def _data(n, seed, scale=0.5):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, 2))
    return X, THETA[0] + X @ THETA[1:] + scale * rng.standard_normal(n)


def _fit(X, y, **kw):
    params = {"rho": 1.0, "method": "adassp", "random_state": 0, **BOUNDED, **kw}
    return dpfit.DPLinearRegression(**params).fit(X, y)


def test_the_default_releases_a_population_interval_within_rho():
    X, y = _data(4000, 0)
    model = _fit(X, y, rho=0.7)
    res = model.result_
    assert res.targets == ("population",)
    (entry,) = model.privacy_.entries  # the fit's plan, charged as one composed entry
    assert entry.label == "DPLinearRegression"
    labels = [e.label for e in model.privacy_.releases]
    assert labels == [
        "adassp/lambda_min",
        "adassp/xtx",
        "adassp/xty",
        "adassp/residual-scale",
        "adassp/clipped-y",
        "adassp/omega",
    ]
    charged = [e.count * e.sensitivity**2 / (2 * e.noise_std**2) for e in model.privacy_.releases]
    assert sum(charged) == pytest.approx(0.7, rel=1e-12)
    assert sum(charged[:3]) == pytest.approx(0.8 * 0.7, rel=1e-12)  # moment_share 0.2
    ci = model.conf_int()
    assert list(ci.columns) == ["lower", "upper"] and (ci["lower"] < ci["upper"]).all()
    for values in (res.bse, res.tvalues, res.pvalues):
        assert np.isfinite(values).all()
    text = res.summary().as_text()
    assert "Interval covers:       the population least-squares coefficients of the data" in text
    assert "with a population interval" in text


def test_moment_share_sets_the_interval_s_part_of_rho():
    X, y = _data(4000, 0)
    entries = _fit(X, y, moment_share=0.4).privacy_.releases
    charged = [e.count * e.sensitivity**2 / (2 * e.noise_std**2) for e in entries]
    assert sum(charged[3:]) == pytest.approx(0.4, rel=1e-12)
    assert sum(charged) == pytest.approx(1.0, rel=1e-12)


def test_interval_none_spends_nothing_extra_and_has_no_interval():
    X, y = _data(4000, 0)
    model = _fit(X, y, interval=None)
    assert [e.label for e in model.privacy_.releases] == [
        "adassp/lambda_min",
        "adassp/xtx",
        "adassp/xty",
    ]
    assert model.privacy_.rho == pytest.approx(1.0, rel=1e-12)
    assert model.result_.targets == ()
    with pytest.raises(ValueError, match="released no population interval"):
        model.conf_int()


def test_the_sample_target_is_refused():
    X, y = _data(4000, 0)
    with pytest.raises(ValueError, match=r"releases a population interval only \(target="):
        _fit(X, y).conf_int(target="sample")


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"interval": "checkpoints"}, "does not apply to method='adassp'"),
        ({"interval": "independent-runs"}, "does not apply to method='adassp'"),
        ({"interval": None, "moment_share": 0.3}, "with interval=None there is none"),
        ({"moment_share": 1.0}, "moment_share must be in"),
        ({"moment_share": 0.0}, "moment_share must be in"),
        ({"clip": 1.0}, "clip does not apply"),
        ({"bounds": None}, "needs public bounds"),
    ],
)
def test_bad_settings_are_refused_before_any_charge(kw, message):
    X, y = _data(500, 0)
    budget = dpfit.Budget(rho=1.0)
    params = {"rho": 1.0, "method": "adassp", "random_state": 0, **BOUNDED, **kw}
    with recording() as rec, pytest.raises(ValueError, match=message):
        dpfit.DPLinearRegression(**params).fit(X, y, budget=budget)
    assert rec.releases == [] and budget.spent == 0.0


@pytest.mark.filterwarnings(  # n = 400: the released meat is mostly noise (public), see below
    "ignore:The population interval may not cover:dpfit.exceptions.CoverageWarning"
)
def test_replay_on_a_neighbour_changes_no_output():
    # Record/replay (docs/auditing.md): the fit on D' (one record far outside every bound)
    # replays D's releases; each query moved by at most its declared sensitivity, and every
    # output (coefficients, intervals, the summary with its notes) is identical.
    X, y = _data(400, 11)
    X2, y2 = X.copy(), y.copy()
    X2[-1], y2[-1] = [1e3, -1e3], 1e6
    with recording() as rec:
        first = _fit(X, y, rho=0.5, random_state=3)
    with replaying(rec) as rep:
        second = _fit(X2, y2, rho=0.5, random_state=3)
    assert [r.entry for r in rep.releases] == [r.entry for r in rec.releases]
    assert len(rec.releases) == 6
    moved = {}
    for a, b in zip(rec.releases, rep.releases, strict=True):
        moved[a.entry.label] = np.linalg.norm(np.ravel(a.value - b.value)) / a.entry.sensitivity
        assert moved[a.entry.label] <= 1 + 1e-12
    # Not vacuous: the interval's own releases move by more than half their declared
    # sensitivity, so a halved sensitivity would fail.
    for label in ("adassp/residual-scale", "adassp/clipped-y", "adassp/omega"):
        assert moved[label] > 0.5, label
    np.testing.assert_array_equal(first.coef_, second.coef_)
    pd.testing.assert_frame_equal(first.conf_int(), second.conf_int())
    assert first.summary().as_text() == second.summary().as_text()


@pytest.mark.filterwarnings(  # n = 400: the released meat is mostly noise (public), see below
    "ignore:The population interval may not cover:dpfit.exceptions.CoverageWarning"
)
def test_add_remove_replay_on_a_dataset_with_one_record_fewer():
    # Under add/remove n is public (n_public) and D' drops a record: every release moves by
    # at most its declared sensitivity (the add/remove ones, about half the replace-one ones)
    # and the outputs replay identically.
    X, y = _data(400, 12)
    kw = {"rho": 0.5, "random_state": 3, "relation": "add-remove", "n_public": 400}
    with recording() as rec:
        first = _fit(X, y, **kw)
    with replaying(rec) as rep:
        second = _fit(X[:-1], y[:-1], **kw)
    assert first.privacy_.rho == pytest.approx(0.5, rel=1e-12)
    assert [r.entry for r in rep.releases] == [r.entry for r in rec.releases]
    for a, b in zip(rec.releases, rep.releases, strict=True):
        assert np.linalg.norm(np.ravel(a.value - b.value)) <= a.entry.sensitivity * (1 + 1e-12)
    pd.testing.assert_frame_equal(first.conf_int(), second.conf_int())
    assert first.summary().as_text() == second.summary().as_text()


def test_sampling_part_is_the_hc0_sandwich_when_privacy_is_cheap():
    # With rho = 1e4 the bread is nearly exact, and the meat's clip has grown so far
    # (docs/inference.md, "Clipping bias") that nothing is clipped, at the price of a meat
    # whose noise is 10% of its entries: each fit's sampling standard errors vary by about
    # 4% around the non-private HC0 OLS ones (its reported dof, about 200, say so). Averaged
    # over 10 noise draws (s.e. 1.3%), 3% catches a wrong unwhitening or a clipped meat.
    X, y = _data(20000, 1)
    ratios = []
    for seed in range(10):
        with pytest.warns(LargeBudgetWarning):
            res = _fit(X, y, rho=1e4, random_state=seed).result_
        ratios.append(np.sqrt(np.diag(res.population.parts["sampling"])))
        assert not res.population.parts["ridge bias"].any()  # the ridge is 0 here
        assert 100 < res.population.dof.min() < 1000  # the meat's noise, carried into the dof
    _, hc0 = robust_ols(np.column_stack([np.ones(len(y)), X]), y)
    np.testing.assert_allclose(np.mean(ratios, axis=0), hc0, rtol=0.03)


def test_a_binding_ridge_is_added_to_the_interval_and_noted():
    # n = 80 at rho = 1: X'X's smallest eigenvalue (about n / 3 = 27) is above two noise s.d.
    # of the released X'X (s_XX = 5.8: identified) but below AdaSSP's ridge threshold
    # (4.2 s_XX plus the lower bound's shift of 2 s_XX), so the ridge binds (about 0.35 of
    # the eigenvalue). The released Omega is noisy at this n too; only the ridge is checked.
    X, y = _data(80, 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = _fit(X, y).result_
    # a note, not a warning: the bias, added as a square, makes the interval conservative
    assert not any("ridge" in str(w.message) for w in caught)
    assert any("AdaSSP's ridge" in note and "conservative" in note for note in res.notes)
    assert np.diag(res.population.parts["ridge bias"]).max() > 0.0
    assert not any("do not identify every direction" in str(w.message) for w in caught)


def test_many_clipped_responses_are_warned_about():
    # y bounds (-0.5, 2.5) around responses 1 + x'theta + N(0, 0.5^2): 1.9% lie outside
    # with this seed, so f sqrt(n) = 2.7 at n = 20000, above the limit 1; with the wide
    # bounds of the other tests none does and nothing warns.
    X, y = _data(20000, 3)
    with pytest.warns(CoverageWarning, match=r"of the responses lie at the public y bounds"):
        res = _fit(X, y, y_bounds=(-0.5, 2.5)).result_
    shown = float(res.config["responses at the y bounds (private share)"])
    assert shown == pytest.approx(np.mean((y <= -0.5) | (y >= 2.5)), abs=0.005)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CoverageWarning)
        _fit(X, y)


def test_coverage_on_a_simple_design():
    # 200 fresh datasets at n = 4000, rho = 0.3: the pooled coverage of the three 95%
    # intervals has Monte Carlo s.e. at most sqrt(0.95 * 0.05 / 200) = 0.015 (pooling
    # correlated coefficients averages, it does not add); [0.90, 0.99] is about -3 / +2.6 s.e.
    # At this rho the privacy part is about 1.3 x the sampling part in s.e. for the slopes,
    # so an interval without either part covers well below 0.90 (measured: 0.755 without the
    # privacy part, 0.862 without the sampling part, 0.94 as is).
    covers = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", CoverageWarning)  # a valid regime: no warning
        for seed in range(200):
            X, y = _data(4000, 100 + seed)
            ci = _fit(X, y, rho=0.3, random_state=seed).conf_int().to_numpy()
            covers.append(np.mean((ci[:, 0] <= THETA) & (THETA <= ci[:, 1])))
    assert 0.90 <= np.mean(covers) <= 0.99


def test_a_meat_that_is_mostly_noise_is_noted():
    # The whitened gradients' second moment is about q I and its noise s.d. about
    # sqrt(2) C^2 / n / sqrt(2 rho_Omega) with C^2 = 36 k q and rho_Omega = 13 / 16 x 0.2 rho:
    # 0.95 q at n = 400, rho = 0.5 (k = 3), so a coefficient's sampling variance has fewer
    # than 4 degrees of freedom from the meat's noise (NoisySandwich.noisy_meat); at
    # n = 20000 the noise is 0.1 q (the clip has grown with n) and nothing warns. An earlier
    # check compared the noise with the diagonal of the meat projected onto its noise floor
    # 2 s sqrt(k), a ratio of at most 1 / (2 sqrt(k)) < its threshold 0.5, so it could never
    # fire.
    # A note, not a warning: the Student-t quantile at those degrees of freedom widens the
    # interval, and such fits cover (docs/inference.md, "Warning triage").
    meat = r"\(the sandwich's meat\) is so noisy"
    X, y = _data(400, 4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = _fit(X, y, rho=0.5).result_
    assert any(re.search(meat, note) for note in res.notes)
    assert not any(re.search(meat, str(w.message)) for w in caught)
    X, y = _data(20000, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CoverageWarning)
        res = _fit(X, y, rho=0.5).result_
    assert not any(re.search(meat, note) for note in res.notes)


def test_the_meat_keeps_the_sampling_standard_errors_where_its_noise_is_large():
    # n = 1000, rho = 0.5: the meat's noise s.d. is about 0.38 of its eigenvalues. De-spread
    # like the bread (NoisyMoment.shrunk) the sampling part's standard errors average 1.015 x
    # the non-private HC0 ones over these 40 datasets (s.d. 0.13 across datasets, so the
    # mean's s.e. is 0.021); projected onto its noise floor (NoisyMoment.psd, the old meat)
    # they averaged 1.22 (s.e. 0.018; measured on the same seeds). [0.9, 1.12] is about
    # -5 / +5 s.e. around the first and 5.5 s.e. below the second.
    ratios = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CoverageWarning)  # the meat's warning, as tested above
        for seed in range(40):
            X, y = _data(1000, 100 + seed)
            res = _fit(X, y, rho=0.5, random_state=seed).result_
            _, hc0 = robust_ols(np.column_stack([np.ones(len(y)), X]), y)
            ratios.append(np.mean(np.sqrt(np.diag(res.population.parts["sampling"])) / hc0))
    assert 0.9 <= np.mean(ratios) <= 1.12
