"""Choquette-Choo et al. (2024) Tables 1-4 and Figure 1 (middle, right): the computed claims
pass on the computed tables and fail on tables that break the paper's statement."""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import pytest

from dpfit.experiments import get


def _claim(experiment: str, name: str):
    return next(c for c in get(experiment).claims if c.name == name).evaluate


@functools.cache
def _computed(experiment: str, scale: str, table: str | None = None) -> pd.DataFrame:
    exp = get(experiment)
    grid = [p for p in exp.grid[scale] if table is None or p["table"] == table]
    return pd.DataFrame([{**p, **exp.trial(p, 0)} for p in grid])


def _tables() -> pd.DataFrame:
    """Risks on the smoke grid (cheap), sensitivities and prefixes on the quick grid."""
    parts = [
        _computed("choquettechoo2024-tables", "smoke", "risk"),
        _computed("choquettechoo2024-tables", "quick", "sensitivity"),
        _computed("choquettechoo2024-tables", "quick", "anytime"),
    ]
    return pd.concat(parts, ignore_index=True)


def _scaled(table: pd.DataFrame, column: str, factor, where=None) -> pd.DataFrame:
    out = table.copy()
    mask = np.ones(len(out), dtype=bool) if where is None else where(out)
    out.loc[mask, column] = out.loc[mask, column] * (
        factor(out[mask]) if callable(factor) else factor
    )
    return out


@pytest.mark.negative_control("choquettechoo2024-tables", "table1-shapes", "table4-ratio")
def test_table_1_and_4_shapes_fail_with_a_wrong_exponent_or_constant():
    """Controls: Noisy-SGD's risk times eta (eta^2 d, not eta d: spread 2.3 > log 4); nu-FTRL
    20x above its upper shape, or 10x below the lower bound's over 4; nu-FTRL as bad as
    Noisy-SGD (no gain at small eta, so Table 4's ratio is 1)."""
    shapes = _claim("choquettechoo2024-tables", "table1-shapes")
    ratio = _claim("choquettechoo2024-tables", "table4-ratio")
    good = _tables()
    assert shapes(good).passed and ratio(good).passed
    risk = lambda t: t["table"] == "risk"  # noqa: E731
    assert not shapes(_scaled(good, "sgd", lambda t: t["eta"], risk)).passed
    assert not shapes(_scaled(good, "ftrl", 20.0, risk)).passed
    assert not shapes(_scaled(good, "ftrl", 0.1, risk)).passed
    same = good.copy()
    same.loc[risk(same), "ftrl"] = same.loc[risk(same), "sgd"]
    assert not ratio(same).passed


@pytest.mark.negative_control("choquettechoo2024-tables", "table2-sensitivity")
def test_table_2_fails_when_the_undamped_sensitivity_converges_or_the_damped_grows():
    """Controls: Fichtenberger et al.'s gamma_T^2 flat in T (it would have a finite F_inf);
    anti-PGD's growing like sqrt(T), not T; damped nu-FTRL's growing like log T."""
    sens = _claim("choquettechoo2024-tables", "table2-sensitivity")
    good = _tables()
    assert sens(good).passed

    def cell(mech, nu):
        return lambda t: (t["table"] == "sensitivity") & (t["mechanism"] == mech) & (t["nu"] == nu)

    flat = good.copy()
    mask = cell("nu-dpftrl", 0.0)(flat)
    flat.loc[mask, "gamma_sq"] = 2.0
    assert not sens(flat).passed
    assert not sens(
        _scaled(good, "gamma_sq", lambda t: t["steps"] ** -0.5, cell("anti-pgd", 0.0))
    ).passed
    assert not sens(
        _scaled(good, "gamma_sq", lambda t: np.log(t["steps"]), cell("nu-dpftrl", 0.01))
    ).passed


@pytest.mark.negative_control("choquettechoo2024-tables", "table3-anytime")
def test_table_3_fails_when_the_coefficients_depend_on_the_horizon():
    anytime = _claim("choquettechoo2024-tables", "table3-anytime")
    good = _tables()
    assert anytime(good).passed
    assert not anytime(good.assign(prefix_gap=np.where(good["table"] == "anytime", 1e-3, 0))).passed


@pytest.mark.negative_control("choquettechoo2024-fig1-coefficients", "anti-correlated-low-pass")
def test_fig1_coefficients_fail_without_anti_correlation_or_the_low_pass_spectrum():
    """Controls: one later coefficient positive (not anti-correlated); |B(0)|^2 = 1 (no
    suppression of low frequencies); a t^-1 tail instead of t^-3/2 (tail constant off)."""
    claim = _claim("choquettechoo2024-fig1-coefficients", "anti-correlated-low-pass")
    good = _computed("choquettechoo2024-fig1-coefficients", "smoke")
    assert claim(good).passed
    assert not claim(good.assign(largest_later=0.01)).passed
    assert not claim(good.assign(spectrum_at_0=1.0)).passed
    assert not claim(good.assign(tail_constant=good["tail_constant"] * np.sqrt(1000))).passed


@pytest.mark.slow
def test_quick_scale_claims_hold(tmp_path):
    """Both experiments at quick scale (about 40 s of summed trial time)."""
    from dpfit.experiments import run
    from dpfit.experiments.verdicts import evaluate_claims

    names = ["choquettechoo2024-tables", "choquettechoo2024-fig1-coefficients"]
    result = run(names, scale="quick", store_path=tmp_path / "s.sqlite", jobs=1, progress=False)
    for name in names:
        verdicts = evaluate_claims(get(name), result.results[name], "quick")
        for v in verdicts:
            print(name, v.claim, v.status, dict(v.numbers))
        assert verdicts and all(v.status == "PASS" for v in verdicts), verdicts
