"""In-memory row blocks (dpfit.distributed.blocks): a map or sum computed block by block equals
the whole-array computation (exactly for maps and one-block sums; to rounding for sums over
several blocks), and the default preconditioned fit holds no n x p temporary beyond a block.
"""

from __future__ import annotations

import tracemalloc
from functools import partial

import numpy as np
import pandas as pd
import pytest

import dpfit
from dpfit.algorithms._linear_moments import gram_sums, sandwich_sums
from dpfit.distributed import RowMap, map_rows
from dpfit.distributed.blocks import block_rows, block_sum, map_blocks
from dpfit.inference.preconditioner import whiten


def _data(n: int, p: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    gen = np.random.default_rng(seed)  # synthetic data, not privacy noise
    return gen.uniform(-2.0, 2.0, (n, p)), gen.uniform(-1.0, 1.0, n)


def _rescale(block: np.ndarray) -> np.ndarray:
    return np.column_stack([np.ones(len(block)), np.clip(block, -1.0, 1.0)])


@pytest.mark.parametrize("n", [1, 500, 3 * block_rows(6) + 17])
def test_map_blocks_equals_the_whole_map_bit_for_bit(n):
    X, _ = _data(n, 5)
    whole = _rescale(X)
    assert np.array_equal(map_blocks(_rescale, X), whole)
    lazy = map_rows(_rescale, X, columns=6, lazy=True)
    assert isinstance(lazy, RowMap) and lazy.shape == (n, 6)
    assert np.array_equal(np.asarray(lazy), whole)
    P = np.random.default_rng(1).standard_normal((6, 6))
    assert np.array_equal(map_rows(partial(whiten, P=P), lazy, columns=6), whole @ P)


def test_a_lazy_map_zeroes_non_finite_rows_as_the_eager_one():
    X, _ = _data(3000, 3)
    X[[5, 2999], 1] = np.nan  # a formula's zero records
    lazy = np.asarray(map_rows(_rescale, X, columns=4, lazy=True))
    assert np.array_equal(lazy, map_rows(_rescale, X, columns=4))
    assert not lazy[[5, 2999]].any() and np.isfinite(lazy).all()


def test_one_block_sum_is_the_whole_call_and_many_blocks_agree_to_rounding():
    X, y = _data(1000, 4)
    D = RowMap(X, _rescale, 5)
    assert np.array_equal(block_sum(gram_sums, [D, y], (3.0,)), gram_sums(_rescale(X), y, 3.0))
    X, y = _data(4 * block_rows(5) + 3, 4)
    D = RowMap(X, _rescale, 5)
    P = np.linalg.inv(np.linalg.cholesky(_rescale(X).T @ _rescale(X) / len(X))).T
    args = (P, np.full(5, 0.1), 2.0, 3.0, 1.5)
    for fn, extra in [(gram_sums, (3.0,)), (sandwich_sums, args)]:
        blocks, whole = block_sum(fn, [D, y], extra), fn(_rescale(X), y, *extra)
        np.testing.assert_allclose(blocks, whole, rtol=1e-12, atol=1e-9 * np.abs(whole).max())


def test_default_ols_extra_memory_is_a_small_multiple_of_the_frame():
    """Peak extra memory (tracemalloc) of the default preconditioned fit at n = 2e5, p = 10:
    the formula's design, the whitened copy and one block (2.5x the frame here, a block
    being a larger share of a small frame); 9.1x when the rescaled design, a row-order copy
    of the formula's design and temporaries of the size of the data were held."""
    n, p = 200_000, 10
    X, y = _data(n, p, seed=2)
    df = pd.DataFrame(X, columns=[f"x{j}" for j in range(p)]).assign(y=y)
    frame = df.memory_usage(deep=True).sum()
    formula = "y ~ " + " + ".join(f"x{j}" for j in range(p))
    bounds = {f"x{j}": (-2.0, 2.0) for j in range(p)}
    fit = partial(dpfit.ols, formula, rho=1.0, bounds=bounds, y_bounds=(-1, 1), random_state=0)
    fit(df.iloc[:2000])  # modules imported on first use are not data
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        fit(df)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert peak <= 3.0 * frame, peak / frame
