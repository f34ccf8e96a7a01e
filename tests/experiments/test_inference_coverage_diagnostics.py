"""The inference-coverage-diagnostics study: trials are well-formed and its claim can fail."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from dpfit.experiments.inference_coverage_diagnostics import _claim, _settings, _trial


def test_card_trial_reports_the_floor_check():
    metrics = _trial(_settings()[0], 3)
    assert math.isnan(metrics["covers"])  # no theta* for real data
    # the demo's data: in the design's coordinates its smallest eigenvalue was 0.40 x the
    # bread's floor, and the projection onto the floor halved the sampling s.e. (40-fit means
    # of the smallest ratio over the slopes: 0.47 projected, 0.87 shrunk). The bread is now
    # released in the whitened coordinates, where that eigenvalue is 2.7-2.9 x its floor
    # (seeds 0-2), so the floor is harmless and both breads give sampling s.e. within 10% of
    # the noise-free bread's.
    assert metrics["true_over_floor"] > 2.0 and metrics["floor_warned"] == 0.0
    assert 0.85 < metrics["se_ratio_psd"] < 1.15 and 0.85 < metrics["se_ratio_min"] < 1.15


@pytest.mark.negative_control("inference-coverage-diagnostics", "drift-check")
def test_claim_fails_when_an_unconverged_fit_is_silent_or_a_converged_one_warns():
    """The drift check must fire in >= 80% of unconverged fits and <= 5% of converged
    default fits (where the floor check is silent). Negative controls: no warning anywhere;
    every fit warning (each converged synthetic setting then warns in 100% of its fits)."""
    settings = _settings()
    rows = pd.DataFrame(
        [
            {**p, "covers": 0.5, "drift_warned": 0.0, "floor_warned": 0.0}
            | {"floor_old_rule": 0.0, "true_over_floor": 1.0, "se_ratio_min": 1.0}
            | {"se_ratio_psd": 1.0}
            | {"max_relative_drift": 0.1}
            for p in settings
        ]
    )
    assert not _claim(rows).passed
    slow = rows["step_size"].notna()
    assert _claim(rows.assign(drift_warned=slow.astype(float))).passed
    assert not _claim(rows.assign(drift_warned=1.0)).passed
    # a warning on Card data (not judged: no theta*) or where the floor binds is no false alarm
    excused = slow | (rows["data"] == "card") | (rows["n"] == 300)
    floor = (rows["n"] == 300).astype(float)
    assert _claim(rows.assign(drift_warned=excused.astype(float), floor_warned=floor)).passed


@pytest.mark.negative_control("inference-coverage-diagnostics", "drift-check")
def test_claim_fails_when_it_judges_no_converged_or_no_unconverged_setting():
    """Both halves of the claim need settings to judge: silent converged fits and warning
    unconverged ones pass; the same with the floor check firing in every converged synthetic
    setting (none left to judge), without the unconverged settings, or with no rows at all
    fails."""
    rows = pd.DataFrame(
        [
            {**p, "covers": 0.95, "drift_warned": float(p["steps"] is not None)}
            | {"floor_warned": 0.0, "floor_old_rule": 0.0, "true_over_floor": 1.0}
            | {"se_ratio_min": 1.0, "se_ratio_psd": 1.0, "max_relative_drift": 0.1}
            for p in _settings()
        ]
    )
    assert _claim(rows).passed
    assert not _claim(rows.assign(floor_warned=1.0)).passed
    assert not _claim(rows[rows["steps"].isna()]).passed
    assert not _claim(rows.iloc[:0]).passed
