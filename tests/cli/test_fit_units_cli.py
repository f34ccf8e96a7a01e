"""``dpfit fit --privacy-unit``: a fit that protects all rows of one unit."""

import numpy as np
import pandas as pd
import pytest

from dpfit.cli import main


@pytest.fixture
def panel_csv(tmp_path):
    rng = np.random.default_rng(0)
    pid = np.repeat(np.arange(400), 4)
    a = rng.standard_normal(400)[pid]
    x = np.clip(rng.standard_normal(pid.size) + a, -4, 4)
    y = np.clip(0.5 * x + a + rng.standard_normal(pid.size), -8, 8)
    path = tmp_path / "panel.csv"
    year = np.tile([1, 2, 3, 4], 400)
    pd.DataFrame({"pid": pid, "x": x, "y": y, "year": year}).to_csv(path, index=False)
    return path


UNIT = ["--privacy-unit", "pid", "--max-rows-per-unit", "4", "--bound", "x=-4,4"]
COMMON = ["--rho", "1", "--y-bounds", "-8,8", "--seed", "1"]


def test_fit_with_a_privacy_unit_and_panel_effects(panel_csv, capsys):
    args = ["fit", str(panel_csv), "--formula", "y ~ x + EntityEffects + TimeEffects"]
    assert main([*args, *UNIT, *COMMON, "--time", "year", "--time-levels", "1,2,3,4"]) == 0
    out = capsys.readouterr().out
    assert "No. units:             400 (public; rows are not released)" in out
    assert "replace-one unit (1 unit = all rows with the same pid)" in out
    assert "clustered by pid (400 units)" in out.replace("\n    ", " ")
    assert "Intercept" not in out and "[T.4]" in out


def test_unit_options_need_a_unit(panel_csv, capsys):
    args = ["fit", str(panel_csv), "--formula", "y ~ x", "--bound", "x=-4,4", *COMMON]
    assert main([*args, "--max-rows-per-unit", "4"]) == 2
    assert "--max-rows-per-unit need --privacy-unit COLUMN" in capsys.readouterr().err


def test_a_glm_takes_the_privacy_unit(panel_csv, tmp_path, capsys):
    frame = pd.read_csv(panel_csv)
    frame["event"] = (frame["y"] > 0).astype(int)
    path = tmp_path / "events.csv"
    frame.to_csv(path, index=False)
    args = ["fit", str(path), "--family", "binomial", "--formula", "event ~ x", *UNIT]
    assert main([*args, "--rho", "1", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "No. units:             400 (public; rows are not released)" in out
    assert "replace-one unit (1 unit = all rows with the same pid)" in out


def test_a_glm_refuses_time_effects_options(panel_csv, capsys):
    args = ["fit", str(panel_csv), "--family", "poisson", "--formula", "y ~ x", *UNIT]
    assert main([*args, "--y-bounds", "0,8", "--rho", "1", "--time", "year"]) == 2
    assert "apply to --family gaussian only" in capsys.readouterr().err
