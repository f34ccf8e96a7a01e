"""``dpfit check DATA --codebook FILE [--formula F]``: a public-only preflight.

Reads DATA's schema (column names and types) and the codebook, never a value for the
report, and charges nothing: does the formula parse, does every design column and the
response have public bounds, are the levels of the categorical variables declared, and do
the codebook's types match DATA's (:func:`dpfit.codebook.preflight`). Exit status 0 when
nothing is missing, 1 otherwise.
"""

from __future__ import annotations

import argparse

from ._args import add_command, add_reading_options, examples

__all__ = ["add_parser", "run"]

EXAMPLES = examples(
    "dpfit check survey.csv --codebook survey.toml",
    "dpfit check survey.csv --codebook survey.toml --formula 'y ~ x1 + C(region)'",
    "dpfit check card --codebook card.toml --formula 'lwage ~ exper + [educ ~ nearc4]'",
)


def add_parser(sub: argparse._SubParsersAction, name: str) -> argparse.ArgumentParser:
    p = add_command(
        sub,
        name,
        help="check a formula and codebook against DATA's schema (charges nothing)",
        description=(
            "A preflight that reads only DATA's column names and types and the codebook: "
            "it says what a fit would refuse (a term, missing bounds, undeclared levels, a "
            "type mismatch) before anything is charged. Exit status 1 when something is "
            "missing."
        ),
        epilog=EXAMPLES,
    )
    p.add_argument("data", metavar="DATA", help="a data file, '-' (CSV on stdin) or a name")
    p.add_argument("--codebook", required=True, metavar="FILE", help="TOML or YAML codebook")
    p.add_argument("--formula", help="'y ~ x1 + x2' or 'y ~ exog + [endog ~ instruments]'")
    add_reading_options(p)
    p.add_argument("--sample", help="sample option of a bundled dataset")
    return p


def run(args: argparse.Namespace) -> int:
    from ..codebook import load_codebook, preflight
    from ._data import read_table
    from ._errors import in_cli_terms

    codebook = load_codebook(args.codebook)
    table = read_table(
        args.data, args.sample, sep=args.sep, thousands=args.thousands, encoding=args.encoding
    )
    args.columns = list(table.frame.columns)
    if table.labels is not None:
        codebook = table.labels.merged(codebook)
    report = preflight(table.frame.iloc[:0], codebook, args.formula)
    print(in_cli_terms(str(report)))
    return 0 if report.ok else 1
