"""Every registered claim has a negative control: a test that makes it fail.

A claim that cannot fail tests nothing. Each negative-control test carries the marker
``@pytest.mark.negative_control("<experiment>", "<claim>", ...)`` naming the claims it feeds a
results table that violates the paper's statement (and asserts that the claim fails); most
also show that a table which satisfies the statement passes. ``pytest -m negative_control``
runs them all. This module reads the markers from the test sources (no import, so the test
modules' own import mode does not matter) and checks them against the catalogue in both
directions: no claim without a control, no control naming a claim that does not exist.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def _is_marker(node: ast.expr) -> bool:
    """``pytest.mark.negative_control(...)``."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "negative_control"
    )


def _declared() -> dict[tuple[str, str], list[str]]:
    """(experiment, claim) -> the tests whose marker names it."""
    found: dict[tuple[str, str], list[str]] = {}
    for path in sorted(TESTS.rglob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if not isinstance(node, ast.FunctionDef):
                continue
            for deco in node.decorator_list:
                if not _is_marker(deco):
                    continue
                args = [ast.literal_eval(a) for a in deco.args]
                assert len(args) >= 2, f"{path.name}::{node.name}: name an experiment and a claim"
                for claim in args[1:]:
                    found.setdefault((args[0], claim), []).append(f"{path.name}::{node.name}")
    return found


def _catalogue() -> set[tuple[str, str]]:
    """Every (experiment, claim) a fresh interpreter registers, as ``dpfit reproduce`` sees."""
    code = (
        "import json; from dpfit.experiments import get, names; "
        "print(json.dumps([[n, c.name] for n in names() for c in get(n).claims]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300
    )
    return {tuple(pair) for pair in json.loads(done.stdout)}


def test_every_claim_has_a_negative_control():
    declared, catalogue = _declared(), _catalogue()
    missing = sorted(catalogue - set(declared))
    assert not missing, f"claims without a negative-control test: {missing}"


def test_every_negative_control_names_a_registered_claim():
    declared, catalogue = _declared(), _catalogue()
    stale = {pair: tests for pair, tests in declared.items() if pair not in catalogue}
    assert not stale, f"negative controls naming no registered claim: {stale}"
