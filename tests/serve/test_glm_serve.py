"""A steward's ``dpfit serve`` answers an analyst's logit, probit and Poisson fits.

End to end through a real server and :class:`dpfit.remote.Client`: the analyst gets the
:class:`~dpfit.models.glm.GLMResult` a local ``dpfit.logit`` returns on the same data and
noise (odds ratios and marginal effects included); requests that cannot be fitted are refused
before the charge with a message that names the field; and on two neighbouring datasets (one
record replaced by an extreme one) every answer is the same once the numbers are masked.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

import dpfit
from dpfit.models.glm import GLMResult
from dpfit.remote import Client
from dpfit.serve import create_analyst, grant_share, init_site, register_dataset
from dpfit.serve.testing import running_server
from dpfit.serve.units import fit_rho

from .conftest import Fixture
from .test_attacks import _masked

pytestmark = pytest.mark.filterwarnings("ignore::dpfit.PrivacyWarning")

SCHEMA = """\
description = "Synthetic labour survey"

[columns.age]
type = "numeric"
bounds = [20, 60]

[columns.kids]
type = "numeric"
bounds = [0, 4]

[columns.region]
type = "categorical"
levels = ["north", "south"]

[columns.works]
type = "numeric"
bounds = [0, 1]

[columns.visits]
type = "numeric"
bounds = [0, 15]

[columns.wage]
type = "numeric"
bounds = [0, 100]

[columns.months]
type = "numeric"
bounds = [0.5, 12]
"""


def labour(n: int, seed: int = 0) -> pd.DataFrame:
    """works ~ logit(-1 + 0.05 (age - 40) - 0.5 kids); visits ~ Poisson(exp(0.2 + 0.2 kids));
    ``months`` an exposure in [1, 12] that does not enter visits."""
    rng = np.random.default_rng(seed)
    age = rng.uniform(20, 60, n)
    kids = rng.integers(0, 5, n).astype(float)
    eta = -1 + 0.05 * (age - 40) - 0.5 * kids
    return pd.DataFrame(
        {
            "age": age,
            "kids": kids,
            "region": rng.choice(["north", "south"], n),
            "works": (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(float),
            "visits": np.minimum(rng.poisson(np.exp(0.2 + 0.2 * kids)), 15).astype(float),
            "wage": rng.uniform(5, 60, n),
            "months": rng.uniform(1, 12, n),
        }
    )


def glm_site(folder, frame: pd.DataFrame, *, rho: float = 8.0) -> Fixture:
    """A SQLite site with dataset ``labour`` and analyst alice holding all of rho."""
    folder.mkdir(parents=True, exist_ok=True)
    data, schema = folder / "labour.csv", folder / "schema.toml"
    frame.to_csv(data, index=False)
    schema.write_text(SCHEMA)
    site, steward = init_site(folder / "site")
    register_dataset(site, "labour", data=data, schema=schema, rho=rho, delta=1e-6)
    token = create_analyst(site, "alice")
    grant_share(site, "alice", "labour", rho)
    return Fixture(site, folder / "site", steward, {"alice": token}, data, schema)


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    fixture = glm_site(tmp_path_factory.mktemp("glm"), labour(3000))
    with running_server(fixture.folder) as server:
        yield fixture, Client(server.url, fixture.tokens["alice"])


BOUNDS = {"age": (20.0, 60.0), "kids": (0.0, 4.0)}


def _local(fit, formula: str, frame: pd.DataFrame, rho: float, **params) -> GLMResult:
    """The local call the service makes (serve/fitting.py), with the service's seed."""
    declared = {"region": {"type": "category", "levels": ["north", "south"]}}
    return fit(
        formula, frame.astype({"region": pd.CategoricalDtype(["north", "south"])}),
        rho=fit_rho(rho), budget=dpfit.Budget(rho=fit_rho(rho)), codebook=declared,
        bounds={k: v for k, v in BOUNDS.items() if k in formula}, random_state=0, **params,
    )  # fmt: skip


def test_a_remote_poisson_takes_an_exposure_column(live):
    _, client = live
    cost = client.dry_run("visits ~ kids", dataset="labour", rho=0.3, model="poisson",
                          exposure="months")  # fmt: skip
    assert cost["exposure"] == {"column": "months", "bounds": [0.5, 12.0]}
    result = client.poisson("visits ~ kids", dataset="labour", rho=0.3, exposure="months")
    assert isinstance(result, GLMResult) and result.names == ("Intercept", "kids")
    # visits do not grow with months: the rate per month is about exp(0.2 + 0.2 kids) / 6.5
    assert result.params["Intercept"] < 0.2 - 1.0


def test_a_remote_logit_is_the_local_logit(live):
    _, client = live
    cost = client.dry_run("works ~ age + kids + region", dataset="labour", rho=0.3,
                          model="logit")  # fmt: skip
    assert cost["y_bounds"] == [0.0, 1.0] and cost["model"] == "logit"
    result = client.logit("works ~ age + kids + region", dataset="labour", rho=0.3)
    assert isinstance(result, GLMResult) and result.link == "logit"
    assert result.names == ("Intercept", "age", "kids", "region[T.south]")
    assert "population coefficients" in result.summary().as_text()
    odds = result.params_exp()
    assert odds.columns.name == "odds ratio" and (odds["lower"] < odds["upper"]).all()
    assert result.get_margeff().index.tolist() == list(result.names[1:])


def test_the_service_fits_what_a_local_call_fits(tmp_path):
    """Same data and seed: the service's release is the local GLMResult, bit for bit."""
    frame = labour(2500, seed=4)
    fixture = glm_site(tmp_path, frame)
    fixture.site.random_state = 0
    api = fixture.client(fixture.tokens["alice"])
    requests = [
        (dpfit.logit, {"model": "logit", "formula": "works ~ age + kids + region"}, {}),
        (dpfit.probit, {"model": "probit", "formula": "works ~ age + kids"}, {}),
        (dpfit.poisson, {"model": "poisson", "formula": "visits ~ kids + region"},
         {"y_bounds": (0.0, 15.0)}),
        (dpfit.poisson, {"model": "poisson", "formula": "visits ~ kids", "exposure": "months"},
         {"y_bounds": (0.0, 15.0), "exposure": "months"}),
        (dpfit.poisson, {"model": "poisson", "formula": "visits ~ kids", "offset": "months"},
         {"y_bounds": (0.0, 15.0), "offset": "months"}),
    ]  # fmt: skip
    for fit, request, extra in requests:
        answer = api.post("/api/v1/releases", json={"dataset": "labour", "rho": 0.4, **request})
        assert answer.status_code == 201, answer.json()
        remote = dpfit.remote.codec.decode_result(answer.json()["result"])
        local = _local(fit, request["formula"], frame, 0.4, **extra)
        assert type(remote) is GLMResult and remote.model == local.model
        assert np.array_equal(remote.estimate, local.estimate)
        assert remote.summary().as_text() == local.summary().as_text()


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        ({"model": "logit", "formula": "wage ~ age"}, "logit needs a 0/1 response"),
        ({"model": "probit", "formula": "works ~ age", "y_bounds": [0, 1]}, "does not apply"),
        (
            {"model": "poisson", "formula": "np.log(wage) ~ age", "y_bounds": [-1, 5]},
            r"counts bounded by \[0, K\]",
        ),
        ({"model": "poisson", "formula": "np.log(wage) ~ age"}, "give y_bounds"),
        ({"model": "gamma", "formula": "wage ~ age"}, "model must be one of"),
        ({"model": "logit", "formula": "works ~ age", "exposure": "months"}, "'poisson' only"),
        ({"model": "poisson", "formula": "visits ~ age", "exposure": "kids"}, "above 0"),
        ({"model": "poisson", "formula": "visits ~ age", "offset": "region"}, "not a declared"),
        ({"model": "poisson", "formula": "visits ~ age", "exposure": "nope"}, "not a declared"),
        ({"model": "poisson", "formula": "visits ~ age", "exposure": 3}, "must be the name"),
    ],
)
def test_glm_requests_that_cannot_fit_are_refused_before_the_charge(tmp_path, request_, message):
    fixture = glm_site(tmp_path, labour(200))
    api = fixture.client(fixture.tokens["alice"])
    answer = api.post("/api/v1/releases", json={"dataset": "labour", "rho": 0.1, **request_})
    assert answer.status_code in (400, 422)
    assert re.search(message, answer.json()["error"]["message"])
    budget = api.get("/api/v1/datasets/labour").json()["budget"]
    assert budget["rho_spent"] == 0.0


NEIGHBOUR_REQUESTS = [
    {"dataset": "labour", "model": "logit", "formula": "works ~ age + kids + region", "rho": 0.3},
    {"dataset": "labour", "model": "probit", "formula": "works ~ age + kids", "rho": 0.3},
    {"dataset": "labour", "model": "poisson", "formula": "visits ~ kids + region", "rho": 0.3},
    {"dataset": "labour", "model": "logit", "formula": "I(wage > 30) ~ age", "rho": 0.3},
    {"dataset": "labour", "model": "poisson", "formula": "visits ~ kids", "exposure": "months",
     "rho": 0.3},
    {"dataset": "labour", "model": "poisson", "formula": "visits ~ kids", "offset": "months",
     "rho": 0.3},
]  # fmt: skip


def test_neighbouring_datasets_answer_glm_requests_alike_except_through_the_noise(tmp_path):
    """D and D' differ in one record, extreme in every column (out of bounds, out of levels,
    a response of 7 where 0/1 is expected, a count of 1e9, a negative exposure). With the
    noise seeded alike, every answer is the same once the numbers are masked, and the released
    values did move."""
    frame = labour(1500, seed=2)
    extreme = frame.copy()
    extreme.loc[5, ["age", "kids", "works", "visits", "wage", "months"]] = [
        1e6, -3, 7, 1e9, -1e9, -1e9,
    ]  # fmt: skip
    extreme.loc[5, "region"] = "west"
    answers = []
    for k, data in enumerate((frame, extreme)):
        fixture = glm_site(tmp_path / f"d{k}", data, rho=2.0)
        fixture.site.random_state = 0
        api = fixture.client(fixture.tokens["alice"])
        answers.append(
            [
                (a.status_code, a.json())
                for a in (api.post("/api/v1/releases", json=r) for r in NEIGHBOUR_REQUESTS)
            ]
        )
    plain, odd = answers
    assert [s for s, _ in plain] == [201] * len(NEIGHBOUR_REQUESTS)
    for (status_a, body_a), (status_b, body_b) in zip(plain, odd, strict=True):
        assert status_a == status_b
        assert _masked(body_a) == _masked(body_b)
    for (_, body_a), (_, body_b) in zip(plain, odd, strict=True):
        assert body_a["result"] != body_b["result"]  # the comparison above is not vacuous
