"""The analyst's pages: sign in, pick a dataset, read its schema, dry-run, submit, read results.

Plain server-rendered HTML (no script): every control has a label, every table a caption,
and each page one ``h1``. A page works through the same functions as the JSON API, with a
session cookie instead of a bearer token (:mod:`dpfit.serve.auth`) and a form token in every
form that changes something.
"""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from . import releases, views
from .auth import (
    SESSION_COOKIE,
    Principal,
    authenticate,
    close_session,
    open_session,
    session_principal,
)
from .fit_request import MODELS, RequestError
from .render import display, plot_png, result_of
from .tokens import new_token, same_secret

__all__ = ["check_form", "page", "routes", "signed_in"]

_LOGIN_COOKIE = "dpfit_login"


def page(
    request: Request, name: str, who: Principal | None, status: int = 200, **context: Any
) -> Response:
    """Render template ``name`` with the signed-in principal ``who`` (its form token too)."""
    return request.app.state.templates.TemplateResponse(
        request,
        name,
        {"who": who, "csrf": who.csrf if who else None, **context},
        status_code=status,
    )


async def signed_in(request: Request, role: str) -> Principal:
    """The session's principal, if it has ``role``; else a redirect to the sign-in page."""
    who = await run_in_threadpool(
        session_principal, request.app.state.site, request.cookies.get(SESSION_COOKIE)
    )
    if who is None or who.role != role:
        raise RequestError(401, "unauthorised", "sign in with your token first (/login)")
    return who


async def check_form(request: Request, who: Principal) -> Any:
    """The submitted form, after checking its form (CSRF) token against the session's."""
    form = await request.form()
    if not same_secret(form.get("csrf"), who.csrf or ""):
        raise RequestError(403, "forbidden", "the form has expired: reload the page")
    return form


async def home(request: Request) -> Response:
    who = await run_in_threadpool(
        session_principal, request.app.state.site, request.cookies.get(SESSION_COOKIE)
    )
    target = "/login" if who is None else "/admin" if who.is_steward else "/datasets"
    return RedirectResponse(target, status_code=303)


async def login(request: Request) -> Response:
    if request.method == "GET":
        token = new_token()
        response = page(request, "login.html", None, login_csrf=token)
        response.set_cookie(_LOGIN_COOKIE, token, httponly=True, samesite="strict")
        return response
    form = await request.form()
    if not same_secret(form.get("csrf"), request.cookies.get(_LOGIN_COOKIE, "")):
        raise RequestError(403, "forbidden", "the sign-in form has expired: reload the page")
    site = request.app.state.site
    who = await run_in_threadpool(authenticate, site, str(form.get("token", "")).strip())
    if who is None:
        token = new_token()
        response = page(
            request, "login.html", None, 401, login_csrf=token, error="invalid or revoked token"
        )
        response.set_cookie(_LOGIN_COOKIE, token, httponly=True, samesite="strict")
        return response
    cookie = await run_in_threadpool(open_session, site, who)
    response = RedirectResponse("/admin" if who.is_steward else "/datasets", status_code=303)
    response.set_cookie(
        SESSION_COOKIE,
        cookie,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    response.delete_cookie(_LOGIN_COOKIE)
    return response


async def logout(request: Request) -> Response:
    cookie = request.cookies.get(SESSION_COOKIE)
    who = await run_in_threadpool(session_principal, request.app.state.site, cookie)
    if who is not None:
        await check_form(request, who)
        await run_in_threadpool(close_session, request.app.state.site, cookie)
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE)
    return response


async def dataset_list(request: Request) -> Response:
    who = await signed_in(request, "analyst")
    found = await run_in_threadpool(views.dataset_views, request.app.state.site, who.analyst_id)
    return page(request, "datasets.html", who, datasets=found)


def _bounds_text(text: str) -> dict[str, list[str]]:
    """``term = low, high`` lines of the form's bounds box as {term: [low, high]} text."""
    out = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        term, sep, pair = line.rpartition("=")
        parts = [p.strip() for p in pair.split(",")]
        if not sep or not term.strip() or len(parts) != 2:
            raise RequestError(
                400, "bad_request", f"bounds line {line.strip()[:80]!r}: write 'term = low, high'"
            )
        out[term.strip()] = parts
    return out


def _payload(name: str, form: Any) -> dict[str, Any]:
    """The API request the fit form describes (numbers parsed here, checked by the API)."""

    def number(text: str, what: str) -> float:
        try:
            return float(text)
        except ValueError:
            raise RequestError(400, "bad_request", f"{what} must be a number") from None

    payload: dict[str, Any] = {
        "dataset": name,
        "model": str(form.get("model", "ols")),
        "formula": str(form.get("formula", "")),
        "rho": number(str(form.get("rho", "")), "rho"),
    }
    bounds = _bounds_text(str(form.get("bounds", "")))
    if bounds:
        payload["bounds"] = {
            k: [number(v, f"bounds of {k!r}") for v in pair] for k, pair in bounds.items()
        }
    y_bounds = str(form.get("y_bounds", "")).strip()
    if y_bounds:
        payload["y_bounds"] = [number(v.strip(), "y bounds") for v in y_bounds.split(",")]
    return payload


async def dataset_page(request: Request) -> Response:
    who = await signed_in(request, "analyst")
    site, name = request.app.state.site, request.path_params["name"]
    (view,) = await run_in_threadpool(views.dataset_views, site, who.analyst_id, name)
    context: dict[str, Any] = {"dataset": view, "models": MODELS, "form": {}}
    if request.method == "POST":
        form = await check_form(request, who)
        context["form"] = {
            k: str(form.get(k, "")) for k in ("formula", "model", "rho", "bounds", "y_bounds")
        }
        try:
            payload = _payload(name, form)
            if form.get("action") == "submit":
                done = await run_in_threadpool(releases.submit, site, who.analyst_id, payload)
                return RedirectResponse(f"/releases/{done['id']}", status_code=303)
            context["cost"] = await run_in_threadpool(
                releases.dry_run, site, who.analyst_id, payload
            )
        except RequestError as exc:
            context["error"] = exc.message
            return page(request, "dataset.html", who, exc.status, **context)
    return page(request, "dataset.html", who, **context)


async def release_page(request: Request) -> Response:
    who = await signed_in(request, "analyst")
    site = request.app.state.site
    view = await run_in_threadpool(
        views.release_view, site, who.analyst_id, request.path_params["release_id"]
    )
    result = result_of(view)
    shown = (
        None
        if result is None
        else await run_in_threadpool(lambda: display(result, delta=view["delta"]))
    )
    budget = None
    if view["dataset"] is not None:
        (dataset,) = await run_in_threadpool(
            views.dataset_views, site, who.analyst_id, view["dataset"]
        )
        budget = dataset["budget"]
    return page(request, "release.html", who, release=view, shown=shown, budget=budget)


async def release_plot(request: Request) -> Response:
    who = await signed_in(request, "analyst")
    view = await run_in_threadpool(
        views.release_view,
        request.app.state.site,
        who.analyst_id,
        request.path_params["release_id"],
    )
    result = result_of(view)
    if result is None:
        raise RequestError(404, "not_found", "no plot: this request released nothing")
    png = await run_in_threadpool(plot_png, result)
    return Response(png, media_type="image/png")


async def history_page(request: Request) -> Response:
    who = await signed_in(request, "analyst")
    found = await run_in_threadpool(views.history, request.app.state.site, who.analyst_id)
    return page(request, "history.html", who, releases=found)


def routes() -> list[Route]:
    """The analyst's pages."""
    return [
        Route("/", home),
        Route("/login", login, methods=["GET", "POST"]),
        Route("/logout", logout, methods=["POST"]),
        Route("/datasets", dataset_list),
        Route("/datasets/{name}", dataset_page, methods=["GET", "POST"]),
        Route("/releases/{release_id}", release_page),
        Route("/releases/{release_id}/plot.png", release_plot),
        Route("/history", history_page),
    ]
