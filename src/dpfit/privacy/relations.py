"""Neighbouring relations and the L2 sensitivity of sums and means of clipped vectors.

Two datasets are neighbours under

* ``REPLACE_ONE`` (default; all five papers): the same public size n, one record replaced.
  A sum of vectors clipped to norm C moves by at most 2C; a mean by 2C/n.
* ``ADD_REMOVE``: one record added or removed, so n itself is private. A clipped sum moves
  by at most C. A *mean* has no bounded sensitivity unless it divides by a public n_pub
  (then C/n_pub); dividing by the actual n would leak it (reliability pitfall P2).
"""

from __future__ import annotations

import enum

from .._validation import check_int, check_positive

__all__ = ["Relation", "mean_sensitivity", "parse_relation", "sum_sensitivity"]


class Relation(enum.Enum):
    """The neighbouring relation a privacy guarantee is stated under."""

    REPLACE_ONE = "replace-one"
    ADD_REMOVE = "add-remove"

    def __str__(self) -> str:
        return self.value

    @property
    def sum_factor(self) -> float:
        """Sensitivity of a sum of norm-<=1 vectors: 2 (replace-one) or 1 (add/remove)."""
        return 2.0 if self is Relation.REPLACE_ONE else 1.0


def parse_relation(value: object) -> Relation:
    """Return a :class:`Relation` from itself or its string spelling."""
    if isinstance(value, Relation):
        return value
    allowed = [r.value for r in Relation]
    if isinstance(value, str):
        for rel in Relation:
            if rel.value == value:
                return rel
    raise ValueError(f"relation must be one of {allowed}, got {value!r}")


def sum_sensitivity(clip: float, relation: Relation | str = Relation.REPLACE_ONE) -> float:
    """L2 sensitivity of sum_i clip_C(g_i): 2C under replace-one, C under add/remove."""
    return parse_relation(relation).sum_factor * check_positive(clip, "clip")


def mean_sensitivity(clip: float, n: int, relation: Relation | str = Relation.REPLACE_ONE) -> float:
    """L2 sensitivity of (1/n) sum_i clip_C(g_i) with a **public** n (2C/n or C/n)."""
    return sum_sensitivity(clip, relation) / check_int(n, "n", low=1)
