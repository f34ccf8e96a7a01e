"""A large rho warns once per fit, for the whole rho, not again for each share of it.

The default linear fit (preconditioned DP-GD) and the default IV fit (moments) spend shares of
rho on several releases; each share used to be checked again and warned about (rho=40 gave
warnings for 28.8 and 7.2 three times each).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import dpfit
from dpfit.exceptions import LargeBudgetWarning

N = 2000


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(3)  # synthetic data, not privacy noise
    z = rng.integers(0, 2, N).astype(float)
    x = 1 + 2 * z + rng.standard_normal(N)
    return pd.DataFrame({"x": x, "z": z, "y": 1 + 0.5 * x + rng.standard_normal(N)})


FITS = {
    "DPLinearRegression": lambda f: dpfit.DPLinearRegression(
        rho=40, bounds=[(-5, 8)], y_bounds=(-10, 14), random_state=0
    ).fit(f[["x"]], f["y"]),
    "ols": lambda f: dpfit.ols(
        "y ~ x", f, rho=40, bounds={"x": (-5, 8)}, y_bounds=(-10, 14), random_state=0
    ),
    "DPIVRegression": lambda f: dpfit.DPIVRegression(
        rho=40, bounds={"x": (-5, 8), "z": (0, 1)}, y_bounds=(-10, 14), random_state=0
    ).fit(f[["x"]], f["y"], Z=f[["z"]]),
    "iv": lambda f: dpfit.iv(
        "y ~ [x ~ z]",
        f,
        rho=40,
        bounds={"x": (-5, 8), "z": (0, 1)},
        y_bounds=(-10, 14),
        random_state=0,
    ),
}


@pytest.mark.parametrize("name", list(FITS))
def test_a_large_rho_warns_once_for_the_whole_rho(frame, name):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        FITS[name](frame)
    large = [str(w.message) for w in caught if issubclass(w.category, LargeBudgetWarning)]
    assert len(large) == 1 and large[0].startswith("rho=40 "), large
