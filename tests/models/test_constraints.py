"""The shared constraint tables of the estimators (models/_constraints.py)."""

import warnings
from types import SimpleNamespace

import numpy as np
import pytest

from dpfit import DPIVRegression, DPLinearRegression, LargeBudgetWarning
from dpfit.models._constraints import (
    check_bool,
    fraction,
    integer,
    one_of,
    optional,
    rho_check,
    validated,
)

TABLE = {
    "rho": rho_check(warn=True),  # validated swaps in its own, warning only when asked
    "steps": integer(1),
    "share": optional(fraction),
    "kind": one_of(("a", "b")),
    "flag": check_bool,
}


def test_a_table_returns_clean_values_in_table_order():
    params = SimpleNamespace(rho=2, steps=3, share=None, kind="b", flag=np.bool_(True))
    out = validated(params, TABLE)
    assert list(out) == ["rho", "steps", "share", "kind", "flag"]
    assert out == {"rho": 2.0, "steps": 3, "share": None, "kind": "b", "flag": True}
    assert type(out["flag"]) is bool and type(out["rho"]) is float


def test_the_first_bad_parameter_in_table_order_is_named():
    params = SimpleNamespace(rho=1.0, steps=0, share=2.0, kind="c", flag=1)
    with pytest.raises(ValueError, match="steps"):
        validated(params, TABLE)
    params.steps = 1
    with pytest.raises(ValueError, match="share"):
        validated(params, TABLE)
    params.share = 0.5
    with pytest.raises(ValueError, match="kind"):
        validated(params, TABLE)
    params.kind = "a"
    with pytest.raises(TypeError, match="flag must be a bool, got int"):
        validated(params, TABLE)


def test_rho_warns_only_when_asked():
    params = SimpleNamespace(rho=50.0, steps=1, share=None, kind="a", flag=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        validated(params, TABLE, warn_large_rho=False)
    with pytest.warns(LargeBudgetWarning, match="rho=50"):
        validated(params, TABLE)


@pytest.mark.parametrize("value", [1, 0, "yes", None])
def test_check_bool_refuses_what_is_not_a_bool(value):
    with pytest.raises(TypeError, match="x must be a bool"):
        check_bool(value, "x")


@pytest.mark.parametrize("estimator", [DPLinearRegression, DPIVRegression])
def test_both_estimators_check_their_shared_parameters_alike(estimator):
    """The same parameter, the same check and the same error in both estimators."""
    for kwargs, exc, match in [
        ({"fit_intercept": 1}, TypeError, "fit_intercept must be a bool, got int"),
        ({"m": 1}, ValueError, "m must be"),
        ({"burn_in": -1}, ValueError, "burn_in must be"),
        ({"interval_variant": "loose"}, ValueError, "interval_variant"),
        ({"secure": 0}, TypeError, "secure must be a bool"),
    ]:
        with pytest.raises(exc, match=match):
            estimator(rho=1.0, **kwargs)._config()
