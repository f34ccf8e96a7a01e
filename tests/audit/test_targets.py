"""Every registered audit target passes on the library's correct algorithms (layers D and E)."""

import numpy as np
import pytest

from dpfit.audit import TARGETS, audit, canary_data, canary_iv_data, get_target

SEED = 7


@pytest.mark.parametrize(
    "target, options",
    [
        ("noisy_gd", {}),
        ("dp_two_stage_gd", {}),
        ("dp_second_stage_gd", {}),
        ("dp_ftrl", {}),
        ("dp_ftrl", {"steps_per_epoch": 1}),
        ("dp_ftrl", {"mechanism": "fichtenberger", "nu": None}),
        ("dp_sgd", {}),
        ("dp_sgd", {"steps_per_epoch": 1}),
    ],
    ids=str,
)
def test_correct_target_passes(target, options):
    res = audit(target, runs=1000, seed=SEED, **options)
    assert res.passed, res.table()
    assert all(b.epsilon < res.claimed[b.delta] for b in res.bounds)
    assert res.config["noise_backend"] == "fast" and res.runs == (1000, 1000)


@pytest.mark.parametrize("accounting, mu", [("parallel", 1.0), ("paper", 0.5**0.5)])
def test_ambssgd_gradient_release_has_the_claimed_shift(accounting, mu):
    # parallel accounting is tight (mu = 1 / alpha = sqrt(2 rho)); the paper's charges the
    # gradient release half the claim (mu = sqrt(rho)). SE of mu_hat at M = 400 is 0.075.
    res = audit("dp_ambssgd", runs=400, seed=SEED, accounting=accounting)
    assert res.passed, res.table()
    assert abs(res.mu.mu_hat - mu) < 4 * res.mu.se


def test_exact_null_targets_recover_the_claimed_mu():
    # dp_ftrl with b = 1 is exactly tight: mu = 2 clip |C 1| / sigma = sqrt(2 rho) = 1
    # (SE of mu_hat at M = 1000 is 0.047).
    res = audit("dp_ftrl", runs=1000, seed=SEED, steps_per_epoch=1)
    assert abs(res.mu.mu_hat - 1.0) < 4 * res.mu.se


def test_targets_are_registered_with_their_kind():
    assert {
        "dp_gd",
        "noisy_gd",
        "dp_two_stage_gd",
        "dp_second_stage_gd",
        "dp_ftrl",
        "dp_sgd",
    } <= set(TARGETS)
    assert get_target("dp_ftrl").kind == "white-box" and get_target("dp_gd").kind == "black-box"


def test_unknown_target_and_option_are_rejected_before_any_run():
    with pytest.raises(ValueError, match="dp_gd"):
        audit("nope", runs=10)
    with pytest.raises(ValueError, match="unknown option"):
        audit("dp_gd", runs=10, seed=0, learning_rate=0.1)
    with pytest.raises(ValueError, match="secure"):
        audit("dp_gd", runs=10, seed=0, secure=True)
    with pytest.raises(ValueError, match="multiple"):
        audit("dp_ftrl", runs=10, seed=0, n=21)


def test_seeded_audit_is_reproducible():
    a = audit("dp_gd", runs=50, seed=3)
    b = audit("dp_gd", runs=50, seed=3)
    assert [x.epsilon for x in a.bounds] == [x.epsilon for x in b.bounds]
    assert a.mu.mu_hat == b.mu.mu_hat


@pytest.mark.parametrize("relation", ["replace-one", "add-remove"])
def test_canary_pair_differs_in_one_record_on_a_column_nobody_else_uses(relation):
    data = canary_data(10, 3, response=5.0, relation=relation, rng=np.random.default_rng(0))
    assert data.column == 3 and data.n_public == 10
    assert np.all(data.X_alt[:-1, 3] == 0) and data.X_alt[-1].tolist() == [0, 0, 0, 1]
    assert data.y_alt[-1] == 5.0
    if relation == "replace-one":
        assert np.array_equal(data.X_null, data.X_alt) and data.y_null[-1] == -5.0
        assert np.array_equal(data.y_null[:-1], data.y_alt[:-1])
    else:
        assert np.array_equal(data.X_null, data.X_alt[:-1]) and data.y_null.size == 9


def test_iv_canary_owns_an_instrument_and_a_regressor():
    data = canary_iv_data(8, response=3.0, regressor=2.0, rng=np.random.default_rng(0))
    X, y, Z = data.side(True)
    X0, y0, Z0 = data.side(False)
    assert np.all(Z[:-1, 1] == 0) and np.all(X[:-1, 1] == 0)
    assert Z[-1].tolist() == [0, 1] and X[-1].tolist() == [0, 2] and y[-1] == 3.0
    assert X0[-1].tolist() == [0, -2] and y0[-1] == -3.0 and np.array_equal(Z, Z0)
