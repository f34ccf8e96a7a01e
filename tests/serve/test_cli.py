"""``dpfit serve``: init, datasets, analysts, audit from the command line; one-line errors."""

from __future__ import annotations

import json
import stat
import subprocess
import sys

import pytest

from dpfit.cli import build_parser, main
from dpfit.serve import open_site
from dpfit.serve.auth import authenticate

from .conftest import SCHEMA, synthetic


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    synthetic(300).to_csv("data.csv", index=False)
    (tmp_path / "schema.toml").write_text("rho = 2\ndelta = 1e-4\n" + SCHEMA)
    return tmp_path


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_a_steward_sets_up_a_site(files, capsys):
    status, out, _ = run(capsys, "serve", "init", "site")
    assert status == 0 and "token of the steward (shown once" in out
    steward = out.split("only its hash is stored): ")[1].split()[0]
    assert stat.S_IMODE((files / "site" / "serve.toml").stat().st_mode) == 0o600
    status, out, _ = run(
        capsys,
        "serve",
        "dataset",
        "add",
        "site",
        "survey",
        "--data",
        "data.csv",
        "--schema",
        "schema.toml",
    )
    assert status == 0 and "n = 300 records, rho = 2, delta = 0.0001" in out
    status, out, _ = run(
        capsys,
        "serve",
        "analyst",
        "add",
        "site",
        "alice",
        "--dataset",
        "survey",
        "--rho",
        "0.5",
        "--token-file",
        "alice.token",
    )
    assert "written to alice.token" in out
    assert stat.S_IMODE((files / "alice.token").stat().st_mode) == 0o600
    site = open_site("site")
    assert authenticate(site, steward).is_steward
    assert authenticate(site, (files / "alice.token").read_text().strip()).name == "alice"
    run(capsys, "serve", "analyst", "grant", "site", "alice", "--dataset", "survey", "--rho", "1")
    _, out, _ = run(capsys, "serve", "analyst", "list", "site")
    assert "alice" in out and "survey 0 of 1.5" in out
    _, out, _ = run(capsys, "serve", "dataset", "pause", "site", "survey")
    assert "'survey' is paused" in out
    _, out, _ = run(capsys, "serve", "dataset", "list", "site")
    assert "paused" in out and "1.5" in out
    run(capsys, "serve", "analyst", "revoke", "site", "alice")
    assert authenticate(site, (files / "alice.token").read_text().strip()) is None
    _, out, _ = run(capsys, "serve", "audit", "site", "--format", "json")
    actions = [e["action"] for e in json.loads(out)["events"]]
    assert actions == [
        "dataset-registered",
        "analyst-created",
        "share-granted",
        "share-granted",
        "dataset-paused",
        "analyst-revoked",
    ]


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["serve", "init", "data.csv"], "exists and is not empty"),
        (["serve", "dataset", "list", "nowhere"], "is not a dpfit serve site"),
        (
            [
                "serve",
                "dataset",
                "add",
                "site",
                "bad name",
                "--data",
                "data.csv",
                "--schema",
                "schema.toml",
            ],
            "dataset name must be",
        ),
        (
            [
                "serve",
                "dataset",
                "add",
                "site",
                "s",
                "--data",
                "none.csv",
                "--schema",
                "schema.toml",
            ],
            "data file not found",
        ),
        (
            [
                "serve",
                "dataset",
                "add",
                "site",
                "s",
                "--data",
                "data.csv",
                "--schema",
                "schema.toml",
                "--delta",
                "0.01",
            ],
            "delta must be below 1/n",
        ),
        (["serve", "analyst", "add", "site", "bob", "--dataset", "survey"], "together"),
        (
            ["serve", "analyst", "grant", "site", "nobody", "--dataset", "survey", "--rho", "1"],
            "no analyst named 'nobody'",
        ),
        (
            ["serve", "analyst", "grant", "site", "alice", "--dataset", "survey", "--rho", "5"],
            "left to share out",
        ),
    ],
)
def test_mistakes_are_one_line(files, capsys, argv, fragment):
    run(capsys, "serve", "init", "site")
    run(
        capsys,
        "serve",
        "dataset",
        "add",
        "site",
        "survey",
        "--data",
        "data.csv",
        "--schema",
        "schema.toml",
    )
    run(capsys, "serve", "analyst", "add", "site", "alice")
    status, _, err = run(capsys, *argv)
    assert status == 2 and fragment in err and len(err.strip().splitlines()) == 1, err


def test_serve_dir_means_serve_start_dir():
    parser = build_parser()
    for argv in (["serve", "site"], ["serve", "start", "site"]):
        args = parser.parse_args([*argv, "--port", "9000"])
        assert args.action == "start" and args.site == "site" and args.port == 9000
    assert parser.parse_args(["serve", "init", "site"]).action == "init"


def test_help_imports_no_server_library():
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "dpfit", "serve", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "dpfit serve DIR" in result.stdout
    imported = {
        line.rsplit("|", 1)[-1].strip().split(".")[0]
        for line in result.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert not imported & {"starlette", "sqlalchemy", "uvicorn", "pandas"}
