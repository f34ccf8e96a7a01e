"""The ``dpfit`` command line: one module per subcommand, each with ``add_parser`` and ``run``.

Errors in user input (``TypeError``/``ValueError``) are printed as one line and exit with
status 2, without a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

__all__ = ["main"]

#: Subcommand name -> module in this package that implements it.
COMMANDS = {
    "privacy": "privacy",
    "reproduce": "reproduce",
    "audit": "audit",
    "fit": "fit",
    "iv": "iv",
    "demo": "demo",
}


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every registered subcommand."""
    from .._version import __version__

    parser = argparse.ArgumentParser(
        prog="dpfit",
        description="Differentially private regression and optimisation with honest uncertainty.",
    )
    parser.add_argument("--version", action="version", version=f"dpfit {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module in COMMANDS.items():
        mod = importlib.import_module(f"{__name__}.{module}")
        p = mod.add_parser(sub, name)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dpfit`` console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args._run(args) or 0)
    except (TypeError, ValueError) as exc:
        print(f"dpfit {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
