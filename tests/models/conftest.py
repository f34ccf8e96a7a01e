"""Shared data of the estimator tests."""

import numpy as np
import pandas as pd
import pytest


@pytest.fixture(scope="session")
def iv_frame():
    """Build IV data: a strong binary instrument z, a confounder u (in x and y, so OLS is
    biased) and an exogenous control w; beta = (1, -0.3, 0.5) for (1, w, x). With
    ``heteroskedastic`` the error's sd grows with |w| (what a robust sandwich must handle)."""

    def build(n: int = 3000, *, heteroskedastic: bool = False, seed: int = 5) -> pd.DataFrame:
        rng = np.random.default_rng(seed)  # synthetic data, not privacy noise
        z = rng.integers(0, 2, n).astype(float)
        u = rng.standard_normal(n)
        w = np.clip(rng.standard_normal(n), -4, 4)
        x = 1 + 2 * z + 0.5 * w + u + rng.standard_normal(n)
        scale = 0.5 + 0.5 * np.abs(w) if heteroskedastic else 1.0
        y = 1 + 0.5 * x - 0.3 * w + u + scale * rng.standard_normal(n)
        return pd.DataFrame({"x": x, "w": w, "z": z, "y": y})

    return build
