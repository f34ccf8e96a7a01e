"""Naming the terms behind a direction a released second moment cannot identify.

Unit tests of :mod:`dpfit.inference.identification` (post-processing of a release), and the
fits that use it: the default DP-GD fit and AdaSSP warn naming the collinear terms (an
``IdentificationWarning``, not a ``CoverageWarning``), and a well-identified design stays quiet;
noise in most directions is a ``CoverageWarning`` of the DP-GD fit.
"""

import warnings

import numpy as np
import pandas as pd
import pytest

import dpfit
from dpfit.exceptions import CoverageWarning, IdentificationWarning, SideConditionWarning
from dpfit.inference.identification import (
    collinear_terms,
    column_scale,
    describe_directions,
    unidentified_directions,
)
from dpfit.inference.population import NoisyMoment

NAMES = ["Intercept", "a", "b", "c"]


def test_the_terms_named_are_the_fewest_that_explain_the_direction():
    # loadings (0, 0.7, -0.7, 0.1): a and b carry 98% of the squared loading
    v = np.array([0.0, 0.7, -0.7, 0.1])
    assert collinear_terms(v, np.ones(4), NAMES) == ("a", "b")
    # a column's scale enters the loading: c ten times larger brings it in
    assert set(collinear_terms(v, np.array([1, 1, 1, 10.0]), NAMES)) == {"a", "b", "c"}
    # one dominant term
    assert collinear_terms(np.array([0, 0, 1.0, 0.05]), np.ones(4), NAMES) == ("b",)


def test_the_sentence_names_each_direction():
    directions = np.array([[0.0, 1.0], [0.71, 0.0], [-0.71, 0.0], [0.0, 0.0]])
    text = describe_directions(directions, np.ones(4), NAMES)
    assert text == "a and b are nearly collinear; Intercept barely varies in the data"
    three = np.array([[0.0], [0.6], [0.6], [-0.6]])
    assert describe_directions(three, np.ones(4), NAMES) == "a, b and c are nearly collinear"
    assert describe_directions(np.zeros((4, 0)), np.ones(4), NAMES) == ""


def test_unidentified_directions_are_those_within_the_noise():
    # eigenvalues 1, 1, 1 and 0 along (a - b) / sqrt(2); noise s.d. 0.01 per entry
    v = np.array([0.0, 1.0, -1.0, 0.0]) / np.sqrt(2)
    M = np.eye(4) - np.outer(v, v)
    rng = np.random.default_rng(0)
    E = np.triu(rng.normal(0, 0.01, (4, 4)))
    noisy = NoisyMoment(matrix=M + E + np.triu(E, 1).T, noise_std=0.01)
    found = unidentified_directions(noisy, 2.0)
    assert found.shape == (4, 1) and abs(found[:, 0] @ v) > 0.99
    assert describe_directions(found, column_scale(noisy), NAMES) == "a and b are nearly collinear"
    # the same design with noise a hundred times smaller relative to 0.05: identified
    M2 = np.eye(4) - 0.95 * np.outer(v, v)
    quiet = NoisyMoment(matrix=M2 + (E + np.triu(E, 1).T) / 100, noise_std=1e-4)
    assert unidentified_directions(quiet, 2.0).shape == (4, 0)


def _frame(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.uniform(0, 10, n)
    c = rng.integers(0, 2, n).astype(float)
    return pd.DataFrame(
        {"a": a, "a12": 12 * a, "c": c, "y": 1 + 0.3 * a - 0.5 * c + rng.normal(0, 1, n)}
    )


BOUNDS = {"a": (0, 10), "a12": (0, 120), "c": (0, 1)}


def _warnings(fit, category=CoverageWarning):
    """The messages of ``category`` and of SideConditionWarning that ``fit`` gives."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit()
    return [str(w.message) for w in caught if issubclass(w.category, category)], [
        str(w.message) for w in caught if issubclass(w.category, SideConditionWarning)
    ]


@pytest.mark.parametrize("method", ["gd", "adassp"])
def test_a_collinear_design_warns_naming_both_terms(method):
    # a12 = 12 a exactly: X'X/n is singular along (a, a12) in every release
    df = _frame()

    def fit():
        return dpfit.ols(
            "y ~ a + a12 + c",
            df,
            rho=1.0,
            method=method,
            bounds=BOUNDS,
            y_bounds=(-6, 10),
            random_state=3,
        )

    named, _ = _warnings(fit, IdentificationWarning)
    assert len(named) == 1
    assert "a and a12 are nearly collinear" in named[0]
    assert "fewer or less collinear terms" in named[0]
    assert not issubclass(IdentificationWarning, CoverageWarning)
    coverage, _ = _warnings(fit)  # whatever else it says, not the collinearity
    assert not any("collinear" in m.split("What would help")[0] for m in coverage)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        notes = fit().notes
    assert any("a and a12 are nearly collinear" in note for note in notes)


def test_a_constant_column_is_named_with_the_intercept():
    df = _frame().assign(k=3.0)
    named, _ = _warnings(
        lambda: dpfit.ols(
            "y ~ a + c + k", df, rho=1.0, bounds={"a": (0, 10), "c": (0, 1), "k": (0, 10)},
            y_bounds=(-6, 10),
            random_state=3,
        ),
        IdentificationWarning,
    )  # fmt: skip
    assert len(named) == 1 and "Intercept and k are nearly collinear" in named[0]


def test_adassp_without_an_interval_names_the_terms_too():
    df = _frame()
    _, side = _warnings(
        lambda: dpfit.ols(
            "y ~ a + a12 + c", df, rho=1.0, method="adassp", interval=None, bounds=BOUNDS,
            y_bounds=(-6, 10), random_state=3,
        )
    )  # fmt: skip
    assert len(side) == 1 and "nearly collinear" in side[0] and "a12" in side[0]


def test_a_well_identified_design_names_nothing():
    df = _frame()
    coverage, side = _warnings(
        lambda: dpfit.ols(
            "y ~ a + c",
            df,
            rho=1.0,
            bounds={"a": (0, 10), "c": (0, 1)},
            y_bounds=(-6, 10),
            random_state=3,
        ),
        (CoverageWarning, IdentificationWarning),
    )
    assert not any("collinear" in m or "barely varies" in m for m in coverage + side)


def test_noise_in_most_directions_is_not_called_collinearity():
    """Half of the directions or more unidentified: the reason says the noise swamps the
    data, names no terms; fewer: it names them."""
    from dpfit.inference.identification import unidentified_reason

    k = len(NAMES)
    swamped = unidentified_reason(np.eye(k)[:, :2], np.ones(k), NAMES, "X'X/n", "two")
    assert "noise swamps the data" in swamped and "2 of the 4 directions" in swamped
    assert "collinear" not in swamped
    one = unidentified_reason(
        np.eye(k)[:, 1:2] + np.eye(k)[:, 2:3], np.ones(k), NAMES, "X'X/n", "two"
    )
    assert "a and b are nearly collinear" in one and "within two noise s.d." in one


def test_a_small_n_fit_says_in_one_warning_that_the_noise_swamps_the_data():
    """n = 300, ten terms at rho = 0.5: every direction is within the noise. The one
    CoverageWarning says so and what would help, without blaming collinearity or the number of
    steps (the drift is a consequence)."""
    rng = np.random.default_rng(2)
    n, k = 300, 10
    X = rng.uniform(-1, 1, (n, k))
    y = X @ np.linspace(-1, 1, k) + rng.normal(0, 1, n)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dpfit.DPLinearRegression(
            rho=0.5, bounds=[(-1, 1)] * k, y_bounds=(-6, 6), random_state=0
        ).fit(X, y)
    (message,) = [str(w.message) for w in caught if issubclass(w.category, CoverageWarning)]
    assert "the noise swamps the data" in message and "more records, a larger rho" in message
    assert "collinear" not in message.split("What would help")[0]
    assert "not converged" not in message
