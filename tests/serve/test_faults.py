"""Faults: a server killed during fits, a failing database, a data file gone.

Whatever fails, the rule holds: a charge committed before a fit is never lost (the noise may
have been drawn), and nothing is charged for a fit that cannot start. Bad requests (a
corrupt body, a huge formula, an unknown column, a wrong token) are in test_api.py.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import urllib.error
import urllib.request

import pytest
import sqlalchemy as sa

from dpfit.remote.codec import result_sha256
from dpfit.serve import budgets, db, releases
from dpfit.serve.audit import audit_releases
from dpfit.serve.testing import running_server

from .conftest import build_site

pytestmark = pytest.mark.filterwarnings("ignore::dpfit.PrivacyWarning")

REQUEST = {"dataset": "survey", "formula": "y ~ x1 + x2 + g", "rho": 0.05}


def _post(url: str, token: str) -> None:
    request = urllib.request.Request(
        url + "/api/v1/releases",
        data=json.dumps(REQUEST).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        urllib.request.urlopen(request, timeout=300).close()
    except (urllib.error.URLError, ConnectionError):
        pass  # the server was killed under this request


def _ledger(site):
    with site.engine.begin() as conn:
        rows = conn.execute(sa.select(db.releases)).all()
        dataset = conn.execute(sa.select(db.datasets)).one()
        share_spent = conn.execute(sa.select(sa.func.sum(db.shares.c.spent_units))).scalar()
    return rows, dataset.spent_units, share_spent


def test_a_server_killed_during_fits_keeps_every_charge(tmp_path, database):
    # 60 000 records: a fit takes about a second, so the kill lands while fits run and wait
    fixture = build_site(tmp_path, n=60_000, shares={"alice": 1.0, "bob": 1.0}, database=database)
    with running_server(fixture.folder) as server:
        threads = [
            threading.Thread(target=_post, args=(server.url, fixture.tokens[name]))
            for name in ("alice", "bob")
            for _ in range(4)
        ]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            rows, _, _ = _ledger(fixture.site)
            if sum(r.status == "charged" for r in rows) >= 3:
                break
            time.sleep(0.05)
        os.killpg(server.process.pid, signal.SIGKILL)
        server.process.wait()
        for thread in threads:
            thread.join()
    rows, dataset_spent, share_spent = _ledger(fixture.site)
    assert sum(r.status == "charged" for r in rows) >= 1  # fits were cut off mid-way
    with running_server(fixture.folder) as server:  # the restart marks them interrupted
        rows, dataset_spent, share_spent = _ledger(fixture.site)
        assert {r.status for r in rows} <= {"released", "interrupted"}
        interrupted = [r for r in rows if r.status == "interrupted"]
        assert interrupted and all(r.error == releases.INTERRUPTED for r in interrupted)
        assert all(r.charged_units == 50_000_000_000 for r in rows)  # charges kept
        assert dataset_spent == share_spent == sum(r.charged_units for r in rows)
        for row in rows:  # every release is retrievable, as stored
            token = fixture.tokens["alice" if row.analyst_id == 1 else "bob"]
            request = urllib.request.Request(
                server.url + f"/api/v1/releases/{row.id}",
                headers={"Authorization": f"Bearer {token}"},
            )
            with urllib.request.urlopen(request, timeout=60) as answer:
                view = json.loads(answer.read())
            assert view["status"] == row.status
            if row.status == "released":
                assert result_sha256(view["result"]) == view["sha256"] == row.result_sha256
        _post(server.url, fixture.tokens["alice"])  # and the service goes on
    rows_after, dataset_after, _ = _ledger(fixture.site)
    assert len(rows_after) == len(rows) + 1 and dataset_after == dataset_spent + 50_000_000_000
    logged = {r["id"]: r for r in audit_releases(fixture.site)}
    assert all(logged[r.id]["status"] == "interrupted" for r in interrupted)


def test_a_database_failure_during_the_charge_draws_nothing(served, monkeypatch):
    fitted = []
    monkeypatch.setattr(releases, "run_fit", lambda *a, **k: fitted.append(1))

    real = budgets.charge

    def disk_full(conn, **kwargs):
        real(conn, **kwargs)  # the rows are written ...
        raise sa.exc.OperationalError("COMMIT", {}, Exception("disk I/O error"))  # ... not kept

    monkeypatch.setattr(releases, "charge", disk_full)
    answer = served.client(served.tokens["alice"], raise_errors=False).post(
        "/api/v1/releases", json=REQUEST
    )
    assert answer.status_code == 500 and answer.json()["error"]["code"] == "internal"
    assert "disk" not in answer.text
    rows, dataset_spent, share_spent = _ledger(served.site)
    assert not fitted and dataset_spent == share_spent == 0
    assert [r.status for r in rows] == []  # the transaction was rolled back whole


def test_a_database_failure_after_the_fit_keeps_the_charge(served, monkeypatch):
    def lost(site, release_id, values):
        raise sa.exc.OperationalError("UPDATE", {}, Exception("disk I/O error"))

    monkeypatch.setattr(releases, "_finish", lost)
    answer = served.client(served.tokens["alice"], raise_errors=False).post(
        "/api/v1/releases", json=REQUEST
    )
    assert answer.status_code == 500
    rows, dataset_spent, _ = _ledger(served.site)
    assert [r.status for r in rows] == ["charged"] and dataset_spent == 50_000_000_000
    assert releases.recover(served.site) == 1
    rows, dataset_spent, _ = _ledger(served.site)
    assert [r.status for r in rows] == ["interrupted"] and dataset_spent == 50_000_000_000


def test_a_data_file_gone_or_changed_charges_nothing(served):
    api = served.client(served.tokens["alice"])
    served.data.write_text(served.data.read_text() + "1,1,1,a,1\n")  # one more record
    changed = api.post("/api/v1/releases", json=REQUEST)
    assert changed.status_code == 503 and "unavailable" in changed.json()["error"]["message"]
    served.data.unlink()
    assert api.post("/api/v1/releases", json=REQUEST).status_code == 503
    rows, dataset_spent, _ = _ledger(served.site)
    assert [r.status for r in rows] == ["refused", "refused"] and dataset_spent == 0
