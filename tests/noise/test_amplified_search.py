"""The noise-multiplier search of amplified (Poisson-subsampled) releases stops at a floor.

Below z = 0.1 a privacy loss distribution's support grows like 1 / z^2: the search used to
halve z down to 1e-3, and at epsilon = 1e4 ran for minutes past 3 GB. Such an epsilon is
now refused at once, while large but reachable epsilons still calibrate.
"""

import pytest

from dpfit.noise import amplified_banded_choice
from dpfit.privacy import subsampled_gaussian_epsilon, subsampled_gaussian_noise_multiplier

KW = dict(sampling_probability=0.04, count=25, delta=1e-5)


def test_an_epsilon_below_the_search_floor_is_refused():
    with pytest.raises(ValueError, match="too large to calibrate"):
        subsampled_gaussian_noise_multiplier(1e4, **KW)
    with pytest.raises(ValueError, match="too large to calibrate"):
        amplified_banded_choice(
            100, epsilon=1e4, delta=1e-5, batch_size=10, dataset_size=1000, candidates=(1, 4)
        )


def test_a_large_reachable_epsilon_still_calibrates():
    z = subsampled_gaussian_noise_multiplier(20.0, **KW)
    assert 0.1 < z < 0.5  # z ~ 0.37: a large epsilon well above the floor is unaffected
    assert subsampled_gaussian_epsilon(z, **KW) <= 20.0
