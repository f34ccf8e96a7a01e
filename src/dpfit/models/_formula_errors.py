"""formulaic's errors as one-line ``ValueError``s that name the formula term and the fix.

formulaic raises its own exception types, with multi-line, colour-coded messages; a
misspelt variable reads "Unable to evaluate factor `xx`. [NameError: ...]". :func:`formula_errors`
turns them into ``ValueError`` (``except ValueError`` catches them, as for every other bad
input), naming the term, suggesting a column when one is close, and quoting no data value:
an evaluation error other than a missing name has its details withheld, since they may
quote the data (formulaic documents its messages at
https://matthewwardrop.github.io/formulaic/).
"""

from __future__ import annotations

import contextlib
import difflib
import re
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["formula_errors", "formula_message", "one_line"]

_ANSI = re.compile(r"\x1b\[[0-9;]*m|[⧛⧚]")
_FACTOR = re.compile(r"Unable to evaluate factor `(?P<term>[^`]*)`")
_MISSING = re.compile(r"`(?P<name>[^`]*)` is not present in the dataset")
_UNDEFINED = re.compile(r"name '(?P<name>[^']*)' is not defined")
_BETWEEN = re.compile(r"Missing operator between `(?P<a>[^`]*)` and `(?P<b>[^`]*)`")


def one_line(text: str) -> str:
    """``text`` as one line, without formulaic's colour codes and markers."""
    return " ".join(_ANSI.sub("", str(text)).split())


def _suggest(name: str, columns: Sequence[str]) -> str:
    columns = [str(c) for c in columns]
    close = difflib.get_close_matches(name, columns, n=3, cutoff=0.6)
    if close:
        return f"did you mean {' or '.join(repr(c) for c in close)}?"
    shown = ", ".join(repr(c) for c in columns[:12]) + (", ..." if len(columns) > 12 else "")
    return f"the data's columns are {shown}" if columns else "check the column names"


def _spaced_name_hint(message: str, columns: Sequence[str]) -> str:
    """For "Missing operator between `hourly` and `wage`": the column whose name has the
    space (and perhaps brackets), in backticks (formulaic's quoting), when the schema has it."""
    match = _BETWEEN.search(message)
    if match is None:
        return ""
    a, b = match.group("a"), match.group("b")
    words = f"{a} {b}"
    named = [str(c) for c in columns if " ".join(str(c).split()) == words]
    # or a name with brackets or signs around the words, such as "hours (h)"
    around = re.compile(rf"\W*{re.escape(a)}\W+{re.escape(b)}\W*")
    named = named or [str(c) for c in columns if around.fullmatch(str(c))]
    column = named[0] if named else words
    prefix = "" if named else f"if {words!r} is one column's name, "
    return f"; {prefix}a column name with a space goes in backticks: `{column}`"


def formula_message(exc: Exception, columns: Sequence[str] = (), formula: str = "") -> str:
    """One line for a formulaic error: the culprit term and what to do; no data value.

    ``formula`` (public) is quoted when the error is about the formula as a whole.
    """
    from formulaic.errors import FactorEvaluationError, FormulaParsingError, FormulaSyntaxError

    text = one_line(exc)
    if isinstance(exc, FormulaSyntaxError):
        first = one_line(str(exc).splitlines()[0]) if str(exc) else "invalid formula"
        first = first.replace("insuffient", "insufficient")
        hint = _spaced_name_hint(first, columns)
        return f"formula syntax error: {first.rstrip('.') if hint else first}{hint}"
    if isinstance(exc, FormulaParsingError):  # raised on the formula alone: no data in it
        if "`.` operator" in text:
            quoted = f" {formula!r}" if formula else ""
            return (
                f"formula{quoted}: '.' (every other column) is not supported: list the terms "
                "you mean, "
                "e.g. 'y ~ x1 + x2' (the design comes from the formula, never from the data)"
            )
        first = one_line(str(exc).splitlines()[0]) if str(exc) else "invalid formula"
        return f"formula{f' {formula!r}' if formula else ''}: {first}"
    if isinstance(exc, FactorEvaluationError) and (match := _FACTOR.search(text)):
        term = match.group("term")
        name = _MISSING.search(text) or _UNDEFINED.search(text)
        if name is not None:
            missing = name.group("name")
            return (
                f"formula term {term!r}: {missing!r} is not a column of the data nor a known "
                f"function; {_suggest(missing, columns)}"
            )
        return (
            f"formula term {term!r} cannot be evaluated on the data (details withheld: they "
            "may quote data values); check the column's type and the function's arguments"
        )
    return f"formula error ({type(exc).__name__}, details withheld); check the formula"


@contextlib.contextmanager
def formula_errors(data: Any, formula: str = "") -> Iterator[None]:
    """Within the block, re-raise formulaic's errors as one-line ``ValueError``s."""
    from formulaic.errors import FormulaicError

    try:
        yield
    except FormulaicError as exc:
        columns = list(getattr(data, "columns", ()))
        raise ValueError(formula_message(exc, columns, formula)) from None
