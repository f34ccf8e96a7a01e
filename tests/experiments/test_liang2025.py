"""Liang et al. (2025) experiments: smoke trials are well-formed; claims hold at quick scale."""

from __future__ import annotations

import numpy as np
import pytest

from dpfit.experiments import get, names, run
from dpfit.experiments.verdicts import evaluate_claims

LIANG = [n for n in names() if n.startswith("liang2025")]


def test_all_figures_are_registered():
    expected = {"fig3", "fig4", "fig5", "fig6", "fig7", "fig8", "fig9", "fig13", "coverage"}
    assert {n.split("-", 1)[1] for n in LIANG} == expected


@pytest.mark.parametrize("name", ["liang2025-fig4", "liang2025-fig13"])
def test_smoke_trials_record_the_true_spend(name):
    """The paper's calibration spends half the nominal rho1 + rho2; trials report that."""
    exp = get(name)
    params, _ = exp.tasks("smoke")[0]
    metrics = exp.trial(params, 123)
    nominal = 2 * params["rho"] if "rho" in params else params["rho_theta"] + params["rho_beta"]
    assert metrics["rho_spent"] == pytest.approx(nominal / 2, rel=1e-12)
    assert all(np.isfinite(v) for v in metrics.values())


@pytest.mark.slow
def test_claims_hold_at_quick_scale(tmp_path):
    """Runs every Liang experiment at quick scale (about 15 CPU-minutes) and checks each claim."""
    result = run(LIANG, scale="quick", store_path=tmp_path / "store.sqlite", jobs=2, progress=False)
    failed = []
    for name in LIANG:
        for verdict in evaluate_claims(get(name), result.results[name], "quick"):
            print(verdict.experiment, verdict.claim, verdict.status, dict(verdict.numbers))
            if verdict.failed:
                failed.append((name, verdict.claim, verdict.detail))
    assert not failed, failed
