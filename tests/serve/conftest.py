"""Fixtures of the dpfit serve tests: sites with data, in-process clients, PostgreSQL.

A site is built with the steward's functions (the same the CLI and admin page call). The
PostgreSQL tests use ``$DPFIT_TEST_POSTGRES_URL`` (``.ci/run`` starts a throwaway cluster
with ``.ci/postgres``) or start one themselves when Debian's ``postgresql`` is installed, and
skip loudly otherwise.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from starlette.testclient import TestClient

from dpfit.serve import create_analyst, create_app, grant_share, init_site, register_dataset
from dpfit.serve.site import Site

ROOT = Path(__file__).resolve().parents[2]

SCHEMA = """\
description = "Synthetic survey: wages, schooling, region"

[columns.x1]
type = "numeric"
bounds = [0, 10]
description = "years of schooling beyond primary"

[columns.x2]
type = "numeric"
bounds = [0, 1]

[columns.z]
type = "numeric"
bounds = [-4, 4]
description = "an instrument for x1"

[columns.g]
type = "categorical"
levels = ["a", "b", "c"]

[columns.y]
type = "numeric"
bounds = [-5, 10]
"""


def synthetic(n: int, seed: int = 0) -> pd.DataFrame:
    """y = 1 + 0.5 x1 - 2 x2 + noise; x1 depends on the instrument z."""
    rng = np.random.default_rng(seed)
    z = rng.normal(0, 1, n)
    x1 = np.clip(5 + 1.5 * z + rng.normal(0, 1, n), 0, 10)
    x2 = rng.uniform(0, 1, n)
    g = rng.choice(["a", "b", "c"], n)
    y = np.clip(1 + 0.5 * x1 - 2 * x2 + rng.normal(0, 1, n), -5, 10)
    return pd.DataFrame({"x1": x1, "x2": x2, "z": z, "g": g, "y": y})


@dataclass
class Fixture:
    """A site with one dataset ``survey`` and analysts with shares of it."""

    site: Site
    folder: Path
    steward: str
    tokens: dict[str, str]
    data: Path
    schema: Path

    def client(self, token: str | None = None, *, raise_errors: bool = True) -> TestClient:
        """An in-process HTTP client of the site's app, sending ``token`` if given
        (``raise_errors=False``: a server error is a 500 answer, not an exception)."""
        client = TestClient(create_app(self.site), raise_server_exceptions=raise_errors)
        if token is not None:
            client.headers["Authorization"] = f"Bearer {token}"
        return client


def build_site(
    folder: Path,
    *,
    database: str | None = None,
    n: int = 2000,
    rho: float = 4.0,
    shares: dict[str, float] | None = None,
    frame: pd.DataFrame | None = None,
) -> Fixture:
    """A new site in ``folder`` with dataset ``survey`` and analysts with ``shares``."""
    folder.mkdir(parents=True, exist_ok=True)
    data, schema = folder / "survey.csv", folder / "schema.toml"
    (synthetic(n) if frame is None else frame).to_csv(data, index=False)
    schema.write_text(SCHEMA)
    site, steward = init_site(folder / "site", database=database)
    register_dataset(site, "survey", data=data, schema=schema, rho=rho, delta=1e-6)
    tokens = {}
    for name, share in (shares or {"alice": 1.0, "bob": 1.0}).items():
        tokens[name] = create_analyst(site, name)
        grant_share(site, name, "survey", share)
    return Fixture(site, folder / "site", steward, tokens, data, schema)


@pytest.fixture
def served(tmp_path) -> Fixture:
    """A SQLite site: dataset ``survey`` (n = 2000), analysts alice and bob with rho 1 each."""
    return build_site(tmp_path)


@pytest.fixture(scope="session")
def postgres_cluster():
    """The URL of a PostgreSQL server the tests may create databases on."""
    url = os.environ.get("DPFIT_TEST_POSTGRES_URL")
    if url:
        yield url
        return
    initdb = shutil.which("initdb") or next(
        (str(p) for p in sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))), None
    )
    if initdb is None:
        pytest.skip(
            "POSTGRESQL TESTS SKIPPED: no $DPFIT_TEST_POSTGRES_URL and no initdb "
            "(apt-get install -y postgresql); dpfit serve was NOT tested on PostgreSQL"
        )
    # Not under pytest's tmp folder: as root, the cluster runs as 'postgres', which must be
    # able to reach its folder.
    folder = tempfile.mkdtemp(prefix="dpfit-postgres-")
    script = str(ROOT / ".ci" / "postgres")
    started = subprocess.run([script, "start", folder], capture_output=True, text=True, check=True)
    try:
        yield started.stdout.strip().partition("=")[2]
    finally:
        subprocess.run([script, "stop", folder], check=False)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def postgres_url(postgres_cluster):
    """A fresh, empty PostgreSQL database (dropped afterwards)."""
    import psycopg

    name = f"dpfit_{uuid.uuid4().hex[:12]}"
    admin = postgres_cluster
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    yield admin.rsplit("/", 1)[0] + f"/{name}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request) -> str | None:
    """None (the site's SQLite file), then a fresh PostgreSQL database."""
    return None if request.param == "sqlite" else request.getfixturevalue("postgres_url")


@pytest.fixture
def served_on(tmp_path, database) -> Fixture:
    """:func:`served` on SQLite, then on PostgreSQL."""
    return build_site(tmp_path, database=database)
