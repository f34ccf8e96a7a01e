"""The default DPLinearRegression with bounds: preconditioned DP-GD and population intervals."""

import warnings

import numpy as np
import pytest

from dpfit import DPLinearRegression
from dpfit.exceptions import CoverageWarning, InsecureRandomnessWarning
from dpfit.mechanisms import recording

THETA = np.array([1.0, 0.5, -0.3, 0.2])


def _data(seed, n=4000):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    return X, THETA[0] + X @ THETA[1:] + rng.standard_normal(n)


def _fit(X, y, **kw):
    params = {"rho": 2.0, "bounds": [(-3, 3)] * 3, "y_bounds": (-6, 8), "random_state": 0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRandomnessWarning)
        return DPLinearRegression(**{**params, **kw}).fit(X, y)


def test_default_releases_population_interval_and_charges_rho_exactly():
    X, y = _data(0)
    with recording() as rec:
        model = _fit(X, y)
    labels = [e.label for e in model.privacy_.releases]
    assert labels == [
        "gd/xtx",
        "gd/whitened-xtx",
        "gd/xty-pilot",
        "gd/residual-scale",
        "dp_gd/gradient",
        "gd/huber-hessian",
        "gd/omega",
        "gd/clipped-excess",
        "gd/far-records",
    ]
    assert model.privacy_.rho <= 2.0 and model.privacy_.rho == pytest.approx(2.0, rel=1e-9)
    assert len(rec) == 208
    res = model.result_
    assert res.targets == ("population", "sample")
    pop, samp = res.conf_int(), res.conf_int(target="sample")
    assert ((pop["upper"] - pop["lower"]) > (samp["upper"] - samp["lower"])).all()
    text = model.summary().as_text()
    assert "Interval covers:       the population least-squares coefficients" in text
    assert "preconditioned" in text and "std err" in text
    assert res.wald_test("x0 = 0, x1 = 0").pvalue < 1e-6  # true slopes 0.5, -0.3


def test_invalid_settings_release_nothing():
    X, y = _data(1, n=500)
    for kw, match in [
        ({"moment_share": 1.5}, "moment_share"),
        ({"precondition": True, "bounds": None}, "bounds"),
        ({"precondition": True, "interval": None}, "interval"),
    ]:
        with recording() as rec, pytest.raises((ValueError, TypeError), match=match):
            _fit(X, y, **kw)
        assert len(rec) == 0


@pytest.mark.slow
def test_population_coverage_on_fresh_data():
    # 100 fresh datasets x 4 coefficients; binomial s.d. of coverage over 100 fits is 0.022,
    # so 0.89 (2.7 s.d. below 0.95) fails only when the sampling part is missing (which
    # gives about 0.6 here, issue 14) or badly mis-estimated.
    covered = []
    for seed in range(100):
        X, y = _data(100 + seed, n=2000)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CoverageWarning)
            ci = _fit(X, y, rho=0.5, random_state=seed).conf_int().to_numpy()
        covered.append((ci[:, 0] <= THETA) & (THETA <= ci[:, 1]))
    assert np.mean(covered) >= 0.89, np.mean(covered, axis=0)


def test_residual_scale_divides_by_the_public_n_under_add_remove():
    """The private clip's residual scale is (1/n_public) sum min(r_i^2, 4), not a mean over
    the (private) row count: its sensitivity 4 / n_public holds only then. Rebuilt here from
    the recorded releases before it (X'X/n and the pilot X'y/n) and the public rescaling."""
    from dpfit.inference.population import NoisyMoment
    from dpfit.inference.whitened import inverse_sqrt
    from dpfit.models._scaling import PublicScaling

    X, y = _data(2, n=600)
    n_public = 1000
    with recording() as rec:
        _fit(X, y, relation="add-remove", n_public=n_public)
    by_label = {r.entry.label: r for r in rec.releases}
    pilot_b = by_label["gd/xty-pilot"]
    k = pilot_b.output.shape[0]

    def moment(label):
        M = np.empty((k, k))
        M[np.triu_indices(k)] = by_label[label].output
        M.T[np.triu_indices(k)] = by_label[label].output
        return NoisyMoment(matrix=M, noise_std=by_label[label].entry.noise_std)

    # the two-stage whitener P (theta = P u), and the pilot (P P')^-1... = P P' b~
    P1 = inverse_sqrt(moment("gd/xtx").preconditioner())
    P = P1 @ inverse_sqrt(moment("gd/whitened-xtx").preconditioner())
    scaling = PublicScaling.from_bounds([(-3, 3)] * 3, (-6, 8), n_features=3, fit_intercept=True)
    D, yy = scaling.design(X), scaling.response(y)
    r2 = np.minimum((yy - D @ (P @ (P.T @ pilot_b.output))) ** 2, 4.0)
    value = by_label["gd/residual-scale"].value
    np.testing.assert_allclose(value, [r2.sum() / n_public], rtol=1e-9)


def test_sample_interval_text_names_the_variant_that_built_it():
    X, y = _data(3, n=800)
    model = _fit(X, y, interval="independent-runs", interval_variant="formal")
    assert "each run's final iterate" in model.result_.interval_method
    assert model.result_.config["interval_variant"] == "formal"
