"""The reproduction report: claims with verdicts, figures, tables and provenance (HTML + md).

:func:`write_report` takes a :class:`~dpfit.experiments.runner.RunResult` and writes to a folder::

    index.html          the report (figures, claim tables, result tables, privacy, provenance)
    summary.md          the same verdicts as a markdown summary
    figures/<name>-<k>.png
    data/<name>.csv     every trial (params, replicate, seed, metrics)

Every claim appears with its verdict (PASS, "deviation (asserted)", FAIL, ERROR or "not
evaluated at this scale"), the paper's statement beside it and the numbers that decided it; a
failed claim is shown as failed, never hidden, and a claim that asserts a deviation from the
paper is never shown as PASS. A plot that
raises is shown as an error and counts as a problem of the report.
"""

from __future__ import annotations

import datetime as _dt
import json
import platform
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .._version import __version__
from . import _html
from .runner import RunResult
from .verdicts import Verdict, count, evaluate_claims, format_number

__all__ = ["Report", "write_report"]

#: Rows of an experiment's aggregated table shown in the report (the CSV has every trial).
MAX_TABLE_ROWS = 200


@dataclass(frozen=True, kw_only=True)
class Report:
    """What :func:`write_report` wrote and what it found.

    Attributes
    ----------
    html, markdown : Path
        The report and the summary.
    verdicts : list[Verdict]
        Every claim of every experiment, in order.
    plot_errors : dict[str, str]
        Experiments whose ``plot`` raised, with the error.
    """

    html: Path
    markdown: Path
    verdicts: list[Verdict]
    plot_errors: dict[str, str]

    @property
    def failed(self) -> bool:
        """True when a claim failed or errored, or a plot raised."""
        return any(v.failed for v in self.verdicts) or bool(self.plot_errors)


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", *args],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


def _git_commit() -> str | None:
    """The git commit of the source tree (flagged when dpfit's files differ from it)."""
    commit = _git("rev-parse", "--short=12", "HEAD")
    if not commit:
        return None
    dirty = _git("status", "--porcelain", "--", str(Path(__file__).resolve().parent.parent))
    return f"{commit} (with uncommitted changes)" if dirty else commit


def _provenance(run: RunResult) -> list[tuple[str, str]]:
    import numpy as np

    ran, reused = sum(run.ran.values()), sum(run.reused.values())
    return [
        ("scale", run.scale),
        ("dpfit version", __version__),
        ("code version (store key)", run.version),
        ("git commit", _git_commit() or "not a git checkout"),
        ("python / numpy", f"{platform.python_version()} / {np.__version__}"),
        ("trials", f"{ran + reused} ({ran} run now, {reused} reused from the store)"),
        ("run time (wall)", f"{run.wall_seconds:.3g} s on {run.jobs} process(es)"),
        ("compute time of all trials", f"{sum(run.trial_seconds.values()):.3g} s"),
        ("generated", _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")),
    ]


def _param_columns(run: RunResult, name: str) -> list[str]:
    grid = run.experiments[name].grid[run.scale]
    return list(dict.fromkeys(k for params in grid for k in params))


def _aggregate(run: RunResult, name: str) -> pd.DataFrame:
    """Mean of every metric over replicates, per grid point, with the trial count."""
    df = run.results[name]
    if df.empty:
        return df
    params = _param_columns(run, name)
    metrics = [c for c in df.columns if c not in params and c not in ("replicate", "seed")]
    nested = [p for p in params if df[p].map(lambda v: isinstance(v, list | dict)).any()]
    keyed = df.assign(**{p: df[p].map(json.dumps) for p in nested})
    if not params:
        keyed, params = keyed.assign(_all="all"), ["_all"]
    grouped = keyed.groupby(params, sort=False, dropna=False)
    table = grouped[metrics].mean()
    table.insert(0, "trials", grouped.size())
    return table.reset_index().drop(columns=["_all"], errors="ignore")


def _figures(run: RunResult, name: str, folder: Path) -> tuple[list[str], str | None]:
    """Save the experiment's figures as PNG; returns (relative paths, error or None)."""
    exp, df = run.experiments[name], run.results[name]
    if exp.plot is None:
        return [], None
    import matplotlib.pyplot as plt

    try:
        figures = list(exp.plot(df))
    except Exception as exc:  # shown in the report, not hidden
        return [], f"{type(exc).__name__}: {exc}"
    paths = []
    for k, fig in enumerate(figures, start=1):
        rel = f"figures/{name}-{k}.png"
        fig.savefig(folder / rel, dpi=110)
        plt.close(fig)
        paths.append(rel)
    return paths, None


def _markdown(run: RunResult, verdicts: list[Verdict], figures, errors, provenance) -> str:
    tally = count(verdicts)
    lines = ["# dpfit reproduction summary", ""]
    lines += [f"- {key}: {value}" for key, value in provenance]
    lines += ["", "Claims: " + ", ".join(f"{n} {s}" for s, n in tally.items()), ""]
    lines += ["| experiment | claim | verdict | numbers | the paper |", "|---|---|---|---|---|"]
    for v in verdicts:
        numbers = "; ".join(f"{k} = {format_number(x)}" for k, x in v.numbers.items())
        numbers = (numbers or v.detail).replace("|", "\\|")
        paper = v.paper.replace("|", "\\|")
        lines.append(f"| {v.experiment} | {v.claim} | **{v.label}** | {numbers} | {paper} |")
    lines.append("")
    for name in run.experiments:
        if errors.get(name):
            lines.append(f"- {name}: PLOT ERROR: {errors[name]}")
        lines += [f"- {name}: ![{name} figure {k}]({p})" for k, p in enumerate(figures[name], 1)]
    lines += ["", "Full report: index.html; every trial: data/<experiment>.csv.", ""]
    return "\n".join(lines)


def write_report(run: RunResult, out_dir: str | Path) -> Report:
    """Evaluate every claim of ``run`` and write the HTML report and markdown summary.

    Parameters
    ----------
    run : RunResult
        What :func:`~dpfit.experiments.runner.run` returned.
    out_dir : str or Path
        Folder to write into (created if missing; files of the same names are replaced).

    Returns
    -------
    Report
        Paths written, every verdict, and plot errors.
    """
    out = Path(out_dir)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    (out / "data").mkdir(exist_ok=True)
    provenance = _provenance(run)
    verdicts, figures, errors, sections = [], {}, {}, []
    for name, exp in run.experiments.items():
        df = run.results[name]
        df.to_csv(out / "data" / f"{name}.csv", index=False)
        mine = evaluate_claims(exp, df, run.scale)
        verdicts += mine
        figures[name], errors[name] = _figures(run, name, out)
        table = _aggregate(run, name)
        sections.append(
            _html.experiment_section(
                exp,
                verdicts=mine,
                figures=figures[name],
                plot_error=errors[name],
                table=table.head(MAX_TABLE_ROWS),
                truncated=len(table) > MAX_TABLE_ROWS,
                trials=(run.ran[name], run.reused[name]),
            )
        )
    html_path, md_path = out / "index.html", out / "summary.md"
    html_path.write_text(_html.page(provenance, verdicts, sections), encoding="utf-8")
    md_path.write_text(_markdown(run, verdicts, figures, errors, provenance), encoding="utf-8")
    plot_errors = {n: e for n, e in errors.items() if e}
    return Report(html=html_path, markdown=md_path, verdicts=verdicts, plot_errors=plot_errors)
