"""The sums behind the preconditioned fit's releases, one code path for NumPy and Dask.

Every release of :func:`~dpfit.algorithms.preconditioned_gd.preconditioned_gd` apart from
the DP-GD steps is a sum over records of a per-record quantity computed from public
arguments (the bounds, the released preconditioner P, the released estimate, the clip):

* :func:`gram_sums`: the upper triangle of sum_i d_i d_i' (rows clipped to the public bound)
  and sum_i d_i y_i: the preconditioner X'X/n and the pilot X'y/n, in one pass;
* :func:`residual_scale_sum`: sum_i min(r_i^2, 4) at the pilot: the private clip's scale;
* :func:`sandwich_sums`: the upper triangles of sum_i 1{g_i unclipped} z_i z_i' (the Huber
  Hessian in whitened coordinates, z_i = P d_i clipped to a public row norm) and of
  sum_i g_i g_i' (the clipped whitened gradients g_i = clip(P d_i r_i));
* :func:`excess_sums`: sum_i (clip_C2(g_i) - clip_C(g_i)), the clipped excess behind the gap
  to least squares, and the number of records whose gradient lies far beyond the clip.

:func:`dpfit.inference.preconditioner.record_sum` evaluates one of them on all the rows in
memory, or on every row block of persisted Dask arrays as one distributed reduction
(:func:`dpfit.distributed.row_block_sum`), so the two backends compute the same numbers up
to the order of floating-point addition; the whitener's second stage is
:func:`dpfit.inference.preconditioner.release_whitener`.
:func:`dpfit.inference.population.release_moment_sum` then adds the noise of
:func:`~dpfit.inference.population.release_second_moment` (same sensitivity, same mechanism,
charged before drawing) to the reduced sum, on the driver.
"""

from __future__ import annotations

import numpy as np

from ..inference.preconditioner import upper_gram
from ..mechanisms import clip_rows

__all__ = ["excess_sums", "gram_sums", "residual_scale_sum", "sandwich_sums"]


def gram_sums(D: np.ndarray, y: np.ndarray, bound: float) -> np.ndarray:
    """[upper(sum clip_B(d_i) clip_B(d_i)'), sum_i clip_B(d_i) y_i] over the rows of a block
    (the rows clipped with :func:`dpfit.mechanisms.clip_rows`' margin, and y to [-1, 1], so
    that the bounds the releases' sensitivities assume hold for the computed rows too; the
    estimator's rescaled response is already within them)."""
    with np.errstate(all="ignore"):
        rows = clip_rows(D, bound)
        return np.concatenate([upper_gram(rows), rows.T @ np.clip(y, -1.0, 1.0)])


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
    row_clip: float,
    meat_clip: float,
) -> np.ndarray:
    """[upper(whitened Huber Hessian sum), upper(sum g_i g_i')] over the rows of a block.

    At the released ``estimate`` (design coordinates), r_i = y_i - d_i'estimate, the whitened
    row is z_i = P' d_i and the raw whitened gradient z_i r_i; record i is
    unclipped when that gradient's norm is at most ``clip``. The Hessian sum is over the
    unclipped records' z_i clipped to ``row_clip``; g_i is the gradient clipped to
    ``meat_clip``.
    """
    with np.errstate(all="ignore"):
        Z = D @ P
        raw = Z * (y - D @ estimate)[:, None]
        unclipped = np.einsum("ij,ij->i", raw, raw) <= clip**2
        huber = clip_rows(Z, row_clip) * unclipped[:, None]
        return np.concatenate([upper_gram(huber), upper_gram(clip_rows(raw, meat_clip))])


def excess_sums(
    D: np.ndarray,
    y: np.ndarray,
    P: np.ndarray,
    estimate: np.ndarray,
    clip: float,
    window: float,
    far: float,
) -> np.ndarray:
    """[sum_i (clip_{C + w}(g_i) - clip_C(g_i)), #{i: ||g_i|| > far}] over the rows of a block
    (C = ``clip``, w = ``window``), g_i = P d_i (y_i - d_i'estimate): the clipped excess
    behind the gap to least squares, each term of norm at most w, and the number of records
    whose gradient lies far beyond the clip (:mod:`dpfit.inference.clipping_bias`)."""
    with np.errstate(all="ignore"):
        raw = (D @ P) * (y - D @ estimate)[:, None]
        excess = (clip_rows(raw, clip + window) - clip_rows(raw, clip)).sum(axis=0)
        count = np.count_nonzero(np.einsum("ij,ij->i", raw, raw) > far**2)
        return np.concatenate([excess, [float(count)]])
