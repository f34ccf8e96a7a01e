"""Coefficient plots: a zero line where zero is in range, an optional shared x-scale, and a
legend that says what each interval covers."""

import numpy as np
import pandas as pd
import pytest

import dpfit
from dpfit.models.plotting import coefficient_frame, plot_coefficients

RNG = np.random.default_rng(4)
FRAME = pd.DataFrame({"x": RNG.uniform(0, 10, 1500), "z": RNG.uniform(0, 1, 1500)})
FRAME["y"] = 5.0 + 0.5 * FRAME["x"] + 0.01 * FRAME["z"] + RNG.normal(0, 1, 1500)


@pytest.fixture(scope="module")
def result():
    return dpfit.ols(
        "y ~ x + z",
        FRAME,
        rho=1.0,
        bounds={"x": (0, 10), "z": (0, 1)},
        y_bounds=(-5, 20),
        steps=2000,
        random_state=0,
    )


def _zero_lines(ax):
    return [ln for ln in ax.get_lines() if list(ln.get_xdata()) == [0.0, 0.0]]


def test_zero_line_only_where_zero_is_in_range(result):
    fig = plot_coefficients({"DP-GD": coefficient_frame(result)})
    by_term = dict(zip(["Intercept", "x", "z"], fig.axes, strict=False))
    assert not _zero_lines(by_term["Intercept"])  # [~4.8, ~5.2]: zero would squash it
    for ax in fig.axes[:3]:
        low, high = ax.get_xlim()
        assert bool(_zero_lines(ax)) == (low <= 0.0 <= high)


def test_shared_x_scale(result):
    fig = plot_coefficients({"DP-GD": coefficient_frame(result)}, sharex=True)
    a, b, c = fig.axes[:3]
    assert a.get_shared_x_axes().joined(a, c) and a.get_xlim() == c.get_xlim()
    assert all(_zero_lines(ax) for ax in (a, b, c))  # one scale spanning 0 and 5
    assert "one scale for all terms" in c.get_xlabel()


def test_legend_says_what_each_interval_covers(result):
    ols = coefficient_frame(result).assign(coef=1.0, lower=0.5, upper=1.5)
    fig = plot_coefficients(
        {"DP-GD": coefficient_frame(result), "OLS": ols},
        covers={"OLS": "the population coefficient (sampling error only)"},
        level="90%",
    )
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert texts[0].startswith("DP-GD\n90% interval covers the ")  # the result's own target
    assert texts[1] == "OLS\n90% interval covers the population coefficient (sampling error only)"
