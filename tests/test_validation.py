"""Layer F for the core: reliability section 6 rows 1-18, 33, 34 give clear errors, no charge.

Rows that concern estimators (19-32, 35) are tested with each estimator.
"""

import numpy as np
import pytest

from dpfit import BudgetExceededError, LargeBudgetWarning
from dpfit._validation import (
    check_alpha,
    check_array,
    check_delta,
    check_epsilon,
    check_int,
    check_option,
    check_positive,
    check_rho,
    check_X_y,
)
from dpfit.mechanisms import gaussian, make_noise_source, recording
from dpfit.privacy import Budget, PrivacyLedger, cks_epsilon, parse_relation

NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize(
    "row, call, exc, fragment",
    [
        (1, lambda: check_rho(None), TypeError, "rho is required"),
        (2, lambda: check_rho(0.0), ValueError, "rho must be finite and > 0"),
        (2, lambda: check_rho(-1), ValueError, "rho must be finite and > 0"),
        (2, lambda: check_rho(NAN), ValueError, "rho"),
        (2, lambda: check_rho(INF), ValueError, "rho"),
        (2, lambda: check_rho(-INF), ValueError, "rho"),
        (3, lambda: check_rho("0.5"), TypeError, "rho must be a real number"),
        (3, lambda: check_rho(1 + 2j), TypeError, "rho"),
        (3, lambda: check_rho(True), TypeError, "rho"),
        (3, lambda: check_rho(np.array([0.1, 0.2])), TypeError, "rho must be a scalar"),
        (4, lambda: check_rho(1e-300), ValueError, "noise scale not finite"),
        (5, lambda: check_epsilon(0.0), ValueError, "epsilon"),
        (5, lambda: check_epsilon(NAN), ValueError, "epsilon"),
        (5, lambda: check_epsilon(INF), ValueError, "epsilon"),
        (6, lambda: check_delta(0.0), ValueError, "cannot give delta = 0"),
        (6, lambda: check_delta(-1e-5), ValueError, "delta"),
        (6, lambda: check_delta(1.0), ValueError, "delta"),
        (6, lambda: check_delta(NAN), ValueError, "delta"),
        (8, lambda: check_positive(-1.0, "noise_std"), ValueError, "noise_std"),
        (8, lambda: check_positive(NAN, "noise_multiplier"), ValueError, "noise_multiplier"),
        (8, lambda: check_positive(INF, "noise_std"), ValueError, "noise_std"),
        (9, lambda: check_positive(0.0, "noise_std"), ValueError, "noise_std"),
        (10, lambda: check_positive(0.0, "clip"), ValueError, "clip"),
        (10, lambda: check_positive(NAN, "clip"), ValueError, "clip"),
        (11, lambda: check_int(0, "steps"), ValueError, "steps"),
        (11, lambda: check_int(2.5, "steps"), TypeError, "steps must be an integer"),
        (11, lambda: check_int(True, "steps"), TypeError, "steps"),
        (12, lambda: check_positive(0.0, "step_size"), ValueError, "step_size"),
        (12, lambda: check_positive(INF, "step_size"), ValueError, "step_size"),
        (15, lambda: parse_relation("swap-one"), ValueError, "replace-one"),
        (17, lambda: cks_epsilon(0.5, 1.5), ValueError, "delta"),
        (18, lambda: check_alpha(0.0), ValueError, "alpha"),
        (18, lambda: check_alpha(1.0), ValueError, "alpha"),
        (18, lambda: check_alpha(NAN), ValueError, "alpha"),
        (33, lambda: make_noise_source(np.random.RandomState(0)), TypeError, "rng"),
        (34, lambda: make_noise_source(3, secure=True), ValueError, "secure"),
    ],
)
def test_bad_input_rows(row, call, exc, fragment):
    with recording() as rec:
        with pytest.raises(exc, match=fragment):
            call()
    assert len(rec) == 0, f"row {row}: a release happened before the error"


def test_row_16_overspend_draws_nothing():
    ledger = PrivacyLedger(budget=Budget(rho=0.1))
    source = make_noise_source(0)
    state = source.generator.bit_generator.state
    with recording() as rec, pytest.raises(BudgetExceededError):
        gaussian(np.zeros(2), sensitivity=1.0, noise_std=1.0, ledger=ledger, rng=source, label="x")
    assert len(rec) == 0 and ledger.budget.spent == 0 and len(ledger) == 0
    assert source.generator.bit_generator.state == state


def test_large_rho_warns():
    with pytest.warns(LargeBudgetWarning, match="weak privacy"):
        assert check_rho(6.0) == 6.0


def test_numpy_scalars_are_accepted():
    assert check_rho(np.float32(0.5)) == 0.5
    assert check_int(np.int64(3), "steps") == 3
    assert check_option("gd", "method", ["gd", "adassp"]) == "gd"
    with pytest.raises(ValueError, match=r"method must be one of \['gd', 'adassp'\]"):
        check_option("GD", "method", ["gd", "adassp"])


def test_arrays_are_upcast_and_checked_without_echoing_values():
    X = check_array(np.arange(6, dtype=np.int64).reshape(3, 2), "X", ndim=2)
    assert X.dtype == np.float64
    assert check_array(np.ones((2, 2), dtype=np.float16), "X", ndim=2).dtype == np.float64
    secret = np.array([[1.0, 123456.789], [np.nan, 2.0]])
    with pytest.raises(ValueError, match="X contains NaN") as info:
        check_array(secret, "X", ndim=2)
    assert "123456" not in str(info.value)
    with pytest.raises(ValueError, match="reshape"):
        check_array(np.ones(3), "X", ndim=2)
    with pytest.raises(ValueError, match="no rows"):
        check_array(np.ones((0, 2)), "X", ndim=2)
    with pytest.raises(TypeError, match="numeric"):
        check_array(np.array([["a"]]), "X", ndim=2)
    with pytest.raises(TypeError, match="numeric"):
        check_array(np.ones((2, 2), dtype=complex), "X", ndim=2)
    with pytest.raises(ValueError, match="same number of rows"):
        check_X_y(np.ones((3, 2)), np.ones(4))


def test_sparse_input_is_a_type_error():
    sparse = pytest.importorskip("scipy.sparse")
    with pytest.raises(TypeError, match="sparse"):
        check_array(sparse.csr_matrix(np.eye(3)), "X", ndim=2)
