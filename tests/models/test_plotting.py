"""Coefficient plots: one shared x-scale with a dashed zero line in every panel by default
(own scales on request), and a legend that says what each interval covers."""

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


def test_own_scales_without_zero_draw_it_only_where_it_is_in_range(result):
    fig = plot_coefficients({"DP-GD": coefficient_frame(result)}, sharex=False, include_zero=False)
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


def test_by_default_every_panel_shares_one_scale_that_shows_zero(result):
    """Each panel scaled to its own interval made every panel look the same, with the zero
    line in none: now one scale, zero in range and marked in every panel."""
    fig = plot_coefficients({"DP-GD": coefficient_frame(result)}, terms=["x", "z"])
    a, b = fig.axes[:2]
    assert a.get_xlim() == b.get_xlim()
    assert all(_zero_lines(ax) for ax in (a, b))


def test_own_scales_still_show_zero(result):
    fig = plot_coefficients({"DP-GD": coefficient_frame(result)}, sharex=False)
    for ax in fig.axes[:3]:
        low, high = ax.get_xlim()
        assert low <= 0.0 <= high and _zero_lines(ax)


def test_result_plot_leaves_out_the_intercept_and_saves(result, tmp_path):
    fig = result.plot(0.1)
    labels = [ax.get_ylabel() for ax in fig.axes]
    assert labels == ["x", "z"]
    assert "90% interval" in fig.axes[-1].get_xlabel()
    fig.savefig(tmp_path / "p.png")
    assert (tmp_path / "p.png").stat().st_size > 0
