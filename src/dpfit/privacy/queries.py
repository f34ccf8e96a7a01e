"""The L2 sensitivity of every kind of query dpfit releases, with its float64 rounding allowance.

Every release declares its sensitivity through :func:`query_sensitivity` (or one of the
thin wrappers :func:`sum_sensitivity` and :func:`mean_sensitivity`): the caller names the
query's kind, the public bound on one record's contribution and the public number of
summands, and gets the sensitivity of the query **as computed in float64**, not only in
exact arithmetic. No call site types a sensitivity formula.

Notation: B = ``bound``, n = ``n`` (public number of summands), u = 2^-53 (unit roundoff),
gamma_k = k u / (1 - k u) (Higham 2002, eq. 3.8), F = 2 under replace-one and 1 under
add/remove (:attr:`Relation.sum_factor`).

====================  ===================================  ==============  ==================
kind                  query (one term per record)          exact           allowance
====================  ===================================  ==============  ==================
``SUM``               sum_i v_i, ||v_i|| <= B              F B             2 e(B)
``MEAN``              (1/n) sum_i v_i, public n            F B / n         (2 e(B) + 2 d(B))/n
``BOUNDED_SUM``       sum_i t_i, t_i in [0, B]             B               2 e(B)
``BOUNDED_MEAN``      (1/n) sum_i t_i, public n            B / n           (2 e(B) + 2 d(B))/n
``SECOND_MOMENT_SUM`` upper(sum_i a_i a_i'), ||a_i|| <= B  sqrt(2) B^2 [1]  2 e(B^2)
``SECOND_MOMENT``     (1/n) upper(sum_i a_i a_i')          that / n        (2 e + 2 d)(B^2)/n
``EIGENVALUE``        lambda_min(sum_i a_i a_i'), p x p    B^2             2 e(B^2) + 2 l(B^2)
``COUNT``             #{i : predicate(record i)}           1               0
====================  ===================================  ==============  ==================

[1] B^2 under add/remove; replace-one: ||a a' - b b'||_F^2 = ||a||^4 + ||b||^4 - 2 (a.b)^2
<= 2 B^4, and the upper triangle's norm is at most the Frobenius norm. The eigenvalue's
exact sensitivity is Weyl's inequality, ||a a' - b b'||_2 <= B^2 (both relations).

The allowance bounds how far rounding can move the computed query of one dataset, twice
(once per neighbour):

* e(B) = gamma_n n B: a sum of n terms of norm <= B, each stored or one float product
  (a matrix product X'w, a Gram matrix X'X), computed in **any** order (sequential,
  pairwise, BLAS with any number of threads, a Dask tree), has coordinate errors at most
  gamma_n sum_i |v_ij| (Higham 2002, eqs. 3.5 and 4.4), so an L2 error at most
  gamma_n sum_i ||v_i|| <= gamma_n n B. The upper triangle of a Gram sum likewise has
  L2 error at most gamma_n sum_i ||a_i||^2;
* d(B) = u (1 + gamma_n) n B: dividing the computed sum by n rounds each coordinate by
  at most u times its size;
* l(B^2) = c_p u (1 + gamma_n) n B^2: LAPACK's symmetric eigensolvers are backward stable,
  the computed eigenvalues being exact for a matrix within c_p u ||G||_2 of G (Anderson et
  al., LAPACK Users' Guide, 3rd ed., section 4.7.1, "p(n) is a modestly growing function
  of n"); dpfit takes the deliberately generous c_p = 64 p^2. Next to e it matters only for
  n below about 64 p^2, where the whole allowance is below 1e-11 relative.

The allowance is the relaxation of Casacuberta, Shoemate, Vadhan & Wagaman (2022) that
OpenDP adds to its float sums: about n^2 u relative (1.1e-12 at n = 100, 1.1e-4 at n = 1e6,
0.011 at n = 1e7). It assumes each term's bound holds for the computed term, which the
clipping of :mod:`dpfit.mechanisms.clipping` guarantees with its relative margin of 2^-40
(also absorbing the ulp by which a product bound such as B_X B_Y may round); a count is an
integer below 2^53, exact in float64. Under add/remove the allowance is computed for the
public n (the actual count, which is private, is assumed not to exceed it).

**Privacy units** (``rows_per_unit`` = K > 1; :mod:`dpfit.privacy.unit_level`). When one
unit (all rows of one person) is the thing protected and each unit keeps at most K rows, a
unit's term is the sum of at most K row terms of bound B, so the table applies with B
replaced by K B (and n counting units): exact for sums, means and counts (K rows can all
change). For the quadratic kinds the unit's term sum_{i in u} a_i a_i' is positive
semidefinite with Frobenius norm at most its trace, at most K B^2, and for PSD A, A'
||A - A'||_F^2 = ||A||_F^2 + ||A'||_F^2 - 2 tr(A A') <= 2 (K B^2)^2 (tr(A A') >= 0), so
the sqrt(2) of footnote [1] holds; the eigenvalue moves by at most ||A - A'||_2 <= K B^2
(both PSD). The rounding allowance counts the n K rows as summands: gamma_{nK} n (K B).
"""

from __future__ import annotations

import enum
import math

from .._validation import check_int, check_positive, shown
from .relations import Relation, parse_relation

__all__ = [
    "Query",
    "float_sum_excess",
    "joint_sensitivity",
    "mean_sensitivity",
    "query_peak",
    "query_sensitivity",
    "sum_sensitivity",
]

#: Unit roundoff of float64 (round to nearest).
UNIT_ROUNDOFF = 2.0**-53
#: Largest number of summands whose gamma_n is defined (n u < 1) with room to spare.
MAX_SUMMANDS = 2**52
#: The constant c_p / p^2 of the eigensolver's backward error (module docstring).
EIGEN_BACKWARD_FACTOR = 64.0


class Query(enum.Enum):
    """The kinds of query dpfit releases (the table of the module docstring)."""

    SUM = "sum"
    MEAN = "mean"
    BOUNDED_SUM = "bounded-sum"
    BOUNDED_MEAN = "bounded-mean"
    SECOND_MOMENT_SUM = "second-moment-sum"
    SECOND_MOMENT = "second-moment"
    EIGENVALUE = "eigenvalue"
    COUNT = "count"

    def __str__(self) -> str:
        return self.value

    @property
    def divided(self) -> bool:
        """Whether the released value is the sum divided by the public n (a mean)."""
        return self in _MEANS


#: Kinds divided by the public n after summing.
_MEANS = frozenset({Query.MEAN, Query.BOUNDED_MEAN, Query.SECOND_MOMENT})
#: Kinds whose per-record term is bounded by B^2 (quadratic in the record).
_QUADRATIC = frozenset({Query.SECOND_MOMENT_SUM, Query.SECOND_MOMENT, Query.EIGENVALUE})


def _gamma(n: int) -> float:
    """gamma_n = n u / (1 - n u) (Higham 2002, eq. 3.8)."""
    k = n * UNIT_ROUNDOFF
    return k / (1.0 - k)


def _parse_query(value: object) -> Query:
    if isinstance(value, Query):
        return value
    for query in Query:
        if query.value == value:
            return query
    raise ValueError(f"query must be one of {[q.value for q in Query]}, got {shown(value)}")


def _exact(query: Query, term: float, relation: Relation) -> float:
    """The exact-arithmetic sensitivity of one query (module docstring's table)."""
    if query is Query.COUNT:
        return 1.0
    if query in (Query.SUM, Query.MEAN):
        return relation.sum_factor * term
    if query in (Query.SECOND_MOMENT_SUM, Query.SECOND_MOMENT):
        return (math.sqrt(2.0) if relation is Relation.REPLACE_ONE else 1.0) * term
    return term  # BOUNDED_SUM, BOUNDED_MEAN, EIGENVALUE


def query_sensitivity(
    query: Query | str,
    *,
    bound: float = 1.0,
    n: int | None = None,
    relation: Relation | str = Relation.REPLACE_ONE,
    columns: int = 1,
    dim: int | None = None,
    rows_per_unit: int = 1,
) -> float:
    """L2 sensitivity of a query as dpfit computes it in float64 (module docstring's table).

    Parameters
    ----------
    query : Query or str
        The query's kind, e.g. ``"mean"`` or ``Query.SECOND_MOMENT``.
    bound : float, default=1.0
        Public bound B on one record's term (its norm; ignored for ``COUNT``).
    n : int, optional
        Public number of summands. Required for means, second moments and eigenvalues;
        without it a sum's sensitivity is the exact-arithmetic one (no allowance).
    relation : Relation or str, default="replace-one"
        The neighbouring relation.
    columns : int, default=1
        Number of such queries released together, each over its own coordinates (k counts,
        k candidates' mean losses): the L2 sensitivity is sqrt(columns) times one query's.
    dim : int, optional
        p, the order of the matrix of an ``EIGENVALUE`` query (required for it).
    rows_per_unit : int, default=1
        K: the public cap on the rows one privacy unit contributes, each row's term bounded
        by ``bound``; ``n`` then counts units (module docstring, "Privacy units"). 1 is the
        row-level guarantee.

    Returns
    -------
    float
        The declared sensitivity: exact part plus rounding allowance (an upper bound for
        the computed query).

    Examples
    --------
    >>> query_sensitivity("sum", bound=1.5)
    3.0
    >>> round(query_sensitivity("mean", bound=1.0, n=10**6) * 10**6 / 2 - 1, 7)
    0.000111
    >>> query_sensitivity("count", columns=4)
    2.0
    >>> query_sensitivity("sum", bound=1.5, rows_per_unit=20)  # one unit of up to 20 rows
    60.0
    """
    query = _parse_query(query)
    relation = parse_relation(relation)
    columns = check_int(columns, "columns", low=1)
    rows = check_int(rows_per_unit, "rows_per_unit", low=1, high=MAX_SUMMANDS)
    if query is Query.COUNT:
        return rows * math.sqrt(columns)
    bound = check_positive(bound, "bound")
    term = rows * (bound * bound if query in _QUADRATIC else bound)
    exact = _exact(query, term, relation)
    if n is None:
        if query in _MEANS or query is Query.EIGENVALUE:
            raise ValueError(f"n is required for a {query.value} query")
        return exact * math.sqrt(columns) if columns > 1 else exact
    n = check_int(n, "n", low=1, high=MAX_SUMMANDS // rows)
    if query is Query.EIGENVALUE and dim is None:
        raise ValueError("dim (the order p of the matrix) is required for an eigenvalue query")
    total = exact + _allowance(query, term, n, dim, rows)
    if query in _MEANS:
        total /= n
    return total * math.sqrt(columns) if columns > 1 else total


def _allowance(query: Query, term: float, n: int, dim: int | None, rows: int = 1) -> float:
    """The rounding allowance of the module docstring, in units of the sum (before / n):
    n terms of bound ``term``, each the sum of at most ``rows`` rows (n rows summed in all)."""
    gamma = _gamma(n * rows)
    allowance = 2.0 * gamma * n * term
    if query in _MEANS:
        allowance += 2.0 * UNIT_ROUNDOFF * (1.0 + gamma) * n * term
    if query is Query.EIGENVALUE:
        p = check_int(dim, "dim", low=1)
        allowance += 2.0 * EIGEN_BACKWARD_FACTOR * p * p * UNIT_ROUNDOFF * (1.0 + gamma) * n * term
    return allowance


def joint_sensitivity(*sensitivities: float) -> float:
    """L2 sensitivity of queries released together on disjoint coordinates: the root of the
    sum of their squared sensitivities (each from :func:`query_sensitivity`).

    Examples
    --------
    >>> joint_sensitivity(3.0, 4.0)
    5.0
    """
    return math.hypot(*(check_positive(s, "sensitivity") for s in sensitivities))


def query_peak(query: Query | str, *, bound: float = 1.0, n: int) -> float:
    """The largest magnitude any coordinate reaches while the query is computed.

    For a sum, a mean (its sum before the division), a second moment or an eigenvalue this
    is n times the term bound, plus the rounding allowance of one dataset, gamma_n n B
    (plus, for an eigenvalue, the solver's backward error); for a count it is n. A
    pre-charge check (:mod:`dpfit.mechanisms.limits`) keeps it finite, so no clipped query
    can overflow whatever the records.
    """
    query = _parse_query(query)
    n = check_int(n, "n", low=1, high=MAX_SUMMANDS)
    if query is Query.COUNT:
        return float(n)
    bound = check_positive(bound, "bound")
    term = bound * bound if query in _QUADRATIC else bound
    return (1.0 + _gamma(n)) * n * term * (1.0 + UNIT_ROUNDOFF)


def float_sum_excess(clip: float, n: int) -> float:
    """Rounding allowance of a clipped mean, in units of the sum: ``2 e(C) + 2 d(C)``.

    The amount by which two neighbouring computed sums of ``n`` vectors of norm <= ``clip``,
    each then divided by n, can differ beyond the exact 2 C (module docstring): below
    1.2e-4 clip at n = 1e6 and 0.012 clip at n = 1e7 (Casacuberta et al. 2022).
    """
    clip = check_positive(clip, "clip")
    return _allowance(Query.MEAN, clip, check_int(n, "n", low=1, high=MAX_SUMMANDS), None)


def sum_sensitivity(
    clip: float, relation: Relation | str = Relation.REPLACE_ONE, *, n: int | None = None
) -> float:
    """L2 sensitivity of sum_i clip_C(g_i): 2C under replace-one, C under add/remove.

    With ``n`` (the public number of summands), the float64 rounding allowance 2 gamma_n n C
    is included, so the bound holds for the *computed* sum (:func:`query_sensitivity`).
    """
    return query_sensitivity(Query.SUM, bound=clip, n=n, relation=relation)


def mean_sensitivity(
    clip: float, n: int, relation: Relation | str = Relation.REPLACE_ONE, rows_per_unit: int = 1
) -> float:
    """L2 sensitivity of (1/n) sum_i clip_C(g_i) with a **public** n: about 2C/n or C/n.

    Includes the float64 rounding allowance of :func:`query_sensitivity` (a relative
    increase of about n^2 2^-53, e.g. 1.1e-12 at n = 100 and 1.1e-4 at n = 1e6), so the
    declared sensitivity bounds what the library actually computes (Casacuberta et al.
    2022; ``docs/threat-model.md``, "Floating-point summation"). With a privacy unit
    (``rows_per_unit`` = K > 1) n counts units and each unit sums at most K clipped rows:
    about 2KC/n.
    """
    return query_sensitivity(
        Query.MEAN, bound=clip, n=n, relation=relation, rows_per_unit=rows_per_unit
    )
