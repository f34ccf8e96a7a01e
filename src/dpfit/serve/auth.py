"""Who is asking: bearer tokens for the API, server-side sessions and form tokens for pages.

* **API**: ``Authorization: Bearer TOKEN``. The steward's token is compared in constant
  time with its stored hash; an analyst's is looked up by its SHA-256 (a 256-bit random
  token's hash reveals nothing by the time its lookup takes) and refused once revoked.
* **Pages**: logging in with a token opens a session: a random cookie (``HttpOnly``,
  ``SameSite=Strict``) whose SHA-256 is a row of the sessions table, with the analyst's id
  and a random form token. Revoking an analyst deletes their sessions, so it takes effect at
  once; sessions expire after :data:`SESSION_HOURS`.
* **Forms** (CSRF): every form that changes something carries the session's form token in a
  hidden field, compared in constant time; the login form, before any session, uses a
  double-submit cookie. Both follow the OWASP CSRF Prevention Cheat Sheet
  (https://cheatsheetseries.owasp.org/cheatsheets/Cross-Site_Request_Forgery_Prevention_Cheat_Sheet.html).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import sqlalchemy as sa

from . import db
from .site import Site, now
from .tokens import new_token, same_secret, token_hash

__all__ = [
    "SESSION_COOKIE",
    "SESSION_HOURS",
    "Principal",
    "authenticate",
    "close_session",
    "open_session",
    "session_principal",
]

#: The session cookie's name.
SESSION_COOKIE = "dpfit_session"
#: Hours a browser session lasts.
SESSION_HOURS = 8


@dataclass(frozen=True, slots=True, kw_only=True)
class Principal:
    """An authenticated caller: the steward, or an analyst (with their id and name)."""

    role: str
    name: str
    analyst_id: int | None = None
    csrf: str | None = None  # the session's form token (pages only)

    @property
    def is_steward(self) -> bool:
        return self.role == "steward"


def authenticate(site: Site, token: str | None) -> Principal | None:
    """The steward or the (unrevoked) analyst whose token this is, else None."""
    if not isinstance(token, str) or not 20 <= len(token) <= 200:
        return None
    digest = token_hash(token)
    if same_secret(digest, site.steward_hash()):
        return Principal(role="steward", name="steward")
    with site.engine.begin() as conn:
        row = conn.execute(
            sa.select(db.analysts).where(db.analysts.c.token_sha256 == digest)
        ).one_or_none()
    if row is None or row.revoked_at is not None or not same_secret(digest, row.token_sha256):
        return None
    return Principal(role="analyst", name=row.name, analyst_id=row.id)


def open_session(site: Site, principal: Principal) -> str:
    """Open a browser session for ``principal``; return the cookie's value."""
    cookie = new_token()
    expires = datetime.now(UTC) + timedelta(hours=SESSION_HOURS)
    with site.engine.begin() as conn:
        conn.execute(sa.delete(db.sessions).where(db.sessions.c.expires_at < now()))
        conn.execute(
            sa.insert(db.sessions).values(
                id_sha256=token_hash(cookie),
                role=principal.role,
                analyst_id=principal.analyst_id,
                csrf=new_token(),
                expires_at=expires.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            )
        )
    return cookie


def session_principal(site: Site, cookie: str | None) -> Principal | None:
    """The principal of a live session cookie (with its form token), else None."""
    if not isinstance(cookie, str) or not 20 <= len(cookie) <= 200:
        return None
    with site.engine.begin() as conn:
        row = conn.execute(
            sa.select(db.sessions, db.analysts.c.name, db.analysts.c.revoked_at)
            .outerjoin(db.analysts, db.analysts.c.id == db.sessions.c.analyst_id)
            .where(db.sessions.c.id_sha256 == token_hash(cookie))
        ).one_or_none()
    if row is None or row.expires_at < now():
        return None
    if row.role == "steward":
        return Principal(role="steward", name="steward", csrf=row.csrf)
    if row.revoked_at is not None:
        return None
    return Principal(role="analyst", name=row.name, analyst_id=row.analyst_id, csrf=row.csrf)


def close_session(site: Site, cookie: str | None) -> None:
    """End the session of ``cookie`` (logging out)."""
    if isinstance(cookie, str):
        with site.engine.begin() as conn:
            conn.execute(
                sa.delete(db.sessions).where(db.sessions.c.id_sha256 == token_hash(cookie))
            )
