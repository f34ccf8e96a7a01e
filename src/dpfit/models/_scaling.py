"""A fixed affine rescaling of features and response from **public** bounds.

Users' data are never standardised with statistics of the private data. When the user states
public bounds, each feature is clipped into its bounds and mapped to [-1, 1] by the bounds'
midpoint and half-range (only scaled, by max(|low|, |high|), without an intercept, which
could not absorb a shift); the response likewise. The map depends only on public inputs,
so running a private algorithm on the mapped records is as private as on the originals
(each record is transformed on its own), and the fitted coefficients map back exactly by
the inverse affine map, which is post-processing. Clipping into the bounds is documented,
data-independent behaviour (docs/user-guide.md, on bounds).

Notation: x' = (clip(x, lo, hi) - c) / h per feature, y' = (clip(y) - c_y) / h_y, and the
fitted model y' = b0' + x'^T b'. Back in original units:
coef_j = h_y * b'_j / h_j and intercept = c_y + h_y * (b0' - sum_j b'_j * c_j / h_j).
The mapped values are clipped to [-1, 1] once more, because the map can round a value at a
bound to 1 + 2^-52, so the bounds the releases' sensitivities assume hold exactly.

Before anything is charged, :func:`check_back_map` refuses bounds whose map back could
overflow: the widths hi - lo must be finite and h > 0, and the largest factor F of the map
back (h_y, h_y / h_j, h_y sum_j |c_j| / h_j, |c_y|) must keep F and F^2 (covariances are
mapped by J V J') below :data:`dpfit.mechanisms.limits.LIMIT`, so that coefficients and
intervals in the original units are finite for any scaled estimate and covariance up to
2^64; and the smallest factor f (h_y / h_j, or h_y) must keep f^2 at or above
:data:`dpfit.mechanisms.limits.SMALLEST`, so that a scaled variance down to 2^-64 maps to a
positive float (bounds of 1e170 on a feature with y bounds of 4 made its variance underflow
to 0: a standard error of 0 and a point interval; ``docs/threat-model.md``,
"Public-parameter checks").
"""

from __future__ import annotations

import math
import reprlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import check_bounds_layout
from ..mechanisms import check_public_scale, check_smallest_factor
from ..mechanisms.limits import LIMIT

__all__ = [
    "PublicScaling",
    "bounds_in_order",
    "bounds_text",
    "check_back_map",
    "check_bounds",
    "check_widths",
]


def check_bounds(value: Any, name: str, *, size: int) -> np.ndarray:
    """Return public bounds as a float array of shape (size, 2) with low < high, finite."""
    check_bounds_layout(value, name, size=size)
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be (low, high) pairs of real numbers") from exc
    if arr.shape == (2,) and size == 1:
        arr = arr.reshape(1, 2)
    if arr.shape != (size, 2):
        raise ValueError(f"{name} must have shape ({size}, 2): one (low, high) pair per column")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must be finite")
    if (arr[:, 0] == arr[:, 1]).any():
        where = int(np.flatnonzero(arr[:, 0] == arr[:, 1])[0])
        raise ValueError(
            f"{name}: column {where} has low == high, a constant column that is collinear with "
            "the intercept: drop it from the model (its coefficient is not identified)"
        )
    if not (arr[:, 0] < arr[:, 1]).all():
        where = int(np.flatnonzero(~(arr[:, 0] < arr[:, 1]))[0])
        raise ValueError(f"{name}: every low must be < its high (column {where} is not)")
    return arr


def bounds_in_order(bounds: Mapping[str, Any], names: list[str], columns: str) -> list[Any]:
    """The (low, high) pairs of a mapping of bounds, in the order of ``names``.

    Every name needs a pair and every key must be a name; ``columns`` says which columns in
    the error (e.g. ``"per column"``).
    """
    missing = [name for name in names if name not in bounds]
    unknown = [key for key in bounds if key not in names]
    if missing or unknown:
        pairs = (("missing", missing), ("unknown", unknown))
        raise ValueError(
            f"bounds must give one (low, high) pair {columns}: "
            + ", ".join(f"{what} {keys}" for what, keys in pairs if keys)
        )
    return [_named_pair(name, bounds[name]) for name in names]


def _named_pair(name: str, pair: Any) -> Any:
    """``pair`` if it is a (low, high) pair of finite numbers with low <= high, else a
    one-line error naming its column (bounds are public, so the message may show them;
    low == high is left to :func:`check_bounds`, which says why a constant is refused)."""
    shown = reprlib.repr(pair)
    try:
        low, high = (float(v) for v in (None if isinstance(pair, str) else pair))
    except (TypeError, ValueError):
        hint = ": write a tuple such as (0, 10), not a string" * isinstance(pair, str)
        raise ValueError(
            f"bounds of {name!r} must be one (low, high) pair of numbers, got {shown}{hint}"
        ) from None
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ValueError(
            f"bounds of {name!r} must be finite numbers, got {shown}: values are clipped "
            "into the bounds, so give a public range"
        )
    if low > high:
        raise ValueError(f"bounds of {name!r}: low must be < its high, got {shown}")
    return pair


def bounds_text(names: list[str], bounds: Any) -> str:
    """``name [low, high], ...``: public bounds as the summary shows them."""
    return ", ".join(
        f"{name} [{lo:g}, {hi:g}]" for name, (lo, hi) in zip(names, bounds, strict=True)
    )


def check_widths(name: str, bounds: np.ndarray | None) -> None:
    """Refuse (low, high) pairs whose width high - low overflows float64 (their half-range
    and the rescaled values would be infinite)."""
    if bounds is not None and not np.isfinite(bounds[..., 1] - bounds[..., 0]).all():
        raise ValueError(
            f"{name}: every high - low must be finite in float64 (at most 1.8e308), got a "
            "pair whose width overflows"
        )


def check_back_map(x_bounds: np.ndarray | None, y_bounds: np.ndarray | None, centred: bool) -> None:
    """Refuse bounds whose rescaling or map back could overflow (module docstring).

    Checked on the response's half-range h_y given the features' bounds, and reported as
    the largest allowed half-range of ``y_bounds`` (without ``y_bounds``, h_y = 1 and the
    error names ``bounds``).
    """
    check_widths("bounds", x_bounds)
    check_widths("y_bounds", y_bounds)
    widest = 1.0
    if x_bounds is not None:
        c, h = _centre_scale(x_bounds, centred)
        if not (h > 0).all():
            raise ValueError("bounds: every (high - low) / 2 must be > 0 in float64")
        inverse = float(np.max(1.0 / h))
        offset = float(np.sum(np.abs(c) / h))
        widest = max(widest, float(np.max(h)))
    else:
        inverse, offset = 1.0, 0.0
    cy, hy = (0.0, 1.0) if y_bounds is None else _centre_scale(y_bounds, centred)
    if not hy > 0:
        raise ValueError("y_bounds: (high - low) / 2 must be > 0 in float64")
    check_smallest_factor(
        "bounds and y_bounds",
        float(hy) / widest,
        what="the smallest factor of the map back, y's half-range over the widest feature's "
        "half-range (or over 1)",
        fix="narrow the widest feature's bounds, or widen y_bounds (or rescale the data)",
    )

    def factors(half: float) -> tuple[float, float]:
        factor = max(half, half * inverse, half * offset, abs(float(cy)))
        return factor, factor * factor

    what = (
        "the map of coefficients (factor y half-range / x half-range) and of their covariance "
        "(its square) back to the original units"
    )
    if y_bounds is not None:
        check_public_scale("y_bounds half-range (high - low) / 2", float(hy), factors, what=what)
    elif not all(f <= LIMIT for f in factors(1.0)):
        raise ValueError(
            f"bounds: a half-range (high - low) / 2 is too small for its centre: {what} "
            f"must stay below {LIMIT:.3g} (float64's largest value / 2^64)"
        )


def _centre_scale(b: np.ndarray, centred: bool) -> tuple[np.ndarray, np.ndarray]:
    """Midpoint and half-range of (..., 2) bounds, or (0, max |bound|) when not centred."""
    if centred:
        return (b[..., 0] + b[..., 1]) / 2.0, (b[..., 1] - b[..., 0]) / 2.0
    return np.zeros(b.shape[:-1]), np.abs(b).max(axis=-1)


@dataclass(frozen=True, kw_only=True)
class PublicScaling:
    """Affine map of features and response to [-1, 1], built from public bounds only.

    A missing bound leaves that side unchanged (centre 0, scale 1, no clipping).
    """

    x_bounds: np.ndarray | None
    y_bounds: np.ndarray | None
    fit_intercept: bool

    @classmethod
    def from_bounds(
        cls, bounds: Any, y_bounds: Any, *, n_features: int, fit_intercept: bool
    ) -> PublicScaling:
        """Validate ``bounds`` (n_features x 2) and ``y_bounds`` (a pair); either may be None."""
        xb = None if bounds is None else check_bounds(bounds, "bounds", size=n_features)
        yb = None if y_bounds is None else check_bounds(y_bounds, "y_bounds", size=1)[0]
        check_back_map(xb, yb, fit_intercept)
        return cls(x_bounds=xb, y_bounds=yb, fit_intercept=fit_intercept)

    @property
    def max_row_norm(self) -> float | None:
        """Public bound on ||x'_i|| of the design the algorithm sees (ones column included)."""
        if self.x_bounds is None:
            return None
        return float(np.sqrt(self.x_bounds.shape[0] + int(self.fit_intercept)))

    def design(self, X: np.ndarray) -> np.ndarray:
        """The design the algorithm sees: [1, x'] (ones column first when fitting an intercept).

        x' = clip((clip(x) - c) / h) is computed in place in the new array (one array, no
        temporaries: the map runs once per row block and pass of the preconditioned fit).
        """
        offset = int(self.fit_intercept)
        if self.x_bounds is None and not offset:
            return X
        out = np.empty((X.shape[0], X.shape[1] + offset), dtype=np.float64)
        x = out[:, offset:]
        if self.x_bounds is None:
            x[...] = X
        else:
            c, h = _centre_scale(self.x_bounds, self.fit_intercept)
            np.clip(X, self.x_bounds[:, 0], self.x_bounds[:, 1], out=x)
            np.subtract(x, c, out=x)
            np.divide(x, h, out=x)
            np.clip(x, -1.0, 1.0, out=x)
        if offset:
            out[:, 0] = 1.0
        return out

    def response(self, y: np.ndarray) -> np.ndarray:
        """y' = (clip(y) - c_y) / h_y, or y unchanged without y bounds."""
        if self.y_bounds is None:
            return y
        c, h = _centre_scale(self.y_bounds, self.fit_intercept)
        return np.clip((np.clip(y, self.y_bounds[0], self.y_bounds[1]) - c) / h, -1.0, 1.0)

    def to_original(self, theta: np.ndarray) -> np.ndarray:
        """Map fitted parameters (rows of [b0', b'] or [b']) back to original units (exact)."""
        theta = np.asarray(theta, dtype=np.float64)
        cy, hy = (
            (0.0, 1.0)
            if self.y_bounds is None
            else _centre_scale(self.y_bounds, self.fit_intercept)
        )
        offset = int(self.fit_intercept)
        b = theta[..., offset:]
        if self.x_bounds is None:
            c, h = np.zeros(b.shape[-1]), np.ones(b.shape[-1])
        else:
            c, h = _centre_scale(self.x_bounds, self.fit_intercept)
        coef = hy * b / h
        if not self.fit_intercept:
            return coef
        intercept = cy + hy * (theta[..., 0] - (b * (c / h)).sum(axis=-1))
        return np.concatenate([np.asarray(intercept)[..., None], coef], axis=-1)

    def describe(self) -> str | None:
        """A note for the summary, or None when nothing is rescaled."""
        parts = []
        if self.x_bounds is not None:
            parts.append("every feature was clipped into its public bounds and mapped to [-1, 1]")
        if self.y_bounds is not None:
            parts.append("the response was clipped into its public bounds and mapped to [-1, 1]")
        if not parts:
            return None
        return (
            "Public rescaling: "
            + "; ".join(parts)
            + " (a fixed map built from public bounds only; clip and step size are in these "
            "units). Coefficients and intervals are mapped back to the original units exactly."
        )
