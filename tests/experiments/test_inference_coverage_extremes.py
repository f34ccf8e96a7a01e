"""The n = 300 and 2e5 cells of the linear coverage grid: registered, and n = 300 warns."""

from __future__ import annotations

import pytest

import dpfit.experiments.inference_coverage_extremes  # noqa: F401 (registers the study)
from dpfit.experiments import get
from dpfit.experiments.inference_coverage import DESIGNS


def test_grid_is_the_two_ends_at_rho_half():
    cells = get("inference-coverage-extremes").grid["quick"]
    assert {(c["n"], c["rho"]) for c in cells} == {(300, 0.5), (200000, 0.5)}
    assert {c["design"] for c in cells} == set(DESIGNS)


@pytest.mark.parametrize("design", DESIGNS)
def test_n300_is_outside_the_valid_regime_and_says_so(design):
    # measured: every one of 100 fits a design warned (docs/inference.md)
    trial = get("inference-coverage-extremes").trial
    for seed in range(3):
        assert trial({"design": design, "n": 300, "rho": 0.5}, seed)["warned"] == 1.0


def test_rho_ends_complete_the_grid_with_the_quick_study():
    from dpfit.experiments.inference_coverage import EXPERIMENT

    names = ("inference-coverage", "inference-coverage-extremes", "inference-coverage-rho-ends")
    cells = {(c["n"], c["rho"]) for name in names for c in get(name).grid["quick"]}
    assert cells == {(n, r) for n in (300, 2000, 20000, 200000) for r in (0.05, 0.5, 5.0)}
    assert EXPERIMENT.name == names[0]
