"""Errors in user input as one line that names the culprit and says what to do.

dpfit's own messages name the parameter and never quote data (docs/threat-model.md, "The
guarantee"), so they are shown
as they are. Errors raised by other libraries are translated where dpfit knows them
(formulaic's syntax and evaluation errors, file-system errors) and otherwise named with
their text withheld: a third-party message may quote a data value ("could not convert string
to float: '...'"). Anything that is not a user error (a bug) is left to propagate, unless
noise was already drawn: then the caller gets one line (:func:`internal_error`), never a
traceback, whose frames and message could show values computed from the data.
"""

from __future__ import annotations

import argparse
import re
import sqlite3
from collections.abc import Sequence

from ..exceptions import BudgetStoreError

__all__ = ["in_cli_terms", "internal_error", "user_message"]

_ANSI = re.compile(r"\x1b\[[0-9;]*m|[⧛⧚]")
_QUOTED_VALUE = re.compile(
    r"(could not convert string to float|invalid literal for \w+\(\)[^:]*):.*"
)
#: A TypeError about a call's own signature is a bug in dpfit, never a user's mistake.
_SIGNATURE_BUG = re.compile(
    r"unexpected keyword argument|required (keyword-only |positional )?argument"
)
_PANDAS_THOUSANDS = 'read the file with pandas.read_csv(..., thousands=",")'


def in_cli_terms(message: str) -> str:
    """The library's advice for Python users, as the command line's options."""
    from ..codebook._apply import PASS_BOUNDS

    message = message.replace(PASS_BOUNDS, "or give --bound TERM=LOW,HIGH and --y-bounds LOW,HIGH")
    return message.replace(_PANDAS_THOUSANDS, "rerun with --thousands ,")


def _one_line(text: str) -> str:
    return " ".join(_ANSI.sub("", str(text)).split())


def _origin(exc: BaseException) -> str:
    """The module of the innermost Python frame that raised ``exc``."""
    tb = exc.__traceback__
    if tb is None:
        return ""
    while tb.tb_next is not None:
        tb = tb.tb_next
    return str(tb.tb_frame.f_globals.get("__name__", ""))


def _os_reason(store: str | None) -> str:
    """Why the operating system may refuse the store at ``store``: not writable, or its
    directory missing or not writable (a public fact about a path the user gave)."""
    import os
    from pathlib import Path

    if not store:
        return ""
    path = Path(store)
    if path.exists():
        return "" if os.access(path, os.W_OK) else f"; {path} is not writable by this user"
    if not path.parent.is_dir():
        return f"; the directory {path.parent} does not exist"
    if not os.access(path.parent, os.W_OK):
        return f"; the directory {path.parent} is not writable by this user"
    return ""


def _formulaic(exc: Exception, columns: Sequence[str], formula: str = "") -> str:
    from ..models._formula_errors import formula_message

    return "--formula: " + formula_message(exc, columns, formula)


def _cli_name(message: str, args: argparse.Namespace) -> str:
    """Prefix ``argument --step-size:`` when the message starts with a parameter's name."""
    match = re.match(r"(?P<name>[a-z][a-z_]*)\b", message)
    if match and match.group("name") in vars(args) and not match.group("name") == "data":
        option = "--" + match.group("name").replace("_", "-")
        return f"argument {option}: {message}"
    return message


def user_message(
    exc: BaseException, args: argparse.Namespace, *, columns: Sequence[str] = ()
) -> str | None:
    """One line for a user error, or None when ``exc`` is not one (a bug: let it propagate).

    ``columns`` are DATA's column names (public: the schema) for suggestions.
    """
    origin = _origin(exc)
    if origin.startswith("formulaic") or type(exc).__module__.startswith("formulaic"):
        return _formulaic(exc, columns, getattr(args, "formula", ""))  # type: ignore[arg-type]
    if isinstance(exc, BudgetStoreError):  # says what was and was not charged
        return _one_line(exc)
    if isinstance(exc, sqlite3.Error):
        store = getattr(args, "budget_store", None) or getattr(args, "store", None)
        where = f" {store}" if store else ""
        why = _one_line(f"{type(exc).__name__}: {exc}")  # SQLite's text: no data values
        return (
            f"the budget store{where} could not be used ({why}{_os_reason(store)}); see dpfit "
            "budget --help"
        )
    if isinstance(exc, OSError):
        where = f": {exc.filename}" if exc.filename else ""
        return f"{exc.strerror or type(exc).__name__}{where}"
    if isinstance(exc, ImportError):  # a missing optional package: no data in the message
        return _one_line(exc)
    if not isinstance(exc, TypeError | ValueError) or _SIGNATURE_BUG.search(str(exc)):
        return None
    if origin.startswith("dpfit"):
        message = _QUOTED_VALUE.sub(r"\1 (value withheld)", _one_line(exc))
        message = in_cli_terms(message)
        return _cli_name(message, args)
    library = origin.partition(".")[0] or "a library"
    return (
        f"{type(exc).__name__} from {library} (details withheld: they may quote data values); "
        "check DATA's column types and the formula"
    )


def internal_error(exc: BaseException) -> str:
    """One line for a failure that is not a user error, after noise was drawn: its type only
    (its text may quote a computed value), what stays charged and where to report it."""
    return (
        f"internal error ({type(exc).__name__}, details withheld) after noise was drawn: what "
        "was charged for the releases drawn so far stays spent and nothing was released; "
        "this is a bug in dpfit, please report it with the command line (not the data)"
    )
