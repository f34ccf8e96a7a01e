"""Two small ASGI middlewares: a request-size limit and the pages' security headers.

* :class:`BodyLimit` answers 413 to a request whose declared ``Content-Length`` exceeds the
  limit, and stops reading a body (chunked or not) as soon as it does, so a large upload
  never reaches the application or memory.
* :class:`SecurityHeaders` sets a strict Content-Security-Policy (the pages use no script,
  and only the service's own styles and images), forbids framing and MIME sniffing, and
  sends no referrer, as the OWASP Secure Headers Project recommends
  (https://owasp.org/www-project-secure-headers/).
"""

from __future__ import annotations

import json
from typing import Any

from starlette.exceptions import HTTPException

__all__ = ["BodyLimit", "SecurityHeaders"]

_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
        b"frame-ancestors 'none'; base-uri 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]


class BodyLimit:
    """Refuse request bodies larger than ``max_bytes`` with 413."""

    def __init__(self, app: Any, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length" and (not value.isdigit() or int(value) > self.max_bytes):
                await self._too_large(send)
                return
        seen = 0

        async def limited() -> dict:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise HTTPException(413, self._message())
            return message

        await self.app(scope, limited, send)

    def _message(self) -> str:
        return f"the request body exceeds the limit of {self.max_bytes} bytes"

    async def _too_large(self, send: Any) -> None:
        body = json.dumps({"error": {"code": "too_large", "message": self._message()}}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


class SecurityHeaders:
    """Add the module's security headers to every response."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: dict) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *_HEADERS]}
            await send(message)

        await self.app(scope, receive, with_headers)
