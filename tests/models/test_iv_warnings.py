"""When DPIVRegression warns about its intervals, and how (issue 14, IV loose ends)."""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import numpy as np
import pytest

from dpfit import DPIVRegression
from dpfit.exceptions import CoverageWarning
from dpfit.inference import interval_estimates
from dpfit.models._iv_config import check_interval, iv_config, settings_from


def _batched(steps: int = 100) -> SimpleNamespace:
    return SimpleNamespace(iterates=np.zeros((steps, 2)), config={"runs": 1, "steps": steps})


def test_batched_means_with_few_batches_warns_unless_told_not_to():
    with pytest.warns(CoverageWarning, match="m=5 < 10"):
        interval_estimates(_batched(), "batched-means", m=5)
    # Turned into an error by pyproject's filterwarnings if it warned.
    assert interval_estimates(_batched(), "batched-means", m=5, warn=False).shape == (5, 2)


def test_the_public_dry_run_of_the_interval_leaves_the_warning_filters_alone(monkeypatch):
    """check_interval used warnings.catch_warnings() to silence the dry run's warning, which
    is not thread-safe (it swaps the process-wide filters); it passes warn=False instead."""

    calls = []
    real = warnings.catch_warnings

    def counted(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(warnings, "catch_warnings", counted)
    estimator = DPIVRegression(rho=1.0, method="2s-gd", interval="batched-means", steps=100, m=5)
    cfg = iv_config(estimator)
    check_interval(cfg, settings_from(cfg, 3, 3), 3)  # m = 5 < 10: no warning, no error
    monkeypatch.undo()
    assert calls == []
