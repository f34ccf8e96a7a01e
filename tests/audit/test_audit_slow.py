"""Bigger audits, run on demand (``make test-slow``): reliability 3.9's nightly layer D/E.

* every exact-score target at M = 5000 runs per side, on three seeds, passes on the correct
  code (the calibrated black-box targets: ``tests/audit/test_entry_point_audits.py``);
* the power and false-alarm table of reliability 3.4 (simulated Gaussian scores, 200 audits
  per cell): at most 2 false alarms in 200 at mu x 1, the parametric test rejects mu x 1.25
  in >= 95 % of audits at M = 1000, the nonparametric one mu x 2 in >= 95 % at M = 2000.
"""

import numpy as np
import pytest

from dpfit.audit import TARGETS, assess, audit
from dpfit.audit._entry_points import _TARGETS as CALIBRATED

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("seed", [101, 202, 303])
@pytest.mark.parametrize("target", sorted(set(TARGETS) - {name for name, *_ in CALIBRATED}))
def test_every_target_passes_at_m_5000(target, seed):
    runs = 1000 if target == "dp_ambssgd" else 5000  # DP-AMBSSGD: ~7 ms a run
    res = audit(target, runs=runs, seed=seed)
    assert res.passed, res.table()


def _rejection_rates(m, factor, audits=200, seed=0):
    rng = np.random.default_rng(seed)
    nonparametric = parametric = 0
    for _ in range(audits):
        res = assess(rng.standard_normal(m), factor + rng.standard_normal(m), rho=0.5)
        nonparametric += not res.nonparametric_passed
        parametric += not res.mu.passed
    return nonparametric / audits, parametric / audits


def test_power_and_false_alarm_table():
    # each check has level <= 1e-3, so at most 2 false alarms in 200 (P(>= 3) = 0.0012)
    assert max(_rejection_rates(2000, 1.0)) <= 2 / 200
    assert _rejection_rates(1000, 1.25)[1] >= 0.95
    assert _rejection_rates(2000, 2.0)[0] >= 0.95
