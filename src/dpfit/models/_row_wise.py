"""The allow-list of row-wise formula terms: a design row must depend on its own record only.

A formula's design matrix is private data transformed row by row, and the privacy of a fit
rests on that: the clipped-sum sensitivity 2C/n (Brown et al. 2024, Lemma 2.1) holds because
replacing one record changes one row. formulaic's **stateful transforms** (``scale``,
``center``, ``standardize``, ``poly``, ``bs``, ...) learn the private mean, sd or quantiles,
so every row would depend on every record; ``lag`` makes a row depend on another record; a
method call such as ``x.mean()`` reads the whole column. :func:`check_terms` checks every
python term of a formula side against an allow-list of row-wise operations *before* any data
is read: arithmetic, comparisons, ``I()``, ``Q()``, NumPy ufuncs (``np.log``, ``np.sqrt``,
...), ``np.clip``, ``np.where``, formulaic's ``log``/``exp`` and ``C(column, levels=[...])``.
"""

from __future__ import annotations

import ast
import contextlib

import numpy as np
from formulaic import Formula
from formulaic.parser.types import Factor

__all__ = [
    "check_terms",
    "column_of",
    "declared_column",
    "factor_column",
    "may_be_undefined",
    "refuse",
]


#: Stateful or cross-row transforms of formulaic, and why each is refused.
_REFUSED = {
    **dict.fromkeys(
        ("center", "scale", "standardize", "poly", "bs", "cs", "cc", "cr", "te"),
        "is a stateful transform that learns from the data (mean, sd, quantiles), so every row "
        "would depend on every record; use I() with public constants, e.g. I((x - 40) / 10)",
    ),
    "lag": "shifts rows, so a row would depend on another record",
    "hashed": "is not supported; declare the levels with C(column, levels=[...])",
}
#: Row-wise functions callable by name: formulaic's stateless transforms and ``abs``.
_ROW_WISE = frozenset({"log", "log10", "log2", "exp", "exp10", "exp2", "abs", "I"})
_NUMPY_EXTRA = frozenset({"clip", "where"})
_CONTRASTS = frozenset({"Treatment", "Sum", "Helmert", "Diff", "Poly"})
_ALLOWED_HINT = (
    "allowed: arithmetic, comparisons, I(), Q(), NumPy ufuncs such as np.log, np.clip, "
    "np.where, log/exp, and C(column, levels=[...]) at the top of a term"
)


def refuse(term: str, why: str) -> ValueError:
    """The error that refuses formula term ``term`` and says why."""
    return ValueError(f"formula term {term!r}: {why}")


def _is_constant(node: ast.AST) -> bool:
    """A literal (number, string, bool, None), possibly negated, or a list/tuple of them."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        return _is_constant(node.operand)
    if isinstance(node, ast.List | ast.Tuple):
        return all(_is_constant(e) for e in node.elts)
    return False


def _callee(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return f"{func.value.id}.{func.attr}"
    return ast.unparse(func)


def _check_contrasts(term: str, node: ast.AST) -> None:
    """``contr.treatment('b')``, ``contr.sum``, ``Treatment(base='b')`` with literal arguments."""
    target = node.func if isinstance(node, ast.Call) else node
    ok = (isinstance(target, ast.Name) and target.id in _CONTRASTS) or (
        isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id == "contr"
    )
    if isinstance(node, ast.Call):
        ok = ok and all(_is_constant(a) for a in node.args)
        ok = ok and all(_is_constant(k.value) for k in node.keywords)
    if not ok:
        raise refuse(term, "the contrasts of C() must be contr.<name>(...) with literal arguments")


def column_of(node: ast.AST) -> str | None:
    """The column a factor names: ``x``, ``Q("x y")``; else None."""
    if isinstance(node, ast.Name):
        return node.id
    if (
        isinstance(node, ast.Call)
        and _callee(node) == "Q"
        and len(node.args) == 1
        and not node.keywords
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        return node.args[0].value
    return None


def _check_categorical(term: str, node: ast.Call) -> None:
    """``C(column, [contrasts], levels=[...], spans_intercept=...)``."""
    if not node.args or column_of(node.args[0]) is None:
        raise refuse(term, "C() must wrap a column name; create derived columns first")
    if len(node.args) > 2:
        raise refuse(term, "C() takes a column and optional contrasts")
    if len(node.args) == 2:
        _check_contrasts(term, node.args[1])
    for keyword in node.keywords:
        if keyword.arg == "contrasts":
            _check_contrasts(term, keyword.value)
        elif keyword.arg in ("levels", "spans_intercept"):
            if not _is_constant(keyword.value):
                raise refuse(term, f"C(..., {keyword.arg}=...) must be a literal")
        else:
            raise refuse(term, f"C() has no argument {keyword.arg!r}")


#: Binary operators on constants evaluated in floating point by :func:`_constant_value`.
_FLOAT_OPS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b,
}


def _constant_value(node: ast.AST) -> float:
    """The value of constant arithmetic, computed in floating point (bounded time).

    Python evaluates ``9 ** 9 ** 9`` on unbounded integers, which never finishes; in floating
    point it overflows at once. Raises ``OverflowError``, ``ZeroDivisionError``,
    ``TypeError`` or ``ValueError`` for anything that is not finite real arithmetic.
    """
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise TypeError("not a number")
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _constant_value(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _FLOAT_OPS:
        value = _FLOAT_OPS[type(node.op)](_constant_value(node.left), _constant_value(node.right))
        if not (isinstance(value, float) and np.isfinite(value)):
            raise OverflowError("not finite")
        return value
    raise TypeError("not arithmetic")


def _reads_data(node: ast.AST) -> bool:
    """Whether an expression names anything (a column or a function) besides literals."""
    return any(isinstance(child, ast.Name | ast.Call) for child in ast.walk(node))


def _check_constant(term: str, node: ast.AST) -> None:
    """Refuse constant arithmetic that is not finite in floating point (before Python
    evaluates it on unbounded integers, which can hang: ``I(9 ** 9 ** 9)``)."""
    try:
        _constant_value(node)
    except (ArithmeticError, TypeError, ValueError):
        raise refuse(
            term,
            f"{ast.unparse(node)!r} is constant arithmetic dpfit does not evaluate (only + - * "
            "/ // % ** on numbers, with a finite result: Python would compute it on unbounded "
            "integers); write the value itself, e.g. 1e6",
        ) from None


def _check_divisor(term: str, node: ast.BinOp) -> None:
    """Refuse division by a constant zero, which would make every record a zero record."""
    if isinstance(node.op, ast.Div | ast.FloorDiv | ast.Mod) and not _reads_data(node.right):
        divisor = None
        with contextlib.suppress(ArithmeticError, TypeError, ValueError):
            divisor = _constant_value(node.right)
        if divisor == 0.0:
            raise refuse(term, f"{ast.unparse(node)!r} divides by zero")


def _check_row_wise(term: str, node: ast.AST) -> None:
    """Refuse anything in a python factor that is not a row-wise operation."""
    if isinstance(node, ast.Constant | ast.Name):
        return
    if isinstance(node, ast.BinOp | ast.UnaryOp) and not _reads_data(node):
        _check_constant(term, node)
        return
    if isinstance(node, ast.BinOp):
        _check_divisor(term, node)
        _check_row_wise(term, node.left)
        _check_row_wise(term, node.right)
    elif isinstance(node, ast.UnaryOp):
        _check_row_wise(term, node.operand)
    elif isinstance(node, ast.Compare):
        for child in (node.left, *node.comparators):
            _check_row_wise(term, child)
    elif isinstance(node, ast.Call):
        name = _callee(node)
        base = name.rpartition(".")[2]
        if name == "Q":
            if column_of(node) is None:
                raise refuse(term, 'Q() takes one column name, e.g. Q("my column")')
            return
        if name == "C":
            raise refuse(term, "C() must be the whole term, e.g. C(region, levels=[...])")
        if name in _REFUSED:
            raise refuse(term, f"{name}() {_REFUSED[name]}")
        numpy_ok = name.partition(".")[0] in ("np", "numpy") and (
            isinstance(getattr(np, base, None), np.ufunc) or base in _NUMPY_EXTRA
        )
        if not (numpy_ok or name in _ROW_WISE):
            raise refuse(
                term, f"{name}() is not a row-wise transform dpfit allows ({_ALLOWED_HINT})"
            )
        for child in (*node.args, *(k.value for k in node.keywords)):
            _check_row_wise(term, child)
    else:
        raise refuse(
            term,
            f"{ast.unparse(node)!r} is not a row-wise operation dpfit allows ({_ALLOWED_HINT})",
        )


def _python_factor(factor: Factor) -> ast.AST:
    try:
        return ast.parse(factor.expr, mode="eval").body
    except SyntaxError as exc:
        raise refuse(factor.expr, "not a valid Python expression") from exc


def check_terms(side: str) -> None:
    """Refuse a formula side with a term that is not row-wise (module docstring); no data."""
    for term in Formula(side):
        for factor in term.factors:
            if factor.eval_method is not Factor.EvalMethod.PYTHON:
                continue
            node = _python_factor(factor)
            if isinstance(node, ast.Call) and _callee(node) == "C":
                _check_categorical(factor.expr, node)
            else:
                _check_row_wise(factor.expr, node)


def factor_column(expr: str) -> str | None:
    """The column a factor reads: ``x``, ``Q("x y")`` or the first argument of ``C()``."""
    node = ast.parse(expr, mode="eval").body
    if isinstance(node, ast.Call) and _callee(node) == "C" and node.args:
        return column_of(node.args[0])
    return column_of(node)


def declared_column(expr: str) -> str | None:
    """The column of ``C(column, levels=[...])``, whose dtype may be anything."""
    node = ast.parse(expr, mode="eval").body
    if isinstance(node, ast.Call) and _callee(node) == "C":
        if any(k.arg == "levels" for k in node.keywords):
            return column_of(node.args[0])
    return None


#: Functions (the last part of the name) that are undefined, or overflow, at some finite values.
_PARTIAL = frozenset(
    {
        "log", "log10", "log2", "log1p", "sqrt", "arcsin", "arccos", "arccosh", "arctanh",
        "tan", "reciprocal", "power", "float_power", "exp", "exp2", "exp10", "expm1", "sinh",
        "cosh", "divide", "true_divide", "floor_divide", "mod", "remainder", "fmod", "ldexp",
    }
)  # fmt: skip


def _whole_power(node: ast.AST) -> bool:
    """An exponent that is a literal integer >= 0 (x ** 2 is defined for every x)."""
    return isinstance(node, ast.Constant) and type(node.value) is int and node.value >= 0


def may_be_undefined(expr: str) -> bool:
    """Whether a row-wise factor can be NaN or infinite at finite values (``np.log(x)`` at 0,
    a division by a column, ``x ** -1``, ``np.exp`` overflowing): such a record is the zero
    record. Read off the formula only, never the data."""
    for node in ast.walk(ast.parse(expr, mode="eval").body):
        if isinstance(node, ast.Call) and _callee(node).rpartition(".")[2] in _PARTIAL:
            return True
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Div | ast.FloorDiv | ast.Mod) and _reads_data(node.right):
                return True
            if isinstance(node.op, ast.Pow) and not _whole_power(node.right):
                return True
    return False
