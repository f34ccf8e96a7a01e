"""What each reason of the DP-GD default's checks forecasts (dpfit.algorithms._linear_doubts).

Post-processing of releases, so the releases are built by hand: a whitened bread that
identifies every direction or not, and a meat whose noise leaves fewer than four degrees of
freedom or not. The classes follow the measured calibration (docs/inference.md, "Warning
triage"): a noisy meat beside a well measured bread forecasts a miss (a CoverageWarning), the
same meat beside an unidentified bread is a note; collinear terms are an IdentificationWarning
and noise in most directions a CoverageWarning.
"""

from types import SimpleNamespace

import numpy as np
import pytest

from dpfit.algorithms._linear_doubts import HEAVY_TAILED_MEAT, Terms, linear_doubts
from dpfit.inference.doubts import COVERAGE, IDENTIFICATION, NOTE
from dpfit.inference.population import NoisyMoment
from dpfit.inference.whitened import NOISY_MEAT, NoisySandwich

K = 4
NAMES = ["Intercept", "a", "b", "c"]


def _bread(weak: int) -> NoisyMoment:
    """Whitened bread: eigenvalues 1, except ``weak`` of them at zero; noise s.d. 0.01."""
    spectrum = np.ones(K)
    spectrum[1 : 1 + weak] = 0.0
    return NoisyMoment(matrix=np.diag(spectrum), noise_std=0.01)


def _doubts(weak: int, meat_dof: float):
    population = SimpleNamespace(
        untrusted=np.zeros(K, bool), relative_drift=np.zeros(K), bse=np.ones(K)
    )
    sampling = NoisySandwich(cov=np.eye(K), dof=np.full(K, 50.0), meat_dof=np.full(K, meat_dof))
    terms = Terms(np.eye(K), NoisyMoment(matrix=np.eye(K), noise_std=0.01), NAMES)
    return linear_doubts(population, _bread(weak), sampling, None, terms)


def _shown(doubts):
    return {d.reason: d.shown for d in doubts}


def test_a_well_measured_fit_has_no_doubt():
    assert _doubts(weak=0, meat_dof=50.0) == []


def test_a_noisy_meat_beside_a_well_measured_bread_forecasts_a_miss():
    assert _doubts(weak=0, meat_dof=2.0) == [HEAVY_TAILED_MEAT]
    assert (
        HEAVY_TAILED_MEAT.shown == COVERAGE and "(the sandwich's meat)" in HEAVY_TAILED_MEAT.reason
    )


@pytest.mark.parametrize("weak, bread", [(1, IDENTIFICATION), (2, COVERAGE)])
def test_beside_an_unidentified_bread_the_noisy_meat_is_a_note(weak, bread):
    doubts = _doubts(weak=weak, meat_dof=2.0)
    assert doubts[-1] == NOISY_MEAT and NOISY_MEAT.shown == NOTE
    # one weak direction of four names its term; two (half) mean the noise swamps the data
    assert doubts[0].shown == bread
    assert ("noise swamps the data" in doubts[0].reason) == (bread == COVERAGE)
    assert ("barely varies" in doubts[0].reason) == (bread == IDENTIFICATION)
