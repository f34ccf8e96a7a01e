"""Record/replay on neighbouring datasets (docs/auditing.md) through the model layer.

The fit on D is recorded; the fit on D' (one record replaced by a worst-case one) replays the
recorded outputs. Then (1) the same releases are made, (2) each query moved by at most its
declared sensitivity and (3) everything the model outputs (coefficients, intervals, the whole
summary text) is bit-identical: it is computed from releases and public inputs only.
"""

import numpy as np
import pandas as pd
import pytest

import dpfit
from dpfit.mechanisms import recording, replaying

N = 400


def _neighbours():
    rng = np.random.default_rng(11)
    X = rng.uniform(0, 10, size=(N, 2))
    y = 1.0 + X @ np.array([0.3, -0.2]) + rng.normal(0, 1, N)
    X2, y2 = X.copy(), y.copy()
    X2[-1], y2[-1] = [1e3, -1e3], 1e6  # far outside any bound: saturates every clip
    return (X, y), (X2, y2)


PARAMS = [
    {"clip": 200.0, "step_size": 0.005, "steps": 300},
    {"bounds": [(0, 10), (0, 10)], "y_bounds": (-10, 10), "steps": 300},
    {
        "bounds": [(0, 10), (0, 10)],
        "y_bounds": (-10, 10),
        "total_steps": 300,
        "interval": "independent-runs",
        "m": 3,
        "burn_in": 10,
    },
    {"method": "adassp", "interval": None, "bounds": [(0, 10)] * 2, "y_bounds": (-10, 10)},
]


@pytest.mark.filterwarnings(  # a small test design: the released meat is mostly noise (public)
    "ignore:The population interval may not cover:dpfit.exceptions.CoverageWarning"
)
@pytest.mark.filterwarnings("ignore::dpfit.exceptions.IdentificationWarning")  # ... and X'X too
@pytest.mark.parametrize("params", PARAMS, ids=["gd", "gd-bounds", "gd-runs", "adassp"])
def test_replay_on_a_neighbour_changes_no_output(params):
    (X, y), (X2, y2) = _neighbours()
    make = lambda: dpfit.DPLinearRegression(rho=0.5, random_state=3, **params)  # noqa: E731
    with recording() as rec:
        first = make().fit(X, y)
    with replaying(rec) as rep:
        second = make().fit(X2, y2)
    assert [r.entry for r in rep.releases] == [r.entry for r in rec.releases]
    for a, b in zip(rec.releases, rep.releases, strict=True):
        moved = np.linalg.norm(np.ravel(a.value - b.value))
        assert moved <= a.entry.sensitivity * (1 + 1e-12)
    np.testing.assert_array_equal(first.coef_, second.coef_)
    assert first.intercept_ == second.intercept_
    assert first.summary().as_text() == second.summary().as_text()
    assert first.summary().as_html() == second.summary().as_html()
    for target in first.result_.targets:  # population (with bounds) and sample
        pd.testing.assert_frame_equal(first.conf_int(target=target), second.conf_int(target=target))
    if first.result_.diagnostics:  # the test can fail: non-private diagnostics do differ
        assert (
            first.summary(diagnostics=True).as_text() != second.summary(diagnostics=True).as_text()
        )


def test_total_charge_is_the_sum_of_the_entries():
    (X, y), _ = _neighbours()
    model = dpfit.DPLinearRegression(rho=0.7, clip=5.0, step_size=0.005, steps=200, random_state=1)
    model.fit(X, y)
    entries = model.privacy_.releases
    assert sum(e.count * e.sensitivity**2 / (2 * e.noise_std**2) for e in entries) == pytest.approx(
        0.7
    )
    assert model.result_.rho == pytest.approx(0.7, rel=1e-12)
