"""Batch samplers whose participation pattern is the one the noise is calibrated for.

Both draw their randomness from the public side of a :class:`dpfit.mechanisms.NoiseSource`
(never from the data) and yield lists of record indices, one list per step, epoch by epoch
(``iter(sampler)`` gives the next epoch; once every step is used, iteration raises).
Each batch's global step, epoch x steps per epoch + slot, is kept in ``last_step`` while the
batch is out, so the optimizer can refuse a batch whose step is not the next noise step (an
epoch restarted after a ``break`` would otherwise put records at steps the noise was not
calibrated for).

==========================  ==================================================================
sampler                     pattern (declared to the noise)
==========================  ==================================================================
:class:`FixedEpochSampler`  shuffle once, cycle fixed-size batches: a record joins steps
                            i, i + b, ..., i + (k - 1) b (k = epochs, b = steps per epoch;
                            "fixed-epoch" order of :mod:`dpfit.noise.sensitivity`)
:class:`PoissonSampler`     each record joins one of ``groups`` groups uniformly at random; step
                            t includes each record of group t mod groups independently with
                            probability q (Poisson sampling for groups = 1; cyclic Poisson
                            sampling of Choquette-Choo et al. 2023 otherwise)
==========================  ==================================================================
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from .._validation import check_int, check_real
from ..mechanisms import NoiseSource

__all__ = ["FixedEpochSampler", "PoissonSampler"]


class _Sampler:
    """Shared step bookkeeping: ``steps`` batches in ``epochs`` epochs of ``per_epoch``."""

    def __init__(self, *, per_epoch: int, epochs: int) -> None:
        self.per_epoch, self.epochs = per_epoch, epochs
        self._epoch = 0
        self.last_step: int | None = None  # global step of the batch yielded last

    @property
    def steps(self) -> int:
        """Total number of steps T = epochs x steps per epoch."""
        return self.per_epoch * self.epochs

    def __len__(self) -> int:
        return self.per_epoch

    def check_epoch_left(self) -> None:
        """Raise ``RuntimeError`` once every epoch the noise was calibrated for is used."""
        if self._epoch >= self.epochs:
            raise RuntimeError(
                f"all {self.epochs} epochs ({self.steps} steps) the noise was calibrated for "
                "are used"
            )

    def __iter__(self) -> Iterator[list[int]]:
        self.check_epoch_left()
        epoch = self._epoch
        self._epoch += 1
        for slot in range(self.per_epoch):
            batch = self._batch(epoch, slot)
            self.last_step = epoch * self.per_epoch + slot
            yield batch

    def _batch(self, epoch: int, slot: int) -> list[int]:  # pragma: no cover - abstract
        raise NotImplementedError


class FixedEpochSampler(_Sampler):
    """Shuffle ``n`` records once; each epoch cycles b = n // batch_size batches of batch_size.

    The last n - b x batch_size records of the permutation are never used.
    """

    def __init__(self, n: int, *, batch_size: int, epochs: int, rng: NoiseSource) -> None:
        n = check_int(n, "n", low=1)
        self.batch_size = check_int(batch_size, "batch_size", low=1, high=n)
        super().__init__(per_epoch=n // self.batch_size, epochs=check_int(epochs, "epochs"))
        self._order = rng.generator.permutation(n)  # public: independent of the data

    @property
    def participations(self) -> int:
        """k: steps each record joins (one per epoch)."""
        return self.epochs

    @property
    def separation(self) -> int:
        """b: steps between a record's participations."""
        return self.per_epoch

    def _batch(self, epoch: int, slot: int) -> list[int]:
        s = slot * self.batch_size
        return self._order[s : s + self.batch_size].tolist()


class PoissonSampler(_Sampler):
    """Step t includes each record of group t mod ``groups`` with probability ``sample_rate``.

    Each record joins a group drawn uniformly at random, independently of the others (the
    i-th uniform of a generator of its own). A rule by position, group i mod ``groups``,
    would not do under add/remove: removing row 0 moves every later record to another group,
    so the two runs differ in far more than one record. With independent uniform groups the
    other records' groups have the same law with or without any one record, and the one
    record's group, whichever it is, gives the same privacy loss (Choquette-Choo et al. 2023,
    amplified banded MF). Step t decides inclusions with uniforms u_i from a counter-based
    generator keyed by t, the i-th draw for record i, so adding a record at the end leaves
    every other record's inclusions unchanged (neighbouring runs couple, and replay can check
    each step). One epoch has ``per_epoch`` steps (``groups`` x round(1 / (sample_rate x
    groups)) by default: about n records).
    """

    def __init__(
        self,
        n: int,
        *,
        sample_rate: float,
        epochs: int,
        rng: NoiseSource,
        groups: int = 1,
        per_epoch: int | None = None,
    ) -> None:
        self.n = check_int(n, "n", low=1)
        self.sample_rate = check_real(
            sample_rate, "sample_rate", low=0.0, high=1.0, high_open=False
        )
        # Not bounded by n: n is private under add/remove (make_private checks n_public).
        self.groups = check_int(groups, "groups", low=1)
        if per_epoch is None:
            per_epoch = self.groups * max(1, round(1.0 / (self.sample_rate * self.groups)))
        per_epoch = check_int(per_epoch, "per_epoch", low=1)
        if per_epoch % self.groups:
            raise ValueError(f"per_epoch={per_epoch} must be a multiple of groups={self.groups}")
        super().__init__(per_epoch=per_epoch, epochs=check_int(epochs, "epochs"))
        (self._source,) = rng.spawn(1)
        self._group = None
        if self.groups > 1:  # a child of the inclusion source: groups = 1 draws as before
            (grouping,) = self._source.spawn(1)
            u = grouping.keyed_generator(0).random(self.n)
            self._group = np.minimum((u * self.groups).astype(np.int64), self.groups - 1)

    def _batch(self, epoch: int, slot: int) -> list[int]:
        t = epoch * self.per_epoch + slot
        chosen = self._source.keyed_generator(t).random(self.n) < self.sample_rate
        if self._group is not None:
            chosen &= self._group == slot % self.groups
        return np.flatnonzero(chosen).tolist()
