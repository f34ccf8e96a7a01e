"""The ``dpfit`` command line: one module per subcommand, each with ``add_parser`` and ``run``.

Every mistake in user input ends the command with exit status 2 and one line on standard
error that names the culprit and says what to do, without a traceback and before anything
is charged (``docs/user-guide.md``, "Command line"). Warnings are one line each, shown once.
Subcommand modules import nothing heavy at module level, so ``dpfit --help`` is fast.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import re
import sys
from collections.abc import Sequence
from typing import NoReturn

__all__ = ["main"]

#: Subcommand name -> module in this package that implements it.
COMMANDS = {
    "privacy": "privacy",
    "reproduce": "reproduce",
    "audit": "audit",
    "fit": "fit",
    "iv": "iv",
    "demo": "demo",
    "budget": "budget",
    "codebook": "codebook",
    "check": "check",
    "serve": "serve",
}

#: argparse's message for a subcommand or option value that is not one of its choices.
_INVALID_CHOICE = re.compile(r"invalid choice: '(?P<value>[^']*)'")
#: A value such as ``-1,5`` or ``-0.5,2``, which argparse would take for an option.
_NEGATIVE_LIST = re.compile(r"^-\.?\d[^=]*,")


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``dpfit fit: error: ... (see dpfit fit --help)``, and
    every single-valued option refused when given twice (:class:`~._args.StoreOnce`): with
    argparse's default, ``--rho 0.5 --rho 5`` would silently spend 5. Subcommand parsers are
    built with this class too (argparse's ``add_subparsers`` uses the parent's class).

    Options are never abbreviated (argparse's default took ``--bounds`` for
    ``--bounds-check``), and an unknown option is named by the subcommand that refuses it,
    with the option it is close to, before any other complaint it causes (a ``--rho`` that
    is "required" because ``--epsilon`` was given instead).
    """

    def __init__(self, *args, **kwargs) -> None:
        from ._args import StoreOnce

        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        self.register("action", None, StoreOnce)
        self.register("action", "store", StoreOnce)
        self._argv: list[str] = []

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        self._argv = list(sys.argv[1:] if args is None else args)
        namespace, extras = super().parse_known_args(args, namespace)
        if extras:  # a subcommand's parser refuses them itself, naming the closest option
            unknown = [t for t in extras if t.startswith("-")]
            self.error(
                _unknown_option(self, unknown[0], self._argv)
                if unknown
                else f"unrecognized arguments: {' '.join(extras)}"
            )
        return namespace, extras

    def error(self, message: str) -> NoReturn:
        unknown = _unknown_options(self, self._argv)
        if unknown:
            message = _unknown_option(self, unknown[0], self._argv)
        elif match := _INVALID_CHOICE.search(message):
            choices = [c for a in self._actions if a.choices for c in a.choices]
            close = difflib.get_close_matches(match.group("value"), choices, n=1, cutoff=0.6)
            message += f"; did you mean {close[0]}?" if close else ""
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _unknown_options(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """The ``--options`` of ``argv`` that ``parser`` does not know, up to its subcommand."""
    choices: set[str] = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            choices |= set(action.choices)
    unknown = []
    for token in argv:
        if token == "--" or token in choices:
            break
        name = token.partition("=")[0]
        if name.startswith("--") and name not in parser._option_string_actions:
            unknown.append(token)
    return unknown


def _unknown_option(parser: argparse.ArgumentParser, token: str, argv: list[str]) -> str:
    """One line for an unknown option: the closest known one, or how to give epsilon."""
    name, _, value = token.partition("=")
    known = [o for o in parser._option_string_actions if o.startswith("--")]
    if name.startswith("--eps") and "--rho" in known and "--epsilon" not in known:
        at = argv.index(token) if token in argv else -1
        if not value and 0 <= at < len(argv) - 1 and not argv[at + 1].startswith("--"):
            value = argv[at + 1]
        return (
            f"unrecognized option {name}: {parser.prog} takes --rho (zCDP), not epsilon; "
            f"convert an (epsilon, delta) target with dpfit privacy --epsilon {value or 'EPSILON'}"
            " --delta DELTA, which prints the rho to give"
        )
    # compared without the shared '--', which made '--family' look like '--sample'
    close = difflib.get_close_matches(name[2:], [o[2:] for o in known], n=1, cutoff=0.6)
    return f"unrecognized option {name}" + (f"; did you mean --{close[0]}?" if close else "")


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every registered subcommand."""
    from .._version import __version__

    parser = _Parser(
        prog="dpfit",
        description="Differentially private regression and optimisation with honest uncertainty.",
        epilog="Run dpfit COMMAND --help for a command's options and examples.",
    )
    parser.add_argument("--version", action="version", version=f"dpfit {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module in COMMANDS.items():
        mod = importlib.import_module(f"{__name__}.{module}")
        p = mod.add_parser(sub, name)
        p.set_defaults(_run=mod.run)
    return parser


def _join_negative_values(argv: list[str]) -> list[str]:
    """``--y-bounds -1,5`` -> ``--y-bounds=-1,5`` (argparse reads ``-1,5`` as an option)."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        if (
            token.startswith("--")
            and "=" not in token
            and i + 1 < len(argv)
            and _NEGATIVE_LIST.match(argv[i + 1])
        ):
            out.append(f"{token}={argv[i + 1]}")
            i += 2
            continue
        out.append(token)
        i += 1
    return out


def _releases_drawn() -> int:
    """Releases drawn in this process so far; 0 while no mechanism was ever imported (so that
    ``--version`` and ``dpfit privacy`` never import numpy for it)."""
    recorder = sys.modules.get("dpfit.mechanisms.recorder")
    return 0 if recorder is None else recorder.releases_drawn()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dpfit`` console script; returns the exit status."""
    from ._console import tidy_warnings
    from ._errors import internal_error, user_message

    argv = _join_negative_values(list(sys.argv[1:] if argv is None else argv))
    args = build_parser().parse_args(argv)
    before = _releases_drawn()
    with tidy_warnings(args.command):
        try:
            return int(args._run(args) or 0)
        except KeyboardInterrupt:
            print(f"dpfit {args.command}: interrupted", file=sys.stderr)
            return 130
        except Exception as exc:
            message = user_message(exc, args, columns=getattr(args, "columns", ()))
            if message is None:
                if _releases_drawn() == before:  # a bug before any noise was drawn
                    raise
                print(f"dpfit {args.command}: error: {internal_error(exc)}", file=sys.stderr)
                return 1
            print(f"dpfit {args.command}: error: {message}", file=sys.stderr)
            return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
