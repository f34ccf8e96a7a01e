"""Dask data below the documented size warn that the fit is likely faster in memory; the
warning depends on the public sizes only (``dpfit.distributed.small``). Small persisted data
get fewer row-block holders, so a step makes fewer calls (``dpfit.distributed.holders``)."""

import warnings

import numpy as np
import pytest

da = pytest.importorskip("dask.array", reason="dask is not installed (optional extra: dpfit[dask])")

from dpfit.algorithms import dp_gd  # noqa: E402
from dpfit.distributed import check_dask_rows  # noqa: E402
from dpfit.distributed import holders as holders_module  # noqa: E402
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


def test_the_warning_points_at_the_callers_line():
    X, y = _arrays(400, 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dp_gd(X, y, rho=0.5, clip=2.0, steps=2, n_public=400, rng=1)
    hits = [w for w in caught if issubclass(w.category, DaskOverheadWarning)]
    assert hits and {w.filename for w in hits} == {__file__}


def test_the_warning_does_not_depend_on_the_values():
    messages = set()
    for seed in range(3):
        X, y = _arrays(100, 3, seed)
        X = X * (10.0**seed)
        (w,) = _warnings({"X": (X, 2), "y": (y, 1)}, 100)
        messages.add(str(w.message))
    assert len(messages) == 1


@pytest.mark.parametrize(
    "owners, values, chosen",
    [
        (["a", "b", "b"], 1e6, ["b"]),  # small: one holder, where most blocks are
        (["a", "b", "b"], 4.9e6, ["b"]),
        (["a", "b", "b"], 1.2e7, ["a", "b"]),
        (["a", "a", "a"], 2e7, ["a", "b"]),  # at most one per worker
        (["c", "c", "a"], 1.1e7, ["a", "c"]),
    ],
)
def test_small_data_get_fewer_holders(owners, values, chosen):
    threads = {"a": 1, "b": 1, "c": 1} if "c" in owners else {"a": 1, "b": 1}
    assert sorted(holders_module._holding(threads, owners, values)) == chosen


def test_a_step_on_small_persisted_data_is_one_call(client):
    X, y = _arrays(2000, 3, seed=4)
    X, y = client.persist([X.rechunk((500, 3)), y.rechunk(500)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DaskOverheadWarning)
        traj = dp_gd(X, y, rho=0.5, clip=2.0, steps=3, n_public=2000, rng=1)
    holders = holders_module._HOLDERS[(X.name, y.name)]
    assert holders is not None and len(holders.actors) == 1 and holders.indices == ((0, 1, 2, 3),)
    memory = dp_gd(X.compute(), y.compute(), rho=0.5, clip=2.0, steps=3, n_public=2000, rng=1)
    np.testing.assert_allclose(traj.iterates, memory.iterates, rtol=1e-10, atol=1e-14)
