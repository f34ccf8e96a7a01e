"""The pages, in process: sign-in, CSRF, schema, dry run, submit, result page, plot, admin."""

from __future__ import annotations

import html
import re

import pytest

from dpfit.serve.audit import audit_releases

pytestmark = pytest.mark.filterwarnings("ignore::dpfit.PrivacyWarning")

_CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def csrf(html: str) -> str:
    return _CSRF.search(html).group(1)


def sign_in(client, token: str):
    page = client.get("/login")
    return client.post(
        "/login", data={"csrf": csrf(page.text), "token": token}, follow_redirects=False
    )


def test_pages_need_a_session(served):
    client = served.client()
    for path in ("/datasets", "/datasets/survey", "/history", "/admin", "/releases/x"):
        answer = client.get(path, follow_redirects=False)
        assert answer.status_code == 303 and answer.headers["location"] == "/login", path


def test_sign_in_needs_the_form_token_and_a_valid_token(served):
    client = served.client()
    page = client.get("/login")
    assert page.status_code == 200 and '<label for="token">Token</label>' in page.text
    forged = client.post("/login", data={"csrf": "forged", "token": served.tokens["alice"]})
    assert forged.status_code == 403
    wrong = client.post("/login", data={"csrf": csrf(client.get("/login").text), "token": "x" * 43})
    assert wrong.status_code == 401 and "invalid or revoked token" in wrong.text
    done = sign_in(client, served.tokens["alice"])
    assert done.status_code == 303 and done.headers["location"] == "/datasets"
    cookie = done.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie


def test_the_analyst_flow_schema_dry_run_submit_result(served):
    client = served.client()
    sign_in(client, served.tokens["alice"])
    listing = client.get("/datasets")
    assert (
        "<caption>Datasets you may fit" in listing.text
        and 'href="/datasets/survey"' in listing.text
    )
    page = client.get("/datasets/survey")
    assert "<caption>The columns a formula may use" in page.text
    assert "a, b, c" in page.text and "[0, 10]" in page.text
    form = {"csrf": csrf(page.text), "formula": "y ~ x1 + x2 + g", "model": "ols", "rho": "0.3"}
    dry = client.post("/datasets/survey", data={**form, "action": "dry-run"})
    assert dry.status_code == 200 and "Dry run: what this fit would use and cost" in dry.text
    assert "0.7 after this fit" in dry.text and audit_releases(served.site) == []
    done = client.post(
        "/datasets/survey", data={**form, "action": "submit"}, follow_redirects=False
    )
    assert done.status_code == 303
    release = client.get(done.headers["location"])
    assert release.status_code == 200
    for text in (
        "<caption>Released coefficients",
        "g[T.c]",
        "Privacy statement",
        "0.3-zCDP",
        "Your rho left on survey</th><td>0.7 of 1",
        'class="simpletable"',
    ):
        assert text in release.text, text
    plot = client.get(done.headers["location"] + "/plot.png")
    assert plot.status_code == 200 and plot.content[:8] == b"\x89PNG\r\n\x1a\n"
    assert "y ~ x1 + x2 + g" in client.get("/history").text


def test_form_errors_are_shown_and_charge_nothing(served):
    client = served.client()
    sign_in(client, served.tokens["alice"])
    token = csrf(client.get("/datasets/survey").text)
    bad = client.post(
        "/datasets/survey",
        data={
            "csrf": token,
            "formula": "y ~ age",
            "model": "ols",
            "rho": "0.1",
            "action": "submit",
        },
    )
    assert bad.status_code == 422 and 'role="alert"' in bad.text
    assert "'age' is not a column" in html.unescape(bad.text)
    nan = client.post(
        "/datasets/survey",
        data={
            "csrf": token,
            "formula": "y ~ x1",
            "model": "ols",
            "rho": "lots",
            "action": "dry-run",
        },
    )
    assert nan.status_code == 400 and "rho must be a number" in nan.text
    assert [r["status"] for r in audit_releases(served.site)] == ["refused"]


def test_a_form_without_the_session_form_token_is_refused(served):
    client = served.client()
    sign_in(client, served.tokens["alice"])
    forged = client.post(
        "/datasets/survey",
        data={"formula": "y ~ x1", "model": "ols", "rho": "0.1", "action": "submit"},
    )
    assert forged.status_code == 403 and audit_releases(served.site) == []


def test_security_headers(served):
    answer = served.client().get("/login")
    policy = answer.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "frame-ancestors 'none'" in policy
    assert answer.headers["x-frame-options"] == "DENY"
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert served.client().get("/static/style.css").status_code == 200


def test_the_admin_page_registers_creates_and_lists_releases(served):
    steward = served.client()
    assert sign_in(steward, served.steward).headers["location"] == "/admin"
    page = steward.get("/admin")
    assert "<caption>Registered datasets" in page.text
    made = steward.post(
        "/admin/datasets",
        data={
            "csrf": csrf(page.text),
            "name": "survey2",
            "data": str(served.data),
            "schema": str(served.schema),
            "rho": "1",
            "delta": "1e-7",
        },
    )
    assert made.status_code == 200 and "Done: dataset registered" in made.text
    created = steward.post(
        "/admin/analysts",
        data={"csrf": csrf(page.text), "name": "carol", "dataset": "survey2", "rho": "0.5"},
    )
    token = re.search(r'<code id="new-token">([^<]+)</code>', created.text).group(1)
    analyst = served.client()
    sign_in(analyst, token)
    form = {
        "csrf": csrf(analyst.get("/datasets/survey2").text),
        "formula": "y ~ x1",
        "model": "ols",
        "rho": "0.2",
        "action": "submit",
    }
    assert analyst.post("/datasets/survey2", data=form, follow_redirects=False).status_code == 303
    audit = steward.get("/admin").text
    assert "<td>carol</td><td>survey2</td><td>ols</td>" in audit and "released" in audit
    revoked = steward.post("/admin/analysts/carol/revoke", data={"csrf": csrf(page.text)})
    assert "revoked" in revoked.text
    assert analyst.get("/datasets", follow_redirects=False).status_code == 303  # session ended
    csv = steward.get("/admin/audit.csv")
    assert csv.headers["content-type"].startswith("text/csv") and "carol" in csv.text


def test_admin_forms_refuse_mistakes_with_a_message(served):
    steward = served.client()
    sign_in(steward, served.steward)
    token = csrf(steward.get("/admin").text)
    bad = steward.post(
        "/admin/datasets",
        data={"csrf": token, "name": "bad name!", "data": "x.csv", "schema": "s.toml"},
    )
    assert bad.status_code == 400 and "dataset name must be" in bad.text
    over = steward.post(
        "/admin/shares", data={"csrf": token, "analyst": "alice", "dataset": "survey", "rho": "3"}
    )
    assert over.status_code == 400 and "left to share out" in over.text
