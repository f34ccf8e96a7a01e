"""The code snippets of the docs pages that no other test runs.

Who runs what: ``>>>`` examples of every page run in tests/test_docs.py; the shell and
Python snippets of README.md and docs/user-guide.md in tests/test_docs_commands.py; the
whole of docs/dask.md in tests/distributed/test_docs_dask.py, of docs/tutorial-torch.md in
tests/torch/test_tutorial.py and of docs/serve.md (against a running server) in
tests/serve/test_docs_serve.py. Here, for every other page:

* every ```python block without ``>>>`` runs, in page order, in one namespace;
* every command of a ```bash```, ```sh``` or ```console``` block is a valid command line:
  ``dpfit`` commands parse with the CLI's own parser and name registered experiments,
  ``python -m pytest`` commands name test files that exist and declared markers,
  ``python -c`` programs compile; comment lines are skipped;
* commands that take seconds (``dpfit privacy``, ``dpfit audit``, ``dpfit reproduce --list``)
  run verbatim, and in a ```console``` block print what the page shows (``...`` matches
  anything, as in doctest). Reproductions at quick or paper scale take minutes to hours and
  are only parsed; the smoke scale of every experiment runs in tests/experiments.
"""

from __future__ import annotations

import doctest
import re
import shlex
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Pages whose snippets other tests run (see the module docstring), with the test that does.
ELSEWHERE = {
    "user-guide.md": "tests/test_docs_commands.py",
    "dask.md": "tests/distributed/test_docs_dask.py",
    "tutorial-torch.md": "tests/torch/test_tutorial.py",
    "serve.md": "tests/serve/test_docs_serve.py",
}
PAGES = sorted(p for p in (ROOT / "docs").glob("*.md") if p.name not in ELSEWHERE)
_FENCE = re.compile(r"^```(?P<lang>[a-z]*)\n(?P<body>.*?)^```", re.S | re.M)
_SHELL = ("bash", "sh", "console")
#: dpfit subcommands cheap enough to run verbatim here.
_RUN = {"privacy", "audit"}


def _blocks(page: Path, langs: tuple[str, ...]) -> list[str]:
    return [m["body"] for m in _FENCE.finditer(page.read_text()) if m["lang"] in langs]


def _commands(lang: str, body: str) -> list[tuple[str, str | None]]:
    """(command, shown output or None) for each command of a shell block."""
    text = body.replace("\\\n", " ")
    if lang != "console":
        lines = (line.strip() for line in text.splitlines())
        return [(line, None) for line in lines if line and not line.startswith("#")]
    out: list[tuple[str, str | None]] = []
    for line in text.splitlines():
        if line.startswith("$ "):
            out.append((line[2:], ""))
        elif out:
            out[-1] = (out[-1][0], f"{out[-1][1]}{line}\n")
    return out


def _shell_commands() -> list[tuple[str, str, str | None]]:
    found = []
    for page in PAGES:
        for m in _FENCE.finditer(page.read_text()):
            if m["lang"] in _SHELL:
                for command, shown in _commands(m["lang"], m["body"]):
                    found.append((page.name, command, shown))
    return found


COMMANDS = _shell_commands()


def test_the_pages_run_elsewhere_are_run_there():
    for page, test in ELSEWHERE.items():
        assert page in (ROOT / test).read_text(), (page, test)
    assert COMMANDS and PYTHON_PAGES


PYTHON_PAGES = [p for p in PAGES if any(">>>" not in b for b in _blocks(p, ("python",)))]


@pytest.mark.parametrize("page", PYTHON_PAGES, ids=[p.name for p in PYTHON_PAGES])
def test_python_blocks_run(page, tmp_path, monkeypatch):
    """As a reader pastes them: warnings are shown (they are what the reader sees), and an
    experiment a page registers is forgotten afterwards."""
    from dpfit.experiments import registry

    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": f"docs_{page.stem}"}
    blocks = [b for b in _blocks(page, ("python",)) if ">>>" not in b]
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        for i, block in enumerate(blocks):
            exec(compile(block, f"{page.name} block {i + 1}", "exec"), namespace)  # our page


@pytest.mark.parametrize(
    ("page", "command", "shown"), COMMANDS, ids=[f"{p}: {c[:50]}" for p, c, _ in COMMANDS]
)
def test_shell_commands_are_valid_and_cheap_ones_print_what_the_page_shows(
    page, command, shown, tmp_path
):
    argv = shlex.split(command, comments=True)
    if argv[0] == "dpfit":
        _check_dpfit(argv[1:], shown, tmp_path)
    elif argv[:3] == ["python", "-m", "pytest"]:
        _check_pytest(argv[3:])
    elif argv[:2] == ["python", "-c"] and len(argv) == 3:
        compile(argv[2], f"{page}: python -c", "exec")  # minutes to run: only compiled
    else:
        pytest.fail(f"{page}: no check for the command {command!r}")


def _check_dpfit(argv: list[str], shown: str | None, tmp_path: Path) -> None:
    from dpfit.cli import build_parser
    from dpfit.experiments import names

    args = build_parser().parse_args(argv)  # SystemExit on an unknown option
    if args.command == "reproduce":
        unknown = set(args.names) - set(names())
        assert not unknown, f"unregistered experiments {unknown}"
    if args.command not in _RUN and not (args.command == "reproduce" and args.list):
        return
    run = subprocess.run(
        [sys.executable, "-m", "dpfit.cli", *argv],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    if shown:
        flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
        assert doctest.OutputChecker().check_output(shown, run.stdout, flags), run.stdout


def _check_pytest(argv: list[str]) -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]
    markers = {m.partition(":")[0] for m in declared["ini_options"]["markers"]}
    it = iter(argv)
    for token in it:
        if token == "-m":
            assert next(it) in markers
        elif not token.startswith("-"):
            assert (ROOT / token.partition("::")[0]).exists(), token
