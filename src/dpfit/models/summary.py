"""A printable summary of a private fit: text, HTML and LaTeX (after statsmodels' ``Summary``).

A :class:`Summary` is a plain value built by :meth:`dpfit.models.Result.summary` (or by any
other model's result): a title, a two-column header of public inputs and privacy facts, the
coefficient table, optional labelled sections and numbered notes. It renders itself; it never
computes anything from data. Deliberately absent: R^2, F-statistics, condition
numbers and residual tests (all read off the raw data), and dates or times (untestable).
"""

from __future__ import annotations

import html
import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

__all__ = ["Summary", "format_number"]

_WIDTH = 78


def format_number(value: object) -> str:
    """Format a table entry: 4 decimals, or 4 significant digits in exponent form when extreme."""
    if isinstance(value, str):
        return value
    v = float(value)  # type: ignore[arg-type]
    if math.isnan(v):
        return ""
    if v != 0.0 and not (1e-4 <= abs(v) < 1e5):
        return f"{v:.3e}"
    return f"{v:.4f}"


@dataclass(frozen=True, kw_only=True)
class Summary:
    """A regression summary that renders as text, HTML or LaTeX.

    Parameters
    ----------
    title : str
        First line, e.g. ``"DP linear regression results"``.
    header : sequence of (str, str)
        Label/value pairs shown in two columns under the title.
    table : pandas.DataFrame
        The coefficient table, indexed by term name; numbers are formatted with
        :func:`format_number`.
    sections : sequence of (str, sequence of (str, str)), default=()
        Further labelled blocks of label/value pairs (e.g. public configuration, or
        non-private diagnostics under a title that says so).
    notes : sequence of str, default=()
        Numbered notes printed at the end; by convention the last is the privacy statement.
    """

    title: str
    header: Sequence[tuple[str, str]]
    table: pd.DataFrame
    sections: Sequence[tuple[str, Sequence[tuple[str, str]]]] = ()
    notes: Sequence[str] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "header", tuple((str(k), str(v)) for k, v in self.header))
        object.__setattr__(
            self,
            "sections",
            tuple((str(t), tuple((str(k), str(v)) for k, v in rows)) for t, rows in self.sections),
        )
        object.__setattr__(self, "notes", tuple(str(n) for n in self.notes))
        object.__setattr__(self, "table", self.table.copy())

    def _cells(self) -> pd.DataFrame:
        return self.table.map(format_number)

    # -- text ---------------------------------------------------------------------------------
    def as_text(self) -> str:
        """The summary as fixed-width plain text."""
        out = [self.title.center(_WIDTH), "=" * _WIDTH]
        out += _pairs_text(self.header)
        cells = self._cells()
        names = [str(i) for i in cells.index]
        cols = [str(c) for c in cells.columns]
        name_w = max([len(n) for n in names] + [4])
        col_w = [max([len(c)] + [len(v) for v in cells[c]]) for c in cells.columns]
        out.append("=" * _WIDTH)
        out.append(" " * name_w + "".join(f"  {c:>{w}}" for c, w in zip(cols, col_w, strict=True)))
        out.append("-" * _WIDTH)
        for name, row in zip(names, cells.itertuples(index=False), strict=True):
            values = "".join(f"  {v:>{w}}" for v, w in zip(row, col_w, strict=True))
            out.append(f"{name:<{name_w}}{values}")
        out.append("=" * _WIDTH)
        for title, rows in self.sections:
            out += textwrap.wrap(title, width=_WIDTH)
            out.append("-" * _WIDTH)
            out += _pairs_text(rows)
            out.append("=" * _WIDTH)
        if self.notes:
            out.append("Notes:")
            for i, note in enumerate(self.notes, start=1):
                first = f"[{i}] "
                for j, para in enumerate(note.split("\n")):
                    indent = " " * (len(first) + len(para) - len(para.lstrip()))
                    out += textwrap.wrap(
                        para.lstrip(),
                        width=_WIDTH,
                        initial_indent=first if j == 0 else indent,
                        subsequent_indent=indent + ("  " if para.startswith(" ") else ""),
                    ) or [""]
        return "\n".join(out)

    def __str__(self) -> str:
        return self.as_text()

    def __repr__(self) -> str:
        return self.as_text()

    # -- HTML ---------------------------------------------------------------------------------
    def as_html(self) -> str:
        """The summary as HTML tables (escaped), as shown in notebooks."""
        esc = html.escape
        parts = [f'<table class="simpletable"><caption>{esc(self.title)}</caption>']
        parts += [f"<tr><th>{esc(k)}:</th><td>{esc(v)}</td></tr>" for k, v in self.header]
        parts.append("</table>")
        cells = self._cells()
        parts.append('<table class="simpletable"><tr><th></th>')
        parts += [f"<th>{esc(str(c))}</th>" for c in cells.columns]
        parts.append("</tr>")
        for name, row in zip(cells.index, cells.itertuples(index=False), strict=True):
            tds = "".join(f"<td>{esc(v)}</td>" for v in row)
            parts.append(f"<tr><th>{esc(str(name))}</th>{tds}</tr>")
        parts.append("</table>")
        for title, rows in self.sections:
            parts.append(f'<table class="simpletable"><caption>{esc(title)}</caption>')
            parts += [f"<tr><th>{esc(k)}:</th><td>{esc(v)}</td></tr>" for k, v in rows]
            parts.append("</table>")
        if self.notes:
            items = "".join(f"<li>{esc(n).replace(chr(10), '<br/>')}</li>" for n in self.notes)
            parts.append(f"<p>Notes:</p><ol>{items}</ol>")
        return "\n".join(parts)

    def _repr_html_(self) -> str:
        return self.as_html()

    # -- LaTeX --------------------------------------------------------------------------------
    def as_latex(self) -> str:
        """The summary as a LaTeX ``table`` with ``tabular`` blocks (booktabs-free)."""
        esc = _latex_escape
        cells = self._cells()
        ncol = len(cells.columns)
        lines = [r"\begin{table}[!htbp]", r"\centering", rf"\caption{{{esc(self.title)}}}"]
        lines.append(r"\begin{tabular}{ll}")
        lines += [rf"{esc(k)}: & {esc(v)} \\" for k, v in self.header]
        lines.append(r"\end{tabular}")
        lines.append("")
        lines.append(r"\begin{tabular}{l" + "r" * ncol + "}")
        lines.append(r"\hline")
        lines.append(" & " + " & ".join(esc(str(c)) for c in cells.columns) + r" \\")
        lines.append(r"\hline")
        for name, row in zip(cells.index, cells.itertuples(index=False), strict=True):
            lines.append(esc(str(name)) + " & " + " & ".join(esc(v) for v in row) + r" \\")
        lines.append(r"\hline")
        lines.append(r"\end{tabular}")
        for title, rows in self.sections:
            lines.append("")
            lines.append(r"\begin{tabular}{ll}")
            lines.append(rf"\multicolumn{{2}}{{l}}{{{esc(title)}}} \\")
            lines += [rf"{esc(k)}: & {esc(v)} \\" for k, v in rows]
            lines.append(r"\end{tabular}")
        if self.notes:
            lines.append(r"\begin{enumerate}\footnotesize")
            lines += [r"\item " + esc(n).replace("\n", r"\newline ") for n in self.notes]
            lines.append(r"\end{enumerate}")
        lines.append(r"\end{table}")
        return "\n".join(lines)


def _pairs_text(pairs: Sequence[tuple[str, str]]) -> list[str]:
    """One label/value pair per line, labels padded to a common width."""
    width = max([len(k) for k, _ in pairs] + [0]) + 2
    return [f"{k + ':':<{width}}{v}" for k, v in pairs]


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def _latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)
