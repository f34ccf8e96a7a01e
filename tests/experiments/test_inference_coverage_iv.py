"""The inference-coverage-iv study: smoke trials are well-formed; the claim holds at quick scale."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpfit.experiments import get, run
from dpfit.experiments.inference_coverage_iv import DESIGNS, _claim
from dpfit.experiments.inference_coverage_power import coverage_cell
from dpfit.experiments.verdicts import evaluate_claims


@pytest.mark.parametrize("design", DESIGNS)
def test_smoke_trial_of_each_design(design):
    metrics = get("inference-coverage-iv").trial({"design": design, "n": 2000, "rho": 5.0}, 11)
    assert all(np.isfinite(v) for v in metrics.values())
    assert 0.0 <= metrics["covers_all"] <= 1.0 and metrics["width_ratio_x"] > 0.5


def _iv_cell(
    level: float, reps: int = 100, warned: float = 0.0, design: str = "over-strong"
) -> pd.DataFrame:
    """One cell whose three intervals each cover beta* with probability ``level``."""
    covers = (np.random.default_rng(14).random((reps, 3)) < level).astype(float)
    return coverage_cell("inference-coverage-iv", covers, design=design, rho=5.0, warned=warned)


@pytest.mark.negative_control("inference-coverage-iv", "population-coverage-iv")
def test_claim_fails_on_under_and_over_coverage():
    """Two-sided: 100 fits covering 0.80 (x's binomial s.e. 0.04: 0.80 < 0.93 - 2 x 0.04),
    and intervals twice too wide (each covers with probability P(|Z| < 3.92) = 0.99991, so
    all 300 cover: pooled coverage 1.0 > 0.97 + 2 x 0.0126, the floor of the pooled s.e.)."""
    claim = next(c for c in get("inference-coverage-iv").claims)
    assert claim.evaluate(_iv_cell(0.95)).passed
    assert not claim.evaluate(_iv_cell(0.80)).passed
    assert not claim.evaluate(_iv_cell(0.99991)).passed
    # the library warned: that cell is not judged (beside a judged nominal cell)
    nominal = _iv_cell(0.95, design="just-strong")
    assert claim.evaluate(pd.concat([_iv_cell(0.80, warned=1.0), nominal])).passed


@pytest.mark.negative_control("inference-coverage-iv", "population-coverage-iv")
def test_claim_fails_when_every_cell_warns():
    """Only cells where the library warns in fewer than half the fits are judged, and at
    least one must be: every quick cell nominal (0.95) passes; the same cells each warning
    in every fit (or in half of them) judged nothing and fail."""
    claim = next(c for c in get("inference-coverage-iv").claims)
    cells = get("inference-coverage-iv").grid["quick"]
    table = pd.concat([_iv_cell(0.95).assign(**c) for c in cells])
    result = claim.evaluate(table)
    assert result.passed and result.numbers["judged cells"] == len(cells)
    for share in (1.0, 0.5):
        result = claim.evaluate(table.assign(warned=share))
        assert not result.passed and result.numbers["judged cells"] == 0


def test_claim_fails_on_undercoverage_without_warning():
    base = {"design": "just-strong", "n": 2000, "rho": 0.5, "width_ratio_x": 1.0}
    covers = [1.0] * 80 + [0.0] * 20
    rows = pd.DataFrame(
        {
            **base,
            "covers_x": covers,
            "covers_all": covers,
            "error_x": 0.0,
            "se_2sls_x": 1.0,
            "gd_covers_x": np.nan,
            "gd_width_ratio_x": np.nan,
            "gd_error_x": np.nan,
            "warned": 0.0,
        }
    )
    assert not _claim(rows).passed  # 0.80 with s.e. 0.04: outside [0.93, 0.97] +/- 2 s.e.
    # the library warned: outside the regime, not judged (beside a judged nominal cell)
    assert _claim(pd.concat([rows.assign(warned=1.0), _iv_cell(0.95)])).passed


@pytest.mark.slow
def test_claim_holds_at_quick_scale(tmp_path):
    """1,600 fits plus 800 DP-2S-GD fits (a few CPU-minutes); see docs/inference.md."""
    name = "inference-coverage-iv"
    result = run([name], scale="quick", store_path=tmp_path / "s.sqlite", jobs=2, progress=False)
    verdicts = evaluate_claims(get(name), result.results[name], "quick")
    assert verdicts and not any(v.failed for v in verdicts), [v.detail for v in verdicts]


def test_plot_has_one_row_per_cell():
    rows = pd.DataFrame(
        {
            "design": ["just-strong"] * 4 + ["over-strong"] * 4,
            "n": 2000,
            "rho": 0.5,
            "covers_x": [1.0, 1.0, 0.0, 1.0] * 2,
            "covers_all": 1.0,
            "width_ratio_x": 1.5,
            "error_x": 0.0,
            "se_2sls_x": 1.0,
            "gd_covers_x": [0.0, 1.0, 0.0, 0.0] * 2,
            "gd_width_ratio_x": 0.5,
            "gd_error_x": 0.0,
            "warned": [0.0] * 4 + [1.0] * 4,
        }
    )
    (fig,) = get("inference-coverage-iv").plot(rows)
    left = fig.axes[0]
    assert [t.get_text() for t in left.get_yticklabels()] == [
        "just-strong, n=2000, rho=0.5",
        "over-strong, n=2000, rho=0.5",
    ]
    # coverage point, its error bar, DP-2S-GD's cross, and one warned square (over-strong)
    assert len(left.lines[-1].get_xdata()) == 1
