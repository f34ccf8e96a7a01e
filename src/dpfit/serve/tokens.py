"""Secrets: analyst and steward tokens, session cookies and form (CSRF) tokens.

Tokens are 256-bit random strings from :func:`secrets.token_urlsafe` (Python's CSPRNG). The
database keeps only their SHA-256: a copy of it does not let anyone log in, and a 256-bit
random token needs no slow password hash (the OWASP Password Storage Cheat Sheet reserves
those for low-entropy secrets). Comparisons use :func:`hmac.compare_digest`, whose time does
not depend on where two strings differ.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

__all__ = ["new_token", "same_secret", "token_hash"]

#: Random bytes per token: 256 bits (43 URL-safe characters).
TOKEN_BYTES = 32


def new_token() -> str:
    """A fresh random token (URL-safe text)."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def token_hash(token: str) -> str:
    """The SHA-256 (hex) of ``token``: what the database stores and looks up."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def same_secret(given: str | None, expected: str) -> bool:
    """Whether ``given`` equals ``expected``, in time independent of where they differ."""
    if not isinstance(given, str):
        return False
    return hmac.compare_digest(given.encode("utf-8", "surrogatepass"), expected.encode())
