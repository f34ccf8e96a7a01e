"""The interface shared by every correlated-noise mechanism (Toeplitz, tree, restarted).

A mechanism is a public factorisation of the per-step noise: step t releases
``g_t + noise_std * sum_i B[t, i] z_i`` with i.i.d. standard-normal rows z_i (i < ``noise_rows``)
and decoder B = C^+ for an encoder C (``noise_rows`` x ``steps``). It knows

* its Gram blocks X = C^T C on participation patterns (for the sensitivity),
* how to build step t's correlated noise from rows it reads through a ``rows`` object with
  ``block(start, stop)`` (:class:`dpfit.mechanisms.GaussianRows` or a view of it), and
* its dense matrices, for tests and small T.

Everything here is public configuration: nothing depends on data.
"""

from __future__ import annotations

import abc
import math
from typing import Protocol

import numpy as np

from .sensitivity import (
    fixed_epoch_patterns,
    minsep_sensitivity_squared_bound,
    pattern_sensitivity_squared,
    resolve_participation,
)

__all__ = ["CorrelatedMechanism", "RowSource", "check_mechanism"]

#: Largest T for which dense T x T computations (min-separation bound, prefix error) are done.
DENSE_LIMIT = 4096


class RowSource(Protocol):
    """Anything that returns noise rows ``z_start .. z_{stop-1}`` as a (stop - start, d) array."""

    def block(self, start: int, stop: int) -> np.ndarray: ...


class CorrelatedMechanism(abc.ABC):
    """Base class of correlated-noise mechanisms; subclasses fill in the structure."""

    name: str

    @property
    @abc.abstractmethod
    def steps(self) -> int:
        """Number of steps T."""

    @property
    @abc.abstractmethod
    def noise_rows(self) -> int:
        """Number of i.i.d. noise rows (rows of the encoder)."""

    @property
    @abc.abstractmethod
    def cache_rows(self) -> int:
        """Rows a buffered stream must keep so that no row is ever drawn twice."""

    @abc.abstractmethod
    def gram(self, patterns: np.ndarray) -> np.ndarray:
        """X = C^T C on patterns: ``patterns`` (m, k) ints (-1 = none) -> (m, k, k) floats."""

    @abc.abstractmethod
    def step_noise(self, step: int, rows: RowSource) -> np.ndarray:
        """Unscaled correlated noise sum_i B[step, i] z_i, shape (d,), in a new array (the
        caller scales it in place)."""

    @abc.abstractmethod
    def decoder_matrix(self) -> np.ndarray:
        """Dense decoder B (steps x noise_rows)."""

    @abc.abstractmethod
    def encoder_matrix(self) -> np.ndarray:
        """Dense encoder C (noise_rows x steps), with B C = I."""

    def sensitivity_squared(
        self, participations: int = 1, separation: int | None = None, order: str = "fixed-epoch"
    ) -> float:
        """Squared sensitivity of C per unit of per-step contribution.

        Parameters
        ----------
        participations : int, default=1
            k, the most steps one record contributes to.
        separation : int, optional
            b, the least gap between two of its steps (the steps per epoch under
            ``"fixed-epoch"``); required when k > 1.
        order : {"fixed-epoch", "min-separation"}
            The participation schema (see :mod:`dpfit.noise.sensitivity`).

        Returns
        -------
        float
            max over allowed patterns pi of sum_{p, q in pi} |X_pq|: exact when X >= 0 (every
            mechanism of the paper), otherwise an upper bound; under ``"min-separation"`` with
            k > 1 the generic route is the upper bound of arXiv 2306.08153, Alg. 4.
        """
        k, b, order = resolve_participation(self.steps, participations, separation, order)
        return self._sensitivity_squared(k, b, order)

    def _sensitivity_squared(self, k: int, b: int, order: str) -> float:
        T = self.steps
        if k == 1:  # any single step: the largest column norm of C
            return pattern_sensitivity_squared(self.gram, np.arange(T)[:, None])
        if order == "fixed-epoch" and k == math.ceil(T / b):  # every epoch: the b offsets
            return pattern_sensitivity_squared(self.gram, fixed_epoch_patterns(T, k, b))
        # Fewer participations than epochs: any k epochs, covered by min-separation.
        return minsep_sensitivity_squared_bound(self._dense_gram(), k, b)

    def sensitivity(
        self, participations: int = 1, separation: int | None = None, order: str = "fixed-epoch"
    ) -> float:
        """sqrt of :meth:`sensitivity_squared` (same parameters)."""
        return math.sqrt(self.sensitivity_squared(participations, separation, order))

    def _dense_gram(self) -> np.ndarray:
        if self.steps > DENSE_LIMIT:
            raise ValueError(
                f"this computation needs a dense {self.steps} x {self.steps} matrix; "
                f"supported up to steps = {DENSE_LIMIT}"
            )
        return self.gram(np.arange(self.steps)[None, :])[0]

    def max_decoder_row_norm(self) -> float:
        """max_t ||B[t, :]||: the largest per-coordinate noise std of one step per unit noise."""
        B = self.decoder_matrix()
        return float(np.sqrt(np.max(np.einsum("ij,ij->i", B, B))))

    def prefix_error(self) -> float:
        """||A B||_F^2: total squared error of noisy prefix sums per unit noise (eq. 3)."""
        if self.steps > DENSE_LIMIT:
            raise ValueError(f"prefix_error is dense here; supported up to steps = {DENSE_LIMIT}")
        AB = np.cumsum(self.decoder_matrix(), axis=0)
        return float(np.sum(AB * AB))

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}: steps={self.steps}>"


def check_mechanism(mechanism: object) -> CorrelatedMechanism:
    """Return ``mechanism`` if it is a :class:`CorrelatedMechanism`, else raise ``TypeError``."""
    if not isinstance(mechanism, CorrelatedMechanism):
        raise TypeError(
            f"mechanism must be a correlated-noise mechanism (e.g. dpfit.noise.nu_dpftrl), "
            f"got {type(mechanism).__name__}"
        )
    return mechanism
