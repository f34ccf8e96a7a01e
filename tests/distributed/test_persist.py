"""A fit's rows are built once and persisted on the workers; each step is one call per worker
to the holder of its row blocks, the block sums added on the driver in a tree (issue 19,
``dpfit.distributed.persist``, ``dpfit.distributed.holders``).

Every test runs on the two-worker LocalCluster of ``conftest.py`` (threads in this process,
so module state such as the read counter below is shared with the workers).
"""

import math

import numpy as np
import pytest

da = pytest.importorskip("dask.array", reason="dask is not installed (optional extra: dpfit[dask])")
dd = pytest.importorskip("dask.dataframe", reason="dask[dataframe] is not installed")

import dask  # noqa: E402
import pandas as pd  # noqa: E402

import dpfit  # noqa: E402
from dpfit.algorithms import dp_gd  # noqa: E402
from dpfit.distributed import holders as holders_module  # noqa: E402
from dpfit.distributed import persist as persist_module  # noqa: E402
from dpfit.distributed import reduce as reduce_module  # noqa: E402
from dpfit.distributed import row_block_sum  # noqa: E402
from dpfit.mechanisms import recording  # noqa: E402

pytestmark = pytest.mark.usefixtures("client")

RTOL = 1e-10  # the acceptance criterion; summation order alone gives about 1e-15
N, P = 3000, 4
RNG = np.random.default_rng(20261124)
X = RNG.standard_normal((N, P))
Y = X @ np.array([1.0, -1.0, 0.5, 2.0]) + 3.0 * RNG.standard_normal(N)  # clip binds often
FIT = {"rho": 0.5, "clip": 2.0, "steps": 6, "rng": 3}
MEMORY = dp_gd(X, Y, **FIT)

_READS = {"blocks": 0}


def _read(block):
    """Identity that counts how often the source is read (a read from storage)."""
    _READS["blocks"] += 1
    return block


def assert_close(a, b):
    np.testing.assert_allclose(b, a, rtol=RTOL, atol=RTOL * np.max(np.abs(a)))


def counted_source():
    """X in 3 x 2 blocks (column chunks to merge) whose reads are counted, and y; new keys
    for every call (``name=False``), so no test reuses the blocks another has computed."""
    Xd = da.from_array(X, chunks=(1000, 2), name=False).map_blocks(_read, meta=np.empty((0, 0)))
    return Xd, da.from_array(Y, chunks=1000)


@pytest.mark.parametrize(
    "setting, fits, passes",
    # 6 steps, plus the read pass before the first charge (which persisted rows make the persist)
    [("auto", True, 1), (True, False, 1), ("auto", False, 7), (False, True, 7)],
    ids=["auto-fits", "true", "auto-too-big", "false"],
)
def test_rows_are_read_once_when_persisted(monkeypatch, setting, fits, passes):
    monkeypatch.setattr(persist_module, "_fits", lambda client, nbytes: fits)
    Xd, yd = counted_source()
    _READS["blocks"] = 0
    with dask.config.set({"dpfit.persist": setting}):
        lazy = dp_gd(Xd, yd, n_public=N, **FIT)
    assert _READS["blocks"] == passes * 6  # 6 source blocks per pass over the data
    assert_close(MEMORY.iterates, lazy.iterates)
    np.testing.assert_array_equal(
        lazy.diagnostics["clipped_per_step"], MEMORY.diagnostics["clipped_per_step"]
    )


def test_ols_builds_its_design_once():
    """The formula's design (built on the workers, then rescaled) is persisted: its source
    partitions are read once for all the steps, and the row count comes from memory."""
    gen = np.random.default_rng(5)
    frame = pd.DataFrame({"x": gen.uniform(-4, 4, N)})
    frame["y"] = 1.0 + 0.5 * frame["x"] + gen.normal(0, 1, N)
    source = dd.from_pandas(frame, npartitions=3).map_partitions(_read, meta=frame.iloc[:0])
    kw = {"rho": 1.0, "bounds": {"x": (-4, 4)}, "y_bounds": (-5, 7), "steps": 10}
    kw.update(interval=None, precondition=False, bounds_check=0.0, random_state=0)
    _READS["blocks"] = 0
    lazy = dpfit.ols("y ~ x", source, n_public=N, **kw)
    assert _READS["blocks"] == 3
    assert_close(dpfit.ols("y ~ x", frame, **kw).params.to_numpy(), lazy.params.to_numpy())


def _block(Xb, yb, w):  # a generic block function (no registered per-block state)
    return np.append(Xb.T @ yb * w, [len(yb), float(np.sum(yb > 0))])


def test_every_route_gives_the_same_sums_bit_for_bit(client, monkeypatch):
    """Holders, one task per persisted block, one graph: the same block sums, added in the
    same tree on the driver; only those (blocks x width) sums reach the driver."""
    arrays = [
        da.from_array(X, chunks=(250, P), name=False),
        da.from_array(Y, chunks=250, name=False),
    ]
    persisted = client.persist(arrays)  # 12 row blocks
    seen = []
    real_tree_sum = reduce_module.tree_sum

    def tree_sum(parts):
        seen.append(np.shape(parts))
        return real_tree_sum(parts)

    monkeypatch.setattr(reduce_module, "tree_sum", tree_sum)
    by_holders = row_block_sum(_block, persisted, (2.0,), width=P + 2)
    assert holders_module._HOLDERS[tuple(a.name for a in persisted)] is not None
    monkeypatch.setattr(reduce_module, "block_results", lambda *args: None)  # holders failed
    by_tasks = row_block_sum(_block, persisted, (2.0,), width=P + 2)
    by_graph = row_block_sum(_block, arrays, (2.0,), width=P + 2)
    np.testing.assert_array_equal(by_holders, by_tasks)
    np.testing.assert_array_equal(by_holders, by_graph)
    np.testing.assert_allclose(by_holders[:P], 2.0 * X.T @ Y, rtol=1e-12)
    assert by_holders[P] == N and by_holders[P + 1] == np.sum(Y > 0)
    assert seen == [(12, P + 2)] * 3


def test_no_row_block_is_fetched_to_the_driver(client, monkeypatch):
    """Making the holders waits for the persisted blocks but fetches none of them."""
    Xd, yd = client.persist(
        [da.from_array(X, chunks=(500, P), name=False), da.from_array(Y, chunks=500, name=False)]
    )
    real_gather, fetched = client.gather, []

    def gather(futures, *args, **kwargs):
        out = real_gather(futures, *args, **kwargs)
        fetched.extend(out if isinstance(out, list) else [out])
        return out

    monkeypatch.setattr(client, "gather", gather)
    lazy = dp_gd(Xd, yd, n_public=N, **FIT)
    assert_close(MEMORY.iterates, lazy.iterates)
    assert holders_module._HOLDERS[(Xd.name, yd.name)] is not None
    assert fetched and all(np.size(f) <= P + 1 for f in fetched if isinstance(f, np.ndarray))


def test_a_failed_holder_falls_back_to_tasks(client, monkeypatch):
    Xd, yd = client.persist(
        [da.from_array(X, chunks=(500, P), name=False), da.from_array(Y, chunks=500, name=False)]
    )
    key = (Xd.name, yd.name)
    first = dp_gd(Xd, yd, n_public=N, **FIT)
    assert holders_module._HOLDERS[key] is not None

    def gone(self, *args):
        raise OSError("the worker left")

    monkeypatch.setattr(holders_module.RowBlockHolder, "block_sums", gone)
    again = dp_gd(Xd, yd, n_public=N, **FIT)
    assert holders_module._HOLDERS[key] is None  # ordinary tasks from now on
    assert_close(first.iterates, again.iterates)
    assert_close(MEMORY.iterates, again.iterates)


def test_least_squares_state_is_registered_under_the_kernels_name():
    from dpfit.algorithms._kernels import least_squares_block

    # registered by the kernels' module (distributed imports nothing from algorithms)
    name = holders_module._name(least_squares_block)
    assert name == "dpfit.algorithms._kernels.least_squares_block"
    assert name in holders_module._BLOCK_STATES


@pytest.mark.parametrize(
    "rows, owners, threads, share",
    [
        ([4, 4, 4, 4], ["a"] * 4, {"a": 1, "b": 1}, {"a": [0, 1], "b": [2, 3]}),
        ([4, 4, 4, 4], ["a", "b"] * 2, {"a": 1, "b": 1}, {"a": [0, 2], "b": [1, 3]}),
        ([4] * 6, ["b"] * 6, {"a": 2, "b": 1}, {"a": [2, 3, 4, 5], "b": [0, 1]}),
        ([7, 7, 7, 7, 2], ["a"] * 5, {"a": 1, "b": 1}, {"a": [0, 1, 4], "b": [2, 3]}),
        ([4, 4], ["gone", "gone"], {"a": 1}, {"a": [0, 1]}),
    ],
)
def test_row_blocks_are_shared_in_proportion_to_threads(rows, owners, threads, share):
    assert holders_module._share(rows, owners, threads) == share


@pytest.mark.parametrize("persisted", [True, False])
def test_a_block_is_summed_over_cache_sized_sub_blocks(client, monkeypatch, persisted):
    monkeypatch.setattr(reduce_module, "SUB_BLOCK_BYTES", 8 * (P + 1) * 100)  # 100 records
    monkeypatch.setattr(reduce_module, "_MIN_SUB_ROWS", 1)
    arrays = [da.from_array(X, chunks=(700, P)), da.from_array(Y, chunks=700)]
    if persisted:
        arrays = client.persist(arrays)

    def block(Xb, yb):  # records, calls, calls with at most 100 records, sum of y
        return np.array([len(yb), 1.0, float(len(yb) <= 100), yb.sum()])

    total = row_block_sum(block, arrays, width=4)
    calls = sum(math.ceil(rows / 100) for rows in arrays[0].chunks[0])  # 7+7+7+7+2
    np.testing.assert_allclose(total, [N, calls, calls, Y.sum()], rtol=1e-12)


def test_misaligned_blocks_are_copied_once():
    """A block received from another worker can be a misaligned view into the message buffer
    (float64 at an odd address); it is copied into aligned memory, equal values."""
    buffer = bytearray(8 * 12 + 1)
    view = np.frombuffer(buffer, dtype=np.float64, count=12, offset=1).reshape(4, 3)
    assert not view.flags.aligned
    copy = reduce_module.aligned(view)
    assert copy.flags.aligned and copy.flags.c_contiguous and copy is not view
    np.testing.assert_array_equal(copy, view)
    fine = np.ones((4, 3))
    assert reduce_module.aligned(fine) is fine
    holder = holders_module.RowBlockHolder(2, 1, view, np.ones(4))
    assert all(b.flags.aligned for row in holder._rows for b in row)


def test_a_bad_persist_setting_fails_before_any_release():
    Xd, yd = da.from_array(X, chunks=1000), da.from_array(Y, chunks=1000)
    with (
        dask.config.set({"dpfit.persist": "yes"}),
        recording() as rec,
        pytest.raises(ValueError, match=r"dpfit\.persist .* must be 'auto', True or False"),
    ):
        dp_gd(Xd, yd, n_public=N, **FIT)
    assert rec.releases == []


class _Scheduler:
    """Stand-in for a Client: the workers' memory limits and the bytes they hold."""

    def __init__(self, limits, held):
        self.workers = {
            f"w{i}": {"memory_limit": limit, "metrics": {"managed_bytes": h}}
            for i, (limit, h) in enumerate(zip(limits, held, strict=True))
        }

    def scheduler_info(self, n_workers=-1):
        return {"workers": self.workers}


@pytest.mark.parametrize(
    "limits, held, nbytes, fits",
    [
        ([100, 100], [0, 0], 100, True),
        ([100, 100], [0, 0], 101, False),
        ([100, 100], [60, 40], 50, True),
        ([100, 100], [60, 40], 51, False),
        ([100, 0], [0, 0], 1, False),  # a worker without a limit: unknown, never auto
        ([], [], 1, False),  # no worker
    ],
)
def test_auto_persists_what_takes_at_most_half_the_free_memory(limits, held, nbytes, fits):
    assert persist_module._fits(_Scheduler(limits, held), nbytes) is fits
