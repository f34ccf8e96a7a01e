"""Neighbouring relations and the public record count that divides a clipped sum.

Two datasets are neighbours under

* ``REPLACE_ONE`` (default; all five papers): the same public size n, one record replaced.
  A sum of vectors clipped to norm C moves by at most 2C; a mean by 2C/n.
* ``ADD_REMOVE``: one record added or removed, so n itself is private. A clipped sum moves
  by at most C. A *mean* has no bounded sensitivity unless it divides by a public n_pub
  (then C/n_pub); dividing by the actual n would leak it (``docs/privacy.md``).

The sensitivity of every query, with its float64 rounding allowance, is
:func:`dpfit.privacy.query_sensitivity` (:mod:`dpfit.privacy.queries`).
"""

from __future__ import annotations

import enum

from .._validation import check_int, shown

__all__ = ["Relation", "parse_relation", "public_n"]


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
    raise ValueError(f"relation must be one of {allowed}, got {shown(value)}")


def public_n(rows: int, n_public: int | None, relation: Relation | str) -> int:
    """The public record count that divides a clipped sum (``docs/privacy.md``).

    Under replace-one n is public: ``n_public`` may be omitted and, if given, must equal
    ``rows``. Under add/remove the actual count is private, so ``n_public`` is required and
    is never compared with ``rows``.
    """
    relation = parse_relation(relation)
    if n_public is None:
        if relation is Relation.ADD_REMOVE:
            raise ValueError(
                "n_public is required under relation='add-remove': sums are divided by a "
                "public record count, never by the private n"
            )
        return rows
    n_public = check_int(n_public, "n_public", low=1)
    if relation is Relation.REPLACE_ONE and n_public != rows:
        raise ValueError(
            "n_public must equal the number of rows of X under relation='replace-one' "
            "(n is public under replace-one)"
        )
    return n_public
