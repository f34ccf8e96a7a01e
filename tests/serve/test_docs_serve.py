"""README's "## A data steward's server" and docs/serve.md, run against a real server.

README's section runs as a reader would: the steward's shell block in a fresh folder holding
the quick start's ``data.csv``, its ``dpfit serve site`` line as a server on a free port, then
the analyst's Python block against it. docs/serve.md: every command line parses (``dpfit``
with the CLI's parser, the benchmark with its own, ``python -m pytest`` names files that
exist), its schema example is a valid schema, and its Python block runs against a server.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpfit.cli import build_parser
from dpfit.serve.schema import parse_schema
from dpfit.serve.testing import running_server

from .conftest import build_site

ROOT = Path(__file__).resolve().parents[2]
HEADING = "## A data steward's server"
_FENCE = re.compile(r"^```(?P<lang>[a-z]*)\n(?P<body>.*?)^```", re.S | re.M)
#: The address the pages use; the tests' servers listen on a free port instead.
ADDRESS = "http://127.0.0.1:8000"

pytestmark = pytest.mark.filterwarnings("ignore::dpfit.PrivacyWarning")


def _blocks(text: str) -> list[tuple[str, str]]:
    return [(m["lang"], m["body"]) for m in _FENCE.finditer(text)]


def _section() -> str:
    text = (ROOT / "README.md").read_text()
    begin = text.index(HEADING)
    return text[begin : text.index("\n## ", begin + 1)]


def _run_python(code: str, url: str, folder: Path, monkeypatch) -> str:
    monkeypatch.chdir(folder)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code.replace(ADDRESS, url), "docs block", "exec"), {"__name__": "docs"})
    return out.getvalue()


def test_the_readme_first_five_minutes(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)  # the quick start's data.csv (tests/test_docs_commands.py)
    frame = pd.DataFrame({"x1": rng.uniform(0, 10, 1000), "x2": rng.uniform(0, 1, 1000)})
    frame["y"] = np.clip(1 + 0.5 * frame["x1"] - 2 * frame["x2"] + rng.normal(0, 1, 1000), -5, 5)
    frame.to_csv(tmp_path / "data.csv", index=False)
    (shell, steward), (python, analyst) = _blocks(_section())
    assert (shell, python) == ("bash", "python")
    setup, serve = steward.split("\ndpfit serve site ", 1)
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "PYTHONPATH": ":".join(sys.path),
    }
    done = subprocess.run(
        ["bash", "-e", "-c", setup], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "token of the steward (shown once" in done.stdout
    args = build_parser().parse_args(shlex.split("serve site " + serve, comments=True))
    assert (args.action, args.site, args.port) == ("start", "site", None)  # the default 8000
    with running_server(tmp_path / args.site) as server:
        printed = _run_python(analyst, server.url, tmp_path, monkeypatch)
    assert "'x1': {'type': 'numeric', 'bounds': [0.0, 10.0]}" in printed
    assert "'terms': ['Intercept', 'x1', 'x2']" in printed
    assert "DP linear regression results" in printed and "rho = 0.1" in printed


def _bench_parser():
    spec = importlib.util.spec_from_file_location(
        "bench_serve", ROOT / "benchmarks" / "bench_serve.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build_parser()


def test_the_serve_page_commands_parse_and_its_schema_is_valid():
    blocks = _blocks((ROOT / "docs" / "serve.md").read_text())
    commands = [
        line.strip()
        for lang, body in blocks
        if lang == "bash"
        for line in body.replace("\\\n", " ").splitlines()
        if line.strip()
    ]
    assert len(commands) >= 15
    for command in commands:
        argv = shlex.split(command, comments=True)
        if argv[0] == "dpfit":
            assert build_parser().parse_args(argv[1:]).command == "serve", command
        elif argv[:2] == ["python", "benchmarks/bench_serve.py"]:
            _bench_parser().parse_args(argv[2:])
        elif argv[:3] == ["python", "-m", "pytest"]:
            assert (ROOT / argv[3]).exists(), command
        else:
            pytest.fail(f"docs/serve.md: no check for {command!r}")
    (schema,) = [body for lang, body in blocks if lang == "toml"]
    parsed = parse_schema(tomllib.loads(schema))
    assert parsed.privacy_unit == "person_id" and parsed.column("smoker").bounds == (0.0, 1.0)


def test_the_serve_page_python_runs(tmp_path, monkeypatch):
    fixture = build_site(tmp_path, shares={"alice": 1.0})
    (tmp_path / "alice.token").write_text(fixture.tokens["alice"] + "\n")
    (code,) = [
        body for lang, body in _blocks((ROOT / "docs" / "serve.md").read_text()) if lang == "python"
    ]
    with running_server(fixture.folder) as server:
        printed = _run_python(code, server.url, tmp_path, monkeypatch)
    assert "{'type': 'numeric', 'bounds': [0.0, 10.0]" in printed
    assert "DP linear regression results" in printed
    assert "released True {'Intercept'" in printed


def test_the_serve_page_links_and_figures_exist():
    page = ROOT / "docs" / "serve.md"
    targets = re.findall(r"\]\(([^)#]+)\)", page.read_text())
    local = [t for t in targets if not t.startswith(("http://", "https://"))]
    assert len(local) >= 3
    for target in local:
        assert (page.parent / target).exists(), target
