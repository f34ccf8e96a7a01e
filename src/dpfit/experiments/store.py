"""The trial store: one SQLite row per completed trial, committed as soon as it finishes.

A row is keyed by (experiment, canonical params JSON, replicate, seed, code version), so a
killed run loses at most the trials in flight and a rerun of the same code skips every trial
already stored (resume). The database runs in WAL mode: a report can read it while a run
writes. Only the standard library's :mod:`sqlite3` is used.

Trial keys
----------
``canonical_params`` writes a parameter dict as JSON with sorted keys, no whitespace and numpy
scalars converted to Python numbers, so the same grid point always has the same key whatever
the order its dict was written in. ``code_version`` is ``"<dpfit version>+<digest>"``, the
digest being a SHA-256 over the paths and bytes of every ``.py`` file of the installed dpfit
package: any code change gives new keys, so stored results never outlive the code that made
them (the old rows stay in the file, under their own version).
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
import sqlite3
import time
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["ResultStore", "canonical_params", "code_version"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS trials (
    experiment   TEXT    NOT NULL,
    params       TEXT    NOT NULL,
    replicate    INTEGER NOT NULL,
    seed         INTEGER NOT NULL,
    code_version TEXT    NOT NULL,
    metrics      TEXT    NOT NULL,
    seconds      REAL    NOT NULL,
    finished_at  REAL    NOT NULL,
    PRIMARY KEY (experiment, params, replicate, seed, code_version)
)
"""

#: Column names the results table reserves beside the parameters and metrics.
RESERVED = ("replicate", "seed")


def _plain(value: Any) -> Any:
    """JSON fallback for numpy scalars and arrays (other types are an error)."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"parameter values must be JSON-serialisable, got {type(value).__name__}")


def canonical_params(params: Mapping[str, Any]) -> str:
    """The canonical JSON text of a parameter dict (sorted keys, compact, finite numbers)."""
    if not isinstance(params, Mapping):
        raise TypeError(f"params must be a mapping, got {type(params).__name__}")
    try:
        return json.dumps(
            dict(params), sort_keys=True, separators=(",", ":"), allow_nan=False, default=_plain
        )
    except ValueError as exc:
        raise ValueError("parameter values must be finite numbers, strings or lists") from exc


@cache
def code_version() -> str:
    """``"<dpfit version>+<12 hex digits>"``: a digest of the source of the dpfit package."""
    from .._version import __version__

    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
    return f"{__version__}+{digest.hexdigest()[:12]}"


def _check_metrics(metrics: Any, params: Mapping[str, Any]) -> dict[str, float]:
    if not isinstance(metrics, Mapping):
        raise TypeError(f"a trial must return a dict of metrics, got {type(metrics).__name__}")
    clean = {}
    for key, value in metrics.items():
        if not isinstance(key, str) or key in RESERVED or key in params:
            raise ValueError(f"metric name {key!r} is not a string or clashes with a column")
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"metric {key!r} must be a real number, got {type(value).__name__}")
        clean[key] = float(value)
    return clean


class ResultStore:
    """A SQLite file of completed trials; use as a context manager or call :meth:`close`.

    Parameters
    ----------
    path : str or Path
        The database file, created (with its parent folders) if missing.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=60.0)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: durable on commit order
        with self._db:
            self._db.execute(_SCHEMA)

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection (idempotent)."""
        self._db.close()

    def add(
        self,
        experiment: str,
        params: Mapping[str, Any],
        replicate: int,
        seed: int,
        metrics: Mapping[str, float],
        *,
        version: str,
        seconds: float,
    ) -> None:
        """Store one finished trial and commit at once.

        A key already stored is left as it is: trials are deterministic in their key, so a
        second run of the same trial (two runs sharing a store) would write the same row.
        """
        clean = _check_metrics(metrics, params)
        row = (
            experiment,
            canonical_params(params),
            int(replicate),
            int(seed),
            version,
            json.dumps(clean),  # non-finite metrics are kept (as NaN/Infinity tokens)
            float(seconds),
            time.time(),
        )
        with self._db:
            self._db.execute("INSERT OR IGNORE INTO trials VALUES (?, ?, ?, ?, ?, ?, ?, ?)", row)

    def completed(self, experiment: str, *, version: str) -> set[tuple[str, int, int]]:
        """Keys ``(canonical params, replicate, seed)`` already stored for this code version."""
        cur = self._db.execute(
            "SELECT params, replicate, seed FROM trials WHERE experiment = ? AND code_version = ?",
            (experiment, version),
        )
        return {(p, int(r), int(s)) for p, r, s in cur}

    def _rows(self, experiment: str, version: str) -> dict[tuple[str, int, int], tuple]:
        cur = self._db.execute(
            "SELECT params, replicate, seed, metrics, seconds FROM trials "
            "WHERE experiment = ? AND code_version = ?",
            (experiment, version),
        )
        return {(p, int(r), int(s)): (m, sec) for p, r, s, m, sec in cur}

    def results(
        self,
        experiment: str,
        keys: Iterable[tuple[Mapping[str, Any], int, int]],
        *,
        version: str,
    ) -> pd.DataFrame:
        """The stored trials among ``keys`` = (params, replicate, seed), in the order given.

        One row per stored trial: the parameter columns, ``replicate``, ``seed`` and the
        metric columns. Keys not (yet) stored are skipped.
        """
        stored = self._rows(experiment, version)
        rows = []
        for params, replicate, seed in keys:
            hit = stored.get((canonical_params(params), int(replicate), int(seed)))
            if hit is not None:
                rows.append({**params, "replicate": int(replicate), "seed": int(seed)})
                rows[-1].update(json.loads(hit[0]))
        return pd.DataFrame(rows)

    def seconds(
        self, experiment: str, keys: Iterable[tuple[Mapping[str, Any], int, int]], *, version: str
    ) -> float:
        """Total compute time (s) of the stored trials among ``keys``."""
        stored = self._rows(experiment, version)
        found = (stored.get((canonical_params(p), int(r), int(s))) for p, r, s in keys)
        return math.fsum(hit[1] for hit in found if hit is not None)
