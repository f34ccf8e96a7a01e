"""The buffered least-squares kernel against the whole-array block function it replaces."""

import tracemalloc

import numpy as np
import pytest

from dpfit.algorithms._kernels import (
    LeastSquaresSums,
    Rows,
    finite_row_norms,
    least_squares_block,
    least_squares_sum,
    level_counts,
)
from dpfit.mechanisms import DoublingSearch, row_norms


def _data(n, p, seed=0):
    gen = np.random.default_rng(seed)
    X = gen.standard_normal((n, p))
    return X, X @ np.linspace(-1, 1, p) + gen.standard_t(2, size=n), gen.standard_normal(p)


def _assert_summation_order(total, ref, X, y, theta):
    # each coordinate is a sum of n terms (each a dot product of p): reordering moves it by a
    # few ulp of sum |terms|
    scale = np.abs(X).T @ np.abs(X @ theta - y)
    np.testing.assert_array_less(np.abs(total - ref), 1e-13 * scale)


@pytest.mark.parametrize("clip", [None, 0.5, 3.0, 1e6])
def test_one_block_is_the_block_function_on_a_column_major_copy(clip):
    X, y, theta = _data(1500, 7)
    total, clipped = LeastSquaresSums(X, y, clip)(theta)
    # bit for bit: the block function's arithmetic on the Fortran-order copy (row norms of X)
    ref = least_squares_block(np.asfortranarray(X), y, theta, clip, row_norms(X))
    np.testing.assert_array_equal(total, ref[:-1])
    assert clipped == ref[-1]
    # against the row-major X only the order of the terms differs; the clipped count is exact
    ref = least_squares_block(X, y, theta, clip)
    _assert_summation_order(total, ref[:-1], X, y, theta)
    assert clipped == ref[-1]


@pytest.mark.parametrize("clip", [None, 0.5, 3.0])
def test_an_x_of_up_to_8_mib_is_one_column_major_block(clip):
    X, y, theta = _data(100_000, 10, seed=3)  # 8 MB
    sums = LeastSquaresSums(X, y, clip)
    assert len(sums._blocks) == 1 and sums._blocks[0][0].flags.f_contiguous
    total, clipped = sums(theta)
    ref = least_squares_block(np.asfortranarray(X), y, theta, clip, row_norms(X))
    np.testing.assert_array_equal(total, ref[:-1])
    assert clipped == ref[-1]
    ref = least_squares_block(X, y, theta, clip)
    _assert_summation_order(total, ref[:-1], X, y, theta)
    assert clipped == ref[-1]


def test_a_larger_x_keeps_row_major_blocks():
    X, y, _ = _data(100_001, 11)  # 8.8 MB: no copy, cache-sized blocks of the rows of X
    sums = LeastSquaresSums(X, y, 1.0)
    assert len(sums._blocks) > 1
    assert all(block[0].base is X and block[0].flags.c_contiguous for block in sums._blocks)


@pytest.mark.parametrize("clip, block_rows", [(None, 64), (0.5, 100), (2.0, 4096)])
def test_row_blocks_agree_up_to_summation_order(clip, block_rows):
    X, y, theta = _data(20_001, 5, seed=1)
    sums = LeastSquaresSums(X, y, clip, block_rows=block_rows)
    ref = least_squares_block(X, y, theta, clip)
    for _ in range(2):  # buffers are reused: a second call gives the same answer
        total, clipped = sums(theta)
        _assert_summation_order(total, ref[:-1], X, y, theta)
        assert clipped == ref[-1]


def test_non_finite_per_example_gradients_are_zeroed_like_the_block_function():
    X, y, _ = _data(5000, 3, seed=2)
    theta = np.array([1.0, 2.0, 0.5])
    X[10] = [1e200, 1e200, -1e200]  # |r| ||x|| overflows: the record is zeroed
    X[20] = [1e308, 1e308, 1e308]  # r = inf: the sum is NaN, recomputed by the block function
    for block_rows in (None, 512):
        sums = LeastSquaresSums(X, y, 1.0, block_rows=block_rows)
        total, clipped = sums(theta)
        ref = least_squares_block(X, y, theta, 1.0, row_norms(X))
        np.testing.assert_array_equal(total, ref[:-1])
        assert clipped == ref[-1] and np.all(np.isfinite(total))
    X[20] = 0.0  # only the overflowing norm is left: the fast path zeroes it too
    total, clipped = LeastSquaresSums(X, y, 1.0)(theta)
    ref = least_squares_block(np.asfortranarray(X), y, theta, 1.0, row_norms(X))
    np.testing.assert_array_equal(total, ref[:-1])
    assert clipped == ref[-1]


def _call_peak(n, calls=8, repeats=3):
    """Peak memory of ``calls`` calls of the sums at n rows, the least of ``repeats`` windows.

    Long windows of many calls see about the same share of other threads' allocations, so
    those shift both peaks alike and cancel in a difference.
    """
    X, y, theta = _data(n, 4)
    sums = LeastSquaresSums(X, y, 1.0)
    sums(theta)
    peaks = []
    for _ in range(repeats):
        tracemalloc.start()
        for _ in range(calls):
            sums(theta)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    return min(peaks)


def test_a_call_allocates_nothing_of_the_size_of_n():
    # A block's buffers are allocated once, at construction, so a call's peak does not grow
    # with n: 2e5 more rows add less than 1/20 of an n-vector (one temporary column would add
    # 1.6 MB). A slope, so allocations by anything else running in the process (an earlier
    # test's threads) cancel instead of breaking an absolute cap.
    n = 200_000
    assert _call_peak(2 * n) - _call_peak(n) < 8 * n / 20


@pytest.mark.parametrize("clip", [None, 0.5, 3.0])
def test_rows_are_gathered_block_by_block_with_the_same_per_record_arithmetic(clip):
    # Rows of a permutation (a one-pass segment), 3.5 blocks of 4096 rows at p = 64
    X, y, theta = _data(40_000, 64, seed=4)
    rows = np.random.default_rng(5).permutation(40_000)[:14_500]
    Xg, yg = np.take(X, rows, axis=0), np.take(y, rows)
    total, clipped = least_squares_sum(Rows(X, rows), Rows(y, rows), theta, clip)
    ref = least_squares_block(Xg, yg, theta, clip)
    # only the order of the block sums differs: a few ulp of sum |terms| per coordinate
    scale = np.abs(Xg).T @ np.abs(Xg @ theta - yg)
    np.testing.assert_array_less(np.abs(total - ref[:-1]), 1e-13 * scale)
    assert clipped == ref[-1]
    search = DoublingSearch(ceiling=100.0, noise_multiplier=1.0, threshold=10.0, n_levels=12)
    np.testing.assert_array_equal(  # counts are integers: exactly the same
        level_counts(Rows(X, rows), Rows(y, rows), theta, search),
        level_counts(Xg, yg, theta, search),
    )


@pytest.mark.parametrize("first", [True, False])
@pytest.mark.parametrize("clips", [(None, None), (0.5, 0.5), (4.0, 6.0)])
def test_two_stage_buffers_are_the_block_function_bit_for_bit(first, clips):
    from dpfit.algorithms._iv_kernels import two_stage_block
    from dpfit.algorithms._two_stage_core import TwoStageSums

    gen = np.random.default_rng(6)
    n, q, p = 3000, 5, 3
    Z, X = gen.standard_normal((n, q)), gen.standard_normal((n, p))
    y = X @ np.linspace(-1, 1, p) + gen.standard_t(2, size=n)
    Z[10] = 1e200  # ||z|| ||w - x|| overflows: the record is zeroed in both stages' rules
    X[20] = [1e300, -1e300, 1e300]
    theta, beta = gen.standard_normal((q, p)), gen.standard_normal(p)
    sums = TwoStageSums(X, y, Z, clip_theta=clips[0], clip_beta=clips[1], first=first)
    for _ in range(2):  # the buffers are reused: a second call gives the same answer
        g1, c1, g2, c2 = sums(theta, beta)
        ref = two_stage_block(X, y, Z, theta, beta, *clips, first)
        k = q * p
        np.testing.assert_array_equal(g1.ravel(), ref[:k])
        np.testing.assert_array_equal(g2, ref[k + 1 : k + 1 + p])
        assert (c1, c2) == (ref[k], ref[-1])


@pytest.mark.parametrize("order", ["C", "F"])
def test_clipped_row_sum_into_a_buffer_is_the_same_sum_bit_for_bit(order):
    from dpfit.algorithms._kernels import clipped_row_sum

    gen = np.random.default_rng(7)
    rows = np.asarray(gen.standard_t(2, size=(5000, 6)), order=order)
    rows[3] = np.inf  # zeroed by both (inf * 0 would be NaN)
    rows[4, 2] = np.nan
    ref = clipped_row_sum(rows, 1.5)
    out = np.empty_like(rows)
    total, clipped = clipped_row_sum(rows, 1.5, out=out)
    np.testing.assert_array_equal(total, ref[0])
    assert clipped == ref[1] and np.isfinite(total).all()
    in_place = rows.copy(order="K")
    total, clipped = clipped_row_sum(in_place, 1.5, out=in_place)
    np.testing.assert_array_equal(total, ref[0])


@pytest.mark.parametrize("clip", [None, 0.5, 3.0])
@pytest.mark.parametrize("with_norms", [False, True])
def test_consecutive_rows_are_read_as_views_block_by_block(clip, with_norms):
    # a contiguous segment (slice) of 3.5 blocks of 4096 rows at p = 64, read as views
    X, y, theta = _data(40_000, 64, seed=6)
    rows = slice(1_000, 15_500)
    norms = row_norms(X) if with_norms else None
    total, clipped = least_squares_sum(Rows(X, rows, norms), Rows(y, rows), theta, clip)
    ref = least_squares_block(X[rows], y[rows], theta, clip)
    _assert_summation_order(total, ref[:-1], X[rows], y[rows], theta)
    assert clipped == ref[-1]
    search = DoublingSearch(ceiling=100.0, noise_multiplier=1.0, threshold=10.0, n_levels=12)
    np.testing.assert_array_equal(
        level_counts(Rows(X, rows), Rows(y, rows), theta, search),
        level_counts(X[rows], y[rows], theta, search),
    )


@pytest.mark.parametrize("clip", [0.5, 3.0])
def test_one_block_of_rows_is_the_block_function_bit_for_bit(clip):
    X, y, theta = _data(3_000, 5, seed=7)
    for rows in (slice(100, 2_900), np.random.default_rng(8).permutation(3_000)[:2_000]):
        Xg, yg = Rows(X, rows).gather(), Rows(y, rows).gather()
        total, clipped = least_squares_sum(Rows(X, rows, row_norms(X)), Rows(y, rows), theta, clip)
        ref = least_squares_block(Xg, yg, theta, clip)
        np.testing.assert_array_equal(total, ref[:-1])
        assert clipped == ref[-1] > 0


def test_rows_with_non_finite_gradients_are_zeroed_like_the_block_function():
    X, y, theta = _data(9_000, 3, seed=9)
    X[20] = [1e308, 1e308, 1e308]  # finite, but r overflows: recomputed by the block function
    X[8_500] = [1e300, -1e300, 1e300]
    for rows in (slice(0, 9_000), np.arange(9_000)[::-1].copy()):
        total, clipped = least_squares_sum(Rows(X, rows, row_norms(X)), Rows(y, rows), theta, 1.0)
        Xg, yg = Rows(X, rows).gather(), Rows(y, rows).gather()
        ref = least_squares_block(Xg, yg, theta, 1.0)
        assert np.isfinite(total).all()
        kept = np.abs(Xg).max(axis=1) < 1e200  # the two huge records count zero
        _assert_summation_order(total, ref[:-1], Xg[kept], yg[kept], theta)
        assert clipped == ref[-1]


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_finite_row_norms_is_an_exact_finiteness_check(bad):
    X = np.full((10, 3), 1e308)  # finite, but norms and their sum overflow
    np.testing.assert_array_equal(finite_row_norms(X, "X"), row_norms(X))
    X[7, 1] = bad
    with pytest.raises(ValueError, match="X contains NaN or infinite values"):
        finite_row_norms(X, "X")
