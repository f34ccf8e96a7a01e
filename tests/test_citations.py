"""Every citation in src/ and docs/ is something a reader can open.

A paper, a page of these docs or a file of the repository: never the project's issue
numbers, internal specs, review findings or style-rule numbers, and never a file that is
not in the repository (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "dpfit"


#: What a reader of the code or the docs cannot open: the project's issue tracker, internal
#: specs, review findings and style-rule numbers.
UNOPENABLE = re.compile(
    r"\bissues? #?\d+|\bfinding \d+|\breliability row\b|\bspecs?/|\bSTYLE\b"
    r"|\bthe spec\b|\bspec's\b"
    r"|\bspec (?:section|D\d|\d)|\(spec [A-Z\d]"
)
#: A file named in prose: a repository path, or a page name such as ``privacy.md``.
_PATH = re.compile(r"\b((?:docs|tests|src|benchmarks)/[\w/.-]*\w\.(?:py|md|toml|json|csv))")
_PAGE = re.compile(r"(?<![\w/.-])([\w-]+\.md)\b")
#: Pages a command writes (not in the repository): ``dpfit reproduce`` writes summary.md.
WRITTEN_PAGES = {"summary.md"}


def _text_files() -> list[Path]:
    return sorted(SRC.rglob("*.py")) + sorted((ROOT / "docs").rglob("*.md"))


def unopenable_citations(files: list[Path]) -> list[str]:
    """Each citation of something not in the repository: an issue, a spec, a style rule, or
    a file that does not exist."""
    pages = {p.name for p in ROOT.rglob("*.md") if ".venv" not in p.parts} | WRITTEN_PAGES
    out = []
    for path in files:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            where = f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{number}"
            out += [f"{where}: {m.group(0)!r}" for m in UNOPENABLE.finditer(line)]
            for m in _PATH.finditer(line):
                if not (ROOT / m.group(1)).exists() and "*" not in m.group(1):
                    out.append(f"{where}: no file {m.group(1)}")
            for m in _PAGE.finditer(line):
                if m.group(1) not in pages:
                    out.append(f"{where}: no page {m.group(1)}")
    return out


def test_every_citation_in_src_and_docs_can_be_opened():
    assert unopenable_citations(_text_files()) == []


def test_the_citation_check_finds_planted_ones(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "As issue 14 asked (spec D10, STYLE 2.7); see DESIGN.md and tests/test_nothing.py.\n"
        "See docs/privacy.md and privacy.md, the formulaic model spec.\n"
    )
    found = [f.split(": ", 1)[1] for f in unopenable_citations([page])]
    assert found == [
        "'issue 14'", "'(spec D'", "'STYLE'", "no file tests/test_nothing.py", "no page DESIGN.md"
    ]  # fmt: skip
