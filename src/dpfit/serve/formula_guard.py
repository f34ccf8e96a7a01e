"""What a formula sent to the service may contain, checked on its text before anything runs.

dpfit's formula layer already refuses terms that are not row-wise (``scale``, ``x.mean()``,
...; :func:`dpfit.ols`). A service takes formulas from people who do not run it, so it adds
three refusals of its own, each checked on the formula's syntax tree alone:

* **Only declared columns.** Every name a formula reads must be a column of the public
  schema, checked on the formula's text, before formulaic evaluates anything (whatever
  formulaic's own name look-up would find), with a suggestion for a misspelt name.
* **Only declared levels.** ``C(column, levels=[...])`` must name a categorical column and
  list only levels the schema declares.
* **No arithmetic between constants.** Python evaluates ``9 ** 9 ** 9`` or ``"a" * 10 ** 9``
  on unbounded integers or strings, which can hold a worker for hours; arithmetic on columns
  is on float64 arrays and costs the same for any value. Strings appear only as the argument
  of ``Q()`` and inside ``C()``.

Errors name the term and the rule; they quote the analyst's own formula, never data.
"""

from __future__ import annotations

import ast
import difflib
import re

from formulaic import Formula
from formulaic.errors import FormulaicError
from formulaic.parser.types import Factor

from .schema import PublicSchema, canonical_level

__all__ = ["FormulaRefusedError", "check_sides"]

#: Largest absolute numeric constant a formula may contain.
_MAX_CONSTANT = 1e15
#: Terminal colour codes and the markers formulaic puts in its messages.
_DECORATION = re.compile(r"\x1b\[[0-9;]*m|[⧛⧚]")


class FormulaRefusedError(ValueError):
    """A formula the service does not run (the message says why)."""


def _callee_names(tree: ast.AST) -> set[int]:
    """ids of the Name nodes that are called (``log``) or a called attribute's base (``np``)."""
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            while isinstance(func, ast.Attribute):
                func = func.value
            if isinstance(func, ast.Name):
                ids.add(id(func))
    return ids


def _has_column(node: ast.AST, callees: set[int]) -> bool:
    return any(isinstance(n, ast.Name) and id(n) not in callees for n in ast.walk(node))


class _Guard:
    def __init__(self, term: str, schema: PublicSchema) -> None:
        self.term = term
        self.schema = schema

    def refuse(self, why: str) -> FormulaRefusedError:
        return FormulaRefusedError(f"formula term {self.term!r}: {why}")

    def column(self, name: str) -> None:
        if self.schema.column(name) is None:
            close = difflib.get_close_matches(name, self.schema.names, n=3, cutoff=0.6)
            hint = (
                f"did you mean {' or '.join(repr(c) for c in close)}?"
                if close
                else f"the columns are {', '.join(repr(c) for c in self.schema.names[:20])}"
            )
            raise self.refuse(f"{name!r} is not a column of the dataset's schema; {hint}")

    def categorical(self, node: ast.Call) -> None:
        """``C(column, ...)``: a declared categorical column and declared levels only."""
        if not node.args:
            raise self.refuse("C() needs a column")
        first = node.args[0]
        name = self.quoted(first) if isinstance(first, ast.Call) else getattr(first, "id", None)
        if name is None:
            raise self.refuse("C() must wrap a column name")
        self.column(name)
        spec = self.schema.column(name)
        if spec.type != "categorical":
            raise self.refuse(f"C() needs a categorical column; {name!r} is {spec.type}")
        for keyword in node.keywords:
            if keyword.arg != "levels":
                continue
            try:
                given = ast.literal_eval(keyword.value)
            except ValueError:
                raise self.refuse("C(..., levels=[...]) must be a list of literals") from None
            if not isinstance(given, list | tuple):
                raise self.refuse("C(..., levels=[...]) must be a list")
            undeclared = [v for v in given if canonical_level(v) not in (spec.levels or ())]
            if undeclared:
                raise self.refuse(
                    f"levels {undeclared!r} are not declared for {name!r}; its levels are "
                    f"{list(spec.levels or ())!r}"
                )

    def quoted(self, node: ast.Call) -> str | None:
        """The column of ``Q("name")``, else None."""
        func = node.func
        if isinstance(func, ast.Name) and func.id == "Q" and len(node.args) == 1:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                return arg.value
        return None

    def visit(self, node: ast.AST, callees: set[int]) -> None:
        if isinstance(node, ast.Constant):
            value = node.value
            if isinstance(value, str):
                raise self.refuse("text constants are allowed only in Q() and C()")
            if isinstance(value, int | float) and not isinstance(value, bool):
                if not abs(value) <= _MAX_CONSTANT:
                    raise self.refuse(f"numeric constants must lie within +/-{_MAX_CONSTANT:g}")
            return
        if isinstance(node, ast.Name):
            if id(node) not in callees:
                self.column(node.id)
            return
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name) and node.func.id == "C":
                self.categorical(node)
                return
            quoted = self.quoted(node)
            if quoted is not None:
                self.column(quoted)
                return
            self.visit(node.func, callees)
            for child in (*node.args, *(k.value for k in node.keywords)):
                self.visit(child, callees)
            return
        if isinstance(node, ast.Attribute):
            if not (isinstance(node.value, ast.Name) and id(node.value) in callees):
                raise self.refuse("attributes are allowed only on np (np.log, np.clip, ...)")
            return
        if isinstance(node, ast.BinOp):
            if not (_has_column(node.left, callees) or _has_column(node.right, callees)):
                raise self.refuse(
                    f"arithmetic between constants ({ast.unparse(node)!r}): write its value"
                )
            self.visit(node.left, callees)
            self.visit(node.right, callees)
            return
        if isinstance(node, ast.UnaryOp):
            self.visit(node.operand, callees)
            return
        if isinstance(node, ast.Compare):
            for child in (node.left, *node.comparators):
                self.visit(child, callees)
            return
        raise self.refuse(f"{ast.unparse(node)!r} is not an operation formulas may use")


def _check_factor(factor: Factor, schema: PublicSchema) -> None:
    guard = _Guard(str(factor.expr), schema)
    if factor.eval_method is Factor.EvalMethod.LOOKUP:
        guard.column(str(factor.expr))
        return
    if factor.eval_method is not Factor.EvalMethod.PYTHON:
        return  # literals: the intercept's 1 and 0
    try:
        tree = ast.parse(str(factor.expr), mode="eval").body
    except (SyntaxError, RecursionError, MemoryError):
        raise guard.refuse("not a valid Python expression") from None
    guard.visit(tree, _callee_names(tree))


def check_sides(sides: list[str], schema: PublicSchema) -> None:
    """Apply the module's rules to every factor of every formula side.

    Raises
    ------
    FormulaRefusedError
        Naming the term and the rule it breaks.
    """
    for side in sides:
        try:
            terms = list(Formula(side))
        except (FormulaicError, SyntaxError, RecursionError, ValueError) as exc:
            first = " ".join(_DECORATION.sub("", str(exc)).split())[:200]
            raise FormulaRefusedError(f"formula syntax error: {first}") from None
        for term in terms:
            for factor in term.factors:
                _check_factor(factor, schema)
