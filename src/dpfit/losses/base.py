"""The per-example loss protocol that dpfit's private optimisers consume.

A :class:`Loss` computes per-example values and gradients vectorised over the examples and
carries public constants (Menart et al. 2024, §2): ``lipschitz`` (L0, a bound on every
per-example gradient norm over the region the optimiser explores), ``smoothness`` (L1, the
Lipschitz constant of every per-example gradient; ``None`` when the loss is not smooth) and
``weak_convexity`` (L1w: f + (L1w/2)||.||^2 is convex; 0 for convex losses). The constants
are public inputs: they are derived from declared bounds, never from the data.

Private algorithms never call :meth:`Loss.per_example_grads` directly but
:func:`per_example_gradients`, which

* checks the shape ``(n, p)`` on every call (the first call happens before any charge), so a
  wrong-shape loss raises :class:`ValueError` before anything is released;
* zeroes every non-finite per-example gradient instead of raising (docs/privacy.md), through
  :func:`dpfit.mechanisms.clip_rows` (with a clip bound) or the same zero-out rule without one;
* gives a zero gradient to every example on which the loss raises (a user's
  :class:`FunctionLoss` that cannot take some value): the examples that raise alone are
  found (by bisection), replaced and zeroed, and the others computed in a batch of the
  same shape (:func:`dpfit._records.evaluate_records`), so the error, which comes after a
  charge and may quote the record, is never raised.
"""

from __future__ import annotations

import abc
import copy
from collections.abc import Callable
from typing import Any

import numpy as np

from .._records import Substitution, evaluate_records
from .._validation import check_array, check_X_y
from ..distributed import is_dask
from ..mechanisms import clip_rows, row_norms, scale_rows

__all__ = [
    "FunctionLoss",
    "Loss",
    "check_loss",
    "checked_gradients",
    "finite_factors",
    "per_example_gradients",
    "split_data",
]


def _constant(value: Any, name: str, *, allow_none: bool) -> float | None:
    """A public loss constant: finite and >= 0 (``None`` allowed where stated)."""
    if value is None:
        if allow_none:
            return None
        raise TypeError(f"{name} is required")
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    v = float(value)
    if not (np.isfinite(v) and v >= 0.0):
        raise ValueError(f"{name} must be finite and >= 0, got {v!r}")
    return v


class Loss(abc.ABC):
    """A per-example loss f(theta; x_i, y_i) with public regularity constants.

    Subclasses implement :meth:`per_example_values` and :meth:`per_example_grads` and call
    ``super().__init__`` with their constants. The empirical loss is
    F(theta) = (1/n) sum_i f(theta; x_i, y_i).

    Parameters
    ----------
    lipschitz : float
        L0 >= 0: bound on ||grad f(theta; x, y)|| over the region and every admissible record.
        Private algorithms clip per-example gradients at L0 by default, so privacy holds even
        when this bound is wrong; utility guarantees need it to be right.
    smoothness : float or None
        L1: ||grad f(theta) - grad f(theta')|| <= L1 ||theta - theta'||; ``None`` if not smooth.
    weak_convexity : float or None
        L1w >= 0 with f + (L1w/2)||.||^2 convex (0 for a convex loss; ``None`` if unknown).
    """

    #: Whether the loss needs a response ``y`` (``False``: data is ``X`` alone).
    supervised: bool = True

    def __init__(
        self,
        *,
        lipschitz: float,
        smoothness: float | None = None,
        weak_convexity: float | None = None,
    ) -> None:
        self.lipschitz = _constant(lipschitz, "lipschitz", allow_none=False)
        self.smoothness = _constant(smoothness, "smoothness", allow_none=True)
        self.weak_convexity = _constant(weak_convexity, "weak_convexity", allow_none=True)

    def n_params(self, n_features: int) -> int:
        """Number of parameters p for data with ``n_features`` columns (public)."""
        return int(n_features)

    @abc.abstractmethod
    def per_example_values(self, theta: np.ndarray, X: np.ndarray, y: np.ndarray | None):
        """Losses f(theta; x_i, y_i), shape (n,)."""

    @abc.abstractmethod
    def per_example_grads(self, theta: np.ndarray, X: np.ndarray, y: np.ndarray | None):
        """Gradients grad_theta f(theta; x_i, y_i), shape (n, p)."""

    def value(self, theta: np.ndarray, X: np.ndarray, y: np.ndarray | None = None) -> float:
        """Empirical loss F(theta) (**not private**: for diagnostics and experiments)."""
        values = np.asarray(self.per_example_values(theta, X, y), dtype=np.float64)
        if values.shape != (X.shape[0],):
            raise ValueError(
                f"{type(self).__name__}.per_example_values returned shape {values.shape}, "
                f"expected ({X.shape[0]},)"
            )
        return float(np.mean(values))

    def grad(self, theta: np.ndarray, X: np.ndarray, y: np.ndarray | None = None) -> np.ndarray:
        """Gradient of F at theta (**not private**), non-finite rows zeroed."""
        return per_example_gradients(self, theta, X, y).mean(axis=0)

    def with_constants(self, **constants: float | None) -> Loss:
        """A copy with some of ``lipschitz``, ``smoothness``, ``weak_convexity`` replaced."""
        unknown = set(constants) - {"lipschitz", "smoothness", "weak_convexity"}
        if unknown:
            raise TypeError(f"unknown loss constants {sorted(unknown)}")
        new = copy.copy(self)
        for name, value in constants.items():
            setattr(new, name, _constant(value, name, allow_none=name != "lipschitz"))
        return new

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(lipschitz={self.lipschitz!r}, smoothness={self.smoothness!r},"
            f" weak_convexity={self.weak_convexity!r})"
        )


class FunctionLoss(Loss):
    """A loss from user functions ``grads(theta, X, y) -> (n, p)`` and ``values(...) -> (n,)``.

    Parameters
    ----------
    grads : callable
        Per-example gradients; the shape is checked at every call (the first is before any
        privacy charge), and non-finite rows are zeroed by the private algorithms.
    values : callable, optional
        Per-example losses (only needed for :meth:`Loss.value`).
    n_params : int, optional
        Number of parameters p when it differs from the number of columns of X.
    supervised : bool, default=True
        Whether the data include a response y.
    lipschitz, smoothness, weak_convexity : float
        Public constants, as in :class:`Loss`.

    Examples
    --------
    >>> import numpy as np
    >>> loss = FunctionLoss(grads=lambda w, X, y: X * (X @ w - y)[:, None], lipschitz=2.0)
    >>> per_example_gradients(loss, np.zeros(2), np.eye(2), np.ones(2)).tolist()
    [[-1.0, -0.0], [-0.0, -1.0]]
    """

    def __init__(
        self,
        *,
        grads: Callable[..., Any],
        values: Callable[..., Any] | None = None,
        n_params: int | None = None,
        supervised: bool = True,
        lipschitz: float,
        smoothness: float | None = None,
        weak_convexity: float | None = None,
    ) -> None:
        if not callable(grads) or (values is not None and not callable(values)):
            raise TypeError("grads and values must be callables")
        if not isinstance(supervised, bool):
            raise TypeError(f"supervised must be a bool, got {type(supervised).__name__}")
        super().__init__(lipschitz=lipschitz, smoothness=smoothness, weak_convexity=weak_convexity)
        self._grads, self._values, self._n_params = grads, values, n_params
        self.supervised = supervised

    def n_params(self, n_features: int) -> int:
        return int(n_features) if self._n_params is None else int(self._n_params)

    def per_example_values(self, theta, X, y):
        if self._values is None:
            raise TypeError("this FunctionLoss has no values function")
        return self._values(theta, X, y)

    def per_example_grads(self, theta, X, y):
        return self._grads(theta, X, y)


def check_loss(loss: Any) -> Loss:
    """Return ``loss`` if it is a :class:`Loss`, else raise ``TypeError``."""
    if not isinstance(loss, Loss):
        raise TypeError(
            f"loss must be a dpfit.losses.Loss (e.g. FunctionLoss), got {type(loss).__name__}"
        )
    return loss


def split_data(loss: Loss, data: Any) -> tuple[np.ndarray, np.ndarray | None]:
    """Validate ``data`` for ``loss``: ``(X, y)`` when supervised, ``X`` (or ``(X,)``) otherwise.

    Dask arrays are returned unchecked: the private algorithms check their metadata
    (:func:`dpfit.distributed.check_dask_rows`) without loading them.
    """
    if isinstance(data, tuple | list) and not isinstance(data, np.ndarray):
        parts = tuple(data)
    else:
        parts = (data,)
    if loss.supervised:
        if len(parts) != 2:
            raise ValueError(f"{type(loss).__name__} needs data (X, y); y is missing")
        return parts if any(map(is_dask, parts)) else check_X_y(*parts)
    if len(parts) != 1:
        raise ValueError(f"data must be X alone for {type(loss).__name__} (it uses no y)")
    return (parts[0] if is_dask(parts[0]) else check_array(parts[0], "X", ndim=2)), None


def finite_factors(norms: np.ndarray) -> np.ndarray:
    """Row factors of the zero-out rule without clipping: 1 for finite norms, else 0."""
    return np.isfinite(norms).astype(np.float64)


def checked_gradients(loss: Loss, theta: np.ndarray, X: np.ndarray, y: np.ndarray | None):
    """``loss.per_example_grads`` as float64, or ``ValueError`` unless its shape is (n, p).

    Floating-point overflow or invalid operations on one record are silent: they give
    non-finite rows, which every caller zeroes, and a warning would depend on that record.
    An example on which the loss raises gets a zero row (module docstring); a batch that
    raises although no example does alone raises a fixed :class:`~dpfit.exceptions.DataError`.
    """

    def evaluate(sub: Substitution | None) -> np.ndarray:
        Xb, yb = (X, y) if sub is None else (_take(X, sub.index), _take(y, sub.index))
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            return np.asarray(loss.per_example_grads(theta, Xb, yb), dtype=np.float64)

    name = f"{type(loss).__name__}.per_example_grads"
    hint = "call it yourself on the data to see it"
    G, failed = evaluate_records(evaluate, X.shape[0], what=name, hint=hint)
    expected = (X.shape[0], theta.shape[0])
    if G.shape != expected:
        raise ValueError(f"{name} returned shape {G.shape}, expected (n, p) = {expected}")
    if failed is not None:
        G = G.copy()
        G[failed] = 0.0
    return G


def _take(rows: np.ndarray | None, index: np.ndarray) -> np.ndarray | None:
    """Rows ``index`` of ``rows`` (``-1``: an all-zero row); None stays None."""
    if rows is None:
        return None
    out = rows[np.maximum(index, 0)]
    out[index < 0] = 0.0
    return out


def per_example_gradients(
    loss: Loss,
    theta: np.ndarray,
    X: np.ndarray,
    y: np.ndarray | None,
    *,
    clip: float | None = None,
) -> np.ndarray:
    """Per-example gradients of ``loss`` at ``theta``, shape-checked and made finite.

    Parameters
    ----------
    clip : float, optional
        If given, each row is clipped to L2 norm ``clip`` (:func:`dpfit.mechanisms.clip_rows`).

    Returns
    -------
    ndarray of shape (n, p)
        float64; rows that were non-finite are exactly 0 (documented rule, not an error).

    Raises
    ------
    ValueError
        The loss returned another shape than (n, p), with p = ``len(theta)``.
    """
    G = checked_gradients(loss, theta, X, y)
    if clip is not None:
        return clip_rows(G, clip)
    return scale_rows(G, finite_factors(row_norms(G)))
