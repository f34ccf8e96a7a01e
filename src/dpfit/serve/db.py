"""The service's tables (SQLAlchemy Core) and the engine that opens them, on SQLite or PostgreSQL.

Every table is declared once here and created by ``metadata.create_all`` (version 1 of the
schema needs no migration tool); a row of ``dpfit_meta`` records the schema version, and a
database written by another version is refused on opening rather than misread.

Privacy amounts are integers: rho in units of 10^-12 (:mod:`dpfit.serve.units`), so sums and
comparisons of charges are exact on both backends (``BIGINT``), whatever the order of
concurrent requests.

Write transactions lock what they read. On PostgreSQL a charge reads the dataset's row and the
analyst's share with row locks (:mod:`dpfit.serve.budgets`); on SQLite every transaction starts with
``BEGIN IMMEDIATE`` (one writer at a time, taken before the first read), the recipe of
SQLAlchemy's "Serializable isolation / Savepoints / Transactional DDL" section for pysqlite
(https://docs.sqlalchemy.org/en/20/dialects/sqlite.html#pysqlite-serializable). SQLite runs
in WAL mode with ``synchronous=FULL``, so a committed charge survives a killed process and a
power cut.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

__all__ = [
    "SCHEMA_VERSION",
    "analysts",
    "check_schema",
    "create_schema",
    "datasets",
    "events",
    "make_engine",
    "meta",
    "metadata",
    "normalise_url",
    "releases",
    "sessions",
    "shares",
]

#: Version of the tables below; bump it (and write the migration) when they change.
SCHEMA_VERSION = 1

metadata = sa.MetaData()

#: Key-value facts about the service: the schema version, the steward token's hash.
meta = sa.Table(
    "dpfit_meta",
    metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)

#: One row per registered dataset: where its data live, its public schema and its budget.
datasets = sa.Table(
    "datasets",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("name", sa.String(64), nullable=False, unique=True),
    sa.Column("data_path", sa.Text, nullable=False),
    sa.Column("data_sha256", sa.String(64), nullable=False),
    sa.Column("schema_json", sa.Text, nullable=False),
    sa.Column("n", sa.BigInteger, nullable=False),
    sa.Column("delta", sa.Float, nullable=False),
    sa.Column("total_units", sa.BigInteger, nullable=False),
    sa.Column("allocated_units", sa.BigInteger, nullable=False),
    sa.Column("spent_units", sa.BigInteger, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),  # open | paused | closed
    sa.Column("created_at", sa.String(32), nullable=False),
)

#: Analysts: a name and the SHA-256 of their token (the token itself is never stored).
analysts = sa.Table(
    "analysts",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("name", sa.String(64), nullable=False, unique=True),
    sa.Column("token_sha256", sa.String(64), nullable=False, unique=True),
    sa.Column("created_at", sa.String(32), nullable=False),
    sa.Column("revoked_at", sa.String(32)),
)

#: An analyst's share of a dataset's budget, carved from its total.
shares = sa.Table(
    "shares",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("analyst_id", sa.Integer, sa.ForeignKey("analysts.id"), nullable=False),
    sa.Column("dataset_id", sa.Integer, sa.ForeignKey("datasets.id"), nullable=False),
    sa.Column("total_units", sa.BigInteger, nullable=False),
    sa.Column("spent_units", sa.BigInteger, nullable=False),
    sa.UniqueConstraint("analyst_id", "dataset_id"),
)

#: Every fit request: refused (nothing charged), or charged then released, failed or
#: interrupted (the charge stands). This table is the audit log.
releases = sa.Table(
    "releases",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("analyst_id", sa.Integer, sa.ForeignKey("analysts.id"), nullable=False),
    sa.Column("dataset_id", sa.Integer, sa.ForeignKey("datasets.id")),
    sa.Column("model", sa.String(16), nullable=False),
    sa.Column("formula", sa.Text, nullable=False),
    sa.Column("request_json", sa.Text, nullable=False),
    sa.Column("rho", sa.Float),
    sa.Column("charged_units", sa.BigInteger, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("error", sa.Text),
    sa.Column("warnings_json", sa.Text),
    sa.Column("result_json", sa.Text),
    sa.Column("result_sha256", sa.String(64)),
    sa.Column("created_at", sa.String(32), nullable=False),
    sa.Column("finished_at", sa.String(32)),
    sa.Index("releases_by_analyst", "analyst_id", "created_at"),
)

#: The steward's actions (registrations, shares, revocations, pauses), for the audit log.
events = sa.Table(
    "events",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("at", sa.String(32), nullable=False),
    sa.Column("action", sa.String(32), nullable=False),
    sa.Column("detail", sa.Text, nullable=False),
)

#: Browser sessions: the SHA-256 of the cookie, who it is, and the form (CSRF) token.
sessions = sa.Table(
    "sessions",
    metadata,
    sa.Column("id_sha256", sa.String(64), primary_key=True),
    sa.Column("role", sa.String(16), nullable=False),  # analyst | steward
    sa.Column("analyst_id", sa.Integer, sa.ForeignKey("analysts.id")),
    sa.Column("csrf", sa.String(64), nullable=False),
    sa.Column("expires_at", sa.String(32), nullable=False),
)


def normalise_url(url: str) -> str:
    """``postgresql://...`` names the psycopg 3 driver (SQLAlchemy's default is psycopg2)."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.isolation_level = None  # SQLAlchemy emits BEGIN itself (below)
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=FULL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=60000")
    cursor.close()


def _sqlite_begin(connection: sa.Connection) -> None:
    connection.exec_driver_sql("BEGIN IMMEDIATE")


def make_engine(url: str) -> sa.Engine:
    """An engine for ``url`` with the locking described in the module docstring."""
    url = normalise_url(url)
    if url.startswith("sqlite"):
        engine = sa.create_engine(
            url, pool_size=16, max_overflow=32, connect_args={"check_same_thread": False}
        )
        sa.event.listen(engine, "connect", _sqlite_pragmas)
        sa.event.listen(engine, "begin", _sqlite_begin)
        return engine
    return sa.create_engine(url, pool_size=16, max_overflow=32, pool_pre_ping=True)


def create_schema(engine: sa.Engine) -> None:
    """Create every table and record :data:`SCHEMA_VERSION` (a new database only)."""
    metadata.create_all(engine)
    with engine.begin() as conn:
        found = conn.execute(sa.select(meta.c.value).where(meta.c.key == "schema_version"))
        if found.scalar() is None:
            conn.execute(sa.insert(meta).values(key="schema_version", value=str(SCHEMA_VERSION)))


def check_schema(engine: sa.Engine) -> None:
    """Refuse a database that is not a dpfit serve database of this schema version."""
    try:
        with engine.begin() as conn:
            found = conn.execute(
                sa.select(meta.c.value).where(meta.c.key == "schema_version")
            ).scalar()
    except (sa.exc.OperationalError, sa.exc.ProgrammingError) as exc:
        raise ValueError(
            "the database has no dpfit serve tables: create it with 'dpfit serve init DIR'"
        ) from exc
    if found != str(SCHEMA_VERSION):
        raise ValueError(
            f"the database has schema version {found}, this dpfit expects {SCHEMA_VERSION}"
        )
