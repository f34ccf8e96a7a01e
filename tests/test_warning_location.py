"""Warnings dpfit reports to the user point at the user's line, not inside dpfit.

A fixed ``stacklevel`` breaks when a decorator (``@quiet_floats()``) or a helper adds a frame
(the warning then named ``contextlib.py`` or a dpfit module, so ``-W`` filters by module and
Python's once-per-location rule saw the wrong place); ``dpfit._validation.user_stacklevel``
counts dpfit's own frames instead. Each case below triggers one warning from this file.
"""

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import dpfit
from dpfit.baselines.adassp import adassp_paper
from dpfit.exceptions import (
    CoverageWarning,
    InsecureRandomnessWarning,
    LargeBudgetWarning,
    NonPrivateWarning,
    RepeatedFitWarning,
    SideConditionWarning,
)
from dpfit.losses import SquaredDistanceLoss
from dpfit.models._refits import REFITS
from dpfit.theory.ambssgd import check_ambssgd_side_condition

RNG = np.random.default_rng(5)
X = RNG.uniform(-1, 1, (400, 2))
Y = X @ [1.0, -0.5] + 0.1 * RNG.standard_normal(400)


def _refits():
    for clip in np.linspace(0.5, 2.0, REFITS):  # a shape (n = 397) no other test uses
        model = dpfit.DPLinearRegression(rho=0.5, clip=clip, steps=10, interval=None)
        model.fit(X[:397], Y[:397])


def _iv():
    z = RNG.integers(0, 2, (300, 1)).astype(float)
    x = z + RNG.standard_normal((300, 1))
    y = 0.5 * x[:, 0] + RNG.standard_normal(300)
    dpfit.DPIVRegression(rho=0.5, random_state=0).fit(x, y, Z=z)


def _ols_coverage():
    # n = 300 at rho = 0.05: the released Huber Hessian cannot be told from its noise
    frame = pd.DataFrame({"x0": X[:300, 0], "x1": X[:300, 1], "y": Y[:300]})
    bounds = {"x0": (-1, 1), "x1": (-1, 1)}
    dpfit.ols("y ~ x0 + x1", frame, rho=0.05, bounds=bounds, y_bounds=(-3, 3), random_state=0)


def _summary():
    fit = dpfit.DPLinearRegression(rho=0.5, clip=1.0, steps=200, random_state=0).fit(
        X[:393], Y[:393]
    )
    fit.summary(delta=0.5)


def _torch():
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader, TensorDataset

    from dpfit.torch import make_private

    model = torch.nn.Linear(2, 1)
    data = TensorDataset(torch.randn(40, 2), torch.randn(40, 1))
    make_private(
        model,
        torch.optim.SGD(model.parameters(), lr=0.1),
        DataLoader(data, batch_size=10),
        loss_fn=torch.nn.functional.mse_loss,
        clip=1.0,
        epochs=1,
        rho=0.5,
        random_state=0,
    )


def _side_condition():
    d = 10
    settings = dict(
        steps=14,
        step_size=1.0,
        noise_multiplier=7.566,
        feature_scale=math.sqrt(d),
        eigenvalues=np.ones(d),
    )
    check_ambssgd_side_condition(10**6, batch_size=100, **settings)


CASES = {
    "seeded noise": (InsecureRandomnessWarning, lambda: dpfit.mechanisms.rng.make_noise_source(0)),
    "repeated fits": (RepeatedFitWarning, _refits),
    "iv coverage": (CoverageWarning, _iv),
    "ols coverage": (CoverageWarning, _ols_coverage),
    "summary delta": (LargeBudgetWarning, _summary),
    "torch seed": (InsecureRandomnessWarning, _torch),
    "adassp_paper": (
        NonPrivateWarning,
        lambda: adassp_paper(X, Y, rho=0.05, allow_nonprivate=True, rng=None),
    ),
    "minimize rng=": (
        DeprecationWarning,
        lambda: dpfit.minimize(SquaredDistanceLoss(), X, rho=0.5, rng=1),
    ),
    "side condition": (SideConditionWarning, _side_condition),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_warning_points_at_the_callers_line(name):
    category, trigger = CASES[name]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trigger()
    hits = [w for w in caught if issubclass(w.category, category)]
    assert hits, f"{name}: no {category.__name__}"
    assert {w.filename for w in hits} == {__file__}, [(w.filename, w.lineno) for w in hits]
