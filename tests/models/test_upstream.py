"""A Pipeline step fitted on the private data before a dpfit estimator is flagged; steps that
learn nothing (PublicScaler, FunctionTransformer) are not."""

import warnings

import numpy as np
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, PolynomialFeatures, StandardScaler

import dpfit
from dpfit.exceptions import PrivatePreprocessingWarning
from dpfit.preprocessing import PublicScaler

RNG = np.random.default_rng(0)
X = RNG.uniform(0, 10, (1500, 2))
Y = X @ [0.5, -0.2] + RNG.normal(size=1500)


def _estimator():
    return dpfit.DPLinearRegression(
        rho=1.0, bounds=[(-1, 1)] * 2, y_bounds=(-10, 10), random_state=0
    )


def _flagged(pipe) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pipe.fit(X, Y)
    return [str(w.message) for w in caught if w.category is PrivatePreprocessingWarning]


def test_a_standard_scaler_before_the_estimator_is_flagged_with_the_fix():
    messages = _flagged(make_pipeline(StandardScaler(), _estimator()))
    assert len(messages) == 1
    assert "'standardscaler' (StandardScaler: learned mean_" in messages[0]
    assert "PublicScaler" in messages[0]


@pytest.mark.parametrize(
    "step",
    [
        PublicScaler(bounds=[(0, 10), (0, 10)]),
        FunctionTransformer(np.log1p),
    ],
    ids=["PublicScaler", "FunctionTransformer"],
)
def test_steps_that_learn_nothing_are_not_flagged(step):
    assert _flagged(make_pipeline(step, _estimator())) == []


def test_shape_only_state_is_not_flagged():
    pipe = make_pipeline(
        PolynomialFeatures(degree=1, include_bias=False),
        PublicScaler(bounds=[(0, 10), (0, 10)]),
        _estimator(),
    )
    assert _flagged(pipe) == []


def test_a_column_transformer_is_inspected_inside():
    inner = ColumnTransformer([("a", StandardScaler(), [0]), ("b", "passthrough", [1])])
    assert len(_flagged(make_pipeline(inner, _estimator()))) == 1
    public = ColumnTransformer([("a", PublicScaler(bounds=[(0, 10)]), [0]), ("b", "drop", [1])])
    est = dpfit.DPLinearRegression(rho=1.0, bounds=[(-1, 1)], y_bounds=(-10, 10), random_state=0)
    assert _flagged(make_pipeline(public, est)) == []


@pytest.mark.filterwarnings("ignore::dpfit.exceptions.CoverageWarning")  # 750-record folds
@pytest.mark.filterwarnings("ignore:score:dpfit.exceptions.NonPrivateWarning")  # tested apart
def test_cross_validation_of_the_pipeline_is_flagged_per_fit():
    with pytest.warns(PrivatePreprocessingWarning):
        cross_val_score(make_pipeline(StandardScaler(), _estimator()), X, Y, cv=2)


def test_the_estimator_alone_is_not_flagged():
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivatePreprocessingWarning)
        _estimator().fit(PublicScaler(bounds=[(0, 10), (0, 10)]).fit_transform(X), Y)


def test_public_scaler_maps_bounds_to_minus_one_one_and_back():
    scaler = PublicScaler(bounds={"a": (0, 10), "b": (-2, 2)})
    import pandas as pd

    frame = pd.DataFrame({"a": [0.0, 5.0, 12.0], "b": [2.0, 0.0, -2.0]})
    out = scaler.fit_transform(frame)
    np.testing.assert_allclose(out, [[-1, 1], [0, 0], [1, -1]])  # 12 is clipped to 10
    np.testing.assert_allclose(scaler.inverse_transform(out)[:2], frame.to_numpy()[:2])
    assert list(scaler.get_feature_names_out()) == ["a", "b"]


def test_public_scaler_learns_nothing_from_the_values():
    one = PublicScaler(bounds=[(0, 1)]).fit(np.zeros((5, 1)))
    two = PublicScaler(bounds=[(0, 1)]).fit(np.ones((50, 1)))
    assert {k: v for k, v in vars(one).items() if k != "n_features_in_"}.keys() == vars(
        two
    ).keys() - {"n_features_in_"}
    np.testing.assert_array_equal(one.low_, two.low_)


@pytest.mark.parametrize(
    "bounds, exc, match",
    [
        (None, TypeError, "needs bounds"),
        ([(0, 1)], ValueError, "shape"),
        ([(1, 0)] * 2, ValueError, "low"),
    ],
)
def test_public_scaler_refuses_bad_bounds(bounds, exc, match):
    with pytest.raises(exc, match=match):
        PublicScaler(bounds=bounds).fit(X)
