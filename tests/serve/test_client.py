"""``dpfit.remote.Client`` against a real server: the same Result and errors as a local call."""

from __future__ import annotations

import numpy as np
import pytest

import dpfit
from dpfit.remote import Client
from dpfit.serve.testing import running_server

from .conftest import build_site

# a fit may raise dpfit's warnings (as a local fit would); test_warnings_come_back checks them
pytestmark = pytest.mark.filterwarnings("ignore::dpfit.PrivacyWarning")


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    shares = {"alice": 1.0, "bob": 0.2, "carol": 6.0}
    fixture = build_site(tmp_path_factory.mktemp("client"), shares=shares, rho=8.0)
    with running_server(fixture.folder) as server:
        yield fixture, server


def test_ols_returns_the_result_a_local_fit_returns(live):
    fixture, server = live
    client = Client(server.url, fixture.tokens["alice"])
    assert repr(client) == f"Client({server.url!r})"  # the token is never shown
    assert client.schema("survey")["schema"]["columns"]["x2"]["bounds"] == [0.0, 1.0]
    cost = client.dry_run("y ~ x1 + x2", dataset="survey", rho=0.2)
    assert cost["rho_remaining_after"] == pytest.approx(cost["rho_remaining"] - 0.2)
    result = client.ols("y ~ x1 + x2", dataset="survey", rho=0.2)
    assert isinstance(result, dpfit.models.results.Result)
    assert result.names == ("Intercept", "x1", "x2") and result.n == 2000
    assert "DP linear regression" in result.summary().as_text()
    (latest,) = [h for h in client.history() if h["status"] == "released"][:1]
    again = client.release(latest["id"])
    assert np.array_equal(again.result.estimate, result.estimate)  # fetched again, no charge
    assert client.schema("survey")["budget"]["rho_spent"] == pytest.approx(0.2)


def test_iv_and_derived_terms(live):
    fixture, server = live
    client = Client(server.url, fixture.tokens["alice"])
    result = client.iv("y ~ x2 + [x1 ~ z]", dataset="survey", rho=0.2)
    squared = client.ols("y ~ x1 + I(x1 ** 2)", dataset="survey", rho=0.1,
                         bounds={"I(x1 ** 2)": (0, 100)})  # fmt: skip
    assert result.model == "DP IV regression" and "I(x1 ** 2)" in squared.names


def test_refusals_raise_what_a_local_call_raises(live, monkeypatch):
    fixture, server = live
    bob = Client(server.url, fixture.tokens["bob"])
    with pytest.raises(dpfit.BudgetExceededError, match=r"remaining budget 0\.2"):
        bob.ols("y ~ x1", dataset="survey", rho=0.5)
    with pytest.raises(ValueError, match="'age' is not a column"):
        bob.ols("y ~ age", dataset="survey", rho=0.1)
    with pytest.raises(LookupError, match="no dataset"):
        bob.ols("y ~ x1", dataset="census", rho=0.1)
    with pytest.raises(LookupError, match="no release"):
        bob.release("nothing")
    with pytest.raises(PermissionError, match="invalid or revoked token"):
        Client(server.url, "not-a-token-but-long-enough-to-be-checked").datasets()
    monkeypatch.setenv("DPFIT_TOKEN", fixture.tokens["bob"])
    assert Client(server.url).datasets()[0]["budget"]["rho_total"] == 0.2
    monkeypatch.delenv("DPFIT_TOKEN")
    with pytest.raises(ValueError, match="token is required"):
        Client(server.url)
    with pytest.raises(ValueError, match="http:// or https://"):
        Client("127.0.0.1:8000", "t")


def test_a_tampered_result_is_refused():
    document = {"id": "x", "model": "ols", "formula": "y ~ x", "status": "released",
                "rho_charged": 0.1, "sha256": "0" * 64, "result": {"$tuple": []}}  # fmt: skip
    with pytest.raises(RuntimeError, match="does not match the SHA-256"):
        Client._release(document)


@pytest.mark.filterwarnings("error::dpfit.PrivacyWarning")
def test_warnings_come_back_with_their_category(live):
    fixture, server = live
    carol = Client(server.url, fixture.tokens["carol"])
    with pytest.warns(dpfit.LargeBudgetWarning, match="rho=6 is a weak privacy guarantee") as got:
        carol.ols("y ~ x1", dataset="survey", rho=6.0)
    assert got[0].filename == __file__  # attributed to the caller's line, as locally
