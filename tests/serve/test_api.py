"""The JSON API: schemas, dry runs, fits, stored results; bad requests charge nothing."""

from __future__ import annotations

import numpy as np
import pytest
import sqlalchemy as sa

from dpfit.remote.codec import decode_result, result_sha256
from dpfit.serve import db
from dpfit.serve.audit import audit_releases
from dpfit.serve.units import charge_units

pytestmark = pytest.mark.filterwarnings("ignore::dpfit.PrivacyWarning")  # fits may warn


def spent(site, table=db.datasets) -> int:
    with site.engine.begin() as conn:
        return conn.execute(sa.select(sa.func.sum(table.c.spent_units))).scalar()


def test_an_analyst_reads_schema_and_budget_and_never_a_value(served):
    api = served.client(served.tokens["alice"])
    listed = api.get("/api/v1/datasets").json()["datasets"]
    assert [d["name"] for d in listed] == ["survey"]
    view = api.get("/api/v1/datasets/survey").json()
    assert view["n"] == 2000 and view["delta"] == 1e-6
    assert list(view["schema"]["columns"]) == ["x1", "x2", "z", "g", "y"]  # the steward's order
    assert view["schema"]["columns"]["g"]["levels"] == ["a", "b", "c"]
    assert view["budget"] == {"rho_total": 1.0, "rho_spent": 0.0, "rho_remaining": 1.0}
    frame = served.data.read_text()
    value = frame.splitlines()[1].split(",")[0]  # a data value (x1 of the first record)
    assert value not in api.get("/api/v1/datasets/survey").text


def test_dry_run_prices_the_fit_and_charges_nothing(served):
    api = served.client(served.tokens["alice"])
    cost = api.post(
        "/api/v1/dry-run", json={"dataset": "survey", "formula": "y ~ x1 + x2 + g", "rho": 0.25}
    ).json()
    assert cost["terms"] == ["Intercept", "x1", "x2", "g[T.b]", "g[T.c]"]
    assert cost["bounds"] == {"x1": [0.0, 10.0], "x2": [0.0, 1.0]}
    assert cost["y_bounds"] == [-5.0, 10.0]
    # rho = 0.25 at delta = 1e-6: epsilon from the CKS conversion (dpfit privacy --rho 0.25)
    from dpfit.privacy import zcdp_to_approx_dp

    assert cost["epsilon"] == pytest.approx(zcdp_to_approx_dp(0.25, 1e-6))
    assert cost["rho_remaining"] == 1.0 and cost["rho_remaining_after"] == 0.75
    assert cost["affordable"] is True
    assert spent(served.site) == 0 and audit_releases(served.site) == []


def test_a_fit_is_charged_stored_and_fetched_again_for_free(served_on):
    served = served_on
    api = served.client(served.tokens["alice"])
    answer = api.post(
        "/api/v1/releases", json={"dataset": "survey", "formula": "y ~ x1 + x2", "rho": 0.5}
    )
    assert answer.status_code == 201
    view = answer.json()
    assert view["status"] == "released" and view["rho_charged"] == 0.5
    assert result_sha256(view["result"]) == view["sha256"]
    result = decode_result(view["result"])
    assert result.names == ("Intercept", "x1", "x2") and result.n == 2000
    assert result.rho == pytest.approx(0.5, rel=1e-12)
    # n = 2000, rho = 0.5: the population intervals cover the truth (1, 0.5, -2) in the
    # overwhelming majority of draws; a 99.99% interval must hold them (fails ~1e-4 per term)
    lower, upper = result.conf_int(alpha=1e-4).to_numpy().T
    assert np.all((lower <= [1, 0.5, -2]) & ([1, 0.5, -2] <= upper))
    again = api.get(f"/api/v1/releases/{view['id']}").json()
    assert again["sha256"] == view["sha256"] and again["result"] == view["result"]
    assert api.get("/api/v1/datasets/survey").json()["budget"]["rho_remaining"] == 0.5
    assert spent(served.site) == spent(served.site, db.shares) == 500_000_000_000
    history = api.get("/api/v1/releases").json()["releases"]
    assert [h["id"] for h in history] == [view["id"]] and "result" not in history[0]


def test_an_iv_fit(served):
    api = served.client(served.tokens["alice"])
    view = api.post(
        "/api/v1/releases",
        json={"dataset": "survey", "model": "iv", "rho": 0.5, "formula": "y ~ x2 + [x1 ~ z]"},
    ).json()
    result = decode_result(view["result"])
    assert view["status"] == "released" and result.model == "DP IV regression"
    assert result.names == ("Intercept", "x2", "x1")


def test_derived_terms_need_public_bounds_from_the_analyst(served):
    api = served.client(served.tokens["alice"])
    request = {"dataset": "survey", "formula": "y ~ x1 + I(x1 ** 2)", "rho": 0.1}
    refused = api.post("/api/v1/dry-run", json=request)
    assert refused.status_code == 422 and "I(x1 ** 2)" in refused.json()["error"]["message"]
    cost = api.post("/api/v1/dry-run", json={**request, "bounds": {"I(x1 ** 2)": [0, 100]}})
    assert cost.json()["bounds"]["I(x1 ** 2)"] == [0.0, 100.0]
    typo = api.post(
        "/api/v1/dry-run", json={**request, "bounds": {"I(x1 ** 2)": [0, 100], "x9": [0, 1]}}
    )
    assert typo.status_code == 422 and "x9" in typo.json()["error"]["message"]


BAD = [
    ("corrupt body", b"{'dataset': ", 400, "not valid JSON"),
    ("not an object", b"[1, 2]", 400, "JSON object"),
    (
        "unknown field",
        b'{"dataset": "survey", "formula": "y ~ x1", "rho": 0.1, "seed": 1}',
        400,
        "unknown fields ['seed']",
    ),
    (
        "huge formula",
        ('{"dataset": "survey", "rho": 0.1, "formula": "y ~ ' + "x1 + " * 400 + 'x1"}').encode(),
        400,
        "the limit is 1000",
    ),
    (
        "unknown column",
        b'{"dataset": "survey", "formula": "y ~ x1 + age", "rho": 0.1}',
        422,
        "'age' is not a column",
    ),
    (
        "stateful transform",
        b'{"dataset": "survey", "formula": "y ~ scale(x1)", "rho": 0.1}',
        422,
        "stateful transform",
    ),
    (
        "undeclared level",
        b'{"dataset": "survey", "formula": "y ~ C(g, levels=[\\"a\\", \\"q\\"])", "rho": 0.1}',
        422,
        "not declared",
    ),
    (
        "constant arithmetic",
        b'{"dataset": "survey", "formula": "y ~ I(9 ** 9 ** 9)", "rho": 0.1}',
        422,
        "arithmetic between constants",
    ),
    ("negative rho", b'{"dataset": "survey", "formula": "y ~ x1", "rho": -1}', 400, "rho"),
    ("bool rho", b'{"dataset": "survey", "formula": "y ~ x1", "rho": true}', 400, "rho"),
    (
        "unknown dataset",
        b'{"dataset": "census", "formula": "y ~ x1", "rho": 0.1}',
        404,
        "no dataset",
    ),
    (
        "over budget",
        b'{"dataset": "survey", "formula": "y ~ x1", "rho": 1.5}',
        409,
        "exceeds your remaining budget 1",
    ),
    (
        "model",
        b'{"dataset": "survey", "formula": "y ~ x1", "rho": 0.1, "model": "glm"}',
        400,
        "model must be one of",
    ),
]


@pytest.mark.parametrize(("what", "body", "status", "message"), BAD, ids=[b[0] for b in BAD])
def test_bad_requests_get_clear_errors_and_charge_nothing(served, what, body, status, message):
    api = served.client(served.tokens["alice"])
    answer = api.post(
        "/api/v1/releases", content=body, headers={"Content-Type": "application/json"}
    )
    assert answer.status_code == status, answer.text
    assert message in answer.json()["error"]["message"]
    assert spent(served.site) == 0 and spent(served.site, db.shares) == 0
    logged = audit_releases(served.site)
    # refusals of a well-formed body are in the audit log (a corrupt body is not a request)
    assert all(r["status"] == "refused" and r["rho_charged"] == 0 for r in logged)
    assert len(logged) == (0 if status == 400 and what in ("corrupt body",) else 1)


@pytest.mark.parametrize("header", [None, "Bearer nope", "Bearer " + "x" * 43, "Basic abc"])
def test_a_wrong_token_gets_401_and_charges_nothing(served, header):
    api = served.client()
    headers = {} if header is None else {"Authorization": header}
    for method, path in (("GET", "/api/v1/datasets"), ("POST", "/api/v1/releases")):
        answer = api.request(
            method,
            path,
            headers=headers,
            json={"dataset": "survey", "formula": "y ~ x1", "rho": 0.1},
        )
        assert answer.status_code == 401 and answer.headers["www-authenticate"] == "Bearer"
        assert answer.json()["error"]["code"] == "unauthorised"
    assert spent(served.site) == 0 and audit_releases(served.site) == []


def test_the_steward_token_is_for_the_admin_api_only(served):
    assert served.client(served.steward).get("/api/v1/datasets").status_code == 403
    assert served.client(served.tokens["alice"]).get("/api/v1/admin/overview").status_code == 403
    overview = served.client(served.steward).get("/api/v1/admin/overview").json()
    assert overview["datasets"][0]["rho_allocated"] == 2.0


def test_a_body_over_the_size_limit_is_refused_before_it_is_read(served):
    api = served.client(served.tokens["alice"])
    big = b'{"dataset": "survey", "formula": "y ~ x1", "rho": 0.1, "pad": "' + b"x" * 70000
    answer = api.post("/api/v1/releases", content=big + b'"}')
    assert answer.status_code == 413 and "65536 bytes" in answer.json()["error"]["message"]

    def chunks():  # no Content-Length: the limit applies while reading
        for _ in range(80):
            yield b"x" * 1000

    answer = api.post("/api/v1/releases", content=chunks())
    assert answer.status_code == 413
    assert spent(served.site) == 0 and audit_releases(served.site) == []


def test_revoked_and_paused(served_on):
    served = served_on
    admin = served.client(served.steward)
    api = served.client(served.tokens["alice"])
    request = {"dataset": "survey", "formula": "y ~ x1", "rho": 0.1}
    assert admin.post("/api/v1/admin/datasets/survey/status", json={"status": "paused"}).is_success
    paused = api.post("/api/v1/releases", json=request)
    assert paused.status_code == 409 and "paused" in paused.json()["error"]["message"]
    assert admin.post("/api/v1/admin/datasets/survey/status", json={"status": "open"}).is_success
    assert api.post("/api/v1/releases", json=request).status_code == 201
    assert admin.post("/api/v1/admin/analysts/alice/revoke").is_success
    assert api.post("/api/v1/releases", json=request).status_code == 401
    assert spent(served.site) == 100_000_000_000 == charge_units(0.1)  # the decimal 0.1


def test_admin_api_registers_and_grants(served, tmp_path):
    admin = served.client(served.steward)
    done = admin.post(
        "/api/v1/admin/datasets",
        json={
            "name": "survey2",
            "data": str(served.data),
            "schema": str(served.schema),
            "rho": 1,
            "delta": 1e-7,
        },
    )
    assert done.status_code == 201 and done.json()["n"] == 2000
    created = admin.post(
        "/api/v1/admin/analysts", json={"name": "carol", "dataset": "survey2", "rho": 0.4}
    ).json()
    carol = served.client(created["token"])
    assert carol.get("/api/v1/datasets").json()["datasets"][0]["budget"]["rho_total"] == 0.4
    too_much = admin.post(
        "/api/v1/admin/shares", json={"analyst": "carol", "dataset": "survey2", "rho": 0.7}
    )
    assert too_much.status_code == 400 and "left to share out" in too_much.text
    csv = admin.get("/api/v1/admin/audit?format=csv").text
    assert csv.splitlines()[0].startswith("id,created_at,finished_at,analyst,dataset")
