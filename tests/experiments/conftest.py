"""Fixtures of the harness tests: the ``harness_experiments`` module, importable by name."""

import importlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
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


def study_claim(study: str, name: str):
    """The claim ``name`` of the registered experiment ``study``."""
    from dpfit.experiments import get

    (claim,) = [c for c in get(study).claims if c.name == name]
    return claim


def coverage_trials(cells, coverage, *, seed, warned=0.0, reps=40, k=4, width=1.1, row=None):
    """A table of ``reps`` made-up trials per cell of a coverage study, for its negative
    controls: each of the k intervals covers with probability ``coverage`` and has width
    ``width``, a fit warned with probability ``warned``, and (with ``row``) the row-level
    control interval of a clustered study covers with probability ``row``."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    rows = []
    for cell in cells:
        for _ in range(reps):
            covers = rng.random(k) < coverage
            out = {**cell, "warned": float(rng.random() < warned), "k": float(k)}
            out.update({f"covers_{j}": float(c) for j, c in enumerate(covers)})
            out.update({f"width_{j}": width for j in range(k)})
            if row is not None:
                out["row_covers_slope"] = float(rng.random() < row)
            rows.append(out)
    return pd.DataFrame(rows)


@pytest.fixture
def assert_docs_triage_table():
    """:func:`_docs_triage_table` for a test that compares a docs page with its table."""
    return _docs_triage_table


def _docs_triage_table(table, text: str, heading: str) -> None:
    """The triage table under ``heading`` in the docs ``text`` is ``table`` (realdata_tables'
    triage_table), row by row as the docs print it."""
    section = text.split(heading, 1)[1].split("\n#", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 7 and cells[0] in table["warning"].tolist():
            rows[cells[0]] = cells
    assert set(rows) == set(table["warning"])
    for _, r in table.iterrows():
        doc = rows[r["warning"]]
        assert doc[1] == r["shown as"], doc
        assert int(doc[2]) == r["fits in covering cells"], doc
        assert doc[3] == f"{r['false alarms']:.3f}", doc
        assert doc[4] == ("--" if np.isnan(r["target"]) else f"{r['target']:.3f}"), doc
        assert int(doc[5]) == r["fits in cells that miss"], doc
        assert doc[6] == ("--" if np.isnan(r["hits"]) else f"{r['hits']:.3f}"), doc
