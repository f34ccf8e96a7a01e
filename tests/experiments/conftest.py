"""Fixtures of the harness tests: the ``harness_experiments`` module, importable by name."""

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@pytest.fixture
def harness(monkeypatch):
    """The harness experiments module, with its call counter reset."""
    monkeypatch.syspath_prepend(str(HERE))
    module = importlib.import_module("harness_experiments")
    module.CALLS.clear()
    module.STOP_AFTER[0] = None
    yield module
    module.STOP_AFTER[0] = None


@pytest.fixture
def subprocess_env(monkeypatch):
    """Environment for ``python -m dpfit`` subprocesses that can import the harness module."""
    import os

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))
    env["MPLBACKEND"] = "Agg"
    return env


@pytest.fixture(scope="session")
def catalog_names():
    """Experiment names that a fresh interpreter gets from ``dpfit.experiments.names()``.

    Experiments register themselves when their module is imported, so inside a test worker
    ``names()`` also lists whatever modules earlier tests happened to import. A fresh process
    sees only what ``dpfit.experiments.catalog`` imports, as ``dpfit reproduce`` does.
    """
    code = "import json; from dpfit.experiments import names; print(json.dumps(names()))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300
    )
    return json.loads(done.stdout)
