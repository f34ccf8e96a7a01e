"""Summary post-processing: z/P>|z| heads for normal-based intervals, and bounds-check counts
shown clamped at 0 (a noisy count of records can come out negative)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

import dpfit
from dpfit import DPIVRegression

BOUNDS = {"x": (-8, 11), "w": (-4, 4), "z": (0, 1)}


def test_normal_based_interval_heads_its_columns_z(iv_frame):
    frame = iv_frame(3000)
    model = DPIVRegression(rho=2.0, bounds=BOUNDS, y_bounds=(-10, 14), random_state=0)
    model.fit(frame[["w", "x"]], frame["y"], Z=frame[["w", "z"]])
    summary = model.result_.summary()
    assert "95%, normal" in summary.as_text()
    assert list(summary.table.columns[1:4]) == ["std err", "z", "P>|z|"]


def test_student_t_interval_keeps_t():
    rng = np.random.default_rng(1)  # synthetic data, not privacy noise
    df = pd.DataFrame({"x": rng.uniform(0, 10, 2000)})
    df["y"] = 1 + 0.3 * df["x"] + rng.normal(0, 1, 2000)
    res = dpfit.ols("y ~ x", df, rho=1.0, bounds={"x": (0, 10)}, y_bounds=(-5, 10), random_state=0)
    summary = res.summary()
    assert "Student-t" in summary.as_text()
    assert list(summary.table.columns[1:4]) == ["std err", "t", "P>|t|"]


@pytest.mark.filterwarnings(  # a small test design: the released meat is mostly noise (public)
    "ignore:The population interval may not cover:dpfit.exceptions.CoverageWarning"
)
def test_bounds_check_counts_are_shown_clamped_at_zero():
    # Every record is inside its bounds, so each shown count is noise around 0; across these
    # seeds and three counts per fit (x, y, zero records) some noisy counts are negative.
    rng = np.random.default_rng(2)  # synthetic data, not privacy noise
    df = pd.DataFrame({"x": rng.uniform(0, 10, 500)})
    df["y"] = 1 + 0.3 * df["x"] + rng.uniform(-1, 1, 500)
    for seed in range(4):
        res = dpfit.ols(
            "y ~ x", df, rho=1.0, bounds={"x": (0, 10)}, y_bounds=(-1, 5), random_state=seed
        )
        note = next(n for n in res.notes if n.startswith("Bounds check"))
        assert note.count("clamped at 0") == 1
        counts = re.findall(r"(?:x|y|zero records) (-?\d+)", note.split(":", 1)[1])
        assert len(counts) == 3 and all(not c.startswith("-") for c in counts), note
