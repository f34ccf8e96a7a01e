"""Every shell snippet of README.md and docs/user-guide.md runs verbatim (the ``>>>`` ones run
in tests/test_docs.py; those of README's server section, which need a running server, in
tests/serve/test_docs_serve.py).

Each ```bash``` or ```console``` block runs as one ``bash -e`` script in a fresh folder that
holds a ``data.csv`` with the columns the snippets name, with this interpreter's ``dpfit`` on
the PATH. Two commands would install software or run the whole suite, so they are checked
without doing so: ``make TARGET`` runs as ``make -n TARGET`` in the repository (the target
exists and its recipe expands), and ``pip install -e SPEC`` checks that SPEC's extras are
declared in pyproject.toml.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "docs" / "user-guide.md"]
_FENCE = re.compile(r"^```(?P<lang>[a-z]*)\n(?P<body>.*?)^```", re.S | re.M)


#: Sections whose snippets need more than a fresh folder, and the test that runs them there:
#: (page, heading) -> test. The server section needs a running server.
ELSEWHERE = {("README.md", "## A data steward's server"): "tests/serve/test_docs_serve.py"}


def _run_elsewhere(page: Path, text: str, start: int) -> bool:
    for (name, heading), _ in ELSEWHERE.items():
        if page.name == name and heading in text:
            begin = text.index(heading)
            end = text.find("\n## ", begin + 1)
            if begin <= start < (len(text) if end < 0 else end):
                return True
    return False


def _matches(page: Path):
    text = page.read_text()
    for k, match in enumerate(_FENCE.finditer(text)):
        if not _run_elsewhere(page, text, match.start()):
            yield k, match


def _snippets() -> list[tuple[str, str]]:
    out = []
    for page in PAGES:
        for k, match in _matches(page):
            if match.group("lang") in ("bash", "console", "sh"):
                out.append((f"{page.name}-{k}", match.group("body")))
    return out


def _python_snippets() -> list[tuple[str, str]]:
    out = []
    for page in PAGES:
        for k, match in _matches(page):
            if match.group("lang") == "python" and ">>>" not in match.group("body"):
                out.append((f"{page.name}-{k}", match.group("body")))
    return out


_MAKE = f"""#!/bin/sh
exec {shutil.which("make") or "/usr/bin/make"} -n -C {ROOT} "$@"
"""
_PIP = f"""#!{sys.executable}
import re, sys, tomllib
args = sys.argv[1:]
assert args[:2] == ["install", "-e"], args
spec = args[2]
extras = re.findall(r"\\[([^\\]]*)\\]", spec)
declared = tomllib.load(open("{ROOT / "pyproject.toml"}", "rb"))["project"]["optional-dependencies"]
for extra in ",".join(extras).split(","):
    assert not extra or extra in declared, extra
"""


@pytest.fixture
def workdir(tmp_path):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x1": rng.uniform(0, 10, 1000), "x2": rng.uniform(0, 1, 1000)})
    frame["y"] = np.clip(1 + 0.5 * frame["x1"] - 2 * frame["x2"] + rng.normal(0, 1, 1000), -5, 5)
    frame.to_csv(tmp_path / "data.csv", index=False)
    shims = tmp_path / ".shims"
    shims.mkdir()
    for name, text in {"make": _MAKE, "pip": _PIP}.items():
        (shims / name).write_text(text)
        (shims / name).chmod(0o755)
    return tmp_path


@pytest.mark.parametrize("name, body", _snippets(), ids=[n for n, _ in _snippets()])
def test_shell_snippet_runs(workdir, name, body):
    script = "\n".join(line.removeprefix("$ ") for line in body.splitlines())
    env = dict(os.environ, MPLBACKEND="Agg")
    env["PATH"] = os.pathsep.join(
        [str(workdir / ".shims"), str(Path(sys.executable).parent), env.get("PATH", "")]
    )
    result = subprocess.run(
        ["bash", "-e", "-c", script], cwd=workdir, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, f"{name}:\n{script}\n{result.stderr[-2000:]}"
    assert "error:" not in result.stderr, result.stderr


def test_python_snippets_run(workdir, monkeypatch):
    # Python blocks without ">>>" (the doctest ones run in tests/test_docs.py); today every
    # block of these pages is a doctest, and this test runs any that is not (a loop rather
    # than a parametrisation, which would be collected as a skip while the list is empty).
    monkeypatch.chdir(workdir)
    for name, body in _python_snippets():
        exec(compile(body, name, "exec"), {})


def test_every_snippet_is_collected():
    assert len(_snippets()) >= 7  # README: quick start, fit, install, privacy, budget; guide: 2
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["name"] == "dpfit"


def test_the_sections_run_elsewhere_are_run_there():
    for (page, heading), test in ELSEWHERE.items():
        assert heading in (ROOT / page).read_text(), (page, heading)
        assert heading in (ROOT / test).read_text(), (heading, test)
