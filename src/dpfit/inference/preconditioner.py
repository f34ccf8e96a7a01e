"""The private whitener and the per-record sums behind every moment release of the default fits.

The preconditioned linear default (src/dpfit/algorithms/preconditioned_gd.py) and the GLM default
(src/dpfit/algorithms/glm.py) both run gradient descent in coordinates whitened by a private
second moment of the design, and release the bread and meat of their sandwich in those
coordinates (docs/inference.md, "Why preconditioning, in two stages"). The steps they share
are written once here:

* :func:`record_sum`: one per-record block function summed over all records, in memory or as
  one distributed reduction over the row blocks of Dask arrays
  (:func:`dpfit.distributed.row_block_sum`), so that the two backends compute the same sums
  up to the order of floating-point addition;
* :func:`release_whitener`: the second stage of the whitener. Given the released
  X'X/n (stage 1, P1 = H~^-1/2), release the second moment of the rows whitened by P1 and
  clipped to a public norm, and return P = P1 G~^-1/2, so that E[z z'] is close to I for
  z = P'd even where the design is nearly collinear;
* :data:`ROW_CLIP`: the public norm, in units of sqrt(k), to which whitened rows are clipped
  before a second-moment release.

Every sum is private until :func:`~dpfit.inference.population.release_moment_sum` (or
:func:`dpfit.mechanisms.gaussian`) releases it with a declared sensitivity, charged before
the draw.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..distributed import is_dask, row_block_sum
from ..distributed.blocks import block_sum
from ..mechanisms import NoiseSource, clip_rows
from ..privacy import PrivacyLedger
from .population import NoisyMoment, release_moment_sum
from .whitened import inverse_sqrt

__all__ = [
    "ROW_CLIP",
    "record_sum",
    "release_whitener",
    "triangle",
    "upper_gram",
    "whiten",
    "whitened_gram_sums",
]

#: Whitened rows enter the second stage of the whitener and the sandwich's bread clipped to
#: this many sqrt(k): ||P'd|| is about sqrt(k), and a row with a leverage above ROW_CLIP^2
#: times the average only lowers the bread, which widens the interval (on the real files of
#: docs/inference.md the clipped bread keeps its smallest eigenvalue at 0.87-1.0 of the
#: unclipped one, 0.6 on the wealth file), while the release's noise grows with ROW_CLIP^2.
ROW_CLIP = 2.0


def triangle(k: int) -> int:
    """Number of entries of the upper triangle of a k x k matrix."""
    return k * (k + 1) // 2


def upper_gram(rows: np.ndarray) -> np.ndarray:
    """The upper triangle of rows' rows (row-major, as :func:`numpy.triu_indices` orders it)."""
    return (rows.T @ rows)[np.triu_indices(rows.shape[1])]


def whitened_gram_sums(D: np.ndarray, y: np.ndarray, P: np.ndarray, row_clip: float) -> np.ndarray:
    """upper(sum clip(P' d_i) clip(P' d_i)') over the rows of a block (rows clipped to
    ``row_clip``): the second stage of the whitener."""
    with np.errstate(all="ignore"):
        return upper_gram(clip_rows(D @ P, row_clip))


def whiten(block: np.ndarray, P: np.ndarray) -> np.ndarray:
    """Rows z_i = P' d_i of a block: a public map applied record by record."""
    return block @ P


def record_sum(
    block_fn: Callable[..., np.ndarray], arrays: Sequence[Any], args: tuple, *, width: int
) -> np.ndarray:
    """``block_fn(*arrays, *args)`` over all records: in memory summed over row blocks (arrays
    or a :class:`~dpfit.distributed.blocks.RowMap`, :func:`~dpfit.distributed.blocks.block_sum`:
    no temporary larger than a block; one call when the data are one block); on Dask
    (persisted, row-aligned arrays) one distributed reduction whose per-block sums are added
    on the driver. The result is private (un-noised); only
    :func:`~dpfit.inference.population.release_moment_sum` or :func:`dpfit.mechanisms.gaussian`
    may make it public."""
    if is_dask(arrays[0]):
        return row_block_sum(block_fn, arrays, args, width=width)
    return block_sum(block_fn, arrays, args)


def release_whitener(
    D: Any,
    y: Any,
    H: NoisyMoment,
    *,
    row_clip: float,
    rho: float,
    n: int,
    ledger: PrivacyLedger,
    rng: NoiseSource,
    label: str,
    rows_per_unit: int = 1,
) -> np.ndarray:
    """The whitener P (theta = P u, z_i = P' d_i) in two stages, so that E[z z'] is close to I
    even where the design is nearly collinear.

    Stage 1: P1 = Hp^-1/2 from the released X'X/n ``H`` (:meth:`NoisyMoment.preconditioner`).
    Its noise, calibrated to rows of norm sqrt(k) in the bounds' units, can exceed the
    smallest eigenvalues of X'X/n when the bounds are wide (a quadratic term, collinear
    columns), and descent then converges slowly along those directions. Stage 2 releases the
    second moment of the whitened rows P1' d_i, clipped to ``row_clip`` (public; the whitened
    rows have norm about sqrt(k) in every design, so the noise is now small against every
    eigenvalue) at zCDP ``rho`` over the public ``n`` (``ledger``, ``rng`` and ``label`` as
    for :func:`~dpfit.inference.population.release_moment_sum`, as is ``rows_per_unit``), and
    refines P = P1 G^-1/2. ``y`` rides along for the row-aligned reduction only.
    """
    P1 = inverse_sqrt(H.preconditioner())
    k = P1.shape[0]
    sums = record_sum(whitened_gram_sums, [D, y], (P1, row_clip), width=triangle(k))
    G = release_moment_sum(
        sums, bound=row_clip, rho=rho, n=n, ledger=ledger, rng=rng, label=label,
        rows_per_unit=rows_per_unit,
    )  # fmt: skip
    return P1 @ inverse_sqrt(G.preconditioner())
