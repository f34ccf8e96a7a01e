"""``dpfit codebook init DATA``: a codebook template from DATA's schema only.

The template (TOML) lists every column with its type and an empty ``bounds = []`` or
``levels = []`` to fill in from public knowledge; it holds no value, minimum, maximum or
category of the data (:mod:`dpfit.codebook`). Nothing is charged.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ._args import add_command, add_reading_options, examples

__all__ = ["add_parser", "run"]

EXAMPLES = examples(
    "dpfit codebook init survey.csv --output survey.toml   # then fill in the bounds",
    "dpfit check survey.csv --codebook survey.toml --formula 'y ~ x1 + x2'",
    "dpfit fit survey.csv --codebook survey.toml --formula 'y ~ x1 + x2' --rho 0.5",
)


def add_parser(sub: argparse._SubParsersAction, name: str) -> argparse.ArgumentParser:
    p = add_command(
        sub,
        name,
        help="write a codebook template (public bounds and levels) from DATA's schema",
        description=(
            "A codebook holds the public bounds of DATA's numeric columns and the levels of "
            "its categorical ones, for dpfit fit/iv/check --codebook. 'init' writes a "
            "template from the column names and types only: fill in every placeholder from "
            "public knowledge, never from the data."
        ),
        epilog=EXAMPLES,
    )
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    init = add_command(
        actions,
        "init",
        help="write a template from DATA's column names and types (no values)",
        epilog=EXAMPLES,
    )
    init.add_argument("data", metavar="DATA", help="a data file, '-' (CSV on stdin) or a name")
    init.add_argument("--output", "-o", type=Path, metavar="FILE", help="write here (.toml)")
    init.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    add_reading_options(init)
    init.add_argument("--sample", help="sample option of a bundled dataset")
    return p


def run(args: argparse.Namespace) -> int:
    from ..codebook import template
    from ._data import read_table

    out = args.output
    if out is not None:
        if out.suffix.lower() != ".toml":
            raise ValueError(f"--output must end in .toml (dpfit writes TOML), got {out}")
        if out.exists() and not args.force:
            raise ValueError(f"--output {out} exists: give --force to overwrite it")
    table = read_table(
        args.data, args.sample, sep=args.sep, thousands=args.thousands, encoding=args.encoding
    )
    args.columns = list(table.frame.columns)
    name = "standard input" if args.data == "-" else args.data
    text = template(table.frame.iloc[:0], source=name, labels=table.labels)
    if out is None:
        sys.stdout.write(text)
        return 0
    out.write_text(text, encoding="utf-8")
    print(f"Wrote the codebook template to {out}: fill in its placeholders", file=sys.stderr)
    return 0
