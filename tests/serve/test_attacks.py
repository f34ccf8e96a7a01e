"""An analyst attacking the service: others' results and budgets, races, errors as a channel.

Each test plays analyst A (alice) against B (bob), the budgets or the data:

* A cannot read B's releases, history or budget: B's release is "not found" to A, with the
  same answer as an id that does not exist;
* racing requests cannot overspend: many concurrent fits through a real server (two worker
  processes on one SQLite file) spend exactly the share, never more;
* errors carry no data: on two neighbouring datasets (one record replaced by an extreme, out
  of bounds and out of levels record) every answer is identical except the numbers the
  charged noise moves; a fit that fails after its charge answers one fixed text;
* injected SQL in names and formulas is data, never code.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.error
import urllib.request

import numpy as np
import pytest
import sqlalchemy as sa

from dpfit.serve import db, register_dataset, releases
from dpfit.serve.audit import audit_releases
from dpfit.serve.testing import running_server

from .conftest import build_site, synthetic

pytestmark = pytest.mark.filterwarnings("ignore::dpfit.PrivacyWarning")

REQUEST = {"dataset": "survey", "formula": "y ~ x1 + x2", "rho": 0.1}


def test_a_cannot_read_b_releases_or_budget(served):
    alice = served.client(served.tokens["alice"])
    bob = served.client(served.tokens["bob"])
    theirs = bob.post("/api/v1/releases", json={**REQUEST, "rho": 0.3}).json()["id"]
    as_alice = alice.get(f"/api/v1/releases/{theirs}")
    nowhere = alice.get("/api/v1/releases/AAAAAAAAAAAAAAAA")
    assert as_alice.status_code == nowhere.status_code == 404
    assert (
        as_alice.json()
        == nowhere.json()
        == {"error": {"code": "not_found", "message": "no release"}}
    )
    assert alice.get("/api/v1/releases").json()["releases"] == []
    # A's view of the dataset shows A's share only: B's spending is invisible
    assert alice.get("/api/v1/datasets/survey").json()["budget"]["rho_spent"] == 0.0
    assert bob.get("/api/v1/datasets/survey").json()["budget"]["rho_spent"] == 0.3
    assert "bob" not in alice.get("/api/v1/datasets").text
    # nor through the pages
    page = served.client()
    login = page.get("/login").text
    token = re.search(r'name="csrf" value="([^"]+)"', login).group(1)
    page.post("/login", data={"csrf": token, "token": served.tokens["alice"]})
    assert page.get(f"/releases/{theirs}").status_code == 404
    assert page.get(f"/releases/{theirs}/plot.png").status_code == 404


def test_a_dataset_without_a_share_looks_like_no_dataset(served):
    register_dataset(
        served.site, "hidden", data=served.data, schema=served.schema, rho=1, delta=1e-6
    )
    alice = served.client(served.tokens["alice"])
    hidden = alice.post("/api/v1/dry-run", json={**REQUEST, "dataset": "hidden"})
    absent = alice.post("/api/v1/dry-run", json={**REQUEST, "dataset": "hiddem"})
    assert hidden.status_code == absent.status_code == 404
    assert hidden.json()["error"]["message"].replace("hidden", "?") == absent.json()["error"][
        "message"
    ].replace("hiddem", "?")


def _post(url: str, token: str, payload: dict) -> int:
    request = urllib.request.Request(
        url + "/api/v1/releases",
        data=json.dumps(payload).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=300) as answer:
            return answer.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_racing_requests_cannot_overspend(tmp_path, database):
    fixture = build_site(tmp_path, n=500, shares={"alice": 1.0}, database=database)
    statuses: list[int] = []
    with running_server(fixture.folder, workers=2) as server:
        threads = [
            threading.Thread(
                target=lambda: statuses.append(_post(server.url, fixture.tokens["alice"], REQUEST))
            )
            for _ in range(24)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert sorted(statuses) == [201] * 10 + [409] * 14  # rho 1 buys exactly ten fits of 0.1
    with fixture.site.engine.begin() as conn:
        share = conn.execute(sa.select(db.shares)).one()
        dataset = conn.execute(sa.select(db.datasets)).one()
        charged = conn.execute(sa.select(sa.func.sum(db.releases.c.charged_units))).scalar()
    assert share.spent_units == share.total_units == dataset.spent_units == charged


def _masked(value):
    """A response with every number replaced: what is left must not depend on the data."""
    if isinstance(value, dict):
        return {
            k: _masked(v)
            for k, v in value.items()
            if k not in ("id", "created_at", "finished_at", "sha256")
        }
    if isinstance(value, list):
        return [_masked(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        return "#"
    if isinstance(value, str):
        return re.sub(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", "#", value)
    return value


NEIGHBOUR_REQUESTS = [
    {"dataset": "survey", "formula": "y ~ x1 + x2 + g", "rho": 0.2},
    {
        "dataset": "survey",
        "formula": "y ~ np.log(x1 + 1) + x2",
        "rho": 0.2,
        "bounds": {"np.log(x1 + 1)": [0, 2.4]},
    },
    {"dataset": "survey", "model": "iv", "formula": "y ~ x2 + [x1 ~ z]", "rho": 0.2},
    {"dataset": "survey", "formula": "y ~ x1 + age", "rho": 0.2},
    {"dataset": "survey", "formula": "y ~ x1", "rho": 5.0},
]


def test_neighbouring_datasets_answer_alike_except_through_the_noise(tmp_path):
    """D and D' differ in one record, extreme in every column (x1 = 1e6 beyond its bounds,
    g outside the levels, y = -1e9). With the noise seeded alike, every answer (status, error,
    warnings, summary text, configuration, notes) must be the same once the numbers are
    masked: the extreme record moves nothing but released values."""
    frame = synthetic(1500, seed=1)
    extreme = frame.copy()
    extreme.loc[7, ["x1", "y", "z"]] = [1e6, -1e9, 1e6]
    extreme.loc[7, "g"] = "zzz"
    answers = []
    for k, data in enumerate((frame, extreme)):
        fixture = build_site(tmp_path / f"d{k}", frame=data, shares={"alice": 2.0}, rho=2.0)
        fixture.site.random_state = 0
        api = fixture.client(fixture.tokens["alice"])
        answers.append(
            [
                (a.status_code, a.json())
                for a in (api.post("/api/v1/releases", json=r) for r in NEIGHBOUR_REQUESTS)
            ]
        )
    plain, odd = answers
    assert [s for s, _ in plain] == [201, 201, 201, 422, 409]
    for (status_a, body_a), (status_b, body_b) in zip(plain, odd, strict=True):
        assert status_a == status_b
        assert _masked(body_a) == _masked(body_b)
    # and the released values did change (the comparison above is not vacuous)
    assert plain[0][1]["result"] != odd[0][1]["result"]


def test_a_fit_that_fails_after_its_charge_answers_a_fixed_text(served, monkeypatch):
    def broken(*args, **kwargs):
        raise ValueError("x1 = 3.14159 in record 7 is odd")  # a message quoting data

    monkeypatch.setattr(releases, "run_fit", broken)
    answer = served.client(served.tokens["alice"]).post("/api/v1/releases", json=REQUEST)
    assert answer.status_code == 201
    view = answer.json()
    assert view["status"] == "failed" and view["error"] == releases.FIT_FAILED
    assert "3.14159" not in answer.text and view["result"] is None
    assert view["rho_charged"] == 0.1  # the charge stands
    (logged,) = audit_releases(served.site)
    assert logged["status"] == "failed" and logged["rho_charged"] == 0.1


@pytest.mark.parametrize(
    "payload",
    [
        {"dataset": "survey'; DROP TABLE releases; --", "formula": "y ~ x1", "rho": 0.1},
        {"dataset": "survey", "formula": 'y ~ x1 + Q("\'; DROP TABLE shares; --")', "rho": 0.1},
        {"dataset": "survey", "formula": "y ~ x1 # '); DELETE FROM shares; --", "rho": 0.1},
    ],
)
def test_injected_sql_is_data(served, payload):
    answer = served.client(served.tokens["alice"]).post("/api/v1/releases", json=payload)
    assert answer.status_code in (404, 422, 201)
    with served.site.engine.begin() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(db.shares)).scalar() == 2
        formulas = conn.execute(sa.select(db.releases.c.formula)).scalars().all()
    assert formulas == [payload["formula"]]  # stored verbatim, as text


def test_tokens_are_stored_hashed(served):
    with served.site.engine.begin() as conn:
        stored = conn.execute(sa.select(db.analysts.c.token_sha256)).scalars().all()
        meta = conn.execute(sa.select(db.meta.c.value)).scalars().all()
    raw = [*served.tokens.values(), served.steward]
    text = b"".join(p.read_bytes() for p in served.folder.glob("serve.sqlite*"))
    assert not any(token.encode() in text for token in raw)
    assert len(stored) == 2 and all(len(s) == 64 for s in stored)
    assert not set(raw) & set(meta)
    assert np.all([len(t) >= 43 for t in raw])  # 256-bit tokens
