"""The GLM's privacy-only interval carries the same autocorrelation correction as the privacy
part of its population interval.

Batch means of autocorrelated iterates understate the variance of their average
(:func:`dpfit.inference.population_glm.batch_inflation`); the population interval corrects its
privacy part for it, and ``conf_int(target="sample")`` (Brown et al. 2024, eq. 12, over the
same batch means) must too, or it is narrower than the privacy error it claims to cover: by
sqrt(1.24) at the lowered step that loose bounds give.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpfit
from dpfit.algorithms.glm import dp_glm
from dpfit.inference.population_glm import (
    batch_inflation,
    privacy_covariance,
    spread_batch_means,
)

LOOSE = {"x1": (-30, 30), "x2": (-30, 30)}  # 10x the data's range: the step is lowered


def _frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.uniform(-3, 3, size=(n, 2))
    eta = -0.5 + 0.4 * x[:, 0] - 0.3 * x[:, 1]
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(float)
    return pd.DataFrame({"y": y, "x1": x[:, 0], "x2": x[:, 1]})


@pytest.mark.parametrize("bounds", [LOOSE, {"x1": (-3, 3), "x2": (-3, 3)}])
def test_the_sample_interval_is_the_population_intervals_privacy_part(bounds):
    """Same covariance, same centre, and Student-t with m - 1 dof over it; the correction is
    material (more than 5% in variance) under the loose bounds."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = dpfit.logit("y ~ x1 + x2", _frame(5000, 1), rho=0.5, bounds=bounds,
                          random_state=3)  # fmt: skip
    sample = res.covariance("sample")
    privacy = res.population.parts["privacy"]
    np.testing.assert_allclose(sample.cov, privacy, rtol=1e-9)
    m = res.m
    ci = res.conf_int(0.05, target="sample").to_numpy()
    np.testing.assert_allclose(ci.mean(axis=1), res.params.to_numpy(), rtol=1e-9, atol=1e-12)
    half = stats.t.ppf(0.975, m - 1) * np.sqrt(np.diag(privacy))
    np.testing.assert_allclose((ci[:, 1] - ci[:, 0]) / 2, half, rtol=1e-9)
    if bounds is LOOSE:
        c = res.config
        step = float(str(c["step_size"]).split("used ")[1].split(":")[0])
        assert step < 0.4
        assert batch_inflation(step, (c["steps"] - c["burn_in"]) // m, m) > 1.05

def test_spread_batch_means_keeps_the_centre_and_scales_the_spread():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frame = _frame(5000, 2)
        D = np.column_stack([np.ones(len(frame)), frame[["x1", "x2"]].to_numpy() / 30])
        traj = dp_glm(D, frame["y"].to_numpy(), rho=0.5, rng=4, warn_large_rho=False)
    c, means = traj.config, np.asarray(traj.releases["batch_means"])
    m = means.shape[0]
    factor = batch_inflation(c["step"], (c["steps"] - c["burn_in"]) // m, m)
    assert factor > 1.05
    spread = spread_batch_means(means, c)
    np.testing.assert_allclose(spread.mean(axis=0), means.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(
        np.cov(spread, rowvar=False), factor * np.cov(means, rowvar=False), rtol=1e-9
    )
    np.testing.assert_allclose(
        privacy_covariance(means, c), factor * np.cov(means, rowvar=False) / m, rtol=1e-9
    )
