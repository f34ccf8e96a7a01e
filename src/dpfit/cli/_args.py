"""Arguments shared by the subcommands, and their checks before anything is charged.

Every argument is validated before DATA is read and before the budget is charged, so a
mistake such as ``--alpha 2`` or an unwritable ``--plot`` path costs no privacy.
"""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path
from typing import Any

__all__ = [
    "StoreOnce",
    "add_bounds_options",
    "add_command",
    "add_fit_parser",
    "add_reading_options",
    "add_release_options",
    "budget_from_store",
    "check_plot_path",
    "check_release_options",
    "examples",
    "named_pair",
    "pair",
    "read_inputs",
]


class StoreOnce(argparse.Action):
    """argparse's ``store``, refusing an option given twice.

    argparse lets the last occurrence win, so ``--rho 0.5 --rho 5`` (a pasted command plus an
    edit) would silently spend 5. Every single-valued option of every subcommand uses this
    action (registered as the parsers' default), so a repeated ``--rho``, ``--epsilon``,
    ``--delta``, ``--clip``, ``--steps``, ``--bounds-check``, ``--budget-store``, ... is a
    one-line error before anything is read or charged. Options meant to repeat say so with
    ``action="append"`` (``--bound``).
    """

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        given = namespace.__dict__.setdefault("_given_once", {})
        if option_string is not None and self.dest in given:
            first, second = (_shown(v) for v in (given[self.dest], values))
            parser.error(
                f"argument {option_string}: given twice ({first}, then {second}); give it "
                "once (dpfit never lets a later value silently replace an earlier one)"
            )
        given[self.dest] = values
        setattr(namespace, self.dest, values)


def _shown(value: Any) -> str:
    if isinstance(value, list | tuple):  # nargs=2 (a list) or a LOW,HIGH pair (a tuple)
        return (" " if isinstance(value, list) else ",").join(_shown(v) for v in value)
    return f"{value:g}" if isinstance(value, float) else str(value)


def add_command(
    sub: argparse._SubParsersAction,
    name: str,
    *,
    help: str,
    epilog: str,
    description: str | None = None,
) -> argparse.ArgumentParser:
    """A subcommand's parser whose ``--help`` prints ``epilog`` (its examples) line for line."""
    return sub.add_parser(
        name,
        help=help,
        description=description,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def examples(*lines: str) -> str:
    """An ``Examples`` section for a subcommand's ``--help`` (one command per line)."""
    return "Examples:\n" + "\n".join(f"  {line}" for line in lines)


def pair(text: str) -> tuple[float, float]:
    """'LOW,HIGH' -> (LOW, HIGH)."""
    parts = text.split(",")
    if len(parts) != 2:
        raise argparse.ArgumentTypeError(f"expected LOW,HIGH, got {text!r}")
    try:
        low, high = float(parts[0]), float(parts[1])
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected two numbers LOW,HIGH, got {text!r}") from None
    if not (math.isfinite(low) and math.isfinite(high)):
        raise argparse.ArgumentTypeError(
            f"LOW and HIGH must be finite numbers, got {text!r}: values are clipped into the "
            "bounds, so give a public range such as 0,18"
        )
    return low, high


def named_pair(text: str) -> tuple[str, tuple[float, float]]:
    """'NAME=LOW,HIGH' -> (NAME, (LOW, HIGH))."""
    name, sep, rest = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=LOW,HIGH, got {text!r}")
    try:
        return name.strip(), pair(rest)
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"{name.strip()}: {exc}") from None


def add_fit_parser(
    sub: argparse._SubParsersAction,
    name: str,
    *,
    help: str,
    description: str,
    epilog: str,
    formula_help: str,
) -> argparse.ArgumentParser:
    """A fitting subcommand's parser with its positional DATA, ``--formula`` and ``--rho``."""
    p = add_command(
        sub,
        name,
        help=help,
        description=description,
        epilog=epilog,
    )
    p.add_argument("data", metavar="DATA", help="CSV/parquet path or bundled dataset name")
    p.add_argument("--formula", required=True, help=formula_help)
    p.add_argument("--rho", type=float, required=True, help="zCDP budget of the fit")
    return p


def add_bounds_options(
    p: argparse.ArgumentParser, *, metavar: str, bound_help: str, y_help: str
) -> None:
    """The public bounds of a fit: ``--bound`` (repeated), ``--y-bounds`` and the share of
    rho that counts the records outside them, ``--bounds-check``."""
    p.add_argument("--bound", type=named_pair, action="append", metavar=metavar, help=bound_help)
    p.add_argument("--y-bounds", type=pair, metavar="LOW,HIGH", help=y_help)
    p.add_argument(
        "--bounds-check",
        type=float,
        default=0.02,
        metavar="SHARE",
        help="share of rho spent counting records outside the bounds (default 0.02; 0: off)",
    )


def add_reading_options(p: argparse.ArgumentParser) -> None:
    """How to read CSV/TSV data: ``--sep``, ``--thousands`` and ``--encoding``."""
    from ._data import separator

    p.add_argument(
        "--sep",
        type=separator,
        help="field separator of CSV/TSV data (default ',', or a tab for .tsv; '\\t' is a tab)",
    )
    p.add_argument(
        "--thousands",
        metavar="CHAR",
        help="thousands separator of numbers in CSV/TSV data, e.g. --thousands , for 12,345.67",
    )
    p.add_argument(
        "--encoding",
        help="text encoding of CSV/TSV data (default utf-8; e.g. cp1252 from Excel on Windows)",
    )


def add_release_options(p: argparse.ArgumentParser) -> None:
    """Options of every fitting subcommand: reporting, noise, data format, progress."""
    p.add_argument("--alpha", type=float, default=0.05, help="1 - interval level (0.05)")
    p.add_argument("--delta", type=float, help="delta for the reported epsilon")
    p.add_argument("--seed", type=int, help="seed the noise (reproducible, not for release)")
    p.add_argument("--secure", action="store_true", help="OpenDP discrete Gaussian noise")
    p.add_argument("--sample", help="sample option of a bundled dataset (e.g. liang2025)")
    add_reading_options(p)
    p.add_argument(
        "--codebook",
        metavar="FILE",
        help="public bounds and levels of DATA's columns (TOML or YAML; dpfit codebook --help)",
    )
    p.add_argument(
        "--format", default="text", choices=("text", "html", "latex"), help="summary format"
    )
    p.add_argument(
        "--progress",
        action="store_true",
        help="show a progress bar (default: only when standard error is a terminal)",
    )
    p.add_argument(
        "--budget-store",
        metavar="PATH",
        help="charge rho to this persistent budget store before any noise (dpfit budget --help)",
    )
    p.add_argument(
        "--dataset",
        metavar="NAME",
        help="the dataset's name in --budget-store (default: DATA's file stem or bundled name)",
    )


def check_plot_path(path: Path) -> None:
    """Refuse a plot path that cannot be written, before anything is charged."""
    from matplotlib.backend_bases import FigureCanvasBase

    kinds = FigureCanvasBase.get_supported_filetypes()
    suffix = path.suffix.lower().lstrip(".")
    if suffix not in kinds:
        raise ValueError(
            f"--plot must end in one of {', '.join('.' + k for k in sorted(kinds))}, got {path}"
        )
    if path.is_dir():
        raise ValueError(f"--plot {path} is a directory: give a file name such as {path}/fit.png")
    parent = path.parent
    existing = parent
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir() or not os.access(existing, os.W_OK):
        raise ValueError(f"--plot: cannot write into {existing} (not a writable directory)")
    if path.exists() and not os.access(path, os.W_OK):
        raise ValueError(f"--plot: {path} exists and is not writable")


def check_release_options(args: argparse.Namespace) -> None:
    """Check the reporting options (``--alpha``, ``--delta``, ``--plot``) and the bounds
    check's share before any charge."""
    from .._validation import check_delta, check_interval_alpha
    from ..models._constraints import check_bounds_check

    check_interval_alpha(args.alpha, "alpha")
    if getattr(args, "bounds_check", None) is not None:
        check_bounds_check(args.bounds_check)
    if args.delta is not None:
        check_delta(args.delta)
    if getattr(args, "plot", None) is not None:
        check_plot_path(args.plot)
    if args.dataset is not None and args.budget_store is None:
        raise ValueError("--dataset names the data in a budget store: give --budget-store too")
    if args.data == "-" and args.budget_store is not None and args.dataset is None:
        raise ValueError(
            "DATA '-' (standard input) has no name: give --dataset NAME for --budget-store"
        )


def budget_from_store(args: argparse.Namespace):
    """The stored budget of DATA's dataset (``--budget-store``), or None; opened before DATA
    is read, so a missing store or dataset costs nothing."""
    if args.budget_store is None:
        return None
    from ..privacy.store import open_budget

    dataset = args.dataset or Path(args.data).name.partition(".")[0]
    return open_budget(args.budget_store, dataset=dataset)


def read_inputs(args: argparse.Namespace):
    """DATA and the codebook of ``--codebook`` merged over the file's own labels (a Stata
    file's value labels), or None; DATA's column names are kept on ``args`` for messages."""
    from ._data import read_table

    codebook = None
    if args.codebook is not None:
        from ..codebook import load_codebook

        codebook = load_codebook(args.codebook)  # a broken codebook costs nothing
    table = read_table(
        args.data, args.sample, sep=args.sep, thousands=args.thousands, encoding=args.encoding
    )
    args.columns = list(table.frame.columns)  # public schema, for error messages
    if table.labels is not None:
        codebook = table.labels if codebook is None else table.labels.merged(codebook)
    return table.frame, codebook
