"""The steward's admin page: datasets and budgets, analysts and shares, every release.

Signed in with the steward's token (``/login``), the steward registers a dataset (a data file
and a schema file on the server's disk), creates analysts (their token is shown once), grants
shares, revokes analysts, pauses, reopens or closes datasets, reads every release and refusal
and downloads the audit log. Each form carries the session's form token; each action is one
of :mod:`dpfit.serve.steward`'s functions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from . import audit, steward
from .auth import Principal
from .fit_request import RequestError
from .web import check_form, page, signed_in

__all__ = ["routes"]

#: Releases listed on the page (the export has all).
_SHOWN = 100


def _optional_number(text: Any, what: str) -> float | None:
    text = str(text or "").strip()
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{what} must be a number") from None


async def _overview(request: Request, who: Principal, status: int = 200, **context: Any):
    site = request.app.state.site
    state = await run_in_threadpool(audit.overview, site)
    rows = await run_in_threadpool(lambda: audit.audit_releases(site, limit=_SHOWN))
    return page(
        request,
        "admin.html",
        who,
        status,
        statuses=steward.STATUSES,
        **state,
        releases=[r for r in rows if r["status"] != "refused"],
        refused=[r for r in rows if r["status"] == "refused"],
        **context,
    )


async def admin_page(request: Request) -> Response:
    who = await signed_in(request, "steward")
    return await _overview(request, who)


async def _act(request: Request, action: Callable[[Any, Any], Any], done: str) -> Response:
    """Run a form's action; show the page again with its outcome or its error."""
    who = await signed_in(request, "steward")
    form = await check_form(request, who)
    site = request.app.state.site
    try:
        outcome = await run_in_threadpool(action, site, form)
    except (ValueError, TypeError) as exc:
        return await _overview(request, who, 400, error=str(exc))
    if isinstance(outcome, dict):
        return await _overview(request, who, **outcome)
    return await _overview(request, who, notice=done)


async def register(request: Request) -> Response:
    def action(site: Any, form: Any) -> None:
        steward.register_dataset(
            site,
            str(form.get("name", "")),
            data=str(form.get("data", "")),
            schema=str(form.get("schema", "")),
            rho=_optional_number(form.get("rho"), "rho"),
            delta=_optional_number(form.get("delta"), "delta"),
        )

    return await _act(request, action, "dataset registered")


async def create_analyst(request: Request) -> Response:
    def action(site: Any, form: Any) -> dict[str, Any]:
        name = str(form.get("name", ""))
        rho = _optional_number(form.get("rho"), "rho")
        dataset = str(form.get("dataset", "")).strip()
        token = steward.create_analyst(site, name)
        shown: dict[str, Any] = {"new_token": {"name": name, "token": token}}
        if dataset and rho is not None:
            try:
                steward.grant_share(site, name, dataset, rho)
            except ValueError as exc:  # the analyst exists: show the token, and why no share
                shown["error"] = f"analyst created without a share: {exc}"
        return shown

    return await _act(request, action, "analyst created")


async def grant(request: Request) -> Response:
    def action(site: Any, form: Any) -> None:
        rho = _optional_number(form.get("rho"), "rho")
        if rho is None:
            raise ValueError("give the share's rho")
        steward.grant_share(site, str(form.get("analyst", "")), str(form.get("dataset", "")), rho)

    return await _act(request, action, "share granted")


async def revoke(request: Request) -> Response:
    name = request.path_params["name"]
    return await _act(request, lambda site, _: steward.revoke_analyst(site, name), "revoked")


async def status(request: Request) -> Response:
    name = request.path_params["name"]

    def action(site: Any, form: Any) -> None:
        steward.set_dataset_status(site, name, str(form.get("status", "")))

    return await _act(request, action, "status changed")


async def export(request: Request) -> Response:
    await signed_in(request, "steward")
    fmt = request.path_params["fmt"]
    if fmt not in ("csv", "json"):
        raise RequestError(404, "not_found", "no such export")
    text = await run_in_threadpool(audit.export_audit, request.app.state.site, fmt)
    media = "text/csv" if fmt == "csv" else "application/json"
    headers = {"Content-Disposition": f'attachment; filename="dpfit-audit.{fmt}"'}
    return PlainTextResponse(text, media_type=media, headers=headers)


def routes() -> list[Route]:
    """The admin page and its forms."""
    return [
        Route("/admin", admin_page),
        Route("/admin/datasets", register, methods=["POST"]),
        Route("/admin/analysts", create_analyst, methods=["POST"]),
        Route("/admin/shares", grant, methods=["POST"]),
        Route("/admin/analysts/{name}/revoke", revoke, methods=["POST"]),
        Route("/admin/datasets/{name}/status", status, methods=["POST"]),
        Route("/admin/audit.{fmt}", export),
    ]
