"""``dpfit fit DATA --formula ... --rho ...``: a private linear regression or GLM from the shell.

``--family binomial`` (``--link logit`` or ``probit``) or ``--family poisson`` fits the
private GLM instead (:func:`dpfit.glm`; :mod:`dpfit.cli._fit_glm`).

DATA is a CSV or parquet file, or the name of a bundled dataset (``card``, ``labsup``,
``mroz``, ``diabetes``). The summary goes to standard output (text, HTML or LaTeX); with
``--plot`` a coefficient plot of the private intervals is written too. Every argument is
checked before the budget is charged.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ._args import (
    add_bounds_options,
    add_fit_parser,
    add_release_options,
    check_release_options,
    examples,
    named_pair,
    pair,
)
from ._data import BUNDLED, read_data

__all__ = ["BUNDLED", "add_parser", "bounds_mapping", "read_data", "run"]

# Kept for modules that imported the helpers from here.
_pair, _named_pair = pair, named_pair

EXAMPLES = examples(
    "dpfit fit card --formula 'lwage ~ educ + exper' --rho 0.25 \\",
    "    --bound educ=0,18 --bound exper=0,28 --y-bounds 4.6,8 --total-steps 20000",
    "dpfit fit data.csv --formula 'y ~ x' --rho 0.5 --bound x=0,10 --y-bounds -5,15 \\",
    "    --plot out/coef.png --budget-store budget.sqlite",
    "dpfit fit data.csv --sep ';' --formula 'y ~ x' --rho 0.5 --clip 5 --method gd",
    "dpfit fit mroz --family binomial --formula 'inlf ~ educ + age' --rho 0.5 \\",
    "    --bound educ=0,20 --bound age=30,60",
    "dpfit fit visits.csv --family poisson --formula 'visits ~ age' --rho 0.5 \\",
    "    --bound age=0,100 --y-bounds 0,30 --exposure years",
)


def add_parser(sub: argparse._SubParsersAction, name: str) -> argparse.ArgumentParser:
    p = add_fit_parser(
        sub,
        name,
        help="fit a private linear regression (DP-GD with intervals, or AdaSSP) or GLM",
        description=(
            "Fit FORMULA on DATA (a .csv or .parquet file, or a bundled dataset: "
            f"{', '.join(BUNDLED)}) under rho-zCDP and print the summary. All "
            "hyperparameters and bounds are public: choose them without looking at the data."
        ),
        epilog=EXAMPLES,
        formula_help="e.g. 'lwage ~ educ + exper'",
    )
    p.add_argument(
        "--family",
        default="gaussian",
        help="gaussian (least squares, the default), binomial (0/1 response) or poisson "
        "(counts, with --y-bounds 0,K)",
    )
    p.add_argument("--link", help="binomial: logit (default) or probit")
    p.add_argument("--exposure", metavar="COLUMN", help="poisson: the exposure column")
    p.add_argument("--offset", metavar="COLUMN", help="GLM: an offset column")
    p.add_argument("--method", default="gd", help="gd (default), adassp or ambssgd")
    p.add_argument("--clip", type=float, help="per-example gradient norm bound (gd)")
    p.add_argument(
        "--total-steps",
        type=int,
        help="DP-GD steps of all runs together (default: as dpfit.ols, 200 with --bound, "
        "else 1000)",
    )
    p.add_argument(
        "--steps", type=int, help="deprecated: the old spelling of --total-steps (same meaning)"
    )
    p.add_argument("--step-size", type=float, help="DP-GD step size")
    p.add_argument(
        "--interval",
        help="batched-means (default for gd; for adassp it selects its population interval), "
        "checkpoints, independent-runs or none (none with --bound needs --no-precondition)",
    )
    p.add_argument(
        "--no-precondition",
        action="store_true",
        help="plain DP-GD in the original coordinates, not the preconditioned fit that "
        "--bound selects (docs/inference.md)",
    )
    p.add_argument("--m", type=int, default=10, help="number of batches/checkpoints/runs")
    p.add_argument("--burn-in", type=int, help="iterates dropped first (default 20)")
    add_bounds_options(
        p,
        metavar="TERM=LOW,HIGH",
        bound_help="public bounds of a design column (repeat for each; all columns or none)",
        y_help="public bounds of the response, e.g. --y-bounds -5,5",
    )
    p.add_argument("--relation", default="replace-one", help="replace-one or add-remove")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the release plan (every release, its share of rho and noise std) and "
        "exit: nothing is charged or drawn",
    )
    p.add_argument(
        "--privacy-unit",
        metavar="COLUMN",
        help="protect all rows with the same COLUMN value (e.g. a person id), not one row; "
        "needs --max-rows-per-unit; intervals are clustered by it (docs/privacy-units.md)",
    )
    p.add_argument(
        "--max-rows-per-unit",
        type=int,
        metavar="K",
        help="public cap on the rows one unit contributes (more are sampled away at random)",
    )
    p.add_argument(
        "--n-units",
        type=int,
        metavar="N",
        help="with --privacy-unit and --relation add-remove: the public number of units",
    )
    p.add_argument("--time", metavar="COLUMN", help="the period column of TimeEffects")
    p.add_argument(
        "--time-levels",
        type=_levels,
        metavar="A,B,...",
        help="the public periods of TimeEffects (y ~ x + EntityEffects + TimeEffects)",
    )
    p.add_argument("--plot", type=Path, metavar="PNG", help="write a coefficient plot here")
    p.add_argument(
        "--plot-own-scales",
        action="store_true",
        help="give each term of the plot its own x-scale (default: one scale, zero marked)",
    )
    add_release_options(p)
    return p


def bounds_mapping(
    items: list[tuple[str, tuple[float, float]]] | None, formula: str
) -> dict | None:
    """The ``--bound`` pairs as a mapping; a term given twice, or the response, is refused."""
    if items is None:
        return None
    response = formula.partition("~")[0].strip() if isinstance(formula, str) else ""
    bounds: dict[str, tuple[float, float]] = {}
    for term, low_high in items:
        if term in bounds:
            raise ValueError(f"--bound {term} is given twice: give each term once")
        low, high = low_high
        if not low < high:
            why = "a constant column is collinear with the intercept" if low == high else ""
            raise ValueError(
                f"--bound {term}={low:g},{high:g}: LOW must be < HIGH"
                + (f" ({why}: drop the term)" if why else "")
            )
        if term == response:
            raise ValueError(
                f"--bound {term}: {term!r} is the response; give its bounds with "
                f"--y-bounds LOW,HIGH (dpfit's one convention: --bound for the design "
                "columns, --y-bounds for the response)"
            )
        bounds[term] = low_high
    return bounds


def run(args: argparse.Namespace) -> int:
    from ._args import budget_from_store, read_inputs
    from ._console import progress_wanted, release_progress

    check_release_options(args)
    _total_steps(args)
    if args.family != "gaussian":
        from ._fit_glm import run_glm

        return run_glm(args, _print_result)
    _refuse_glm_options(args)
    # gd and adassp release a population interval by default; ambssgd a point estimate only
    interval = args.interval or ("none" if args.method == "ambssgd" else "batched-means")
    if args.plot is not None and interval == "none":
        raise ValueError("--plot needs intervals: use --method gd or adassp with an --interval")
    _check_gd_options(args, interval)
    bounds = bounds_mapping(args.bound, args.formula)
    budget = budget_from_store(args)
    data, codebook = read_inputs(args)
    if bounds is not None and codebook is None:
        _check_bounds_cover(bounds, _panel_free(args), data)

    from ..models import ols

    try:
        with release_progress(
            progress_wanted(args.progress) and args.method == "gd",
            total=args.total_steps,
            desc="dpfit fit",
        ):
            result = ols(
                args.formula,
                data,
                rho=args.rho,
                budget=budget,
                method=args.method,
                clip=args.clip,
                total_steps=args.total_steps,
                step_size=args.step_size,
                interval=None if interval == "none" else interval,
                m=args.m,
                burn_in=args.burn_in,
                bounds=bounds,
                y_bounds=args.y_bounds,
                relation=args.relation,
                random_state=args.seed,
                secure=args.secure,
                dry_run=args.dry_run,
                **({"precondition": False} if args.no_precondition else {}),
                **({} if codebook is None else {"codebook": codebook}),
                **_unit_options(args),
            )
    except TypeError as exc:  # raised before anything is charged
        if args.method == "gd" and str(exc).startswith("clip is required"):
            raise ValueError(_clip_needed(args)) from exc
        raise
    return _print_result(result, args)


def _total_steps(args: argparse.Namespace) -> None:
    """Read the deprecated ``--steps`` as ``--total-steps``, with a note on stderr: in the
    library ``steps`` is one run's (``dpfit.ols(total_steps=...)`` counts all runs)."""
    if args.steps is None:
        return
    if args.total_steps is not None:
        raise ValueError("--steps is the old spelling of --total-steps: give --total-steps only")
    print(
        f"dpfit fit: --steps is deprecated; use --total-steps {args.steps} (same meaning: the "
        "steps of all runs together)",
        file=sys.stderr,
    )
    args.total_steps = args.steps


def _panel_free(args: argparse.Namespace) -> str:
    """The formula with ``EntityEffects``/``TimeEffects`` written out (public inputs only)."""
    from ..models._panel import panel_formula

    if args.privacy_unit is None or not isinstance(args.formula, str):
        return args.formula
    try:
        return panel_formula(args.formula, time=args.time, time_levels=args.time_levels)[0]
    except ValueError:
        return args.formula  # dpfit.ols explains it


def _levels(text: str) -> list:
    """``A,B,...`` as public levels: integers or numbers where every item reads as one."""
    items = [item.strip() for item in text.split(",") if item.strip()]
    for kind in (int, float):
        try:
            return [kind(item) for item in items]
        except ValueError:
            continue
    return items


def _unit_options(args: argparse.Namespace) -> dict:
    """``--privacy-unit`` and its companions as :func:`dpfit.ols` parameters; without a
    unit, the (row-level) bounds check instead."""
    unit = {
        "max_rows_per_unit": args.max_rows_per_unit,
        "n_public": args.n_units,
        "time": args.time,
        "time_levels": args.time_levels,
    }
    if args.privacy_unit is None:
        given = [f"--{k.replace('_', '-')}" for k, v in unit.items() if v is not None]
        if given:
            raise ValueError(f"{', '.join(given)} need --privacy-unit COLUMN")
        return {"bounds_check": args.bounds_check}
    return {"privacy_unit": args.privacy_unit, **{k: v for k, v in unit.items() if v is not None}}


def _print_result(result, args: argparse.Namespace) -> int:
    """Print the summary in the requested format (and write the plot), or the plan of a
    dry run; the exit code."""
    if getattr(args, "dry_run", False):
        print(result)
        print("Dry run: nothing was charged or drawn.")
        return 0
    summary = result.summary(args.alpha, delta=args.delta)
    print(
        {"text": summary.as_text, "html": summary.as_html, "latex": summary.as_latex}[args.format]()
    )
    if args.plot is not None:
        _plot(result, args)
    return 0


def _refuse_glm_options(args: argparse.Namespace) -> None:
    """A GLM's options on a least-squares fit would be ignored: refuse them, naming --family."""
    if args.link is not None:
        raise ValueError(
            f"--link {args.link} applies to --family binomial only: add --family binomial "
            "(least squares, the default family, has no link)"
        )
    for flag, value in (("--offset", args.offset), ("--exposure", args.exposure)):
        if value is not None:
            family = "poisson" if flag == "--exposure" else "binomial or poisson"
            raise ValueError(
                f"{flag} {value} applies to --family {family} only: least squares (the "
                "default family) has no offset; subtract it from the response in the "
                f"formula instead, e.g. 'I(y - {value}) ~ ...'"
            )


def _check_gd_options(args: argparse.Namespace, interval: str) -> None:
    """Refuse, in the CLI's own terms, DP-GD options that the library would refuse later."""
    response = args.formula.partition("~")[0].strip() if isinstance(args.formula, str) else ""
    if args.y_bounds is not None and not args.y_bounds[0] < args.y_bounds[1]:
        low, high = args.y_bounds
        raise ValueError(f"--y-bounds {low:g},{high:g}: LOW must be < HIGH (response {response})")
    if args.no_precondition and args.method != "gd":
        raise ValueError("--no-precondition applies to --method gd only")
    if args.method == "gd" and interval == "none" and args.bound and not args.no_precondition:
        raise ValueError(
            "--interval none: the preconditioned fit (the default with --bound) needs an "
            "interval for its privacy part; use another --interval, or add --no-precondition"
        )


def _clip_needed(args: argparse.Namespace) -> str:
    """The library's "clip is required" refusal, saying which options give DP-GD its bound."""
    need = "--y-bounds LOW,HIGH" if args.bound else "--bound TERM=LOW,HIGH for every term"
    need += "" if args.bound or args.y_bounds else " and --y-bounds LOW,HIGH"
    return (
        f"give {need} (or --clip, a public bound on the per-example gradient norm "
        "|y_i - x_i.theta| * ||x_i||)"
    )


def _check_bounds_cover(bounds: dict, formula: str, data) -> None:
    """Name the ``--bound`` options missing for the design columns of ``formula``.

    Read off the formula and DATA's column types only (an empty frame), never its values.
    A formula that cannot be built is left to ``ols``, which explains it.
    """
    from ..models.formula import _design_matrices

    try:
        _, X, _, indicators = _design_matrices(formula, data.iloc[:0])
    except (TypeError, ValueError):
        return
    missing = [c for c in X.columns if c not in bounds and c not in indicators]
    unknown = [term for term in bounds if term not in X.columns]
    if missing or unknown:
        add = " ".join(f"--bound {c}=LOW,HIGH" for c in missing)
        problems = [f"add {add}"] if missing else []
        if unknown:
            problems.append(f"drop --bound for {', '.join(unknown)} (not a design column)")
        raise ValueError("--bound: every design column needs its bounds: " + "; ".join(problems))


def _plot(result, args: argparse.Namespace) -> None:
    """The coefficient plot (:meth:`Result.plot`: every term but the intercept)."""
    figure = result.plot(
        args.alpha,
        sharex=not args.plot_own_scales,
        title=f"{args.formula} (n = {result.n})",
    )
    args.plot.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(args.plot, dpi=120)
    print(f"Wrote the coefficient plot to {args.plot}", file=sys.stderr)
