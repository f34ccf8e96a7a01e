"""The service's own formula rules: declared columns and levels, no constant arithmetic."""

from __future__ import annotations

import time

import pytest

from dpfit.serve.fit_request import Limits, RequestError, design_for, parse_request
from dpfit.serve.formula_guard import FormulaRefusedError, check_sides
from dpfit.serve.schema import parse_schema

SCHEMA = parse_schema(
    {
        "columns": {
            "x": {"type": "numeric", "bounds": [0, 10]},
            "y": {"type": "numeric", "bounds": [-5, 5]},
            "w": {"type": "boolean"},
            "g": {"type": "categorical", "levels": ["a", "b"]},
        }
    }
)


@pytest.mark.parametrize(
    "side",
    [
        "x + g + w",
        "np.log(x) + I(x ** 2) + x:g",
        "np.where(x > 1, 1, 0)",
        'Q("x")',
        'C(g, levels=["b", "a"])',
        "C(g, contr.treatment('b'))",
        "I(-x * 2.5) + abs(x)",
        "0 + x",
    ],
)
def test_allowed(side):
    check_sides([side], SCHEMA)


@pytest.mark.parametrize(
    ("side", "message"),
    [
        ("x + age", "'age' is not a column"),
        ("xx", "did you mean 'x'"),
        ("I(meta)", "'meta' is not a column"),  # names of the server's code are not columns
        ("I(__builtins__)", "not a column"),
        ('Q("secret")', "'secret' is not a column"),
        ("I(9 ** 9 ** 9)", "arithmetic between constants"),
        ('I("a" * 10 ** 9)', "arithmetic between constants"),
        ('I(x + "a")', "text constants"),
        ("I(x + 1e300)", "within +/-1e+15"),
        ('C(g, levels=["a", "q"])', "['q'] are not declared"),
        ("C(x)", "needs a categorical column"),
        ("I(np.linalg.norm(x))", "attributes are allowed only on np"),
        ("I(x[0])", "is not an operation"),
        ("I(lambda: 1)", "is not an operation"),
        ("x +", "formula syntax error"),
    ],
)
def test_refused(side, message):
    with pytest.raises(FormulaRefusedError) as info:
        check_sides([side], SCHEMA)
    assert message in str(info.value)


def test_a_constant_bomb_is_refused_at_once():
    started = time.perf_counter()
    with pytest.raises(FormulaRefusedError):
        check_sides(["I(9 ** 9 ** 9 ** 9)"], SCHEMA)
    assert time.perf_counter() - started < 5  # evaluating it would take longer than a lifetime


def test_design_for_uses_the_schema_bounds():
    request = parse_request({"dataset": "d", "formula": "y ~ x + w + g", "rho": 0.1}, Limits())
    design = design_for(request, SCHEMA, Limits())
    assert design.terms == ("Intercept", "x", "w", "g[T.b]")
    assert dict(design.bounds) == {"x": (0.0, 10.0), "w": (0.0, 1.0)}  # g[T.b]: dpfit's [0, 1]
    assert design.y_bounds == (-5.0, 5.0)


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"formula": "g ~ x"}, "a numeric or boolean column"),
        ({"formula": "y + x ~ w"}, "one response"),
        ({"formula": "np.log(y + 6) ~ x"}, "give y_bounds"),
        ({"formula": "y ~ x", "y_bounds": [0, 1]}, "has declared bounds"),
        ({"formula": "y ~ x", "bounds": {"x": [0, 5]}}, "has declared bounds [0.0, 10.0]"),
        ({"formula": "y ~ x + [w ~ g]"}, "choose model 'iv'"),
        ({"formula": "y ~ x", "model": "iv"}, "exactly one block"),
        ({"formula": " ~ x"}, "response on the left"),
    ],
)
def test_design_refusals(payload, message):
    request = parse_request({"dataset": "d", "rho": 0.1, **payload}, Limits())
    with pytest.raises(RequestError) as info:
        design_for(request, SCHEMA, Limits())
    assert info.value.status == 422 and message in info.value.message


def test_too_many_terms():
    formula = "y ~ " + " + ".join(f"I(x * {k})" for k in range(1, 12))
    bounds = {f"I(x * {k})": [0, 10 * k] for k in range(1, 12)}
    request = parse_request(
        {"dataset": "d", "rho": 0.1, "formula": formula, "bounds": bounds}, Limits()
    )
    with pytest.raises(RequestError, match="more than 5 terms"):
        design_for(request, SCHEMA, Limits(max_terms=5))
    assert len(design_for(request, SCHEMA, Limits()).terms) == 12
