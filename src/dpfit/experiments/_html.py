"""HTML pieces of the reproduction report (private to :mod:`dpfit.experiments.report`).

Everything shown is escaped. The page is self-contained apart from its PNG figures; an image
that fails to load gets the class ``broken`` (and a red outline), so a check of the rendered
DOM can tell.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
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
tr.deviation { background: #fff4dc; } tr.deviation .verdict { color: #8a5300; }
tr.fail, tr.error { background: #fde8ea; } tr.not-evaluated .verdict { color: #777; }
.banner { padding: 0.6em 1em; border-radius: 4px; font-weight: bold; }
.banner.ok { background: #e5f5e8; color: #11701f; }
.banner.bad { background: #fde8ea; color: #b00020; }
.banner.none { background: #f3f3f3; color: #555; }
.banner.deviation { background: #fff4dc; color: #8a5300; }
.muted { color: #777; font-weight: normal; } td.paper { font-style: italic; }
.nums { display: flex; flex-wrap: wrap; gap: 2px 10px; }
.kv { white-space: nowrap; font-size: 0.95em; } .detail { color: #555; margin-top: 2px; }
.nums.fixed { margin: 0.4em 0; color: #444; }
table.numtable { margin: 0 0 2px 0; font-size: 0.95em; } table.numtable th { font-weight: normal; }
table.numtable th, table.numtable td { padding: 1px 5px; }
.blocks { display: flex; flex-wrap: wrap; gap: 0 1.2em; align-items: flex-start; }
.scroll { overflow-x: auto; max-width: 100%; }
.plot-error { color: #b00020; font-weight: bold; }
figure { display: inline-block; margin: 0.5em 0; max-width: 100%; } img { max-width: 100%; }
img.broken { outline: 3px solid #b00020; min-width: 200px; min-height: 50px; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
"""


def _row_class(v: Verdict) -> str:
    return "claim " + v.status.lower().replace(" ", "-")


def compact_numbers(values: Mapping[str, float]) -> list[tuple[str, str]]:
    """(label, value) pairs with each ``"X se"`` folded into ``X`` as "value +/- se"."""
    out = []
    for key, value in values.items():
        if key.endswith(" se") and key[:-3] in values:
            continue
        text = format_number(value)
        se = values.get(f"{key} se")
        if se is not None:
            text += f" \u00b1 {format_number(se)}"
        out.append((key, text))
    return out


def _grouped(pairs: list[tuple[str, str]]) -> tuple[str, list[tuple[str, str]]]:
    """Numbers labelled "<group>: <label>" for two groups or more, as a small table (a row
    per group, a column per label); returns it and the ungrouped rest."""
    groups: dict[str, dict[str, str]] = {}
    rest = []
    for key, text in pairs:
        group, sep, label = key.partition(": ")
        if sep:
            groups.setdefault(group, {})[label] = text
        else:
            rest.append((key, text))
    if len(groups) < 2:
        return "", pairs
    labels = list(dict.fromkeys(label for row in groups.values() for label in row))
    head = "<th></th>" + "".join(f"<th>{escape(label)}</th>" for label in labels)
    body = "".join(
        f"<tr><th>{escape(group)}</th>"
        + "".join(f'<td class="num">{escape(row.get(label, ""))}</td>' for label in labels)
        + "</tr>"
        for group, row in groups.items()
    )
    return f'<table class="numtable"><tr>{head}</tr>{body}</table>', rest


def _numbers(v: Verdict) -> str:
    table, rest = _grouped(compact_numbers(v.numbers))
    items = "".join(f'<span class="kv">{escape(k)} <b>{escape(x)}</b></span>' for k, x in rest)
    detail = f'<div class="detail">{escape(v.detail)}</div>' if v.detail else ""
    return table + (f'<div class="nums">{items}</div>' if items else "") + detail


def claims_table(verdicts: Sequence[Verdict], *, with_experiment: bool) -> str:
    """A table with one row (class ``claim <status>``) per verdict.

    The summary (``with_experiment``) shows experiment, claim, verdict and numbers; an
    experiment's own table shows the paper's statement beside what we check and measure.
    """
    if with_experiment:
        head = "<th>experiment</th><th>claim</th><th>verdict</th><th>our numbers</th>"
    else:
        head = (
            "<th>claim</th><th>the paper</th><th>what we check</th><th>verdict</th>"
            "<th>our numbers</th>"
        )
    rows = []
    for v in verdicts:
        if with_experiment:
            cells = (
                f'<td><a href="#{escape(v.experiment)}">{escape(v.experiment)}</a></td>'
                f"<td>{escape(v.claim)}</td>"
            )
        else:
            paper = escape(v.paper) if v.paper else '<span class="muted">(see statement)</span>'
            cells = (
                f'<td>{escape(v.claim)}</td><td class="paper">{paper}</td>'
                f"<td>{escape(v.statement)}</td>"
            )
        rows.append(
            f'<tr class="{_row_class(v)}">{cells}'
            f'<td class="verdict">{escape(v.label)}</td><td>{_numbers(v)}</td></tr>'
        )
    if not rows:
        return "<p>No claims.</p>"
    return f'<div class="scroll"><table class="claims"><tr>{head}</tr>{"".join(rows)}</table></div>'


#: A results table with at most this many columns and more than ``_LONG`` rows is split into
#: blocks side by side (at most three).
_NARROW, _LONG = 6, 16


def _cell(value: object) -> str:
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        text = format_number(value) if value == value else "\u2014"  # NaN: not measured here
        return f'<td class="num">{escape(text)}</td>'
    return f"<td>{escape(str(value))}</td>"


def _series_columns(table: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """Columns "<stem>_<k>" with five or more of one stem (a path, per-coordinate values)
    left to the CSV; returns the table without them and a note per stem."""
    stems: dict[str, list[str]] = {}
    columns = list(table.columns)
    metrics = columns[columns.index("trials") + 1 :] if "trials" in columns else columns
    for col in metrics:  # parameters (before "trials") are always shown
        stem, _, k = str(col).rpartition("_")
        if stem and k.isdigit():
            stems.setdefault(stem, []).append(col)
    drop = {stem: cols for stem, cols in stems.items() if len(cols) >= 5}
    notes = [f"{cols[0]} \u2026 {cols[-1]}" for cols in drop.values()]
    return table.drop(columns=[c for cols in drop.values() for c in cols]), notes


def _text(value: object) -> str:
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return format_number(value)
    return str(value)


def _split_constant(table: pd.DataFrame) -> tuple[pd.DataFrame, list[tuple[str, str]]]:
    """Columns with one value in every row, moved out of the table as (name, value)."""
    if len(table) < 2:
        return table, []
    fixed = [
        c
        for c in table.columns
        if c != "trials" and table[c].astype(str).nunique(dropna=False) == 1
    ]
    return table.drop(columns=fixed), [(c, _text(table[c].iloc[0])) for c in fixed]


def results_table(table: pd.DataFrame) -> str:
    """The aggregated results (mean of each metric over replicates) as compact HTML tables.

    Columns that take one value in every row are stated once above the table, series of
    five or more numbered columns (a path, per-coordinate values) are left to the CSV, and a
    long, narrow table is split into blocks laid side by side.
    """
    if table.empty:
        return "<p>No trials stored.</p>"
    table, series = _series_columns(table)
    table, fixed = _split_constant(table)
    items = "".join(f'<span class="kv">{escape(k)} <b>{escape(v)}</b></span>' for k, v in fixed)
    note = f'<div class="nums fixed">In every row: {items}</div>' if fixed else ""
    if series:
        note += f'<div class="nums fixed">In the CSV only: {escape("; ".join(series))}</div>'
    head = "".join(f"<th>{escape(str(c))}</th>" for c in table.columns)
    rows = [
        "<tr>" + "".join(_cell(v) for v in row) + "</tr>"
        for row in table.itertuples(index=False, name=None)
    ]
    blocks = 1
    if len(table.columns) <= _NARROW and len(rows) > _LONG:
        blocks = min(3, -(-len(rows) // _LONG))
    size = -(-len(rows) // blocks)
    tables = "".join(
        f'<table class="results"><tr>{head}</tr>{"".join(rows[k : k + size])}</table>'
        for k in range(0, len(rows), size)
    )
    return f'{note}<div class="scroll blocks">{tables}</div>'


def _captions(exp: Experiment, count_: int) -> list[str]:
    """Each figure's caption: the experiment's ``panels``, else its paper figure."""
    if len(exp.panels) == count_:
        return list(exp.panels)
    if count_ == 1:
        return [exp.figure]
    return [f"{exp.figure} ({k} of {count_})" for k in range(1, count_ + 1)]


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
    captions = _captions(exp, len(figures))
    figs = "".join(
        f'<figure><img src="{escape(path)}" alt="{escape(exp.name)}: {escape(caption)}" '
        f"onerror=\"this.classList.add('broken')\"><figcaption>{escape(exp.paper)}: "
        f"{escape(caption)} (ours)</figcaption></figure>"
        for path, caption in zip(figures, captions, strict=True)
    )
    if plot_error:
        figs += f'<p class="plot-error">PLOT ERROR: {escape(plot_error)}</p>'
    elif not figures:
        figs = "<p>This experiment has no plot.</p>"
    note = " (first rows only; the CSV has every trial)" if truncated else ""
    name = escape(exp.name)
    return f"""
<section class="experiment" id="{name}">
<h2>{escape(exp.figure)} <span class="muted">({name})</span></h2>
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
    """Red when a claim failed; amber when every evaluated claim held but some assert a
    deviation from the paper; green only when every evaluated claim agrees with the paper;
    grey when none ran."""
    failed = tally["FAIL"] + tally["ERROR"]
    skipped, deviations = tally["NOT EVALUATED"], tally["DEVIATION"]
    if failed:
        return (
            f'<p class="banner bad">{failed} claim(s) FAILED '
            f"({tally['FAIL']} fail, {tally['ERROR']} error)</p>"
        )
    if not tally["PASS"] + deviations:
        return (
            '<p class="banner none">No claim was evaluated at this scale '
            f"({skipped} not evaluated); nothing was checked</p>"
        )
    if deviations:
        return (
            f'<p class="banner deviation">{tally["PASS"]} claim(s) agree with the papers; '
            f"{deviations} assert a deviation from the paper (measured and named, not a "
            f"reproduction of the paper's statement); {skipped} not evaluated at this scale</p>"
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
