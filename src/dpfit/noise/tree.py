"""Tree aggregation (binary counter) and restarted ("xS") mechanisms.

Tree aggregation (Honaker 2015; Kairouz et al. 2021a): one noise row per *complete* dyadic
node [j 2^l, (j+1) 2^l) inside [0, T). The noisy prefix sum after step t adds the noises of
the dyadic decomposition of [0, t] (the binary digits of t + 1), N_t, and the per-step noise
is N_t - N_{t-1}. A step lies in at most one complete node per level, so a record touches
bitlen(T) = floor(log2 T) + 1 nodes: single-participation sens^2 = bitlen(T)
(``tests/noise/test_tree.py``; ceil(log2 T) + 1 over-counts for T = 1000 or 1023).

Node ids follow completion order (all nodes ending at step e, by level), so a stream reads
rows in increasing order and a node's row exists as soon as the node is complete.

:func:`restarted` runs a mechanism S times back to back (block-diagonal B): the
sensitivity comes from the block structure (cross-block entries of C^T C are 0).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import linalg

from .._validation import check_int
from .base import CorrelatedMechanism, RowSource

__all__ = ["RestartedMechanism", "TreeMechanism", "restarted", "tree_aggregation"]


def _nodes_before(step: int, levels: int) -> int:
    """Number of complete nodes that end before ``step``: sum_l floor(step / 2^l)."""
    return sum(step >> lvl for lvl in range(levels))


@dataclass(frozen=True, eq=False)
class TreeMechanism(CorrelatedMechanism):
    """Binary-tree aggregation over ``steps`` steps (no Honaker refinement)."""

    tree_steps: int
    name: str = "tree"

    def __post_init__(self) -> None:
        object.__setattr__(self, "tree_steps", check_int(self.tree_steps, "steps", low=1))

    @property
    def steps(self) -> int:
        return self.tree_steps

    @property
    def levels(self) -> int:
        """bitlen(T) = floor(log2 T) + 1: nodes a record touches."""
        return self.tree_steps.bit_length()

    @property
    def noise_rows(self) -> int:
        return _nodes_before(self.tree_steps, self.levels)

    @property
    def cache_rows(self) -> int:
        return self.noise_rows

    def node_id(self, level: int, index: int) -> int:
        """Row of node [index 2^level, (index + 1) 2^level) (complete nodes only)."""
        end = ((index + 1) << level) - 1
        return _nodes_before(end, self.levels) + level

    def decomposition(self, count: int) -> list[int]:
        """Rows of the dyadic decomposition of [0, count), largest node first."""
        ids, start = [], 0
        for lvl in reversed(range(self.levels)):
            if count >> lvl & 1:
                ids.append(self.node_id(lvl, start >> lvl))
                start += 1 << lvl
        return ids

    def _step_rows(self, step: int) -> tuple[list[int], list[int]]:
        new, old = self.decomposition(step + 1), self.decomposition(step)
        return [i for i in new if i not in old], [i for i in old if i not in new]

    def step_noise(self, step: int, rows: RowSource) -> np.ndarray:
        """N_step - N_{step-1}: added nodes minus removed nodes (a fixed order of sums)."""
        plus, minus = self._step_rows(step)
        acc = np.array(rows.block(plus[0], plus[0] + 1)[0])
        for i in plus[1:]:
            acc += rows.block(i, i + 1)[0]
        for i in minus:
            acc -= rows.block(i, i + 1)[0]
        return acc

    def gram(self, patterns: np.ndarray) -> np.ndarray:
        """X_pq = number of complete nodes containing both p and q."""
        P = np.asarray(patterns)
        valid = P >= 0
        Pc = np.where(valid, P, 0)
        X = np.zeros(P.shape + P.shape[-1:])
        for lvl in range(self.levels):
            J = Pc >> lvl
            complete = ((J + 1) << lvl) <= self.tree_steps
            X += (J[:, :, None] == J[:, None, :]) & complete[:, :, None]
        return X * (valid[:, :, None] & valid[:, None, :])

    def decoder_matrix(self) -> np.ndarray:
        B = np.zeros((self.steps, self.noise_rows))
        for t in range(self.steps):
            plus, minus = self._step_rows(t)
            B[t, plus], B[t, minus] = 1.0, -1.0
        return B

    def encoder_matrix(self) -> np.ndarray:
        C = np.zeros((self.noise_rows, self.steps))
        for lvl in range(self.levels):
            for j in range(self.tree_steps >> lvl):
                C[self.node_id(lvl, j), j << lvl : (j + 1) << lvl] = 1.0
        return C


def tree_aggregation(steps: int) -> TreeMechanism:
    """Binary-tree aggregation over ``steps`` steps (Honaker 2015; Kairouz et al. 2021a)."""
    return TreeMechanism(tree_steps=steps)


class _OffsetRows:
    """Rows of one restart block: index i of the block is row ``offset + i`` of the stream."""

    __slots__ = ("_offset", "_rows")

    def __init__(self, rows: RowSource, offset: int) -> None:
        self._rows, self._offset = rows, offset

    def block(self, start: int, stop: int) -> np.ndarray:
        return self._rows.block(start + self._offset, stop + self._offset)


@dataclass(frozen=True, eq=False)
class RestartedMechanism(CorrelatedMechanism):
    """``base`` restarted ``restarts`` times: B = blockdiag(B_base, ..., B_base)."""

    base: CorrelatedMechanism
    restarts: int
    name: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.base, CorrelatedMechanism):
            raise TypeError("base must be a correlated-noise mechanism")
        object.__setattr__(self, "restarts", check_int(self.restarts, "restarts", low=1))
        if not self.name:
            object.__setattr__(self, "name", f"{self.base.name}x{self.restarts}")

    @property
    def steps(self) -> int:
        return self.base.steps * self.restarts

    @property
    def noise_rows(self) -> int:
        return self.base.noise_rows * self.restarts

    @property
    def cache_rows(self) -> int:
        return self.base.cache_rows

    def step_noise(self, step: int, rows: RowSource) -> np.ndarray:
        block, local = divmod(step, self.base.steps)
        return self.base.step_noise(local, _OffsetRows(rows, block * self.base.noise_rows))

    def gram(self, patterns: np.ndarray) -> np.ndarray:
        P = np.asarray(patterns)
        period = self.base.steps
        local = np.where(P >= 0, P % period, -1)
        block = np.where(P >= 0, P // period, -1)
        same = block[:, :, None] == block[:, None, :]
        return self.base.gram(local) * same

    def decoder_matrix(self) -> np.ndarray:
        return linalg.block_diag(*[self.base.decoder_matrix()] * self.restarts)

    def encoder_matrix(self) -> np.ndarray:
        return linalg.block_diag(*[self.base.encoder_matrix()] * self.restarts)


def restarted(mechanism: CorrelatedMechanism, restarts: int) -> RestartedMechanism:
    """Run ``mechanism`` (over P steps) ``restarts`` times: a mechanism over P x restarts steps."""
    return RestartedMechanism(base=mechanism, restarts=restarts)
