"""The clipping warning offers more records or a larger rho only while they enlarge the clip.

With a clip that no longer grows (given by the user, or at its cap), more records shrink the
standard errors and leave the clipping gap as it is, so the gap grows against the interval:
the help line then names only the remedies that move the target (``target='huber'``).
"""

from __future__ import annotations

import warnings

import numpy as np

import dpfit


def _clipping_warning(**params) -> str:
    rng = np.random.default_rng(0)
    n = 20_000
    X = rng.uniform(0, 1, (n, 2))
    y = np.clip(X @ [1.0, -0.5] + rng.exponential(1.0, n) ** 2 - 2.0, -3, 30)  # skewed
    model = dpfit.DPLinearRegression(
        rho=1.0, bounds=[(0, 1)] * 2, y_bounds=(-3, 30), random_state=0, **params
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X, y)
    [message] = [str(w.message) for w in caught if "Clipping moves" in str(w.message)]
    return message


def test_a_fixed_clip_does_not_offer_more_records_or_rho():
    message = _clipping_warning(clip=0.05)
    helps = message.partition("What would help:")[2]
    assert "target='huber'" in helps
    assert "more records" not in helps and "a larger rho" not in helps
    assert "standard errors or more" in message  # the far records' part is a lower bound
