"""The JSON API under ``/api/v1``: the analyst's endpoints and the steward's admin endpoints.

Every request carries ``Authorization: Bearer TOKEN``. Answers are JSON; an error is
``{"error": {"code": ..., "message": ...}}`` with a 4xx status and, once a request is
refused, nothing charged (docs/serve.md lists the codes). The handlers only parse and
authorise; the work is in :mod:`dpfit.serve.releases`, :mod:`~dpfit.serve.views`,
:mod:`~dpfit.serve.steward` and :mod:`~dpfit.serve.audit`, run in a worker thread.

======  ==============================  =======================================================
GET     /api/v1/datasets                the analyst's datasets: public schema, n, delta, budget
GET     /api/v1/datasets/{name}         one of them
POST    /api/v1/dry-run                 what a fit would use and cost (no charge)
POST    /api/v1/releases                charge, fit and store a release (201)
GET     /api/v1/releases                the analyst's requests, newest first
GET     /api/v1/releases/{id}           one request with its result (no new charge)
GET     /api/v1/admin/overview          datasets, budgets, analysts and shares (steward)
GET     /api/v1/admin/audit             the audit log (``?format=csv`` or ``json``)
POST    /api/v1/admin/datasets          register a dataset (``name, data, schema, rho, delta``)
POST    /api/v1/admin/analysts          create an analyst (``name``, optional ``dataset, rho``)
POST    /api/v1/admin/shares            grant a share (``analyst, dataset, rho``)
POST    /api/v1/admin/analysts/{name}/revoke    revoke an analyst
POST    /api/v1/admin/datasets/{name}/status    open, pause or close (``status``)
======  ==============================  =======================================================
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from . import audit, releases, steward, views
from .auth import Principal, authenticate
from .fit_request import RequestError

__all__ = ["routes"]


async def _principal(request: Request) -> Principal:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise RequestError(401, "unauthorised", "send your token: Authorization: Bearer TOKEN")
    principal = await run_in_threadpool(authenticate, request.app.state.site, token.strip())
    if principal is None:
        raise RequestError(401, "unauthorised", "invalid or revoked token")
    return principal


async def _analyst(request: Request) -> Principal:
    principal = await _principal(request)
    if principal.is_steward:
        raise RequestError(403, "forbidden", "the steward's token is for /api/v1/admin only")
    return principal


async def _steward(request: Request) -> Principal:
    principal = await _principal(request)
    if not principal.is_steward:
        raise RequestError(403, "forbidden", "this needs the steward's token")
    return principal


async def _body(request: Request) -> Any:
    try:
        return json.loads(await request.body())
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise RequestError(400, "bad_request", "the request body is not valid JSON") from None


async def _work(request: Request, func: Callable[..., Any], *args: Any) -> Any:
    return await run_in_threadpool(func, request.app.state.site, *args)


async def datasets(request: Request) -> Response:
    who = await _analyst(request)
    return JSONResponse({"datasets": await _work(request, views.dataset_views, who.analyst_id)})


async def dataset(request: Request) -> Response:
    who = await _analyst(request)
    name = request.path_params["name"]
    (view,) = await _work(request, views.dataset_views, who.analyst_id, name)
    return JSONResponse(view)


async def dry_run(request: Request) -> Response:
    who = await _analyst(request)
    payload = await _body(request)
    return JSONResponse(await _work(request, releases.dry_run, who.analyst_id, payload))


async def submit(request: Request) -> Response:
    who = await _analyst(request)
    payload = await _body(request)
    view = await _work(request, releases.submit, who.analyst_id, payload)
    return JSONResponse(view, status_code=201)


async def history(request: Request) -> Response:
    who = await _analyst(request)
    return JSONResponse({"releases": await _work(request, views.history, who.analyst_id)})


async def release(request: Request) -> Response:
    who = await _analyst(request)
    release_id = request.path_params["release_id"]
    return JSONResponse(await _work(request, views.release_view, who.analyst_id, release_id))


def _steward_call(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run a steward action; its ``ValueError`` (for the steward's eyes) becomes a 400."""
    try:
        return func(*args, **kwargs)
    except (ValueError, TypeError) as exc:
        raise RequestError(400, "bad_request", str(exc)) from None


def _fields(payload: Any, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> dict:
    if not isinstance(payload, dict) or set(payload) - {*required, *optional}:
        raise RequestError(400, "bad_request", f"fields: {[*required, *optional]}")
    missing = [key for key in required if key not in payload]
    if missing:
        raise RequestError(400, "bad_request", f"missing fields {missing}")
    return payload


async def admin_overview(request: Request) -> Response:
    await _steward(request)
    return JSONResponse(await _work(request, audit.overview))


async def admin_audit(request: Request) -> Response:
    await _steward(request)
    fmt = request.query_params.get("format", "json")
    text = await _work(request, lambda site: _steward_call(audit.export_audit, site, fmt))
    media = "text/csv" if fmt == "csv" else "application/json"
    return PlainTextResponse(text, media_type=media)


async def admin_datasets(request: Request) -> Response:
    await _steward(request)
    args = _fields(await _body(request), ("name", "data", "schema"), ("rho", "delta"))
    done = await _work(
        request,
        lambda site: _steward_call(
            steward.register_dataset,
            site,
            args["name"],
            data=args["data"],
            schema=args["schema"],
            rho=args.get("rho"),
            delta=args.get("delta"),
        ),
    )
    return JSONResponse(done, status_code=201)


async def admin_analysts(request: Request) -> Response:
    await _steward(request)
    args = _fields(await _body(request), ("name",), ("dataset", "rho"))

    def create(site: Any) -> str:
        token = _steward_call(steward.create_analyst, site, args["name"])
        if "dataset" in args:
            _steward_call(steward.grant_share, site, args["name"], args["dataset"], args["rho"])
        return token

    token = await _work(request, create)
    return JSONResponse({"name": args["name"], "token": token}, status_code=201)


async def admin_shares(request: Request) -> Response:
    await _steward(request)
    args = _fields(await _body(request), ("analyst", "dataset", "rho"))
    await _work(
        request,
        lambda site: _steward_call(
            steward.grant_share, site, args["analyst"], args["dataset"], args["rho"]
        ),
    )
    return JSONResponse({"granted": args})


async def admin_revoke(request: Request) -> Response:
    await _steward(request)
    name = request.path_params["name"]
    await _work(request, lambda site: _steward_call(steward.revoke_analyst, site, name))
    return JSONResponse({"revoked": name})


async def admin_status(request: Request) -> Response:
    await _steward(request)
    name = request.path_params["name"]
    status = _fields(await _body(request), ("status",))["status"]
    await _work(request, lambda site: _steward_call(steward.set_dataset_status, site, name, status))
    return JSONResponse({"dataset": name, "status": status})


def routes() -> list[Route]:
    """The API's routes (the table of the module docstring)."""
    return [
        Route("/api/v1/datasets", datasets),
        Route("/api/v1/datasets/{name}", dataset),
        Route("/api/v1/dry-run", dry_run, methods=["POST"]),
        Route("/api/v1/releases", submit, methods=["POST"]),
        Route("/api/v1/releases", history),
        Route("/api/v1/releases/{release_id}", release),
        Route("/api/v1/admin/overview", admin_overview),
        Route("/api/v1/admin/audit", admin_audit),
        Route("/api/v1/admin/datasets", admin_datasets, methods=["POST"]),
        Route("/api/v1/admin/analysts", admin_analysts, methods=["POST"]),
        Route("/api/v1/admin/shares", admin_shares, methods=["POST"]),
        Route("/api/v1/admin/analysts/{name}/revoke", admin_revoke, methods=["POST"]),
        Route("/api/v1/admin/datasets/{name}/status", admin_status, methods=["POST"]),
    ]
