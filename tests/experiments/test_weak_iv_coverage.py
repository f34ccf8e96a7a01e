"""The weak-iv-coverage study: trials are well formed, each claim can fail, and the claims
hold at quick scale (slow)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpfit.experiments import get, run
from dpfit.experiments.verdicts import evaluate_claims
from dpfit.experiments.weak_iv_coverage import CELLS

NAME = "weak-iv-coverage"


def _claim(name):
    return next(c for c in get(NAME).claims if c.name == name)


def _table(shares: dict | None = None) -> pd.DataFrame:
    """Every quick cell with 1000 fits whose metrics are 1 with the given probabilities
    (per cell, by key), else the healthy values: AR covers 0.95, Wald 0.95 (0.85 in the weak
    over-identified cell), the naive AR 0.95 (0.70 in the noisy cell), warned in the weak
    cells, silent in the strong one."""
    rng = np.random.default_rng(31)
    frames = []
    for design, n, rho in CELLS:
        weak = design.startswith("weak")
        p = {
            "ar_covers": 0.95,
            "wald_covers": 0.85 if (design, n, rho) == CELLS[0] else 0.95,
            "naive_ar_covers": 0.70 if (design, n, rho) == ("weak-just", 2000, 1.0) else 0.95,
            "weak_warned": 1.0 if weak else 0.0,
        }
        p.update((shares or {}).get((design, n, rho), {}))
        frame = pd.DataFrame({k: (rng.random(1000) < v).astype(float) for k, v in p.items()})
        frames.append(
            frame.assign(
                design=design, n=n, rho=rho, warned=frame["weak_warned"], ar_unbounded=0.0,
                first_stage_f=5.0,
            )
        )  # fmt: skip
    return pd.concat(frames, ignore_index=True)


def test_smoke_trial_is_well_formed():
    metrics = get(NAME).trial({"design": "weak-over", "n": 2000, "rho": 1.0}, 5)
    assert set(metrics) >= {"wald_covers", "ar_covers", "naive_ar_covers", "weak_warned"}
    assert all(np.isfinite(v) for v in metrics.values())


def test_the_healthy_table_passes_every_claim():
    table = _table()
    for claim in get(NAME).claims:
        assert claim.evaluate(table).passed, claim.name


@pytest.mark.negative_control("weak-iv-coverage", "ar-covers")
def test_ar_covers_fails_when_one_cell_covers_0_90():
    assert not _claim("ar-covers").evaluate(_table({CELLS[2]: {"ar_covers": 0.90}})).passed


@pytest.mark.negative_control("weak-iv-coverage", "wald-misses")
def test_wald_misses_fails_when_the_wald_interval_covers():
    assert not _claim("wald-misses").evaluate(_table({CELLS[0]: {"wald_covers": 0.95}})).passed


@pytest.mark.negative_control("weak-iv-coverage", "weak-warned")
def test_weak_warned_fails_on_misses_and_on_false_alarms():
    claim = _claim("weak-warned")
    assert not claim.evaluate(_table({CELLS[1]: {"weak_warned": 0.8}})).passed
    assert not claim.evaluate(_table({CELLS[2]: {"weak_warned": 0.1}})).passed


@pytest.mark.negative_control("weak-iv-coverage", "noise-term")
def test_noise_term_fails_when_the_naive_set_covers():
    cell = ("weak-just", 2000, 1.0)
    assert not _claim("noise-term").evaluate(_table({cell: {"naive_ar_covers": 0.95}})).passed


@pytest.mark.slow
def test_claims_hold_at_quick_scale(tmp_path):
    """4,000 fits (about 4 CPU-minutes); the numbers are in docs/inference.md."""
    result = run([NAME], scale="quick", store_path=tmp_path / "s.sqlite", jobs=2, progress=False)
    verdicts = evaluate_claims(get(NAME), result.results[NAME], "quick")
    assert verdicts and not any(v.failed for v in verdicts), [v.detail for v in verdicts]
