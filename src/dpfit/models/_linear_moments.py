"""The sums behind the preconditioned fit's releases, one code path for NumPy and Dask.

Every release of :func:`~dpfit.models._linear_population.run_preconditioned_gd` apart from
the DP-GD steps is a sum over records of a per-record quantity computed from public
arguments (the bounds, the released preconditioner P, the released estimate, the clip):

* :func:`gram_sums`: the upper triangle of sum_i d_i d_i' (rows clipped to the public bound)
  and sum_i d_i y_i: the preconditioner X'X/n and the pilot X'y/n, in one pass;
* :func:`residual_scale_sum`: sum_i min(r_i^2, 4) at the pilot: the private clip's scale;
* :func:`sandwich_sums`: the upper triangles of sum_i 1{g_i unclipped} d_i d_i' (the Huber
  Hessian) and of sum_i g_i g_i' (the clipped whitened gradients g_i = clip_C(P d_i r_i)).

:func:`record_sum` evaluates one of them on all the rows in memory, or on every row block
of persisted Dask arrays as one distributed reduction
(:func:`dpfit.distributed.row_block_sum`), so the two backends compute the same numbers up
to the order of floating-point addition.
:func:`dpfit.inference.population.release_moment_sum` then adds the noise of
:func:`~dpfit.inference.population.release_second_moment` (same sensitivity, same mechanism,
charged before drawing) to the reduced sum, on the driver.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..distributed import is_dask, row_block_sum
from ..mechanisms import clip_rows

__all__ = [
    "gram_sums",
    "record_sum",
    "residual_scale_sum",
    "sandwich_sums",
    "triangle",
]


def triangle(k: int) -> int:
    """Number of entries of the upper triangle of a k x k matrix."""
    return k * (k + 1) // 2


def _upper_gram(rows: np.ndarray) -> np.ndarray:
    return (rows.T @ rows)[np.triu_indices(rows.shape[1])]


def gram_sums(D: np.ndarray, y: np.ndarray, bound: float) -> np.ndarray:
    """[upper(sum clip_B(d_i) clip_B(d_i)'), sum_i clip_B(d_i) y_i] over the rows of a block
    (the rows clipped with :func:`dpfit.mechanisms.clip_rows`' margin, so that the bound the
    releases' sensitivities assume holds for the computed rows too)."""
    with np.errstate(all="ignore"):
        rows = clip_rows(D, bound)
        return np.concatenate([_upper_gram(rows), rows.T @ y])


def residual_scale_sum(D: np.ndarray, y: np.ndarray, pilot: np.ndarray) -> np.ndarray:
    """[sum_i min((y_i - d_i'pilot)^2, 4)] over the rows of a block (each term in [0, 4])."""
    with np.errstate(all="ignore"):
        return np.array([np.minimum((y - D @ pilot) ** 2, 4.0).sum()])


def sandwich_sums(
    D: np.ndarray,
    y: np.ndarray,
    P: np.ndarray,
    estimate: np.ndarray,
    clip: float,
    bound: float,
) -> np.ndarray:
    """[upper(Huber Hessian sum), upper(sum g_i g_i')] over the rows of a block.

    At the released ``estimate`` (design coordinates), r_i = y_i - d_i'estimate and the raw
    whitened gradient is P d_i r_i (P symmetric); record i is unclipped when its norm is at
    most ``clip``, and g_i is the gradient clipped to ``clip``.
    """
    with np.errstate(all="ignore"):
        raw = (D @ P) * (y - D @ estimate)[:, None]
        unclipped = np.einsum("ij,ij->i", raw, raw) <= clip**2
        huber = clip_rows(D, bound) * unclipped[:, None]
        return np.concatenate([_upper_gram(huber), _upper_gram(clip_rows(raw, clip))])


def record_sum(
    block_fn: Callable[..., np.ndarray], arrays: Sequence[Any], args: tuple, *, width: int
) -> np.ndarray:
    """``block_fn(*arrays, *args)`` over all records: one call in memory; on Dask (persisted,
    row-aligned arrays) one distributed reduction whose per-block sums are added on the driver.
    The result is private (un-noised); only
    :func:`~dpfit.inference.population.release_moment_sum` or :func:`dpfit.mechanisms.gaussian`
    may make it public."""
    if is_dask(arrays[0]):
        return row_block_sum(block_fn, arrays, args, width=width)
    return np.asarray(block_fn(*arrays, *args), dtype=np.float64)
