"""``dpfit reproduce``: run registered experiments and write the HTML report + markdown summary.

Exit status: 0 when every evaluated claim passed and every plot was drawn; 1 when a claim
failed or errored or a plot raised (0 anyway with ``--allow-failures``), or a trial raised;
2 on bad input, ``--budget-store`` included (refused before anything runs: see
``BUDGET_REFUSAL``); 130 when interrupted (Ctrl-C). Finished trials are always kept in the
store, so rerunning the same command resumes.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from ._args import add_command, examples

EXAMPLES = examples(
    "dpfit reproduce --list",
    "dpfit reproduce --scale smoke --out out/smoke            # every experiment, seconds",
    "dpfit reproduce brown2024-fig1 brown2024-fig2 --scale quick --out out/brown --jobs 2",
)

__all__ = ["BUDGET_REFUSAL", "add_parser", "run"]

#: Why ``--budget-store`` is refused. Every trial draws its noise from a seed that is a public
#: hash of the experiment, its parameters and the replicate (``dpfit.experiments.seeds``), so
#: anyone can regenerate the noise and a trial's output is a fixed function of the data; the
#: real-data experiments (``liang2025-fig5``, ``liang2025-fig13``) also choose preprocessing,
#: step sizes and clips from the data. A charge recorded in a store would tell the data owner
#: that these outputs are covered by the budget when they are not (docs/reproducing.md).
BUDGET_REFUSAL = (
    "--budget-store: reproductions are seeded for reproducibility and tune on the data: their "
    "outputs are not private releases; a budget cannot cover them; use dpfit fit / dpfit iv "
    "with --budget-store for private releases (nothing was charged or run)"
)


def add_parser(sub: argparse._SubParsersAction, name: str) -> argparse.ArgumentParser:
    p = add_command(
        sub,
        name,
        help="rerun the papers' experiments and write a report of every claim",
        description=(
            "Run the trials of the named experiments (default: all registered) at a scale, "
            "resuming from the store, then write OUT/index.html (figures, tables, every claim "
            "with its verdict and numbers, privacy parameters, run time) and OUT/summary.md."
        ),
        epilog=EXAMPLES,
    )
    p.add_argument("names", nargs="*", metavar="NAME", help="experiment names (default: all)")
    p.add_argument("--list", action="store_true", help="list the registered experiments and exit")
    p.add_argument(
        "--scale",
        choices=("smoke", "quick", "paper"),
        default="quick",
        help="smoke: seconds (CI); quick: minutes, claims asserted; paper: published settings "
        "(default: quick)",
    )
    p.add_argument("--out", metavar="DIR", help="report folder (required unless --list)")
    p.add_argument("--jobs", type=int, help="worker processes (default: all CPUs; 1: in-process)")
    p.add_argument(
        "--store", metavar="PATH", help="SQLite trial store (default: OUT/results.sqlite)"
    )
    p.add_argument(
        "--code-version",
        metavar="TEXT",
        help="store trials under this version instead of the source digest (reuses results "
        "across code changes: only for changes known not to affect them)",
    )
    p.add_argument(
        "--import",
        dest="modules",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE first (it registers extra experiments); repeatable",
    )
    p.add_argument("--allow-failures", action="store_true", help="exit 0 even when a claim fails")
    p.add_argument(
        "--budget-store",
        metavar="PATH",
        help="refused (exit 2): reproductions are seeded and tune on the data, so no budget "
        "covers their outputs; dpfit fit / dpfit iv take --budget-store for private releases",
    )
    p.add_argument(
        "--progress",
        action="store_true",
        help="show a progress bar (default: only when standard error is a terminal)",
    )
    p.add_argument("--no-progress", action="store_true", help="never show a progress bar")
    return p


def _list() -> int:
    from ..experiments import get, names

    for name in names():
        exp = get(name)
        sizes = ", ".join(f"{s} {len(exp.tasks(s))}" for s in ("smoke", "quick", "paper"))
        print(f"{name}\n    {exp.paper}; {exp.figure}\n    trials: {sizes}")
    return 0


def run(args: argparse.Namespace) -> int:
    if args.budget_store is not None:
        raise ValueError(BUDGET_REFUSAL)
    for module in args.modules:
        importlib.import_module(module)
    if args.list:
        return _list()
    if not args.out:
        raise ValueError("--out DIR is required (where the report is written)")
    import matplotlib

    matplotlib.use("Agg")  # files only; no display needed
    from pathlib import Path

    from ..experiments import names
    from ..experiments.report import write_report
    from ..experiments.runner import TrialError
    from ..experiments.runner import run as run_trials
    from ._console import progress_wanted

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ValueError(
            f"--out {args.out} is a file, not a folder: give a folder for the report (created "
            "if missing)"
        )
    store = Path(args.store) if args.store else out / "results.sqlite"
    selected = args.names or names()
    try:
        result = run_trials(
            selected,
            scale=args.scale,
            store_path=store,
            jobs=args.jobs,
            progress=progress_wanted(args.progress) and not args.no_progress,
            version=args.code_version,
        )
    except TrialError as exc:
        print(f"dpfit reproduce: {exc} (finished trials are kept in {store})", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(
            f"interrupted: finished trials are kept in {store}; run the same command to resume",
            file=sys.stderr,
        )
        return 130
    report = write_report(result, out)
    failed = [v for v in report.verdicts if v.failed]
    for v in report.verdicts:
        print(f"{v.label:<28} {v.experiment} / {v.claim}")
    for name, err in report.plot_errors.items():
        print(f"{'PLOT ERROR':<28} {name}: {err}")
    print(f"report: {report.html}\nsummary: {report.markdown}")
    if report.failed:
        print(
            f"{len(failed)} claim(s) failed, {len(report.plot_errors)} plot error(s)",
            file=sys.stderr,
        )
        return 0 if args.allow_failures else 1
    return 0
