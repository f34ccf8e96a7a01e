"""The IV result's identification tests: first-stage F, Anderson-Rubin set, Sargan/Hansen,
Wu-Hausman (post-processing of the released moments), in the original units and the summary;
the weak-instrument warning."""

import math
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpfit
from dpfit.exceptions import CoverageWarning
from dpfit.experiments.weak_iv_coverage import _draw


def _fit(design="strong-over", n=5000, rho=20.0, seed=1, **kw):
    frame, public = _draw(design, n, np.random.default_rng([seed, 31]))
    instruments = [c for c in frame.columns if c.startswith("z")]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = dpfit.DPIVRegression(rho=rho, random_state=seed, **public, **kw)
        res = model.fit(frame[["x"]], frame["y"], Z=frame[instruments]).result_
    return res, [str(w.message) for w in caught if issubclass(w.category, CoverageWarning)]


def test_a_strong_design_reports_every_test_and_an_ar_set_near_the_wald_interval():
    res, warned = _fit()
    assert not warned
    stage = res.first_stage()
    assert stage.statistic > 100 and stage.critical == 22.30  # Stock-Yogo, 3 instruments
    assert res.first_stage_f == stage.statistic
    (piece,) = res.ar_interval()
    lo, hi = res.conf_int().loc["x"]
    assert piece[0] <= 0.5 <= piece[1]
    # strong instruments: the AR set is the Wald interval widened by the AR test's L = 3
    # degrees of freedom, sqrt(chi2_3(0.95) / chi2_1(0.95)) = 1.43 (within 15%)
    ratio = math.sqrt(stats.chi2.isf(0.05, 3) / stats.chi2.isf(0.05, 1))
    assert (piece[1] - piece[0]) == pytest.approx(ratio * (hi - lo), rel=0.15)
    assert res.sargan().dof == (2.0,) and res.sargan(robust=True).name == "Hansen J"
    assert res.wu_hausman().pvalue < 1e-6  # corr(u, v) = 0.95: x is endogenous
    text = res.summary().as_text()
    for piece_text in ("first-stage F = ", "Anderson-Rubin 95% set for x", "Sargan: chi2(2)"):
        assert piece_text in text
    assert "Wu-Hausman: chi2(1)" in text
    assert "Anderson-Rubin 90% set for x" in res.summary(alpha=0.1).as_text()


def test_the_ar_set_is_in_the_original_units():
    """Rescaling x by 10 divides its coefficient and its AR set by 10 (the bounds with it)."""
    frame, public = _draw("strong-over", 5000, np.random.default_rng([1, 31]))
    instruments = [c for c in frame.columns if c.startswith("z")]
    scaled = frame.assign(x=10 * frame["x"])
    bounds = {**public["bounds"], "x": tuple(10 * b for b in public["bounds"]["x"])}
    sets = []
    for data, b in ((frame, public["bounds"]), (scaled, bounds)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = dpfit.DPIVRegression(
                rho=20.0, random_state=1, bounds=b, y_bounds=public["y_bounds"]
            )
            sets.append(
                model.fit(data[["x"]], data["y"], Z=data[instruments]).result_.ar_interval()
            )
    np.testing.assert_allclose(np.array(sets[1]) * 10, np.array(sets[0]), rtol=1e-9)


def test_a_weak_design_warns_and_points_to_the_ar_set():
    res, warned = _fit("weak-over", seed=2)
    assert len(warned) == 1 and "instruments are weak" in warned[0]
    assert "ar_interval()" in warned[0] and "stronger instruments" in warned[0]
    assert res.first_stage_f < 22.30


def test_pickles_keep_the_tests():
    res, _ = _fit()
    back = pickle.loads(pickle.dumps(res))
    assert back.ar_interval() == res.ar_interval()
    assert back.first_stage().statistic == res.first_stage().statistic


def test_fits_without_released_moments_refuse_the_tests():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (500, 2))
    y = X @ [1.0, -1.0] + rng.normal(size=500)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        linear = dpfit.DPLinearRegression(rho=1.0, bounds=[(-1, 1)] * 2, y_bounds=(-4, 4)).fit(X, y)
    for call in (
        lambda r: r.first_stage(),
        lambda r: r.ar_interval(),
        lambda r: r.sargan(),
        lambda r: r.wu_hausman(),
    ):
        with pytest.raises(ValueError, match="noisy-moment IV fit"):
            call(linear.result_)
    assert "Anderson-Rubin" not in linear.result_.summary().as_text()


def test_an_exactly_identified_fit_has_no_sargan_and_one_without_instruments_no_tests():
    res, _ = _fit("weak-just", seed=3)
    with pytest.raises(ValueError, match="exactly identified"):
        res.sargan()
    assert "Sargan" not in res.summary().as_text()
    frame = pd.DataFrame({"x": np.linspace(-1, 1, 400), "y": np.linspace(0, 1, 400)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exo = dpfit.DPIVRegression(rho=1.0, random_state=0).fit(frame[["x"]], frame["y"]).result_
    assert exo.identification_text(0.05) is None
    with pytest.raises(ValueError, match="no endogenous regressor"):
        exo.first_stage()


def test_ar_test_in_original_units():
    res, _ = _fit()
    (piece,) = res.ar_interval(0.05)
    for end in piece:
        assert res.ar_test(end).pvalue == pytest.approx(0.05, abs=1e-6)
    assert res.ar_test(0.5).pvalue > 0.05 or not (piece[0] <= 0.5 <= piece[1])
    assert math.isfinite(res.ar_test([0.4]).statistic)
