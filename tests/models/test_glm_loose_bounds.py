"""Public bounds much looser than the data must not give silent, confidently wrong GLM fits.

An outside review (branch r-glm28, review28/REVIEW.md, finding 1) fitted a logistic regression
with regressors in about [0, 8] x [0, 4] declared with bounds [0, 100] x [0, 50]: at steps = 1000
the intervals covered 0.29 of the time and no fit warned. Every fit must either cover or warn.
The cause (dpfit.algorithms._glm_spread): the noisy iterates spread by several units on the
linear predictor's scale, where the loss is far from quadratic, so their average was biased;
the step now keeps the spread small, and a fit whose spread stays large warns.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpfit
from dpfit.algorithms.glm import dp_glm
from dpfit.exceptions import CoverageWarning
from dpfit.inference.population_glm import SPREAD_WARN, batch_inflation

INTERCEPT = -1.55
TRUTH = np.array([INTERCEPT, 0.25, -0.5, 0.6])
LOOSE = {"x1": (0, 100), "x2": (0, 50), "x3": (0, 1)}  # 10x the data's range


def _design(n: int, rng: np.random.Generator) -> pd.DataFrame:
    z = rng.multivariate_normal([0, 0], [[1, 0.6], [0.6, 1]], size=n)
    u = stats.norm.cdf(z)
    x1 = 10 * stats.beta.ppf(u[:, 0], 1.5, 6)
    x2 = 5 * stats.beta.ppf(u[:, 1], 1.2, 4)
    x3 = (rng.uniform(size=n) < 1 / (1 + np.exp(-(-1.2 + 0.3 * x1)))).astype(float)
    eta = INTERCEPT + 0.25 * x1 - 0.5 * x2 + 0.6 * x3
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(float)
    return pd.DataFrame({"y": y, "x1": x1, "x2": x2, "x3": x3})


def test_loose_bounds_either_cover_or_warn():
    """20 seeded fits: the silent ones' 80 intervals must cover the true coefficients at a rate
    consistent with 0.95 (at least 0.85: below it with probability < 1e-3 under 0.95)."""
    covered, silent = 0, 0
    for seed in range(20):
        frame = _design(20_000, np.random.default_rng(seed))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = dpfit.logit("y ~ x1 + x2 + x3", frame, rho=0.5, bounds=LOOSE, steps=1000,
                              random_state=seed + 10_000)  # fmt: skip
        if any(issubclass(w.category, CoverageWarning) for w in caught):
            continue
        ci = res.conf_int(0.05).to_numpy()
        covered += int(((ci[:, 0] <= TRUTH) & (TRUTH <= ci[:, 1])).sum())
        silent += ci.shape[0]
    assert silent == 0 or covered / silent >= 0.85


def _scaled(frame: pd.DataFrame, factor: float) -> np.ndarray:
    """The design dp_glm sees: features mapped from bounds ``factor`` x the data's range."""
    highs = {"x1": 10 * factor, "x2": 5 * factor, "x3": 1.0}
    cols = [2 * frame[c].to_numpy() / high - 1 for c, high in highs.items()]
    return np.column_stack([np.ones(len(frame)), *cols])


def test_the_step_keeps_the_spread_small_and_a_large_spread_warns():
    """10x loose bounds: the step is lowered and the spread stays near its target (it was
    about 6 at steps = 1000); 40x: the mixing floor binds, the spread stays large and the
    fit warns with that reason."""
    frame = _design(20_000, np.random.default_rng(5))
    y = frame["y"].to_numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loose = dp_glm(_scaled(frame, 10), y, rho=0.5, steps=1000, rng=1, warn_large_rho=False)
    assert loose.config["step"] < 0.1 and loose.config["spread"] < 0.5
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = dpfit.logit("y ~ x1 + x2 + x3", frame, rho=0.5, random_state=2,
                          bounds={"x1": (0, 400), "x2": (0, 200), "x3": (0, 1)})  # fmt: skip
    spread = float(str(res.config["spread"]).split()[0])
    reasons = [str(w.message) for w in caught if issubclass(w.category, CoverageWarning)]
    assert spread > SPREAD_WARN and any("iterates spread" in r for r in reasons), reasons


def test_tight_bounds_keep_the_default_step():
    frame = _design(20_000, np.random.default_rng(6))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traj = dp_glm(_scaled(frame, 1), frame["y"].to_numpy(), rho=0.5, rng=3,
                      warn_large_rho=False)  # fmt: skip
    assert traj.config["step"] == 0.5 and traj.config["spread"] < 0.1


@pytest.mark.parametrize(("step", "batch"), [(0.5, 18), (0.23, 18), (0.1, 38)])
def test_batch_inflation_matches_the_autoregression_it_models(step, batch):
    """Batch means of an AR(1) with phi = 1 - step: the variance of their average over the
    variance their spread implies, simulated (4000 series; s.e. of the ratio about 2.5%)."""
    rng = np.random.default_rng(0)
    m, reps, phi = 10, 4000, 1.0 - step
    x, out = np.zeros(reps), np.empty((reps, m * batch))
    noise = rng.normal(size=(reps, 200 + m * batch))
    for t in range(noise.shape[1]):
        x = phi * x + noise[:, t]
        if t >= 200:
            out[:, t - 200] = x
    means = out.reshape(reps, m, batch).mean(axis=2)
    ratio = out.mean(axis=1).var() / (means.var(axis=1, ddof=1).mean() / m)
    assert abs(ratio / batch_inflation(step, batch, m) - 1.0) < 0.1
    assert batch_inflation(1.0, batch, m) == 1.0
