"""Fixtures of the harness tests: the ``harness_experiments`` module, importable by name."""

import importlib
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
