"""Aligned neighbours: a batch sum's declared sensitivity covers its float64 rounding.

The layer's neighbours (:mod:`neighbour_data`) move one record to an extreme value. Each clipped
gradient is shrunk to ``C (1 - 2^-40)`` (:mod:`dpfit.mechanisms.clipping`), and for their small
batches that margin absorbs the rounding of the sum. So a declared sensitivity of exactly
``2 C`` per step, without the float64 rounding allowance of a sum of m terms
(:func:`dpfit.privacy.float_sum_excess`, Casacuberta et al. 2022; ``docs/threat-model.md``,
"Floating-point summation"), would pass there. Here, as in
``tests/audit/test_float_robustness.py``, every gradient is saturated and points the same way,
and the magnitudes of the records are spread over 1e-13..1e13. The neighbour flips one
record's gradient (the full replace-one distance ``2 C``). With m in the tens of thousands,
the *computed* query then moves past the exact bound ``2 C`` (by 1e-12 to 2e-11 relative,
which is more than the clip margin), and only the declared allowance (about m^2 2^-53
relative) keeps it within its sensitivity. :func:`dpfit.testing.check_neighbours` compares
with no slack.

Each case also asserts that some of its neighbours moves the query past ``2 C`` (the case
needs the allowance), so it cannot pass vacuously. dp_ssgd sums a batch of one, whose
allowance (``2^-52 C``) is below the clip margin. No neighbour can tell it apart from ``2 C``,
so it has no case here.
"""

from __future__ import annotations

import numpy as np
import pytest
from neighbour_known import ignored
from neighbour_registry import RHO, SEED

from dpfit import algorithms as alg
from dpfit import baselines
from dpfit.losses import FunctionLoss
from dpfit.noise import dpsgd
from dpfit.privacy import sum_sensitivity
from dpfit.testing import check_neighbours

CLIP = 1.0
#: Plain least squares, so that no bound of the loss clips the data before the gradient.
LSQ = FunctionLoss(grads=lambda w, X, y: X * (X @ w - y)[:, None], lipschitz=1.0, smoothness=1.0)


def aligned_neighbours(n: int, seed: int) -> tuple[tuple, tuple]:
    """((X, y), (X, y')): at w = 0 every gradient -y_i x_i is saturated along one direction u
    (|y_i| ||x_i|| spans 1e-13..1e26) and y' flips one record's gradient to -u."""
    rng = np.random.default_rng(seed)
    u = rng.standard_normal(3)
    u /= np.linalg.norm(u)
    X = np.exp(rng.uniform(-30, 30, n))[:, None] * u
    y = -np.exp(rng.uniform(0, 30, n))
    y2 = y.copy()
    y2[rng.integers(n)] *= -1
    return (X, y), (X, y2)


#: name: (run, batch size m = n, data seeds). Every record is in the one batch summed; the
#: seeds are cases whose computed query moves past 2 C (found by a search over seeds).
CASES = {
    "fixed_clip_sgd": (
        lambda X, y: baselines.fixed_clip_sgd(
            X, y, rho=RHO, clip=CLIP, steps=1, step_size=0.1, sampling_rate=1.0, rng=SEED
        ),
        200_000,
        (29, 15, 0),
    ),
    "dp_ftrl dp-sgd": (
        lambda X, y: alg.dp_ftrl(
            X, y, loss=LSQ, clip=CLIP, epochs=1, batch_size=len(y), step_size=0.1,
            mechanism=dpsgd(1), rho=RHO, rng=SEED,
        ),
        50_000,
        (29, 6, 5),
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_batch_sum_moves_by_at_most_its_declared_sensitivity(name):
    run, m, seeds = CASES[name]
    exact = 2.0 * CLIP  # the replace-one bound in exact arithmetic
    declared = sum_sensitivity(CLIP, n=m)  # with the rounding allowance of m summands
    encoders = (dpsgd(1).encoder_matrix(),)
    shares = []
    for seed in seeds:
        data, neighbour = aligned_neighbours(m, seed)
        try:
            report = check_neighbours(run, data, neighbour, encoders=encoders, ignore=ignored(name))
        except AssertionError as exc:
            raise AssertionError(f"{name}, aligned neighbours of seed {seed}:\n{exc}") from None
        shares.append(report.max_share * declared / exact)
    assert max(shares) > 1.0, (
        f"{name}: no case moved the computed query past {exact} (relative excess "
        f"{max(shares) - 1.0:.3g}), so it does not exercise the rounding allowance"
    )
