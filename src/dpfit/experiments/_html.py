"""HTML pieces of the reproduction report (private to :mod:`dpfit.experiments.report`).

Everything shown is escaped. The page is self-contained apart from its PNG figures; an image
that fails to load gets the class ``broken`` (and a red outline), so a check of the rendered
DOM can tell.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from html import escape

import pandas as pd

from .registry import Experiment
from .verdicts import Verdict, count, format_number

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222;
       padding: 0 1em; overflow-wrap: break-word; }
h1 { margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
.verdict { font-weight: bold; white-space: nowrap; }
tr.pass .verdict { color: #11701f; } tr.fail .verdict, tr.error .verdict { color: #b00020; }
tr.fail, tr.error { background: #fde8ea; } tr.not-evaluated .verdict { color: #777; }
.banner { padding: 0.6em 1em; border-radius: 4px; font-weight: bold; }
.banner.ok { background: #e5f5e8; color: #11701f; }
.banner.bad { background: #fde8ea; color: #b00020; }
.banner.none { background: #f3f3f3; color: #555; }
.scroll { overflow-x: auto; max-width: 100%; }
.plot-error { color: #b00020; font-weight: bold; }
figure { display: inline-block; margin: 0.5em 0; max-width: 100%; } img { max-width: 100%; }
img.broken { outline: 3px solid #b00020; min-width: 200px; min-height: 50px; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td ul { margin: 0; padding-left: 1.2em; }
"""


def _row_class(v: Verdict) -> str:
    return "claim " + v.status.lower().replace(" ", "-")


def _numbers(v: Verdict) -> str:
    items = "".join(
        f"<li>{escape(k)} = {escape(format_number(x))}</li>" for k, x in v.numbers.items()
    )
    detail = f"<div>{escape(v.detail)}</div>" if v.detail else ""
    return (f"<ul>{items}</ul>" if items else "") + detail


def claims_table(verdicts: Sequence[Verdict], *, with_experiment: bool) -> str:
    """A table with one row (class ``claim <status>``) per verdict."""
    head = ("<th>experiment</th>" if with_experiment else "") + (
        "<th>claim</th><th>statement</th><th>verdict</th><th>numbers</th>"
    )
    rows = []
    for v in verdicts:
        exp = f'<td><a href="#{escape(v.experiment)}">{escape(v.experiment)}</a></td>'
        rows.append(
            f'<tr class="{_row_class(v)}">{exp if with_experiment else ""}'
            f"<td>{escape(v.claim)}</td><td>{escape(v.statement)}</td>"
            f'<td class="verdict">{escape(v.label)}</td><td>{_numbers(v)}</td></tr>'
        )
    if not rows:
        return "<p>No claims.</p>"
    return f'<div class="scroll"><table class="claims"><tr>{head}</tr>{"".join(rows)}</table></div>'


def _cell(value: object) -> str:
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return f'<td class="num">{escape(format_number(value))}</td>'
    return f"<td>{escape(str(value))}</td>"


def results_table(table: pd.DataFrame) -> str:
    """The aggregated results (mean of each metric over replicates) as an HTML table."""
    if table.empty:
        return "<p>No trials stored.</p>"
    head = "".join(f"<th>{escape(str(c))}</th>" for c in table.columns)
    body = "".join(
        "<tr>" + "".join(_cell(v) for v in row) + "</tr>"
        for row in table.itertuples(index=False, name=None)
    )
    return f'<div class="scroll"><table class="results"><tr>{head}</tr>{body}</table></div>'


def experiment_section(
    exp: Experiment,
    *,
    verdicts: Sequence[Verdict],
    figures: Sequence[str],
    plot_error: str | None,
    table: pd.DataFrame,
    truncated: bool,
    trials: tuple[int, int],
) -> str:
    """One experiment: header, privacy, claims, figures and results."""
    figs = "".join(
        f'<figure><img src="{escape(path)}" alt="{escape(exp.name)} figure {k}" '
        f"onerror=\"this.classList.add('broken')\"><figcaption>Figure {k}</figcaption></figure>"
        for k, path in enumerate(figures, start=1)
    )
    if plot_error:
        figs += f'<p class="plot-error">PLOT ERROR: {escape(plot_error)}</p>'
    elif not figures:
        figs = "<p>This experiment has no plot.</p>"
    note = " (first rows only; the CSV has every trial)" if truncated else ""
    name = escape(exp.name)
    return f"""
<section class="experiment" id="{name}">
<h2>{name}</h2>
<p><b>Reproduces:</b> {escape(exp.paper)}, {escape(exp.figure)}</p>
<p>{escape(exp.description)}</p>
<p><b>Privacy:</b> {escape(exp.privacy or "not stated")}</p>
<p><b>Trials:</b> {trials[0] + trials[1]} ({trials[0]} run now, {trials[1]} reused)</p>
<h3>Claims</h3>
{claims_table(verdicts, with_experiment=False)}
<h3>Figures</h3>
{figs}
<h3>Results</h3>
<p>Mean of each metric over replicates{note}. Every trial:
<a href="data/{name}.csv">data/{name}.csv</a>.</p>
{results_table(table)}
</section>"""


def _banner(tally: dict[str, int]) -> str:
    """Red when a claim failed, green when every evaluated claim passed, grey when none ran."""
    failed = tally["FAIL"] + tally["ERROR"]
    skipped = tally["NOT EVALUATED"]
    if failed:
        return (
            f'<p class="banner bad">{failed} claim(s) FAILED '
            f"({tally['FAIL']} fail, {tally['ERROR']} error)</p>"
        )
    if not tally["PASS"]:
        return (
            '<p class="banner none">No claim was evaluated at this scale '
            f"({skipped} not evaluated); nothing was checked</p>"
        )
    return (
        f'<p class="banner ok">All {tally["PASS"]} evaluated claim(s) passed '
        f"({skipped} not evaluated at this scale)</p>"
    )


def page(provenance: Sequence[tuple[str, str]], verdicts: Sequence[Verdict], sections) -> str:
    """The whole report page."""
    tally = count(verdicts)
    banner = _banner(tally)
    meta = "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in provenance)
    meta = f'<div class="scroll"><table class="provenance">{meta}</table></div>'
    counts = ", ".join(f"{n} {escape(s.lower())}" for s, n in tally.items())
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>dpfit reproduction report</title><style>{_CSS}</style></head>
<body>
<h1>dpfit reproduction report</h1>
{banner}
{meta}
<h2>Claims</h2>
<p>{counts}.</p>
{claims_table(verdicts, with_experiment=True)}
{"".join(sections)}
</body></html>
"""
