"""When DPIVRegression warns about its intervals, and how (issue 14, IV loose ends)."""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import numpy as np
import pytest

from dpfit import DPIVRegression
from dpfit.exceptions import CoverageWarning
from dpfit.inference import interval_estimates
from dpfit.mechanisms import recording, replaying
from dpfit.models._iv_config import check_interval, iv_config, settings_from
from dpfit.models._iv_convergence import convergence_warning


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


N = 3000
BOUNDS = {"x": (-8, 11), "w": (-4, 4), "z": (0, 1)}
Y_BOUNDS = (-10, 14)


@pytest.fixture(scope="module")
def frame(iv_frame):
    return iv_frame(N)


def _two_stage(frame, **kw):
    params = {"rho": 2.0, "bounds": BOUNDS, "y_bounds": Y_BOUNDS, "random_state": 0, **kw}
    model = DPIVRegression(method="2s-gd", **params)
    return model.fit(frame[["w", "x"]], frame["y"], Z=frame[["w", "z"]])


def _text(model) -> str:
    return " ".join(model.summary().as_text().split())  # undo the wrapping


def test_default_two_stage_interval_warns_that_its_convergence_cannot_be_checked(frame):
    """The default 20 steps per run are too few for the drift check (40 iterates in the second
    half of each run): the interval used to be printed with no warning, and it often misses
    the 2SLS fixed point it is meant to cover."""
    with pytest.warns(CoverageWarning, match="cannot be checked.*steps >= 80") as caught:
        model = _two_stage(frame)
    (warning,) = [w for w in caught if issubclass(w.category, CoverageWarning)]
    assert warning.filename == __file__  # points at the user's line
    assert "convergence of DP-2S-GD cannot be checked" in _text(model)


def test_a_drifting_two_stage_interval_warns_and_the_summary_says_so(frame):
    # Step sizes 1/5 and 1/13 of the defaults: after 100 steps the iterates still move by
    # many interval standard errors (the check needs > 0.5 s.e. and p < 0.001).
    with pytest.warns(CoverageWarning, match="have not converged"):
        model = _two_stage(frame, steps=100, step_size=(0.2, 0.05))
    assert "iterates have not converged" in _text(model)


@pytest.mark.parametrize(
    "kw",
    [
        {"steps": 200},
        {"steps": 400, "interval": "batched-means"},
    ],
)
def test_a_converged_two_stage_interval_does_not_warn(frame, kw):
    # A CoverageWarning would be an error here (pyproject's filterwarnings).
    model = _two_stage(frame, **kw)
    assert "converge" not in _text(model)


def test_the_convergence_warning_depends_on_the_releases_only(frame):
    """Replaying one fit's releases on a neighbour (one record moved to the bounds' corner)
    gives the same warning: it reads released iterates and public settings only."""
    neighbour = frame.copy()
    neighbour.iloc[0] = [11.0, -4.0, 1.0, -10.0]
    with recording() as rec, pytest.warns(CoverageWarning) as first:
        _two_stage(frame, steps=100, step_size=(0.2, 0.05))
    with replaying(rec), pytest.warns(CoverageWarning) as second:
        _two_stage(neighbour, steps=100, step_size=(0.2, 0.05), random_state=1)

    def coverage(caught) -> list[str]:
        return [str(w.message) for w in caught if issubclass(w.category, CoverageWarning)]

    assert coverage(first) and coverage(first) == coverage(second)


@pytest.mark.parametrize(
    "kw, needed",
    [
        ({}, 80),  # formal independent runs: the second half of each run is checked
        ({"interval_variant": "experimental"}, 60),  # burn-in min(20, steps // 2)
        ({"interval": "batched-means"}, 40),
        ({"interval": "batched-means", "interval_variant": "experimental"}, 60),
        ({"interval": "batched-means", "interval_variant": "experimental", "burn_in": 5}, 45),
    ],
)
def test_the_steps_the_warning_asks_for_are_the_fewest_that_can_be_checked(kw, needed):
    """On a still trajectory (no drift), ``needed`` steps can be checked and one fewer cannot,
    and the message names ``needed``."""

    def warning(steps: int) -> str | None:
        cfg = iv_config(DPIVRegression(rho=1.0, method="2s-gd", steps=steps, **kw))
        settings = settings_from(cfg, 2, 2)
        runs = settings["algorithm"]["runs"]
        traj = SimpleNamespace(iterates=np.zeros((runs * steps, 2)))
        return convergence_warning(traj, cfg, settings, np.zeros((cfg.m, 2)), np.eye(2))

    assert warning(needed) is None
    assert f"steps >= {needed}" in warning(needed - 1)
