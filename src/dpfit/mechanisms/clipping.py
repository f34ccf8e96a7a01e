"""Per-example L2 clipping that never overshoots the bound and never produces NaN.

The clip factor of a vector g is min(1, C / ||g||_2). Two floating-point hazards are handled
(after Casacuberta et al. 2022):

* a row whose plain ``sum(g**2)`` over- or underflows (components near 1e300 or subnormals)
  has its norm recomputed with a per-row scale;
* vectors are clipped to C * (1 - 2**-40) (a relative margin of about 9e-13, far above the
  rounding error of a scaled norm), so ``||clip(g)||_2 <= C`` holds in float64, not just in
  exact arithmetic, also for vectors whose norm is within rounding of C;
* a vector with a NaN or infinite component gets factor 0 and becomes exactly the zero
  vector (a documented, data-independent rule; ``inf * 0`` would be NaN).

Every function runs under :func:`dpfit._floats.quiet_floats`: whichever records over- or
underflow, numpy never warns or raises, whatever the caller's ``np.seterr``.
"""

from __future__ import annotations

import numpy as np

from .._floats import quiet_floats
from .._validation import check_positive

__all__ = [
    "clip_factors",
    "clip_residuals",
    "clip_rows",
    "residual_thresholds",
    "row_norms",
    "scale_rows",
]

#: Relative safety margin applied to every clip factor (see module docstring).
CLIP_MARGIN = 1.0 - 2.0**-40


#: Up to this many candidate rows, clip_residuals checks them with Python floats (less
#: overhead than a dozen NumPy calls on tiny arrays; IEEE double arithmetic either way).
_SCALAR_CANDIDATES = 16

#: Smallest clip-to-norm quotient handled by the 2^-53 relative error bound of one division
#: (well above the subnormal range, where a quotient's relative error is unbounded).
_SAFE_QUOTIENT = 2.0**-960

#: Below this, a plain sum of squares may have lost components to underflow (2**-968 keeps
#: the loss under d * 2**-54 relative); such rows take the scaled route.
_SAFE_SQUARES = 2.0**-968


def _scaled_row_norms(G: np.ndarray) -> np.ndarray:
    """Row norms computed as max|g| * ||g / max|g|||: no over- or underflow; inf/NaN -> inf.

    Called by :func:`row_norms` only (under its :func:`quiet_floats`)."""
    scale = np.max(np.abs(G), axis=1)
    finite = np.isfinite(scale) & (scale > 0)
    safe = np.where(finite, scale, 1.0)
    scaled = G / safe[:, None]
    norms = safe * np.sqrt(np.einsum("ij,ij->i", scaled, scaled))
    return np.where(finite, norms, np.where(scale == 0, 0.0, np.inf))


@quiet_floats()
def row_norms(G: np.ndarray) -> np.ndarray:
    """L2 norm of each row of a 2-D array, overflow- and underflow-safe (inf/NaN rows -> inf).

    One pass of plain sums of squares; the rare rows whose sum over- or underflowed (or is
    not finite) are recomputed with a per-row scale, so the result is accurate to a few ulp
    for every finite row (far inside the clipping margin).
    """
    G = np.asarray(G, dtype=np.float64)
    squares = np.einsum("ij,ij->i", G, G)
    if squares.size and squares.min() >= _SAFE_SQUARES and squares.max() < np.inf:
        return np.sqrt(squares, out=squares)  # the common case: two reductions, no masks
    redo = ~(squares >= _SAFE_SQUARES) | np.isinf(squares)  # NaN, inf, tiny or zero sums
    norms = np.sqrt(squares, out=squares)
    if redo.any():
        norms[redo] = _scaled_row_norms(G[redo])
    return norms


@quiet_floats()
def clip_factors(norms: np.ndarray, clip: float) -> np.ndarray:
    """Factors min(1, C/norm) with the safety margin; 0 for non-finite norms, 1 for norm 0."""
    clip = check_positive(clip, "clip")
    norms = np.asarray(norms, dtype=np.float64)
    # Rows within the margin of the bound are shrunk too: their computed norm may round
    # to <= clip while the exact norm is just above it.
    bound = clip * CLIP_MARGIN
    factors = np.where(norms > bound, bound / norms, 1.0)
    return np.where(np.isfinite(norms), factors, 0.0)


@quiet_floats()
def residual_thresholds(x_norms: np.ndarray, clip: float) -> np.ndarray:
    """Per-row thresholds t_i below which |r_i| surely leaves r_i x_i unclipped.

    t_i = (clip * CLIP_MARGIN / ||x_i||) (1 - 2^-50): if the computed |r_i| ||x_i|| exceeds
    clip * CLIP_MARGIN then |r_i| > t_i, because the two roundings involved move a product
    or quotient by at most 2^-53 relative each. Quotients in the subnormal range (where that
    bound fails) are set to 0, so those rows are always checked exactly. Rows with
    ||x_i|| = 0 get inf (their gradient is 0).
    """
    t = (clip * CLIP_MARGIN / x_norms) * (1.0 - 2.0**-50)
    t[t < _SAFE_QUOTIENT] = 0.0
    return t


@quiet_floats()
def clip_residuals(
    residuals: np.ndarray,
    x_norms: np.ndarray,
    clip: float,
    *,
    thresholds: np.ndarray,
    norms: np.ndarray,
    mask: np.ndarray,
    candidates: int | None = None,
) -> int:
    """Clip rank-one per-example gradients r_i x_i in place; return how many were clipped.

    ||r_i x_i|| = |r_i| ||x_i||, so clipping the gradient to ``clip`` is scaling r_i by
    :func:`clip_factors`' factor: r_i <- r_i * (clip * CLIP_MARGIN / (|r_i| ||x_i||)) for
    the rows above clip * CLIP_MARGIN, the same float operations as
    ``scale_rows(r, clip_factors(|r| * x_norms, clip))`` for every finite product. Rows with
    |r_i| <= ``thresholds[i]`` (:func:`residual_thresholds`) cannot be clipped and are not
    looked at again; the others are checked exactly. ``norms`` (float) and ``mask`` (bool)
    are caller-owned buffers of the same length (nothing of that size is allocated). A caller
    that has already run the test ``mask = |r| > thresholds`` (its loop, one call fewer per
    step when nothing is a candidate) passes the number of candidates it found.

    A non-finite product is left for the caller to detect: such an r_i becomes 0 or stays
    NaN or inf, where :func:`scale_rows` gives 0 (products overflow only for such records;
    numpy stays quiet, as everywhere in this module).
    """
    bound = clip * CLIP_MARGIN
    if candidates is None:
        np.abs(residuals, out=norms)
        np.greater(norms, thresholds, out=mask)  # candidates: every clipped row, and a few more
        candidates = int(np.count_nonzero(mask))
    if candidates == 0:
        return 0
    if candidates <= _SCALAR_CANDIDATES:  # a handful: Python floats (the same IEEE ops)
        clipped = 0
        for i in mask.nonzero()[0].tolist():
            r = float(residuals[i])
            g = abs(r * float(x_norms[i]))
            if g > bound:
                residuals[i] = r * (bound / g)
                clipped += 1
        return clipped
    if candidates <= len(residuals) // 8:  # few: gather, check exactly, scatter
        idx = mask.nonzero()[0]
        r = residuals[idx]
        g = np.abs(r * x_norms[idx])
        above = g > bound
        clipped = int(np.count_nonzero(above))
        if clipped:
            residuals[idx[above]] = r[above] * (bound / g[above])
        return clipped
    np.multiply(residuals, x_norms, out=norms)
    np.abs(norms, out=norms)  # |r_i * ||x_i|| | = |r_i| ||x_i|| exactly
    np.greater(norms, bound, out=mask)
    np.divide(bound, norms, out=norms, where=mask)
    np.multiply(residuals, norms, out=residuals, where=mask)
    return int(np.count_nonzero(mask))


@quiet_floats()
def scale_rows(values: np.ndarray, factors: np.ndarray) -> np.ndarray:
    """``values * factors`` along the first axis, with zero-factor rows set exactly to 0."""
    values = np.asarray(values, dtype=np.float64)
    f = factors.reshape((-1,) + (1,) * (values.ndim - 1))
    return np.where(f > 0, values * f, 0.0)


@quiet_floats()
def clip_rows(G: np.ndarray, clip: float) -> np.ndarray:
    """Clip each row of ``G`` (n x d) to L2 norm at most ``clip``; non-finite rows become 0."""
    G = np.asarray(G, dtype=np.float64)
    return scale_rows(G, clip_factors(row_norms(G), clip))
