"""Dask inputs: the public-n rule, shape-only checks before any release, the zero-out rule,
refusal of silent materialisation, and the reduction helpers (issue 10)."""

import numpy as np
import pytest

da = pytest.importorskip("dask.array", reason="dask is not installed (optional extra: dpfit[dask])")
dd = pytest.importorskip("dask.dataframe", reason="dask[dataframe] is not installed")

import pandas as pd  # noqa: E402

from dpfit.algorithms import dp_gd, dp_two_stage_gd, two_stage_gd  # noqa: E402
from dpfit.baselines import adassp  # noqa: E402
from dpfit.distributed import map_rows, row_block_sum, zero_nonfinite_records  # noqa: E402
from dpfit.mechanisms import recording  # noqa: E402
from dpfit.privacy import mean_sensitivity  # noqa: E402

N, P = 600, 3
RNG = np.random.default_rng(7)
X = RNG.standard_normal((N, P))
Y = X @ np.array([1.0, 0.5, -1.0]) + RNG.standard_normal(N)
XD, YD = da.from_array(X, chunks=(250, P)), da.from_array(Y, chunks=250)
FIT = {"rho": 0.5, "clip": 2.0, "steps": 3, "rng": 1}


def unknown_chunks():
    """X, y from a Dask DataFrame: the row chunk sizes are unknown (NaN) until computed."""
    frame = dd.from_pandas(pd.DataFrame(np.column_stack([X, Y])), npartitions=3)
    return frame.iloc[:, :P].to_dask_array(), frame.iloc[:, P].to_dask_array()


@pytest.mark.parametrize(
    "data, options, exc, match",
    [
        ((XD, YD), {}, TypeError, "n_public is required for Dask"),
        ((XD, YD), {"relation": "add-remove"}, TypeError, "n_public is required for Dask"),
        ((XD, YD), {"n_public": N + 1}, ValueError, "does not match the 600 rows"),
        ((XD, YD), {"n_public": 0}, ValueError, "n_public"),
        ((XD, Y), {"n_public": N}, TypeError, "y must be a Dask"),
        ((XD, YD[:-1]), {"n_public": N}, ValueError, "same number of rows"),
        ((XD[:, 0], YD), {"n_public": N}, ValueError, "X must be 2-dimensional"),
        ((XD, XD), {"n_public": N}, ValueError, "use y.ravel"),
        ((XD.astype(str), YD), {"n_public": N}, TypeError, "numeric"),
    ],
)
def test_bad_dask_inputs_fail_before_any_release(data, options, exc, match):
    with recording() as rec, pytest.raises(exc, match=match):
        dp_gd(*data, **FIT, **options)
    assert rec.releases == []


def test_declared_n_divides_the_sums_when_row_counts_are_unknown_or_private(client):
    # Unknown chunk sizes: under replace-one n is public, so the rows are counted (one pass)
    # and the declared n checked before anything is charged.
    Xu, yu = unknown_chunks()
    with recording() as rec, pytest.raises(ValueError, match="does not match the 600 rows"):
        dp_gd(Xu, yu, **FIT, n_public=N + 1)
    assert rec.releases == []
    lazy = dp_gd(Xu, yu, **FIT, n_public=N)
    assert lazy.config["n"] == N
    np.testing.assert_allclose(lazy.iterates, dp_gd(X, Y, **FIT).iterates, rtol=1e-10)
    # Add/remove: the row count is private and never compared; n_public normalises (P2).
    ar = dp_gd(XD, YD, **FIT, relation="add-remove", n_public=N - 100)
    assert ar.config["n"] == N - 100
    assert {e.sensitivity for e in ar.ledger} == {mean_sensitivity(2.0, N - 100, "add-remove")}


def test_nonfinite_records_become_zero_records(client):
    Xbad, ybad = X.copy(), Y.copy()
    Xbad[5, 1], ybad[17], Xbad[300, 0] = np.nan, np.inf, -np.inf
    Xzero, yzero = X.copy(), Y.copy()
    Xzero[[5, 17, 300]], yzero[[5, 17, 300]] = 0.0, 0.0
    lazy = dp_gd(
        da.from_array(Xbad, chunks=200), da.from_array(ybad, chunks=200), **FIT, n_public=N
    )
    np.testing.assert_allclose(lazy.iterates, dp_gd(Xzero, yzero, **FIT).iterates, rtol=1e-10)
    with pytest.raises(ValueError, match="NaN or infinite"):  # in memory: refused up front
        dp_gd(Xbad, ybad, **FIT)


@pytest.mark.parametrize(
    "call",
    [
        lambda: adassp(XD, YD, rho=1.0, x_bound=3.0, y_bound=3.0),
        lambda: two_stage_gd(XD, YD, XD, steps=2, step_size_theta=0.5, step_size_beta=0.5),
    ],
    ids=["adassp", "two_stage_gd"],
)
def test_functions_without_dask_support_refuse_instead_of_loading(call):
    with recording() as rec, pytest.raises(TypeError, match="Dask collection"):
        call()
    assert rec.releases == []


def test_two_stage_needs_n_public_and_identification():
    with pytest.raises(TypeError, match="n_public is required"):
        dp_two_stage_gd(
            XD, YD, XD, rho_theta=1.0, rho_beta=1.0, clip_theta=1.0, clip_beta=1.0, steps=2,
            step_size_theta=0.5, step_size_beta=0.5,
        )  # fmt: skip
    with pytest.raises(ValueError, match="under-identified"):
        dp_two_stage_gd(
            XD, YD, XD[:, :2], rho_theta=1.0, rho_beta=1.0, clip_theta=1.0, clip_beta=1.0,
            steps=2, step_size_theta=0.5, step_size_beta=0.5, n_public=N,
        )  # fmt: skip
    with pytest.raises(ValueError, match="n_public must equal len"):
        dp_two_stage_gd(
            X, Y, X, rho_theta=1.0, rho_beta=1.0, clip_theta=1.0, clip_beta=1.0, steps=2,
            step_size_theta=0.5, step_size_beta=0.5, n_public=N - 1,
        )  # fmt: skip


def test_row_block_sum_adds_block_results(client):
    def block(X, y, w):
        return np.append(X.T @ y * w, X.shape[0])

    total = row_block_sum(block, [XD, YD.rechunk(XD.chunks[0])], (2.0,), width=P + 1)
    np.testing.assert_allclose(total, np.append(2.0 * X.T @ Y, N), rtol=1e-12)


def test_zero_nonfinite_records_and_map_rows():
    big = [1e200, -1e200]  # finite, but its sum of squares overflows: kept
    a, b = zero_nonfinite_records(
        np.array([[1, 2], [np.nan, 3], big, [4, 5]]), np.array([1.0, 2.0, 3.0, np.inf])
    )
    np.testing.assert_array_equal(a, [[1.0, 2.0], [0.0, 0.0], big, [0.0, 0.0]])
    np.testing.assert_array_equal(b, [1.0, 0.0, 3.0, 0.0])
    assert a.dtype == np.float64
    with pytest.raises(ValueError, match="not aligned"):
        zero_nonfinite_records(np.ones((2, 2)), np.ones(3))
    lazy = map_rows(lambda M: np.column_stack([np.ones(len(M)), 2 * M]), XD, columns=P + 1)
    np.testing.assert_array_equal(
        lazy.compute(scheduler="sync"), np.column_stack([np.ones(N), 2 * X])
    )
    np.testing.assert_array_equal(map_rows(lambda v: -v, Y, columns=None), -Y)
