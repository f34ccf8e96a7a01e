"""OLS against statsmodels; SSP and AdaSSP: accounting, bounds (rows 23-25) and replay."""

import math

import numpy as np
import pytest
import statsmodels.api as sm

from dpfit.baselines import adassp, nonprivate_ols, ssp
from dpfit.datasets import draw_linear_design
from dpfit.exceptions import NonPrivateWarning
from dpfit.mechanisms import recording, replaying
from dpfit.paper_only import adassp_paper

DATA = draw_linear_design(3000, 4, rng=0)
X, Y = np.array(DATA.X), np.array(DATA.y)
BOUNDS = {"x_bound": 5.0, "y_bound": 5.0}


def test_ols_matches_statsmodels():
    """Two routes: QR here, statsmodels' pinv-based OLS there."""
    Xc = np.column_stack([np.ones(len(Y)), X])
    ours, ref = nonprivate_ols(Xc, Y), sm.OLS(Y, Xc).fit()
    np.testing.assert_allclose(ours.params, ref.params, rtol=1e-10)
    np.testing.assert_allclose(ours.bse, ref.bse, rtol=1e-10)
    np.testing.assert_allclose(ours.conf_int(0.1), ref.conf_int(0.1), rtol=1e-10)
    assert ours.df_resid == ref.df_resid


def test_ols_rejects_rank_deficiency_and_short_data():
    with pytest.raises(ValueError, match="rank deficient"):
        nonprivate_ols(np.column_stack([X, X[:, 0]]), Y)
    with pytest.raises(ValueError, match="more rows than columns"):
        nonprivate_ols(X[:4], Y[:4])


@pytest.mark.parametrize("fit, n_releases", [(ssp, 2), (adassp, 3)])
def test_accounting_is_exact(fit, n_releases):
    traj = fit(X, Y, rho=0.3, rng=1, **BOUNDS)
    assert len(traj.ledger) == n_releases
    assert traj.rho == pytest.approx(0.3, rel=1e-12)
    sens = {e.label.split("/")[1]: e.sensitivity for e in traj.ledger}
    assert sens["xtx"] == pytest.approx(math.sqrt(2) * 25.0)
    assert sens["xty"] == pytest.approx(2 * 25.0)


BIG = draw_linear_design(200_000, 4, rng=3)


@pytest.mark.parametrize("fit", [ssp, adassp])
def test_estimation_error_has_the_scale_of_the_declared_noise(fit):
    """The private fit minus the exact fit on the same clipped data is the noise's effect.

    At n = 2e5 the sampling error (~5e-3) swamps the privacy error (~1e-3), so a bound on
    ||theta - theta*|| is passed by a noiseless fit. Instead, to first order (the noise is
    ~5e-4 of X^T X here), theta - theta_ref = A^-1 (w - W theta_ref) with A = X^T X + ridge I,
    w ~ N(0, s_Xy^2 I) and W symmetric with i.i.d. N(0, s_XX^2) upper triangle, so
    Cov = A^-1 (s_Xy^2 I + s_XX^2 (|theta|^2 I + theta theta^T - diag(theta^2))) A^-1 with the
    stds the ledger entries declare. Over 20 seeds the whitened errors' sum of squares is
    chi^2 with 80 degrees of freedom; the band [40, 140] holds with probability > 1 - 1e-4,
    while a noiseless fit gives 0 and a noise std off by a factor 1.5 gives 36 or 180.
    """
    X, y = np.asarray(BIG.X), np.asarray(BIG.y)
    Xc = X * np.minimum(1.0, 6.0 / np.linalg.norm(X, axis=1))[:, None]  # the public clipping
    yc = np.clip(y, -6.0, 6.0)
    total = 0.0
    for seed in range(20):
        traj = fit(X, y, rho=1.0, rng=seed, x_bound=6.0, y_bound=6.0)
        std = {e.label.split("/")[1]: e.noise_std for e in traj.ledger}
        A = Xc.T @ Xc + float(traj.releases.get("ridge", [0.0])[0]) * np.eye(4)
        ref = np.linalg.solve(A, Xc.T @ yc)
        inner = std["xty"] ** 2 * np.eye(4) + std["xtx"] ** 2 * (
            ref @ ref * np.eye(4) + np.outer(ref, ref) - np.diag(ref**2)
        )
        cov = np.linalg.solve(A, np.linalg.solve(A, inner).T)
        z = np.linalg.solve(np.linalg.cholesky(cov), traj.estimate - ref)
        total += z @ z
    assert traj.rho == pytest.approx(1.0, rel=1e-12)
    assert 40 < total < 140, total


@pytest.mark.parametrize("fit", [ssp, adassp])
def test_replay_on_a_neighbour_outside_the_bounds(fit):
    """Row 23: out-of-bounds records are clipped, so the declared sensitivity holds."""
    X2, y2 = X.copy(), Y.copy()
    X2[0], y2[0] = 100.0 * np.ones(4), -1e4
    with recording() as rec:
        first = fit(X, Y, rho=0.3, rng=1, **BOUNDS)
    with replaying(rec) as rep:
        second = fit(X2, y2, rho=0.3, rng=1, **BOUNDS)
    for a, b in zip(rec.releases, rep.releases, strict=True):
        assert np.linalg.norm(a.value - b.value) <= a.entry.sensitivity * (1 + 1e-12)
    np.testing.assert_array_equal(first.estimate, second.estimate)
    assert second.diagnostics["fraction_x_clipped"] > 0


@pytest.mark.parametrize("fit", [ssp, adassp])
@pytest.mark.parametrize(
    "row, bounds, exc, fragment",
    [
        (24, {"x_bound": None, "y_bound": 1.0}, ValueError, "x_bound is required"),
        (24, {"x_bound": 1.0, "y_bound": None}, ValueError, "y_bound is required"),
        (25, {"x_bound": float("nan"), "y_bound": 1.0}, ValueError, "x_bound must be"),
        (25, {"x_bound": 1.0, "y_bound": math.inf}, ValueError, "y_bound must be"),
        (25, {"x_bound": -1.0, "y_bound": 1.0}, ValueError, "x_bound must be"),
        (25, {"x_bound": "1", "y_bound": 1.0}, TypeError, "x_bound must be a real number"),
        (25, {"x_bound": (0, 1), "y_bound": 1.0}, TypeError, "x_bound must be a real number"),
    ],
)
def test_bad_bounds_raise_before_any_release(fit, row, bounds, exc, fragment):
    with recording() as rec, pytest.raises(exc, match=fragment):
        fit(X, Y, rho=0.3, rng=0, **bounds)
    assert len(rec) == 0, f"row {row}"


def test_adassp_paper_is_opt_in_and_labelled_non_private():
    with pytest.raises(ValueError, match="allow_nonprivate=True"):
        adassp_paper(X, Y, rho=0.05)
    with pytest.warns(NonPrivateWarning, match="not private"):
        traj = adassp_paper(X, Y, rho=0.05, allow_nonprivate=True, rng=0)
    assert traj.config["private"] is False
    assert traj.config["x_bound"] == pytest.approx(np.linalg.norm(X, axis=1).max())
    # Wang's calibration at epsilon(rho = 0.05, delta = 1e-6) = 1.7123 (Claim A.6).
    eps = 0.05 + 2 * math.sqrt(0.05 * math.log(1e6))
    assert eps == pytest.approx(1.7123, abs=1e-4)
    scale = math.sqrt(math.log(6e6)) / (eps / 3)
    assert traj.config["noise_std_xtx"] == pytest.approx(scale * traj.config["x_bound"] ** 2)


@pytest.mark.parametrize("fit", [ssp, adassp])
def test_add_remove_needs_a_public_n_and_never_reports_the_private_one(fit):
    """Under add/remove the row count is private (issue 13, finding 4): n is declared."""
    with recording() as rec, pytest.raises(ValueError, match="n_public is required"):
        fit(X, Y, rho=0.3, relation="add-remove", rng=1, **BOUNDS)
    assert len(rec) == 0
    traj = fit(X, Y, rho=0.3, relation="add-remove", n_public=2500, rng=1, **BOUNDS)
    assert traj.config["n"] == 2500  # never len(X) = 3000
    with pytest.raises(ValueError, match="must equal the number of rows"):
        fit(X, Y, rho=0.3, n_public=2500, rng=1, **BOUNDS)  # replace-one: n is public
    assert fit(X, Y, rho=0.3, rng=1, **BOUNDS).config["n"] == 3000
