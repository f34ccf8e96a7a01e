"""The coverage claims' pass rates quoted in docs/inference.md ("What the coverage claims can
detect") are reproduced by inference_coverage_power at a fraction of the simulations."""

from __future__ import annotations

import math

import pytest

from dpfit.experiments.inference_coverage_power import pass_rate


@pytest.mark.parametrize(
    "experiment, claim, coefficients, reps, level, documented",
    [
        ("inference-coverage", "population-coverage", 4, 100, 0.90, 0.4925),
        ("inference-coverage", "population-coverage", 4, 400, 0.90, 0.0175),
        ("inference-coverage-iv", "population-coverage-iv", 3, 100, 0.99, 0.7775),
    ],
)
def test_pass_rate_agrees_with_the_documented_table(
    experiment, claim, coefficients, reps, level, documented
):
    """100 of the table's 400 seeded simulations (the same stream): within 3 binomial s.e.
    of the documented rate, sqrt(p (1 - p) / 100), floored at 0.02 for rates near 0."""
    sims = 100
    rate = pass_rate(experiment, claim, level, reps, coefficients, sims=sims)
    tolerance = 3 * max(math.sqrt(documented * (1 - documented) / sims), 0.02)
    assert abs(rate - documented) <= tolerance
