"""The default preconditioned DPLinearRegression with its population interval on Dask (issue 14).

The Dask fit computes the same sums as the in-memory fit (one shared block function per
pass, algorithms/_linear_moments.py and inference/preconditioner.py), only added in another
order, and draws the same noise from the same seed; so its releases equal the in-memory ones
to rounding. The tolerance 1e-12 relative is about 1e4 times the measured gap (4e-16 on these
data): any difference in a release, a noise draw or the ledger moves the estimate by at least
the noise scale (about 1e-2 here), ten orders of magnitude more.
"""

import warnings

import numpy as np
import pytest

dd = pytest.importorskip("dask.dataframe", reason="dask[dataframe] is not installed")

import dask  # noqa: E402
import dask.array as da  # noqa: E402
import pandas as pd  # noqa: E402

import dpfit  # noqa: E402
import dpfit.inference.preconditioner as moments  # noqa: E402
from dpfit import Budget, DPLinearRegression  # noqa: E402
from dpfit.exceptions import InsecureRandomnessWarning  # noqa: E402
from dpfit.mechanisms import recording  # noqa: E402

pytestmark = pytest.mark.usefixtures("client")

N = 3000
THETA = np.array([1.0, 0.5, -0.3, 0.2])
RNG = np.random.default_rng(5)
X = RNG.standard_normal((N, 3))
Y = THETA[0] + X @ THETA[1:] + RNG.standard_normal(N)
PARAMS = {"rho": 2.0, "bounds": [(-3, 3)] * 3, "y_bounds": (-6, 8), "random_state": 0}
RTOL = 1e-12  # module docstring
LABELS = [
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


def _fit(X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRandomnessWarning)
        return DPLinearRegression(**{**PARAMS, **kw}).fit(X, y)


def _dask(X, y, rows=700):
    return da.from_array(X, chunks=(rows, X.shape[1])), da.from_array(y, chunks=rows)


def _assert_same_release(lazy, mem):
    np.testing.assert_allclose(lazy.coef_, mem.coef_, rtol=RTOL)
    np.testing.assert_allclose(lazy.intercept_, mem.intercept_, rtol=RTOL)
    for target in ("population", "sample"):
        np.testing.assert_allclose(
            lazy.conf_int(target=target), mem.conf_int(target=target), rtol=RTOL
        )
    lazy_cov, mem_cov = lazy.result_.covariance(), mem.result_.covariance()
    np.testing.assert_allclose(lazy_cov.cov, mem_cov.cov, rtol=RTOL)
    assert [e.label for e in lazy.privacy_.releases] == [e.label for e in mem.privacy_.releases]
    assert lazy.privacy_.rho == mem.privacy_.rho
    for a, b in zip(lazy.privacy_.releases, mem.privacy_.releases, strict=True):
        # Omega's noise scales with the private clip, itself a release of a reduced sum
        assert a.rho == b.rho and a.noise_std == pytest.approx(b.noise_std, rel=RTOL)


@pytest.mark.parametrize("scheduler", ["distributed", "synchronous"])
@pytest.mark.parametrize("clip", [None, 2.5])
def test_dask_default_fit_releases_the_in_memory_population_interval(scheduler, clip):
    """Same seed, same rows: the same estimate, intervals and ledger, on the cluster's
    persisted blocks (holders) and on a local scheduler (one graph per pass)."""
    mem = _fit(X, Y, clip=clip)
    config = {} if scheduler == "distributed" else {"scheduler": "synchronous"}
    with dask.config.set(config):
        lazy = _fit(*_dask(X, Y), clip=clip, n_public=N)
    labels = [e.label for e in lazy.privacy_.releases]
    assert labels == (LABELS if clip is None else [*LABELS[:2], *LABELS[4:]])
    assert lazy.result_.targets == ("population", "sample")
    _assert_same_release(lazy, mem)
    assert lazy.summary().as_text() == mem.summary().as_text()


def test_one_distributed_reduction_per_moment_pass(monkeypatch):
    """X'X with X'y, the whitened X'X, the residual scale, the Huber Hessian with Omega, and
    the clipped excess with the far records: five passes over the rows besides the DP-GD
    steps, each one reduction that returns only the sums."""
    widths = []
    reduce = moments.row_block_sum

    def counted(block_fn, arrays, args, *, width):
        out = reduce(block_fn, arrays, args, width=width)
        assert out.shape == (width,)
        widths.append((block_fn.__name__, width))
        return out

    monkeypatch.setattr(moments, "row_block_sum", counted)
    _fit(*_dask(X, Y), n_public=N)
    k, tri = 4, 10
    assert widths == [
        ("gram_sums", tri + k),
        ("whitened_gram_sums", tri),
        ("residual_scale_sum", 1),
        ("sandwich_sums", 2 * tri),
        ("excess_sums", k + 1),
    ]


def test_a_wrong_declared_n_is_refused_before_any_charge():
    budget = Budget(rho=5.0)
    with recording() as rec, pytest.raises(ValueError, match=f"n_public={N + 1} does not match"):
        DPLinearRegression(**PARAMS, n_public=N + 1).fit(*_dask(X, Y), budget=budget)
    assert len(rec) == 0 and budget.spent == 0.0


def test_nonfinite_records_are_zero_records_in_every_pass():
    """inf and NaN give the same release (the record is the zero record in every sum), and
    not the release with the value clipped into the bounds."""
    X_inf, X_nan, X_hi = X.copy(), X.copy(), X.copy()
    X_inf[4, 0], X_nan[4, 0], X_hi[4, 0] = np.inf, np.nan, 3.0
    inf = _fit(*_dask(X_inf, Y), n_public=N)
    nan = _fit(*_dask(X_nan, Y), n_public=N)
    np.testing.assert_array_equal(inf.coef_, nan.coef_)
    np.testing.assert_array_equal(inf.conf_int().to_numpy(), nan.conf_int().to_numpy())
    assert not np.array_equal(inf.coef_, _fit(*_dask(X_hi, Y), n_public=N).coef_)


def test_ols_on_a_dask_frame_defaults_to_the_population_interval():
    frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(y=Y)
    kw = {
        "rho": 2.0,
        "bounds": {"a": (-3, 3), "b": (-3, 3), "c": (-3, 3)},
        "y_bounds": (-6, 8),
        "random_state": 3,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRandomnessWarning)
        mem = dpfit.ols("y ~ a + b + c", frame, **kw)
        lazy = dpfit.ols("y ~ a + b + c", dd.from_pandas(frame, npartitions=3), n_public=N, **kw)
    assert lazy.targets == ("population", "sample")
    np.testing.assert_allclose(lazy.params, mem.params, rtol=RTOL)
    np.testing.assert_allclose(lazy.conf_int(), mem.conf_int(), rtol=RTOL)
    assert lazy.summary().as_text() == mem.summary().as_text()


def test_precondition_false_still_runs_plain_dp_gd_on_dask():
    kw = {"precondition": False, "steps": 50, "clip": 3.0}
    mem = _fit(X, Y, **kw)
    lazy = _fit(*_dask(X, Y), n_public=N, **kw)
    assert [e.label for e in lazy.privacy_.releases] == ["dp_gd/gradient"]
    assert lazy.result_.targets == ("sample",)
    np.testing.assert_allclose(lazy.coef_, mem.coef_, rtol=RTOL)
