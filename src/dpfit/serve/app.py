"""The ASGI application: the JSON API, the analyst's pages and the steward's admin page.

Built with Starlette (routing, forms, static files) and Jinja2 (templates, autoescaped); the
server is uvicorn (``dpfit serve``). Errors are answered in the caller's language: JSON under
``/api/``, an HTML page elsewhere. An unexpected error is a 500 with a fixed text, never the
exception's, which could quote data.
"""

from __future__ import annotations

import logging
from importlib import resources

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from . import admin, api, web
from .fit_request import RequestError
from .middleware import BodyLimit, SecurityHeaders
from .site import Site

__all__ = ["create_app"]

_log = logging.getLogger("dpfit.serve")
_INTERNAL = "internal error; nothing was charged unless the request's release is listed"


def _answer(request: Request, status: int, code: str, message: str) -> Response:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    if request.url.path.startswith("/api/"):
        body = {"error": {"code": code, "message": message}}
        return JSONResponse(body, status_code=status, headers=headers)
    if status == 401:
        return RedirectResponse("/login", status_code=303)
    return request.app.state.templates.TemplateResponse(
        request,
        "error.html",
        {"status": status, "message": message, "who": None},
        status_code=status,
        headers=headers,
    )


async def _request_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestError)
    return _answer(request, exc.status, exc.code, exc.message)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = {404: "not_found", 405: "method_not_allowed", 413: "too_large"}.get(
        exc.status_code, "http_error"
    )
    message = exc.detail if exc.status_code == 413 else str(exc.detail).lower()
    return _answer(request, exc.status_code, code, message)


async def _internal_error(request: Request, exc: Exception) -> Response:
    _log.error("%s %s: %s", request.method, request.url.path, type(exc).__name__)
    return _answer(request, 500, "internal", _INTERNAL)


def create_app(site: Site) -> Starlette:
    """The service's ASGI application over ``site`` (see :func:`dpfit.serve.open_site`)."""
    templates = Jinja2Templates(directory=str(resources.files("dpfit.serve") / "templates"))
    app = Starlette(
        routes=[
            *api.routes(),
            *web.routes(),
            *admin.routes(),
            Mount("/static", StaticFiles(packages=[("dpfit.serve", "static")]), name="static"),
        ],
        middleware=[
            Middleware(SecurityHeaders),
            Middleware(BodyLimit, max_bytes=site.limits.max_request_bytes),
        ],
        exception_handlers={
            RequestError: _request_error,
            HTTPException: _http_error,
            Exception: _internal_error,
        },
    )
    app.state.site = site
    app.state.templates = templates
    return app


def app_from_environment() -> Starlette:
    """The application for ``uvicorn --factory`` (``dpfit serve --workers N``): the site
    folder and database come from ``DPFIT_SERVE_SITE`` and ``DPFIT_SERVE_DATABASE``."""
    import os

    from .site import open_site

    site = open_site(
        os.environ["DPFIT_SERVE_SITE"], database=os.environ.get("DPFIT_SERVE_DATABASE") or None
    )
    return create_app(site)
