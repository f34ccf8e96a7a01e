"""The one sensitivity helper: every query kind's exact part and float64 rounding allowance.

* the table of :mod:`dpfit.privacy.queries` (exact parts under both relations, the allowance
  2 gamma_n n B (+ 2 u (1 + gamma_n) n B for means), stacked columns, counts);
* the allowance bounds what float64 computes: on adversarial neighbours (terms of mixed
  magnitudes, summed in random orders and as matrix products) the computed queries move by
  at most the declared sensitivity, for sums, products, Gram matrices and eigenvalues;
* no release in ``src/dpfit`` types a sensitivity formula at its call site.
"""

from __future__ import annotations

import ast
import math
from pathlib import Path

import numpy as np
import pytest

from dpfit.privacy import (
    Query,
    Relation,
    float_sum_excess,
    joint_sensitivity,
    mean_sensitivity,
    query_sensitivity,
    sum_sensitivity,
)

U = 2.0**-53


def _gamma(n):
    return n * U / (1 - n * U)


@pytest.mark.parametrize(
    "query, replace, add_remove",
    [
        ("sum", 2.0 * 1.5, 1.5),
        ("bounded-sum", 1.5, 1.5),
        ("second-moment-sum", math.sqrt(2.0) * 1.5**2, 1.5**2),
        ("count", 1.0, 1.0),
    ],
)
def test_exact_parts_without_n(query, replace, add_remove):
    assert query_sensitivity(query, bound=1.5) == replace
    assert query_sensitivity(query, bound=1.5, relation="add-remove") == add_remove


def test_allowance_of_sums_and_means_matches_the_formula():
    n, B = 10**6, 3.0
    g = _gamma(n)
    assert query_sensitivity("sum", bound=B, n=n) == pytest.approx(2 * B + 2 * g * n * B, rel=1e-15)
    mean = (2 * B + 2 * g * n * B + 2 * U * (1 + g) * n * B) / n
    assert query_sensitivity(Query.MEAN, bound=B, n=n) == pytest.approx(mean, rel=1e-15)
    assert mean_sensitivity(B, n) == query_sensitivity("mean", bound=B, n=n)
    assert sum_sensitivity(B, n=n) == query_sensitivity("sum", bound=B, n=n)
    assert float_sum_excess(B, n) == pytest.approx(mean * n - 2 * B, rel=1e-9)
    # about n^2 2^-53 relative: 1.1e-4 at n = 1e6
    assert mean_sensitivity(1.0, n) * n / 2 - 1 == pytest.approx(1.1102e-4, rel=1e-3)


def test_second_moment_allowance_is_not_scaled_by_the_exact_factor():
    # the Gram allowance is 2 gamma_n n B^2 whatever the relation's factor (sqrt(2) or 1)
    n, B = 1000, 2.0
    allowance = 2 * _gamma(n) * n * B**2 + 2 * U * (1 + _gamma(n)) * n * B**2
    for relation, factor in ((Relation.REPLACE_ONE, math.sqrt(2)), (Relation.ADD_REMOVE, 1.0)):
        got = query_sensitivity("second-moment", bound=B, n=n, relation=relation) * n
        assert got == pytest.approx(factor * B**2 + allowance, rel=1e-14)


def test_eigenvalue_needs_its_dimension_and_adds_the_solver_allowance():
    with pytest.raises(ValueError, match="dim"):
        query_sensitivity("eigenvalue", bound=1.0, n=10)
    small = query_sensitivity("eigenvalue", bound=1.0, n=10, dim=2)
    large = query_sensitivity("eigenvalue", bound=1.0, n=10, dim=20)
    assert 1.0 < small < large < 1.0 + 1e-9


def test_columns_counts_and_joint_releases():
    assert query_sensitivity("count", columns=9) == 3.0
    one = query_sensitivity("bounded-mean", bound=2.0, n=500)
    assert query_sensitivity("bounded-mean", bound=2.0, n=500, columns=4) == 2 * one
    assert joint_sensitivity(3.0, 4.0) == 5.0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"query": "median"}, "query must be one of"),
        ({"query": "mean", "bound": 1.0}, "n is required"),
        ({"query": "sum", "bound": -1.0}, "bound"),
        ({"query": "sum", "bound": 1.0, "n": 0}, "n"),
        ({"query": "sum", "bound": 1.0, "columns": 0}, "columns"),
    ],
)
def test_invalid_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        query_sensitivity(**kwargs)


def _mixed_terms(rng, n, d):
    """Rows of norm exactly-ish 1 in mixed directions, scaled over 1e-8..1."""
    V = rng.standard_normal((n, d))
    V /= np.linalg.norm(V, axis=1, keepdims=True) * (1 + 2.0**-40)
    return V * np.exp(rng.uniform(np.log(1e-8), 0.0, n))[:, None]


@pytest.mark.parametrize("seed", range(20))
def test_computed_queries_stay_within_the_allowance(seed):
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(2, 400)), 3
    A = _mixed_terms(rng, n, d)
    A[:, 0] = np.abs(A[:, 0]) + 0.5  # one large positive coordinate: sums that round
    A /= np.linalg.norm(A, axis=1, keepdims=True) * (1 + 2.0**-40)
    B = A.copy()
    B[-1] = -A[-1]  # the replaced record: the sum moves by ~2, the Gram matrix by ~0
    C = A.copy()
    C[-1] = np.roll(A[-1], 1)
    p, q = rng.permutation(n), rng.permutation(n)
    # a sum (stored terms, another order on each side) and a mean
    for query, value in (("sum", lambda M: M.sum(axis=0)), ("mean", lambda M: M.sum(0) / n)):
        moved = np.linalg.norm(value(A[p]) - value(B[q]))
        assert moved <= query_sensitivity(query, bound=1.0, n=n)
    # a matrix product X'w (terms are products)
    w = rng.uniform(0.5, 1.0, n)
    X, Xb = A / w[:, None], B / w[:, None]
    moved = np.linalg.norm(X[p].T @ w[p] - Xb[q].T @ w[q])
    assert moved <= query_sensitivity("sum", bound=1.0 + 2.0**-50, n=n)
    # the upper triangle of a Gram sum and its smallest eigenvalue
    upper = np.triu_indices(d)
    G, Gc = A[p].T @ A[p], C[q].T @ C[q]
    moved = np.linalg.norm(G[upper] - Gc[upper])
    assert moved <= query_sensitivity("second-moment-sum", bound=1.0, n=n)
    moved = abs(np.linalg.eigvalsh(G)[0] - np.linalg.eigvalsh(Gc)[0])
    assert moved <= query_sensitivity("eigenvalue", bound=1.0, n=n, dim=d)


_HELPERS = {
    "joint_sensitivity",
    "mean_sensitivity",
    "query_sensitivity",
    "release_sensitivity",
    "second_moment_sensitivity",
    "sum_sensitivity",
}


def _typed_formula(node: ast.AST) -> bool:
    """Whether an expression computes a sensitivity itself (arithmetic, a literal, a call other
    than the helpers) instead of naming a value that came from the helper."""
    if isinstance(node, ast.Name | ast.Attribute):
        return False
    if isinstance(node, ast.Subscript):  # sens["xtx"]: a table filled by the helper
        return _typed_formula(node.value)
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return name not in _HELPERS
    return True  # arithmetic, a literal, ...


#: Accounting, not releases: epsilon of a noise multiplier (std / sensitivity), sensitivity 1.
_ACCOUNTING = {"privacy/pld.py"}


def test_no_release_types_a_sensitivity_formula():
    root = Path(__file__).parents[2] / "src" / "dpfit"
    offenders = []
    for path in root.rglob("*.py"):
        if path.relative_to(root).as_posix() in _ACCOUNTING:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            for kw in node.keywords:
                if kw.arg == "sensitivity" and _typed_formula(kw.value):
                    offenders.append(f"{path.relative_to(root)}:{node.lineno}")
    assert not offenders, offenders
