"""The private GLM on Dask: the same sums in another order, the same releases to rounding.

Every pass of :func:`dpfit.algorithms.glm.dp_glm` is one per-record block function summed by
:func:`dpfit.inference.preconditioner.record_sum` (in memory: one call; on Dask: one
distributed reduction), and the descent draws the same noise from the same seed; so the Dask
fit releases the in-memory one up to the order of floating-point addition. The tolerance
1e-10 relative is far below any change of a release or a draw (the noise scale here is about
1e-2 of the coefficients).
"""

import warnings

import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe", reason="dask[dataframe] is not installed")

import dask.array as da  # noqa: E402

import dpfit  # noqa: E402
from dpfit.algorithms.glm import dp_glm  # noqa: E402
from dpfit.exceptions import InsecureRandomnessWarning  # noqa: E402

pytestmark = pytest.mark.usefixtures("client")

N = 3000
GEN = np.random.default_rng(6)  # synthetic data, not privacy noise
FRAME = pd.DataFrame({"x": GEN.uniform(-1, 1, N), "z": GEN.uniform(0, 10, N)})
FRAME["y"] = (GEN.uniform(size=N) < 1 / (1 + np.exp(0.5 - FRAME.x - 0.1 * FRAME.z))).astype(float)
FRAME["c"] = GEN.poisson(np.exp(0.2 + 0.5 * FRAME.x)).astype(float)
SHORT = {"steps": 40, "m": 4, "burn_in": 0, "random_state": 3}
BOUNDS = {"x": (-1, 1), "z": (0, 10)}


def _quiet(fit, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRandomnessWarning)
        return fit(*args, **kwargs)


@pytest.mark.parametrize("family", ["binomial", "poisson"])
def test_the_formula_on_a_dask_frame_releases_the_in_memory_fit(family):
    formula = "y ~ x + z" if family == "binomial" else "c ~ x + z"
    extra = {} if family == "binomial" else {"y_bounds": (0, 20)}
    kwargs = {"family": family, "rho": 1.0, "bounds": BOUNDS, **SHORT, **extra}
    mem = _quiet(dpfit.glm, formula, FRAME, **kwargs)
    lazy = _quiet(dpfit.glm, formula, dd.from_pandas(FRAME, npartitions=3), n_public=N, **kwargs)
    np.testing.assert_allclose(lazy.params, mem.params, rtol=1e-10)
    np.testing.assert_allclose(lazy.cov_params(), mem.cov_params(), rtol=1e-10)
    assert [e.label for e in lazy.ledger.releases] == [e.label for e in mem.ledger.releases]
    assert lazy.rho == pytest.approx(mem.rho, rel=1e-12)


def test_dp_glm_on_dask_arrays_needs_the_public_n():
    X = np.column_stack([np.ones(N), FRAME[["x"]].to_numpy()])
    lazy_X = da.from_array(X, chunks=(700, 2))
    lazy_y = da.from_array(FRAME["y"].to_numpy(), chunks=700)
    with pytest.raises(TypeError, match="n_public is required"):
        dp_glm(lazy_X, lazy_y, rho=1.0, rng=0)
    traj = _quiet(dp_glm, lazy_X, lazy_y, rho=1.0, n_public=N, steps=20, m=4, burn_in=0, rng=0)
    ref = _quiet(dp_glm, X, FRAME["y"].to_numpy(), rho=1.0, steps=20, m=4, burn_in=0, rng=0)
    np.testing.assert_allclose(traj.estimate, ref.estimate, rtol=1e-10)


@pytest.mark.parametrize("model", ["logistic", "poisson"])
def test_the_estimators_on_dask_arrays_release_the_in_memory_fit(model):
    X = FRAME[["x", "z"]].to_numpy()
    lazy_X = da.from_array(X, chunks=(700, 2))
    if model == "logistic":
        make = lambda **kw: dpfit.DPLogisticRegression(rho=1.0, bounds=[(-1, 1), (0, 10)], **kw)  # noqa: E731
        y = FRAME["y"].to_numpy()
    else:
        make = lambda **kw: dpfit.DPPoissonRegressor(  # noqa: E731
            rho=1.0, bounds=[(-1, 1), (0, 10)], y_bounds=(0, 20), **kw
        )
        y = FRAME["c"].to_numpy()
    short = {k: v for k, v in SHORT.items()}
    mem = _quiet(make(**short).fit, X, y)
    lazy = _quiet(make(n_public=N, **short).fit, lazy_X, da.from_array(y, chunks=700))
    np.testing.assert_allclose(lazy.coef_, mem.coef_, rtol=1e-10)
    np.testing.assert_allclose(lazy.result_.cov_params(), mem.result_.cov_params(), rtol=1e-10)
    assert lazy.result_.summary().as_text().count("\n") == mem.result_.summary().as_text().count(
        "\n"
    )


def test_text_labels_on_dask_must_be_declared():
    labels = dd.from_pandas(pd.Series(np.where(FRAME["y"] > 0, "yes", "no")), npartitions=3)
    X = dd.from_pandas(FRAME[["x", "z"]], npartitions=3)
    model = dpfit.DPLogisticRegression(rho=1.0, bounds={"x": (-1, 1), "z": (0, 10)}, n_public=N,
                                       **SHORT)  # fmt: skip
    with pytest.raises(TypeError, match=r"classes=\[non-event, event\]"):
        model.fit(X, labels)
    declared = _quiet(model.set_params(classes=["no", "yes"]).fit, X, labels)
    numeric = _quiet(
        model.set_params(classes=None).fit, X, dd.from_pandas(FRAME["y"], npartitions=3)
    )
    np.testing.assert_allclose(declared.coef_, numeric.coef_, rtol=1e-10)
