"""docs/reproducing.md lists every figure and table of each paper with its experiment or the
reason there is none, and names every registered experiment of these papers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "reproducing.md"

#: The figures and tables of each paper, read off the papers' texts (the captions "Figure N:"
#: and "Table N:"), and the predictions / benchmarks of the two papers without figures
#: (docs/varshney2022.md, docs/menart2024.md). Liang et al.'s text has no Figure 12.
EXPECTED = {
    "Brown et al. 2024": {f"Figure {k}" for k in range(1, 12)},
    "Liang et al. 2025": {f"Figure {k}" for k in range(1, 14)}
    | {"App. F.2 (no figure)", "interval coverage (no figure)"},
    "Choquette-Choo et al. 2024": {
        "Figure 1, left",
        "Figure 1, middle and right",
        "Figure 2",
        "Figure 3",
        "Figure 4",
    }
    | {f"Table {k}" for k in range(1, 5)},
    "Varshney et al. 2022": {f"P{k}" for k in range(1, 8)},
    "Menart et al. 2024": {f"B{k}" for k in range(8)} | {"grid search"},
}
#: Registered experiments that belong to these papers (by name prefix).
PREFIXES = ("brown2024-", "liang2025-", "choquettechoo2024-", "varshney2022-", "menart2024-")
EXTRA = ("friendlycore-2sls",)


def _rows() -> list[tuple[str, str, list[str], str]]:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Every figure and table of the papers", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or cells[0] in ("paper", "---"):
            continue
        rows.append((cells[0], cells[1], re.findall(r"`([^`]+)`", cells[2]), cells[3]))
    return rows


def test_every_figure_and_table_of_every_paper_is_listed_once():
    rows = _rows()
    listed: dict[str, list[str]] = {}
    for paper, item, _, _ in rows:
        listed.setdefault(paper, []).append(item)
    assert set(listed) == set(EXPECTED)
    for paper, items in listed.items():
        assert sorted(items) == sorted(EXPECTED[paper]), paper
        assert len(items) == len(set(items)), f"{paper}: an item is listed twice"


def test_each_row_names_a_registered_experiment_or_gives_a_reason(catalog_names):
    for paper, item, experiments, reason in _rows():
        assert experiments or len(reason) > 20, f"{paper} {item}: neither experiment nor reason"
        for name in experiments:
            assert name in catalog_names, f"{paper} {item}: {name} is not registered"


def test_every_experiment_of_these_papers_is_listed(catalog_names):
    named = {name for _, _, experiments, _ in _rows() for name in experiments}
    ours = {n for n in catalog_names if n.startswith(PREFIXES) or n in EXTRA}
    assert ours - named == set(), "registered but not listed in docs/reproducing.md"


@pytest.mark.parametrize("bad", ["Figure 7", "Table 2"])
def test_the_check_fails_when_an_item_is_dropped(bad, monkeypatch, tmp_path):
    """The list check can fail: the same document without one row is rejected."""
    text = DOC.read_text(encoding="utf-8")
    paper = "Brown et al. 2024" if bad == "Figure 7" else "Choquette-Choo et al. 2024"
    row = next(line for line in text.splitlines() if line.startswith(f"| {paper} | {bad} |"))
    shortened = tmp_path / "reproducing.md"
    shortened.write_text(text.replace(row + "\n", ""), encoding="utf-8")
    monkeypatch.setitem(globals(), "DOC", shortened)
    with pytest.raises(AssertionError):
        test_every_figure_and_table_of_every_paper_is_listed_once()
