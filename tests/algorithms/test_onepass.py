"""One-pass reading order: a shuffled pass processes the records in a uniform permutation.

Amplification by shuffling (DP-SSGD's ``epsilon=``/``delta=`` accountant, Feldman et al. 2021)
holds only if record i is processed at a uniformly random position among all n steps. These
tests read the order back from the data (a column of record ids) and, end to end, from the
step at which a replaced record changes DP-SSGD's release.
"""

import warnings

import numpy as np
import pytest
from scipy import stats

from dpfit.algorithms.onepass import one_pass_data
from dpfit.algorithms.ssgd import dp_ssgd
from dpfit.mechanisms import recording, replaying


def ids_data(n, d=3):
    """Records whose first column is their index (and y = -index): the order is readable."""
    X = np.zeros((n, d))
    X[:, 0] = np.arange(n)
    return X, -np.arange(n, dtype=np.float64)


def read_order(data, sizes, seed):
    segments = list(data.segments(sizes, np.random.default_rng(seed)))
    ids = np.concatenate([X[:, 0] for X, _ in segments]).astype(np.int64)
    ys = np.concatenate([y for _, y in segments])
    assert np.array_equal(ys, -ids)  # X and y rows stay aligned
    return ids


@pytest.mark.parametrize("n, sizes", [(4000, [4000]), (10_000, [4096, 4096, 1808])])
def test_shuffled_order_is_the_permutation_of_all_records(n, sizes):
    X, y = ids_data(n)
    ids = read_order(one_pass_data(X, y), sizes, seed=7)
    # The records come in the order of the permutation itself, not sorted within a segment.
    assert np.array_equal(ids, np.random.default_rng(7).permutation(n))
    assert np.array_equal(np.sort(ids), np.arange(n))  # every record exactly once
    assert not np.array_equal(ids, np.arange(n))


def test_unshuffled_order_is_the_index_order():
    X, y = ids_data(5000)
    ids = read_order(one_pass_data(X, y, shuffle=False), [4096, 904], seed=7)
    assert np.array_equal(ids, np.arange(5000))


def test_lazy_arrays_are_read_in_the_same_order_as_in_memory(tmp_path):
    X, y = ids_data(6000)
    mx = np.memmap(tmp_path / "X.dat", dtype=np.float32, mode="w+", shape=X.shape)
    mx[:] = X
    mx.flush()
    lazy = one_pass_data(np.memmap(tmp_path / "X.dat", dtype=np.float32, shape=X.shape), y)
    assert lazy.kind == "lazy"
    sizes = [4096, 1000, 904]
    assert np.array_equal(read_order(lazy, sizes, 3), read_order(one_pass_data(X, y), sizes, 3))


def test_dask_arrays_are_read_in_the_same_order_as_in_memory():
    da = pytest.importorskip("dask.array")
    X, y = ids_data(6000)
    lazy = one_pass_data(da.from_array(X, chunks=(1500, 3)), da.from_array(y, chunks=1500), n=6000)
    assert lazy.kind == "dask"
    sizes = [4096, 1904]
    assert np.array_equal(read_order(lazy, sizes, 3), read_order(one_pass_data(X, y), sizes, 3))


def test_position_of_a_record_is_uniform_over_the_permutations():
    # n <= 4096 (one segment of DP-SSGD's reads): record 0 used to be read first every time.
    n, replicates = 8, 400
    X, y = ids_data(n)
    positions = [
        int(np.flatnonzero(read_order(one_pass_data(X, y), [n], s) == 0)[0])
        for s in range(replicates)
    ]
    counts = np.bincount(positions, minlength=n)
    assert stats.chisquare(counts).pvalue > 1e-3  # expected 50 per position


def _canary_step(X, y, seed):
    """The step at which replacing record 0 changes DP-SSGD's release (record/replay)."""
    kw = dict(clip=1.0, step_size=0.05, rng=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded noise; delta > 1/n
        with recording() as rec:
            first = dp_ssgd(X, y, epsilon=1.0, delta=1e-6, **kw)
        X2, y2 = X.copy(), y.copy()
        X2[0], y2[0] = 1e3, 1e6  # the clipped gradient of record 0 changes direction
        with replaying(rec) as rep:
            dp_ssgd(X2, y2, epsilon=1.0, delta=1e-6, **kw)
    assert first.config["accountant"] in ("shuffle", "parallel")
    moved = [
        k
        for k, (a, b) in enumerate(zip(rec.releases, rep.releases, strict=True))
        if not np.array_equal(a.value, b.value)
    ]
    assert len(moved) == 1  # one pass: record 0 is read by exactly one step
    return moved[0]


def test_dp_ssgd_reads_each_record_at_a_uniform_step():
    # Finding: dp_ssgd(epsilon=, delta=) claims amplification by shuffling, but at n <= 4096 it
    # read the records in index order, so record 0's release was always step 0, alone
    # (1.875, 1e-6)-DP at n = 4000 against the claimed (1, 1e-6).
    n, replicates = 10, 300
    rng = np.random.default_rng(11)  # synthetic data, not privacy noise
    X = rng.standard_normal((n, 2))
    y = X @ np.ones(2) + 0.3 * rng.standard_normal(n)
    steps = [_canary_step(X, y, seed) for seed in range(replicates)]
    counts = np.bincount(steps, minlength=n)
    assert stats.chisquare(counts).pvalue > 1e-3  # expected 30 per step


def test_dp_ssgd_claims_amplification_only_for_a_shuffled_order():
    X, y = ids_data(4000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kw = dict(clip=1.0, step_size=0.01, epsilon=1.0, delta=1e-6, rng=0)
        shuffled = dp_ssgd(X, y, **kw)
        fixed = dp_ssgd(X, y, shuffle=False, **kw)
    assert shuffled.config["accountant"] == "shuffle" and shuffled.config["shuffle"]
    assert fixed.config["accountant"] == "parallel"
    assert fixed.config["noise_multiplier"] > shuffled.config["noise_multiplier"]


@pytest.mark.parametrize("bad", [None, np.nan, np.inf, -np.inf])
def test_finiteness_check_is_exact_also_when_the_sum_overflows(bad):
    # The check sums X first (a finite sum proves every entry finite), then checks exactly.
    X, y = np.full((10, 2), 1e308), np.zeros(10)  # finite, but the sum overflows
    if bad is None:
        assert one_pass_data(X, y).n == 10
        return
    X[3, 1] = bad
    with pytest.raises(ValueError, match="NaN or infinite"):
        one_pass_data(X, y)
    with pytest.raises(ValueError, match="NaN or infinite"):
        one_pass_data(np.ones((10, 2)), np.where(np.arange(10) == 4, bad, 0.0))
