"""Dask data below the documented size warn that the fit is likely faster in memory; the
warning depends on the public sizes only (``dpfit.distributed.small``)."""

import warnings

import numpy as np
import pytest

da = pytest.importorskip("dask.array", reason="dask is not installed (optional extra: dpfit[dask])")

from dpfit.algorithms import dp_gd  # noqa: E402
from dpfit.distributed import check_dask_rows  # noqa: E402
from dpfit.distributed.small import IN_MEMORY_VALUES  # noqa: E402
from dpfit.exceptions import DaskOverheadWarning  # noqa: E402
from dpfit.privacy import Relation  # noqa: E402

pytestmark = pytest.mark.usefixtures("client")


def _arrays(n, p, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    return da.from_array(X, chunks=(max(1, n // 2), p)), da.from_array(
        X[:, 0], chunks=max(1, n // 2)
    )


def _warnings(arrays, n_public, relation=Relation.ADD_REMOVE):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_dask_rows(arrays, n_public=n_public, relation=relation, persist=False)
    return [w for w in caught if issubclass(w.category, DaskOverheadWarning)]


def test_a_small_fit_on_dask_warns_and_gives_the_same_result():
    X, y = _arrays(400, 3)
    with pytest.warns(DaskOverheadWarning, match="likely faster in memory"):
        traj = dp_gd(X, y, rho=0.5, clip=2.0, steps=3, n_public=400, rng=1)
    memory = dp_gd(X.compute(), y.compute(), rho=0.5, clip=2.0, steps=3, n_public=400, rng=1)
    np.testing.assert_allclose(traj.iterates, memory.iterates, rtol=1e-10, atol=1e-14)


def test_the_threshold_is_on_the_declared_size_times_the_columns():
    X, y = _arrays(100, 3)
    arrays = {"X": (X, 2), "y": (y, 1)}
    below = IN_MEMORY_VALUES // 4 - 1  # 4 columns (X: 3, y: 1)
    assert len(_warnings(arrays, below)) == 1
    assert _warnings(arrays, IN_MEMORY_VALUES // 4) == []


def test_the_warning_does_not_depend_on_the_values():
    messages = set()
    for seed in range(3):
        X, y = _arrays(100, 3, seed)
        X = X * (10.0**seed)
        (w,) = _warnings({"X": (X, 2), "y": (y, 1)}, 100)
        messages.add(str(w.message))
    assert len(messages) == 1
