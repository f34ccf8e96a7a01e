"""A site: the folder a steward runs ``dpfit serve`` from, its settings and its database.

``dpfit serve init DIR`` creates ``DIR/serve.toml`` (settings, readable by its owner only)
and the database (by default ``DIR/serve.sqlite``), and prints the steward's token once.
``serve.toml``::

    database = "sqlite:///serve.sqlite"    # a relative SQLite path is inside the folder
    host = "127.0.0.1"                     # loopback only unless changed
    port = 8000

    [limits]
    max_formula_length = 1000              # characters
    max_request_bytes = 65536              # bytes of a request body
    max_terms = 100                        # coefficients of one fit
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from . import db
from .data import DataCache
from .fit_request import Limits
from .tokens import new_token, token_hash

__all__ = ["CONFIG", "Site", "init_site", "now", "open_site"]

#: The settings file of a site folder.
CONFIG = "serve.toml"
_DEFAULT_DATABASE = "sqlite:///serve.sqlite"


def now() -> str:
    """The current UTC time as sortable ISO 8601 text (what the tables store)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(kw_only=True, eq=False)
class Site:
    """An open site: its engine, limits and the cache of loaded datasets.

    Parameters
    ----------
    engine : sqlalchemy.Engine
    limits : Limits
    path : Path, optional
        The site folder (None for a site opened on a bare database).
    host, port : str, int
        Where ``dpfit serve`` listens by default.
    random_state : int, optional
        **For tests only**: seeds every fit's noise, so a test can compare two fits'
        releases. A seeded fit is not private; its summary says "Seeded noise: yes".
    """

    engine: sa.Engine
    limits: Limits = field(default_factory=Limits)
    path: Path | None = None
    host: str = "127.0.0.1"
    port: int = 8000
    random_state: int | None = None
    cache: DataCache = field(default_factory=DataCache)

    def steward_hash(self) -> str:
        """The SHA-256 of the steward's token."""
        with self.engine.begin() as conn:
            value = conn.execute(
                sa.select(db.meta.c.value).where(db.meta.c.key == "steward_token_sha256")
            ).scalar()
        if value is None:
            raise ValueError("the database has no steward token: run 'dpfit serve init'")
        return value


def _resolve(url: str, folder: Path) -> str:
    """A relative SQLite path is inside the site folder."""
    prefix = "sqlite:///"
    if url.startswith(prefix) and not url[len(prefix) :].startswith("/"):
        return prefix + str((folder / url[len(prefix) :]).resolve())
    return db.normalise_url(url)


def _limits(table: Any) -> Limits:
    if table is None:
        return Limits()
    known = {f.name for f in fields(Limits)}
    if not isinstance(table, dict) or set(table) - known:
        raise ValueError(f"{CONFIG}: [limits] takes {sorted(known)}")
    for key, value in table.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{CONFIG}: limits.{key} must be a positive integer")
    return Limits(**table)


def open_site(path: str | Path, *, database: str | None = None) -> Site:
    """Open the site folder ``path`` (``database`` overrides its settings' database URL).

    Raises
    ------
    ValueError
        No ``serve.toml`` in ``path``, a malformed setting, or a database that is not a
        dpfit serve database of this version.
    """
    folder = Path(path)
    config = folder / CONFIG
    if not config.is_file():
        raise ValueError(f"{folder} is not a dpfit serve site (no {CONFIG}): run dpfit serve init")
    settings = tomllib.loads(config.read_text(encoding="utf-8"))
    unknown = set(settings) - {"database", "host", "port", "limits"}
    if unknown:
        raise ValueError(f"{config}: unknown settings {sorted(unknown)}")
    url = _resolve(database or settings.get("database", _DEFAULT_DATABASE), folder)
    engine = db.make_engine(url)
    db.check_schema(engine)
    port = settings.get("port", 8000)
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise ValueError(f"{config}: port must be an integer in 1..65535")
    return Site(
        engine=engine,
        limits=_limits(settings.get("limits")),
        path=folder,
        host=str(settings.get("host", "127.0.0.1")),
        port=port,
    )


def init_site(path: str | Path, *, database: str | None = None) -> tuple[Site, str]:
    """Create a site folder and its database; return the site and the steward's token.

    The token is shown once: only its SHA-256 is stored. ``database`` (a SQLAlchemy URL such
    as ``postgresql://user@host/db``) replaces the default SQLite file in the folder.

    Raises
    ------
    ValueError
        ``path`` exists and is not an empty folder, or the database already holds a site.
    """
    folder = Path(path)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise ValueError(f"{folder} exists and is not empty: choose a new folder")
    folder.mkdir(parents=True, exist_ok=True)
    url = database or _DEFAULT_DATABASE
    engine = db.make_engine(_resolve(url, folder))
    db.create_schema(engine)
    token = new_token()
    with engine.begin() as conn:
        taken = conn.execute(
            sa.select(db.meta.c.value).where(db.meta.c.key == "steward_token_sha256")
        ).scalar()
        if taken is not None:
            raise ValueError("the database already belongs to a dpfit serve site")
        conn.execute(sa.insert(db.meta).values(key="steward_token_sha256", value=token_hash(token)))
    text = (
        "# dpfit serve site settings (docs/serve.md)\n"
        f"database = {json.dumps(url)}\n"
        + 'host = "127.0.0.1"\nport = 8000\n\n[limits]\n'
        + "".join(f"{f.name} = {f.default}\n" for f in fields(Limits))
    )
    config = folder / CONFIG
    descriptor = os.open(config, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)
    return open_site(folder), token
