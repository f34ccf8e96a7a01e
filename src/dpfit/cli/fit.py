"""``dpfit fit DATA --formula ... --rho ...``: a private linear regression from the shell.

DATA is a CSV or parquet file, or the name of a bundled dataset (``card``, ``labsup``,
``mroz``, ``diabetes``). The summary goes to standard output (text, HTML or LaTeX); with
``--plot`` a coefficient plot of the private intervals is written too.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["BUNDLED", "add_parser", "read_data", "run"]

#: Names of the bundled datasets (``dpfit.datasets.DATASETS``; kept here so that ``--help``
#: does not import pandas, and tested to agree).
BUNDLED = ("card", "diabetes", "labsup", "mroz")
_SUFFIXES = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


def _pair(text: str) -> tuple[float, float]:
    """'LOW,HIGH' -> (LOW, HIGH)."""
    parts = text.split(",")
    if len(parts) != 2:
        raise argparse.ArgumentTypeError(f"expected LOW,HIGH, got {text!r}")
    try:
        return float(parts[0]), float(parts[1])
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected two numbers LOW,HIGH, got {text!r}") from None


def _named_pair(text: str) -> tuple[str, tuple[float, float]]:
    """'NAME=LOW,HIGH' -> (NAME, (LOW, HIGH))."""
    name, sep, rest = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=LOW,HIGH, got {text!r}")
    return name, _pair(rest)


def add_parser(sub: argparse._SubParsersAction, name: str) -> argparse.ArgumentParser:
    p = sub.add_parser(
        name,
        help="fit a private linear regression (DP-GD with intervals, or AdaSSP)",
        description=(
            "Fit FORMULA on DATA (a .csv or .parquet file, or a bundled dataset: "
            f"{', '.join(BUNDLED)}) under rho-zCDP and print the summary. All "
            "hyperparameters and bounds are public: choose them without looking at the data."
        ),
    )
    p.add_argument("data", metavar="DATA", help="CSV/parquet path or bundled dataset name")
    p.add_argument("--formula", required=True, help="e.g. 'lwage ~ educ + exper'")
    p.add_argument("--rho", type=float, required=True, help="zCDP budget of the fit")
    p.add_argument("--method", default="gd", help="gd (default) or adassp")
    p.add_argument("--clip", type=float, help="per-example gradient norm bound (gd)")
    p.add_argument("--steps", type=int, default=1000, help="total DP-GD steps (default 1000)")
    p.add_argument("--step-size", type=float, help="DP-GD step size")
    p.add_argument(
        "--interval",
        help="batched-means (default for gd), checkpoints, independent-runs or none",
    )
    p.add_argument("--m", type=int, default=10, help="number of batches/checkpoints/runs")
    p.add_argument("--burn-in", type=int, help="iterates dropped first (default 20)")
    p.add_argument(
        "--bound",
        type=_named_pair,
        action="append",
        metavar="TERM=LOW,HIGH",
        help="public bounds of a design column (repeat for each; all columns or none)",
    )
    p.add_argument(
        "--y-bounds",
        type=_pair,
        metavar="LOW,HIGH",
        help="public bounds of the response (write --y-bounds=-5,5 for a negative LOW)",
    )
    p.add_argument("--relation", default="replace-one", help="replace-one or add-remove")
    p.add_argument("--alpha", type=float, default=0.05, help="1 - interval level (0.05)")
    p.add_argument("--delta", type=float, help="delta for the reported epsilon")
    p.add_argument("--seed", type=int, help="seed the noise (reproducible, not for release)")
    p.add_argument("--secure", action="store_true", help="OpenDP discrete Gaussian noise")
    p.add_argument("--sample", help="sample option of a bundled dataset (e.g. liang2025)")
    p.add_argument(
        "--format", default="text", choices=("text", "html", "latex"), help="summary format"
    )
    p.add_argument("--plot", type=Path, metavar="PNG", help="write a coefficient plot here")
    return p


def read_data(spec: str, sample: str | None = None) -> pd.DataFrame:
    """A data frame from a CSV/parquet path or a bundled dataset name."""
    import pandas as pd

    path = Path(spec)
    if path.suffix.lower() in _SUFFIXES:
        if not path.is_file():
            raise ValueError(f"DATA file not found: {spec}")
        if sample is not None:
            raise ValueError("--sample applies to bundled datasets only")
        kind = _SUFFIXES[path.suffix.lower()]
        return pd.read_csv(path) if kind == "csv" else pd.read_parquet(path)
    if spec in BUNDLED:
        from ..datasets.real import load_dataset

        return load_dataset(spec, **({} if sample is None else {"sample": sample}))
    raise ValueError(
        f"DATA must be a .csv or .parquet file or one of {list(BUNDLED)}, got {spec!r}"
    )


def run(args: argparse.Namespace) -> int:
    from ..models import ols
    from ..models.plotting import coefficient_frame, plot_coefficients

    data = read_data(args.data, args.sample)
    bounds = None if args.bound is None else dict(args.bound)
    interval = args.interval or ("batched-means" if args.method == "gd" else "none")
    interval = None if interval == "none" else interval
    result = ols(
        args.formula,
        data,
        rho=args.rho,
        method=args.method,
        clip=args.clip,
        steps=args.steps,
        step_size=args.step_size,
        interval=interval,
        m=args.m,
        burn_in=args.burn_in,
        bounds=bounds,
        y_bounds=args.y_bounds,
        relation=args.relation,
        random_state=args.seed,
        secure=args.secure,
    )
    summary = result.summary(args.alpha, delta=args.delta)
    print(
        {"text": summary.as_text, "html": summary.as_html, "latex": summary.as_latex}[args.format]()
    )
    if args.plot is not None:
        if result.interval_estimates is None:
            raise ValueError("--plot needs an interval (the method released none)")
        level = f"{100 * (1 - args.alpha):g}%"
        figure = plot_coefficients(
            {f"{result.method}, rho = {result.rho:g}": coefficient_frame(result, args.alpha)},
            title=f"{args.formula} (n = {result.n})",
            level=level,
        )
        args.plot.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(args.plot, dpi=120)
        print(f"\nWrote the coefficient plot to {args.plot}")
    return 0
