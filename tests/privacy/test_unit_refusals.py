"""Entry points that do not take a privacy unit yet refuse one in words, before any charge."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpfit
from dpfit.losses import SquaredLoss


@pytest.fixture
def frame():
    rng = np.random.default_rng(0)
    data = pd.DataFrame(rng.standard_normal((200, 3)), columns=["x", "z", "y"])
    data["pid"] = np.arange(200) // 4
    return data


def test_iv_refuses_a_privacy_unit(frame):
    """The refusal names the keywords given and every entry point that takes a unit
    (dpfit.minimize included), and says the same whatever the data hold."""
    messages = []
    for data in (frame, frame.assign(y=frame.y * 1e3 + 7, pid=frame.pid + 100)):
        budget = dpfit.Budget(rho=2.0)
        with pytest.raises(TypeError, match=r"dpfit.iv does not take a privacy unit yet") as info:
            dpfit.iv("y ~ 1 + [x ~ z]", data, rho=1.0, budget=budget, privacy_unit="pid",
                     max_rows_per_unit=4)  # fmt: skip
        assert budget.spent == 0.0
        messages.append(str(info.value))
    message = messages[0]
    assert messages[1] == message  # value-free
    assert "max_rows_per_unit, privacy_unit" in message
    for entry in ("dpfit.ols", "dpfit.glm", "dpfit.logit", "dpfit.poisson", "dpfit.minimize"):
        assert entry in message


def test_minimize_kl_spider_refuses_groups(frame):
    """KL-Spider's schedule is stated for one record's constants: it refuses a unit (the
    default adaptive GD and noisy GD take one, tests/algorithms/test_minimize_units.py)."""
    data = (frame[["x"]].to_numpy(), frame["y"].to_numpy())
    with pytest.raises(TypeError, match=r"method='kl-spider'\) does not take a privacy unit"):
        dpfit.minimize(
            SquaredLoss(), data, rho=1.0, method="kl-spider", gamma=1.0, kappa=2.0,
            loss_bound=1.0, groups=frame["pid"].to_numpy(), max_rows_per_unit=4,
        )  # fmt: skip
