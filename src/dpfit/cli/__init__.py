"""The ``dpfit`` command line: one module per subcommand, each with ``add_parser`` and ``run``.

Every mistake in user input ends the command with exit status 2 and one line on standard
error that names the culprit and says what to do, without a traceback and before anything
is charged (``docs/user-guide.md``, "Command line"). Warnings are one line each, shown once.
Subcommand modules import nothing heavy at module level, so ``dpfit --help`` is fast.
"""

from __future__ import annotations

import argparse
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

#: A value such as ``-1,5`` or ``-0.5,2``, which argparse would take for an option.
_NEGATIVE_LIST = re.compile(r"^-\.?\d[^=]*,")


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``dpfit fit: error: ... (see dpfit fit --help)``, and
    every single-valued option refused when given twice (:class:`~._args.StoreOnce`): with
    argparse's default, ``--rho 0.5 --rho 5`` would silently spend 5. Subcommand parsers are
    built with this class too (argparse's ``add_subparsers`` uses the parent's class)."""

    def __init__(self, *args, **kwargs) -> None:
        from ._args import StoreOnce

        super().__init__(*args, **kwargs)
        self.register("action", None, StoreOnce)
        self.register("action", "store", StoreOnce)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


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
