"""IV identification tests from released moments (dpfit.inference.iv_identification and
dpfit.inference.anderson_rubin).

Without noise each statistic must equal the textbook one computed from the raw data by
linearmodels or statsmodels (golden values from the oracles, recomputed in the test); with
noise, its null distribution must hold in Monte Carlo (tolerances from binomial sampling
error) and fail when the noise term is dropped.
"""

import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from linearmodels.iv import IV2SLS
from scipy import stats

from dpfit.datasets import load_card
from dpfit.inference.anderson_rubin import ar_set, ar_statistic, ar_test
from dpfit.inference.iv_identification import (
    ReleasedMoments,
    first_stage,
    noise_jacobian,
    overidentification,
    wu_hausman,
)

# Card's data: columns 0 intercept, 1 exper (exogenous), 2 educ (endogenous), 3 nearc4,
# 4 nearc2, 5 fatheduc (instruments), 6 lwage.
COLUMNS = ["exper", "educ", "nearc4", "nearc2", "fatheduc", "lwage"]


@pytest.fixture(scope="module")
def card():
    data = load_card(sample="liang2025")
    A = np.column_stack([np.ones(len(data)), data[COLUMNS].to_numpy(float)])
    return data, A.T @ A / len(data)


def _moments(M, n, z_idx, noise_std=0.0):
    return ReleasedMoments(
        matrix=M, noise_std=noise_std, n=n, x_idx=(0, 1, 2), z_idx=z_idx, y_idx=6
    )


def _instruments(z_idx):
    return [COLUMNS[c - 1] for c in z_idx if c >= 3]


@pytest.mark.parametrize("z_idx", [(0, 1, 3), (0, 1, 3, 4), (0, 1, 3, 4, 5)])
def test_without_noise_the_statistics_are_linearmodels(card, z_idx):
    data, M = card
    n, m = len(data), _moments(M, len(data), z_idx)

    formula = f"lwage ~ 1 + exper + [educ ~ {' + '.join(_instruments(z_idx))}]"
    fit = IV2SLS.from_formula(formula, data).fit(cov_type="unadjusted")
    # linearmodels' first-stage F divides the residual variance by n, the textbook by n - K_z
    expected = fit.first_stage.diagnostics.loc["educ", "f.stat"] * (n - len(z_idx)) / n
    assert first_stage(m).statistic == pytest.approx(expected, rel=1e-9)
    assert first_stage(m).noise_sd == 0.0
    # Wu-Hausman: the Wald form of the control function test is q x linearmodels' F
    assert wu_hausman(m).statistic == pytest.approx(fit.wu_hausman().stat, rel=1e-9)
    if len(z_idx) > 3:
        sargan = overidentification(m, fit.params.to_numpy())
        assert sargan.statistic == pytest.approx(fit.sargan.stat, rel=1e-9)
        assert sargan.dof == (len(z_idx) - 3.0,)
    else:
        with pytest.raises(ValueError, match="exactly identified"):
            overidentification(m, fit.params.to_numpy())


def test_without_noise_the_ar_statistic_is_the_regression_f_test(card):
    data, M = card
    m = _moments(M, len(data), (0, 1, 3, 4))
    Z = sm.add_constant(data[["exper", "nearc4", "nearc2"]])
    for b in (0.05, 0.1, 0.3):
        reg = sm.OLS(data["lwage"] - b * data["educ"], Z).fit()
        expected = reg.f_test("nearc4 = 0, nearc2 = 0")
        got = ar_test(m, [b])
        assert got.statistic == pytest.approx(float(expected.fvalue), rel=1e-9)
        assert got.pvalue == pytest.approx(float(expected.pvalue), rel=1e-6)


def _closed_form_set(m, alpha):
    """One endogenous regressor, one excluded instrument: AR(b) <= k is the quadratic
    inequality n g(b)^2 <= k sigma^2(b) S (no noise), solved in closed form."""
    L, dof = 1, m.n - len(m.z_idx)
    k = stats.f.isf(alpha, L, dof) * m.n * L / dof
    ry, rx = m.partialled(m.unit(m.y_idx)), m.partialled(m.unit(m.endogenous[0]))
    S = float(m.instrument_moment[0, 0])
    gy, gx = ((m.matrix[m.excluded] @ r).item() for r in (ry, rx))

    def q(c0, c1):  # the quadratic form in c = c0 e_y + c1 e_x
        r = c0 * ry + c1 * rx
        g = c0 * gy + c1 * gx
        return m.n * g**2 - k * (r @ m.matrix @ r - g**2 / S) * S

    # q(1, -b) = a b^2 + b1 b + c0
    c0, a = q(1.0, 0.0), q(0.0, 1.0)
    b1 = q(1.0, -1.0) - c0 - a
    roots = np.sort(np.roots([a, b1, c0]).real)
    assert a > 0  # a bounded interval (strong enough instrument)
    return [(float(roots[0]), float(roots[1]))]


def test_the_ar_set_matches_its_closed_form(card):
    data, M = card
    m = _moments(M, len(data), (0, 1, 3))
    found = ar_set(m, 0.05, 0.2)
    assert len(found) == 1
    np.testing.assert_allclose(found[0], _closed_form_set(m, 0.05)[0], rtol=1e-8)
    # the set's ends are exactly where the AR test's p-value is alpha
    for end in found[0]:
        assert ar_test(m, [end]).pvalue == pytest.approx(0.05, abs=1e-9)


def test_the_noise_map_is_the_jacobian_of_the_partialled_moment(card):
    """Fast against slow: K L_r (closed form) against central differences of g(M)."""
    _, M = card
    m = _moments(M, 1000, (0, 1, 3, 4, 5), noise_std=1e-4)
    c = m.unit(6)
    c[2] = -0.1

    def g(mm):
        return mm.matrix[mm.excluded] @ mm.partialled(c)

    np.testing.assert_allclose(
        m.noise_map(m.partialled(c)), noise_jacobian(g, m), rtol=1e-5, atol=1e-8
    )


def _weak_model(n, rng, exogenous=False):
    """y = 1 + 0.5 x + u, x = 0.1 (z1 + z2) + v, corr(u, v) = 0.8 (0 when exogenous)."""
    z = rng.standard_normal((n, 2))
    u, e = rng.standard_normal((2, n))
    v = (0.0 if exogenous else 0.8) * u + 0.6 * e
    x = 0.1 * z.sum(axis=1) + v
    y = 1.0 + 0.5 * x + u
    A = np.column_stack([np.ones(n), x, z, y])
    return A.T @ A / n


def _noisy(M, s, rng):
    E = np.triu(rng.normal(0.0, s, M.shape))
    return M + E + np.triu(E, 1).T


def test_noisy_tests_keep_their_level_and_fail_without_the_noise_term():
    """Monte Carlo over data and noise: the AR test at beta* = 0.5, Sargan (valid
    instruments) and Wu-Hausman (x exogenous) reject at about 5%; the AR test that ignores
    the noise rejects far more. Noise s.d. 0.05 per entry at n = 500 (the sampling s.d. of a
    moment is about 0.045): 400 replicates, binomial s.d. of a 5% rate 0.011, so the band
    [0.015, 0.09] is 3.2 s.d. either side."""
    rng = np.random.default_rng(31)
    n, s, reps = 500, 0.05, 400
    rejected = {"ar": 0, "naive": 0, "sargan": 0, "hausman": 0}
    for _ in range(reps):
        M = _noisy(_weak_model(n, rng), s, rng)
        m = ReleasedMoments(matrix=M, noise_std=s, n=n, x_idx=(0, 1), z_idx=(0, 2, 3), y_idx=4)
        rejected["ar"] += ar_test(m, [0.5]).pvalue < 0.05
        naive = ReleasedMoments(
            matrix=M, noise_std=0.0, n=n, x_idx=(0, 1), z_idx=(0, 2, 3), y_idx=4
        )
        rejected["naive"] += ar_test(naive, [0.5]).pvalue < 0.05
        rejected["sargan"] += overidentification(m, np.array([1.0, 0.5])).pvalue < 0.05
        exo = _noisy(_weak_model(n, rng, exogenous=True), s, rng)
        m_exo = ReleasedMoments(
            matrix=exo, noise_std=s, n=n, x_idx=(0, 1), z_idx=(0, 2, 3), y_idx=4
        )
        rejected["hausman"] += wu_hausman(m_exo).pvalue < 0.05
    rates = {k: v / reps for k, v in rejected.items()}
    for name in ("ar", "hausman"):
        assert 0.015 <= rates[name] <= 0.09, rates
    assert rates["sargan"] <= 0.09, rates  # at beta*: a J with known weight is conservative
    assert rates["naive"] > 0.2, rates


def test_the_noise_correction_removes_the_first_stage_bias():
    """The noise inflates the first-stage F by about n s^2 tr(S^-1) / (L sigma_v^2); on one
    dataset over 300 noise draws the corrected statistic averages to the noiseless one (within
    4 Monte Carlo s.e.) while the uncorrected one lies more than 3 s.e. above it."""
    rng = np.random.default_rng(7)
    n, s = 2000, 0.02
    M = _weak_model(n, rng)
    clean = first_stage(
        ReleasedMoments(matrix=M, noise_std=0.0, n=n, x_idx=(0, 1), z_idx=(0, 2, 3), y_idx=4)
    )
    corrected, raw = [], []
    for _ in range(300):
        m = ReleasedMoments(
            matrix=_noisy(M, s, rng), noise_std=s, n=n, x_idx=(0, 1), z_idx=(0, 2, 3), y_idx=4
        )
        stage = first_stage(m)
        corrected.append(stage.statistic)
        raw.append(stage.uncorrected)
    assert abs(np.mean(corrected) - clean.statistic) < 4 * np.std(corrected) / math.sqrt(300)
    assert np.mean(raw) - clean.statistic > 3 * np.std(raw) / math.sqrt(300)
    # the reported noise s.d. is the spread of the corrected statistic (within 25%)
    assert np.mean([stage.noise_sd]) == pytest.approx(np.std(corrected), rel=0.25)


def test_an_unidentified_coefficient_gets_the_whole_line():
    """Instruments unrelated to x: the AR set is the whole line or two rays, never a short
    interval (the data do not identify beta)."""
    rng = np.random.default_rng(3)
    n = 2000
    z = rng.standard_normal((n, 1))
    x, u = rng.standard_normal((2, n))
    y = 0.5 * x + u
    A = np.column_stack([np.ones(n), x, z, y])
    m = ReleasedMoments(matrix=A.T @ A / n, noise_std=0.0, n=n, x_idx=(0, 1), z_idx=(0, 2), y_idx=3)
    pieces = ar_set(m, 0.05, 0.5)
    assert any(math.isinf(lo) or math.isinf(hi) for lo, hi in pieces)


def test_ar_statistic_is_scale_free_in_the_hypothesis_vector(card):
    _, M = card
    m = _moments(M, 2000, (0, 1, 3, 4), noise_std=1e-3)
    c = m.unit(6)
    c[2] = -0.2
    assert ar_statistic(m, c) == pytest.approx(ar_statistic(m, -3.0 * c), rel=1e-10)


def test_several_endogenous_regressors():
    """Two endogenous regressors: the Cragg-Donald statistic is the smallest eigenvalue of the
    first-stage signal; the AR set is refused (joint tests only) and ar_test works."""
    rng = np.random.default_rng(5)
    n = 3000
    z = rng.standard_normal((n, 3))
    u, v1, v2 = rng.standard_normal((3, n))
    x1 = z[:, 0] + 0.5 * u + v1
    x2 = z[:, 1] + z[:, 2] + 0.5 * u + v2
    y = 1 + x1 - x2 + u
    A = np.column_stack([np.ones(n), x1, x2, z, y])
    m = ReleasedMoments(
        matrix=A.T @ A / n, noise_std=0.0, n=n, x_idx=(0, 1, 2), z_idx=(0, 3, 4, 5), y_idx=6
    )
    stage = first_stage(m)
    assert stage.name == "Cragg-Donald statistic" and stage.critical is None
    # x1 has one strong instrument, x2 two: both identified, the statistic is large
    assert stage.statistic > 100
    with pytest.raises(ValueError, match="one endogenous regressor"):
        ar_set(m, 0.05, 0.0)
    assert ar_test(m, [1.0, -1.0]).pvalue > 0.001
    assert ar_test(m, [0.0, 0.0]).pvalue < 1e-6
    frame = pd.DataFrame(A[:, 1:], columns=["x1", "x2", "z0", "z1", "z2", "y"])
    fit = IV2SLS.from_formula("y ~ 1 + [x1 + x2 ~ z0 + z1 + z2]", frame).fit(cov_type="unadjusted")
    assert wu_hausman(m).statistic == pytest.approx(2 * fit.wu_hausman().stat, rel=1e-9)
