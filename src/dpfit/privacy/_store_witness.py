"""A witness outside the budget store: the store's high-water mark, to detect rollbacks.

A store cannot tell from its own contents that it was rolled back: a complete older copy of
the file (a restored backup, a snapshot) is consistent, and so is a store whose newest
charges were deleted with the chain's head moved back to an older row and the running totals
with it. So after every charge dpfit also writes, next to the store (``PATH.witness``) or in
the directory named by the environment variable :data:`WITNESS_DIR_ENV` (as
``<store id>.witness``), a small file with the store's identity, its number of charges and
the hash of its newest charge. Every open, charge and ``dpfit budget verify`` compares the
store with it (:func:`check_witness`): a store with fewer charges than its witness, or whose
charge at the witness's count has another hash, or another identity, is refused with one
line naming the rollback; ``dpfit budget verify PATH --accept-rollback`` accepts it
deliberately (:func:`write_witness` with ``force``).

The store is the record and the witness only a check: the witness is written after the
charge's transaction commits, atomically (a temporary file renamed over it), and only
forwards (never to fewer charges than it holds); when it cannot be written the charge stands
and a :class:`~dpfit.exceptions.BudgetStoreWarning` says that a rollback to before it cannot
be detected. Racing writers can leave the witness behind the store, never ahead of it, so it
never refuses a store that was not rolled back (a reader compares inside its read
transaction, and in SQLite's default rollback journal a commit, hence the witness write
after it, waits until no reader holds the file). What it cannot see: a witness deleted (or
rolled back) together with the store, a missing witness (the check starts at the next
charge), and a forger who recomputes the chain (``docs/threat-model.md``).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import uuid
from pathlib import Path

from ..exceptions import BudgetStoreError

__all__ = ["WITNESS_DIR_ENV", "check_witness", "witness_path", "write_witness"]

#: Environment variable naming a directory for the witnesses (e.g. one the store's other
#: writers cannot change); by default a witness lies next to its store.
WITNESS_DIR_ENV = "DPFIT_BUDGET_WITNESS_DIR"
_FORMAT = "dpfit-budget-witness"
#: Tests replace this to inject a failing witness write (``tests/privacy``).
_replace = os.replace


def witness_path(path: Path, store_id: str) -> Path:
    """Where the witness of the store at ``path`` (identity ``store_id``) lies."""
    directory = os.environ.get(WITNESS_DIR_ENV)
    if directory:
        return Path(directory) / f"{store_id}.witness"
    return path.with_name(path.name + ".witness")


def _read(witness: Path) -> dict | None:
    """The witness's content, None when there is none; ValueError when it is unreadable."""
    try:
        text = witness.read_text()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ValueError(f"cannot be read ({type(exc).__name__})") from None
    try:
        content = json.loads(text)
        if content.get("format") != _FORMAT:
            raise ValueError
        return {
            "store_id": str(content["store_id"]),
            "charges": int(content["charges"]),
            "head": str(content["head"]),
        }
    except (ValueError, TypeError, KeyError, AttributeError):
        raise ValueError("is not a dpfit budget witness (damaged or edited)") from None


def _refuse(path: Path, witness: Path, what: str) -> BudgetStoreError:
    return BudgetStoreError(
        f"budget store {path} {what} its witness {witness}: the store was rolled back (an "
        "older copy restored, or its newest charges deleted) or replaced, which would give "
        "back budget already spent, so it is not used and nothing was charged or drawn; if "
        f"this is deliberate, run dpfit budget verify {path} --accept-rollback"
    )


def check_witness(
    conn: sqlite3.Connection, path: Path, store_id: str, charges: int, head: str
) -> None:
    """Refuse the store when it is behind its witness (module docstring); ``charges`` and
    ``head`` are the store's number of charges and newest hash, read in ``conn``."""
    witness = witness_path(path, store_id)
    try:
        seen = _read(witness)
    except ValueError as exc:
        raise BudgetStoreError(
            f"the witness {witness} of budget store {path} {exc}, so the store is not used "
            "and nothing was charged or drawn; if the store is as it should be, run dpfit "
            f"budget verify {path} --accept-rollback"
        ) from None
    if seen is None:
        return
    if seen["store_id"] != store_id:
        raise _refuse(path, witness, "is another store (another identity) than the one of")
    if charges < seen["charges"]:
        fewer = f"holds {charges} charge(s), fewer than the {seen['charges']} of"
        raise _refuse(path, witness, fewer)
    if charges == seen["charges"]:
        newest = head  # the usual case: no row to read
    else:
        row = conn.execute("SELECT hash FROM charges WHERE id = ?", (seen["charges"],)).fetchone()
        newest = None if row is None else row[0]
    if seen["charges"] and newest != seen["head"]:
        raise _refuse(path, witness, f"has another charge #{seen['charges']} than")


def write_witness(
    path: Path, store_id: str, charges: int, head: str, *, force: bool = False
) -> None:
    """Move the witness forward to (``charges``, ``head``), atomically; never backwards,
    unless ``force`` (accepting a rollback, or a new store at ``path``). Raises OSError when
    it cannot be written (the caller warns: the store is the record)."""
    witness = witness_path(path, store_id)
    if not force:
        with contextlib.suppress(ValueError):
            seen = _read(witness)
            if seen is not None and seen["store_id"] == store_id and seen["charges"] >= charges:
                return
    content = {"format": _FORMAT, "store_id": store_id, "charges": charges, "head": head}
    witness.parent.mkdir(parents=True, exist_ok=True)
    tmp = witness.with_name(f".{witness.name}.{uuid.uuid4().hex}.new")
    try:
        with open(tmp, "w") as out:
            out.write(json.dumps(content) + "\n")
            out.flush()
            os.fsync(out.fileno())
        _replace(tmp, witness)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
