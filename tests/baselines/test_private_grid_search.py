"""Private grid search: the whole search is charged to one ledger within rho, the selection
is a Gaussian release of the clipped losses with sensitivity sqrt(k) B / n (plus its float
rounding allowance), and it picks
the better candidate when the selection noise is small."""

import math

import numpy as np
import pytest

from dpfit.baselines.private_grid_search import private_grid_search
from dpfit.exceptions import BudgetExceededError
from dpfit.losses import SquaredDistanceLoss
from dpfit.privacy import Budget, PrivacyLedger

N = 4000


def _data():
    rng = np.random.default_rng(0)
    return 0.3 + rng.uniform(-0.4, 0.4, size=(N, 3))


# 1 step of size 0.05 from 0 stays far from the mean; 40 steps reach it.
CANDIDATES = [{"steps": 1, "step_size": 0.05}, {"steps": 40, "step_size": 0.5}]


def test_whole_search_is_charged_within_rho():
    result = private_grid_search(
        SquaredDistanceLoss(),
        _data(),
        rho=2.0,
        candidates=CANDIDATES,
        value_bound=2.0,
        method="noisy-gd",
        selection_share=0.25,
        rng=1,
    )
    entries = list(result.ledger)
    assert result.ledger.rho <= 2.0 and result.rho == pytest.approx(2.0, rel=1e-12)
    select = [e for e in entries if e.label == "grid_search/losses"]
    assert len(select) == 1 and len(entries) > 1
    (entry,) = select
    # sqrt(k) B / n plus the float rounding allowance of the k computed means: about
    # 2 gamma_n n B + 2 u n B on the exact B, i.e. 2 n^2 2^-53 relative (dpfit.privacy.queries)
    exact = math.sqrt(2) * 2.0 / N
    assert exact < entry.sensitivity <= exact * (1 + 2.01 * N**2 * 2.0**-53)
    assert entry.rho == pytest.approx(0.25 * 2.0, rel=1e-12)
    # the two runs share 0.75 rho
    assert sum(e.rho for e in entries if e is not entry) == pytest.approx(1.5, rel=1e-12)
    assert result.noisy_losses.shape == (2,)
    assert result.chosen == int(np.argmin(result.noisy_losses))


def test_picks_the_better_candidate_and_not_by_position():
    X = _data()
    loss = SquaredDistanceLoss()
    for order in (CANDIDATES, CANDIDATES[::-1]):
        result = private_grid_search(
            loss, X, rho=5.0, candidates=order, value_bound=2.0, method="noisy-gd", rng=2
        )
        assert result.candidate == CANDIDATES[1]
        assert loss.value(result.estimate, X) < loss.value(np.zeros(3), X)


def test_a_budget_that_cannot_pay_raises_before_any_draw():
    ledger = PrivacyLedger(relation="replace-one", budget=Budget(rho=1.0))
    with pytest.raises(BudgetExceededError):
        private_grid_search(
            SquaredDistanceLoss(),
            _data(),
            rho=2.0,
            candidates=CANDIDATES,
            value_bound=2.0,
            method="noisy-gd",
            ledger=ledger,
            rng=3,
        )
    assert len(list(ledger)) == 0


@pytest.mark.parametrize(
    "kwargs",
    [{"candidates": []}, {"selection_share": 0.0}, {"selection_share": 1.0}, {"value_bound": 0.0}],
)
def test_rejects_bad_settings(kwargs):
    args = {"rho": 1.0, "candidates": CANDIDATES, "value_bound": 2.0, "method": "noisy-gd"}
    with pytest.raises(ValueError):
        private_grid_search(SquaredDistanceLoss(), _data(), **{**args, **kwargs})


def test_a_nan_loss_counts_as_the_bound():
    """One record whose loss is NaN must not make the release fail (that would reveal it)."""
    from dpfit.baselines.private_grid_search import _clipped_mean

    class NanLoss(SquaredDistanceLoss):
        def per_example_values(self, theta, X, y):
            values = super().per_example_values(theta, X, y)
            values[0] = np.nan
            return values

    X = _data()
    got = _clipped_mean(NanLoss(), np.zeros(3), X, None, 2.0, N)
    plain = np.clip(SquaredDistanceLoss().per_example_values(np.zeros(3), X, None), 0, 2.0)
    assert got == pytest.approx((plain[1:].sum() + 2.0) / N, rel=1e-12)
