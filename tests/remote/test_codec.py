"""A Result survives JSON: the same summary, estimates bit for bit, and nothing else decodes."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

import dpfit
from dpfit.models.glm import GLMResult
from dpfit.remote.codec import canonical_json, decode_result, encode_result, result_sha256

pytestmark = pytest.mark.filterwarnings("ignore::dpfit.PrivacyWarning")


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(3)
    n = 3000
    z = rng.normal(0, 1, n)
    x = 0.8 * z + rng.normal(0, 1, n)
    g = pd.Categorical(rng.choice(["a", "b"], n), categories=["a", "b"])
    works = (rng.uniform(size=n) < 1 / (1 + np.exp(-0.3 - 0.6 * x))).astype(float)
    return pd.DataFrame(
        {"x": x, "z": z, "g": g, "y": 1 + 0.5 * x + rng.normal(0, 1, n), "works": works,
         "visits": rng.poisson(np.exp(0.2 + 0.3 * z)), "years": rng.uniform(0.5, 2, n)}
    )  # fmt: skip


def fits(frame):
    bounds = {"x": (-5, 5), "z": (-4, 4)}
    yield dpfit.ols(
        "y ~ x + g", frame, rho=0.5, bounds={"x": (-5, 5)}, y_bounds=(-5, 8), random_state=0
    )
    yield dpfit.iv(
        "y ~ g + [x ~ z]", frame, rho=0.5, bounds=bounds, y_bounds=(-5, 8), random_state=0
    )
    yield dpfit.logit("works ~ x + g", frame, rho=0.5, bounds={"x": (-5, 5)}, random_state=0)
    yield dpfit.poisson(
        "visits ~ z", frame, rho=0.5, bounds={"z": (-4, 4)}, y_bounds=(0, 20), exposure="years",
        random_state=0,
    )  # fmt: skip


@pytest.mark.parametrize("which", [0, 1, 2, 3], ids=["ols", "iv", "logit", "poisson"])
def test_round_trip_gives_the_same_result(frame, which):
    result = list(fits(frame))[which]
    text = canonical_json(encode_result(result))
    again = decode_result(json.loads(text))
    assert type(again) is type(result)
    assert again.summary().as_text() == result.summary().as_text()
    assert np.array_equal(again.estimate, result.estimate)  # bit for bit
    assert again.conf_int().equals(result.conf_int())
    assert again.rho == result.rho and again.ledger.entries == result.ledger.entries
    assert list(again.config) == list(result.config)  # the configuration's order is kept
    assert result_sha256(json.loads(text)) == result_sha256(encode_result(result))
    if isinstance(result, GLMResult):  # the GLM's own read-outs travel too
        assert (again.family, again.link) == (result.family, result.link)
        assert again.params_exp().equals(result.params_exp())
        assert again.get_margeff().equals(result.get_margeff())


def test_diagnostics_stay_behind(frame):
    result = next(fits(frame))
    assert result.diagnostics  # the fit has non-private diagnostics ...
    assert not decode_result(encode_result(result)).diagnostics  # ... that never travel


def test_non_finite_floats_travel_as_tags():
    from dpfit.remote.codec import _decode, _encode

    encoded = _encode((math.inf, -math.inf, 1.5))
    assert json.loads(canonical_json(encoded)) == encoded  # valid JSON (no Infinity)
    back = _decode(encoded)
    assert back[:2] == (math.inf, -math.inf) and back[2] == 1.5
    assert math.isnan(_decode(_encode(math.nan)))


@pytest.mark.parametrize(
    "document",
    [
        {"$type": "Popen", "fields": {"args": ["rm", "-rf", "/"]}},  # not a result type
        {"$type": "Result", "fields": {"names": ["a"]}},  # a Result without its fields
        {"$array": [1, 2], "dtype": "O"},  # object arrays never decode
        {"__reduce__": "os.system"},
        [1, 2, 3],
    ],
)
def test_only_results_decode(document):
    with pytest.raises(ValueError):
        decode_result(document)
