"""DP-AMBSSGD experiments: smoke trials, claim evaluators that can fail, quick-scale claims."""

import warnings

import numpy as np
import pandas as pd
import pytest

from dpfit.exceptions import InsecureRandomnessWarning
from dpfit.experiments import _varshney2022_claims as v
from dpfit.experiments import get, names

VARSHNEY = [n for n in names() if n.startswith("varshney2022-")]


def _results(exp, scale):
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRandomnessWarning)
        for k, (params, replicate) in enumerate(exp.tasks(scale)):
            seed = 1000 + k
            rows.append({**params, "replicate": replicate, "seed": seed, **exp.trial(params, seed)})
    return pd.DataFrame(rows)


def test_registered(catalog_names):
    varshney = [n for n in catalog_names if n.startswith("varshney2022-")]
    assert varshney == [f"varshney2022-p{k}" for k in range(1, 8)]


@pytest.mark.parametrize("name", VARSHNEY)
def test_smoke_trials_are_finite_deterministic_and_plottable(name):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    exp = get(name)
    results = _results(exp, "smoke")
    params, _ = exp.tasks("smoke")[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRandomnessWarning)
        np.testing.assert_equal(exp.trial(params, 7), exp.trial(params, 7))
    excess = results.filter(like="excess_")
    assert np.isfinite(excess.to_numpy()).all() and (excess.to_numpy() >= 0).all()
    ledger = results.filter(like="ledger_rho_")
    assert np.allclose(ledger.to_numpy(), results[["rho"]].to_numpy(), rtol=1e-12)
    for fig in exp.plot(results):
        plt.close(fig)


def _p1(ratio, slope_scale=1.0):
    n = np.repeat([2**17, 2**18, 2**19, 2**20], 3)
    rate = 8.0 / n
    excess = ratio * rate * (n / 2**17) ** (slope_scale - 1.0)
    return pd.DataFrame({"d": 8, "n": n, "rate": rate, "excess_practical": excess})


@pytest.mark.negative_control("varshney2022-p1", "P1 band")
def test_p1_band_can_fail():
    """Three identical replicates per cell: the bootstrap s.e. is 0, so only the band decides."""
    assert v.p1_band(_p1(1.2)).passed
    assert not v.p1_band(_p1(5.0)).passed  # privacy still five times the statistical rate
    assert not v.p1_band(_p1(0.2)).passed  # below least squares (sigma^2 d / 2N)


@pytest.mark.negative_control("varshney2022-p1", "P1 slope")
def test_p1_slope_can_fail():
    assert v.p1_slope(_p1(1.2)).passed
    assert not v.p1_slope(_p1(1.2, slope_scale=1.5)).passed  # error falling like N^-0.5
    assert not v.p1_slope(_p1(1.2, slope_scale=0.5)).passed  # like N^-1.5: too steep


def _p2(a_d, a_n, a_eps):
    rows = []
    for d in (8, 32):
        for n in (2**18, 2**19, 2**20):
            for eps in (0.5, 1.0):
                for r in range(3):
                    priv = 1e3 * d**a_d * n**a_n * eps**a_eps * (1 + 0.01 * r)
                    rows.append(
                        dict(
                            d=d,
                            n=n,
                            epsilon=eps,
                            privacy_excess_paper=priv,
                            excess_paper=priv + 1e-6,
                            excess_nonprivate=1e-6,
                        )
                    )
    return pd.DataFrame(rows)


@pytest.mark.negative_control("varshney2022-p2", "P2 exponents")
@pytest.mark.parametrize(
    "exponents",
    [
        (3.0, -1.8, -2.0),  # d^3: the SSP-like rate
        (1.0, -1.8, -2.0),  # linear in d
        (2.0, -1.0, -2.0),  # privacy error falling like 1/N only
        (2.0, -2.6, -2.0),  # falling faster than the band allows
        (2.0, -1.8, -1.0),  # 1/eps
        (2.0, -1.8, -3.0),  # 1/eps^3
    ],
)
def test_p2_claim_can_fail(exponents):
    """Each table breaks one exponent's band on one side; replicates differ by 1%, so the
    bootstrap s.e. of each exponent (0.003-0.006) is far below the 0.5-0.65 by which it
    misses its band."""
    good = v.p2_exponents(_p2(2.0, -1.8, -2.0))
    assert good.passed and good.numbers["a_d"] == pytest.approx(2.0, abs=0.01)
    assert not v.p2_exponents(_p2(*exponents)).passed


def _p3(baseline_power, *, power=2.0, at_zero=0.0, ssgd_power=None):
    """P3 rows, one per sigma: DP-AMBSSGD's excess 1e-4 sigma^power (``at_zero`` at sigma = 0),
    the baselines' 1e-3 sigma^baseline_power (power 0: a floor)."""
    rows = []
    ssgd_power = baseline_power if ssgd_power is None else ssgd_power
    for sigma in (0.0, 1e-3, 1e-2, 1e-1, 1.0):
        rows.append(
            dict(
                sigma=sigma,
                excess_paper=1e-4 * sigma**power if sigma > 0 else at_zero,
                excess_fixed_clip=1e-3 * max(sigma, 1e-6) ** baseline_power,
                excess_ssgd=1e-3 * max(sigma, 1e-6) ** ssgd_power,
            )
        )
    return pd.DataFrame(rows)


@pytest.mark.negative_control("varshney2022-p3", "P3 sigma adaptivity")
def test_p3_claim_can_fail():
    """Each table breaks one of the three properties and keeps the other two."""
    assert v.p3_claim(_p3(0.0)).passed
    assert not v.p3_claim(_p3(0.0, power=1.0)).passed  # excess like sigma, not sigma^2
    assert not v.p3_claim(_p3(0.0, power=3.0)).passed  # like sigma^3
    assert not v.p3_claim(_p3(0.0, at_zero=1e-6)).passed  # an error floor at sigma = 0
    assert not v.p3_claim(_p3(2.0)).passed  # baselines that also scale like sigma^2
    assert not v.p3_claim(_p3(0.0, ssgd_power=2.0)).passed  # DP-SSGD alone does not floor


def _p6(excess, *, clipped=lambda s, k, c: 0.01, reps=12, seed=0):
    """P6 rows on the quick grid: excess(sigma, kappa, c1) with a 30% run-to-run spread (the
    quick run's geometric means move by about that) and the fraction clipped."""
    rng = np.random.default_rng(seed)
    rows = []
    for params in get("varshney2022-p6").grid["quick"]:
        s, k, c = params["sigma"], params["kappa"], params["c1"]
        for _ in range(reps):
            e = excess(s, k, c) * np.exp(0.3 * rng.standard_normal())
            rows.append(
                {
                    **params,
                    "excess_practical": e,
                    "clipped_practical": clipped(s, k, c),
                    "side_condition_warnings": float(c >= 2),
                }
            )
    return pd.DataFrame(rows)


def _p6_measured(sigma, kappa, c1):
    """Roughly the quick run: U-shaped in c1 at sigma = 1 (best at 1/2), bias at c1 = 1/4 at
    high SNR, and the kappa = 4, c1 = 2 collapse."""
    if kappa == 4 and c1 == 2:
        return 0.25
    base = 2e-4 if sigma == 1 else 2e-8
    if sigma == 1:
        return base * {0.25: 2.0, 0.5: 1.0, 1.0: 2.0, 2.0: 2.0}[c1]
    return base * (4000.0 if (kappa == 4 and c1 == 0.25) else 1.0)


def _p6_clipped(sigma, kappa, c1):
    return 1.0 if (kappa == 4 and c1 == 2) else 0.01


@pytest.mark.negative_control(
    "varshney2022-p6",
    "P6 low SNR prefers smaller c1",
    "P6 high SNR needs larger c1",
    "P6 kappa T breaks DP-STAT",
)
def test_p6_claims_fail_when_c1_does_not_matter_or_nothing_breaks():
    """Controls: the excess flat in c1 at sigma = 1 (no gain from a small c1); flat at high
    SNR (no bias at c1 = 1/4); no collapse at kappa = 4, c1 = 2 (its excess like c1 = 1's and
    little clipping)."""
    claims = {c.name: c.evaluate for c in get("varshney2022-p6").claims}
    good = _p6(_p6_measured, clipped=_p6_clipped)
    assert all(evaluate(good).passed for evaluate in claims.values())

    def flat_low(s, k, c):
        return 2e-4 if s == 1 else _p6_measured(s, k, c)

    def flat_high(s, k, c):
        return 2e-8 if s != 1 else _p6_measured(s, k, c)

    def no_cliff(s, k, c):
        return _p6_measured(s, k, 1.0 if (k == 4 and c == 2) else c)

    assert not claims["P6 low SNR prefers smaller c1"](_p6(flat_low, clipped=_p6_clipped)).passed
    assert not claims["P6 high SNR needs larger c1"](_p6(flat_high, clipped=_p6_clipped)).passed
    assert not claims["P6 kappa T breaks DP-STAT"](_p6(no_cliff)).passed


@pytest.mark.negative_control("varshney2022-p7", "P7 literal threshold")
def test_p7_claim_can_fail():
    n = np.repeat([2**15, 2**17], 4)
    good = pd.DataFrame(
        dict(n=n, excess_paper=1e-3, excess_literal=1.0, overshoot_paper=1.0, overshoot_literal=8.0)
    )
    assert v.p7_claim(good).passed
    assert not v.p7_claim(good.assign(excess_literal=2e-3)).passed
    assert not v.p7_claim(good.assign(overshoot_paper=3.0)).passed
    assert not v.p7_claim(good.assign(overshoot_literal=3.0)).passed  # no overshoot to blame
    # a 15x blow-up with run-to-run spread exp(N(0, 1.5^2)) over 4 runs: medians 12-12.5x, not
    # established at 3 s.e. of the log ratio (0.4-1.0 here)
    spread = np.exp(1.5 * np.random.default_rng(7).standard_normal(len(good)))
    assert not v.p7_claim(good.assign(excess_literal=1.5e-2 * spread)).passed
    # at large N the blow-up fades, as the paper says ("at small N"): reported, not asserted
    large = good.assign(n=2**19, excess_literal=2e-3)
    assert v.p7_claim(pd.concat([good, large])).passed


def _p45(ours, baseline, *, ds=(2, 4, 8, 16), ns=None, reps=3, seed=0):
    """P4/P5 rows: excess(d, N) = sigma^2 d / N + privacy(d, N) for each method, 5% noise."""
    rng = np.random.default_rng(seed)
    ns = ns or [2**k for k in range(17, 29, 2)]
    rows = []
    for d in ds:
        for n in ns:
            for _ in range(reps):
                noise = np.exp(0.05 * rng.standard_normal(5))
                row = {"d": d, "n": n, "rate": d / n}
                row["privacy_excess_paper"] = ours(d, n) * noise[0]
                row["privacy_excess_practical"] = ours(d, n) * noise[1]
                row["excess_practical"] = d / n + row["privacy_excess_practical"]
                for k, b in enumerate(v.P45_BASELINES):
                    row[f"privacy_excess_{b}"] = baseline(d, n) * noise[2 + k]
                    row[f"excess_{b}"] = d / n + row[f"privacy_excess_{b}"]
                rows.append(row)
    return pd.DataFrame(rows)


@pytest.mark.negative_control("varshney2022-p4", "P4 d-slope")
def test_p4_claim_can_fail():
    """5 runs per d with 5% log-normal noise: the slope's bootstrap s.e. is 0.014, so a slope
    of 1 or 3 is about 70 s.e. from 2 while the d^2 table's 2.01 agrees."""
    one_n = {"ns": [2**18], "reps": 5}
    assert v.p4_claim(_p45(lambda d, n: 50 * d**2 / n**2, lambda d, n: d**3 / n**2, **one_n)).passed
    linear = _p45(lambda d, n: 50 * d / n**2, lambda d, n: d**3 / n**2, **one_n)
    assert not v.p4_claim(linear).passed
    cubic = _p45(lambda d, n: 50 * d**3 / n**2, lambda d, n: d**3 / n**2, **one_n)
    assert not v.p4_claim(cubic).passed


@pytest.mark.negative_control("varshney2022-p5", "P5 sample complexity")
def test_p5_claim_can_fail():
    """N* (privacy error = d / N) ~ d when the privacy error is d^2 / N^2, ~ d^2 when it is
    d^3 / N^2; the fitted N* are exact under 5% noise. Negative controls: baselines no worse
    in d, DP-AMBSSGD's N* ~ d^2, N* outside the grid, a baseline whose ratio does not fall."""
    good = _p45(lambda d, n: 5e5 * d**2 / n**2, lambda d, n: 5e5 * d**3 / n**2)
    verdict = v.p5_claim(good)
    assert verdict.passed, verdict.numbers
    assert verdict.numbers["DP-AMBSSGD N* slope"] == pytest.approx(1.0, abs=0.02)
    assert verdict.numbers["ssp N* slope"] == pytest.approx(2.0, abs=0.02)
    assert verdict.numbers["N* d=4"] == pytest.approx(2e6, rel=0.05)
    same = _p45(lambda d, n: 5e5 * d**2 / n**2, lambda d, n: 5e5 * d**2 / n**2)
    assert not v.p5_claim(same).passed  # baselines no worse in d
    quadratic = _p45(lambda d, n: 5e4 * d**3 / n**2, lambda d, n: 5e4 * d**4 / n**2)
    assert not v.p5_claim(quadratic).passed  # DP-AMBSSGD's N* ~ d^2
    beyond = _p45(lambda d, n: 1e9 * d**2 / n**2, lambda d, n: 1e9 * d**3 / n**2)
    assert not v.p5_claim(beyond).passed  # N* ~ d, but extrapolated past the grid's 2^27
    flat = _p45(lambda d, n: 5e5 * d**2 / n**2, lambda d, n: 1e-3 * d**3 / n)
    assert not v.p5_claim(flat).passed  # a baseline's privacy error not falling faster than 1/N


@pytest.mark.slow
def test_quick_scale_claims_hold(tmp_path):
    """Every claim evaluated at quick scale holds (P5 is evaluated at paper scale only: its
    claim says why)."""
    from dpfit.experiments.runner import run
    from dpfit.experiments.verdicts import evaluate_claims

    result = run(
        VARSHNEY, scale="quick", store_path=tmp_path / "store.sqlite", jobs=2, progress=False
    )
    failures = []
    for name in VARSHNEY:
        for verdict in evaluate_claims(get(name), result.results[name], "quick"):
            print(name, verdict.claim, verdict.status, dict(verdict.numbers))
            if verdict.failed:
                failures.append((name, verdict.claim, dict(verdict.numbers)))
    assert not failures, failures
    # P5 at quick scale: DP-AMBSSGD's privacy error / (sigma^2 d / N) has not yet started to
    # fall like 1/N, so N* is extrapolated past the grid and the claim cannot pass there
    p5 = v.p5_claim(result.results["varshney2022-p5"])
    print("P5 at quick scale", p5.passed, dict(p5.numbers))
    assert not p5.passed and p5.numbers["N* inside the grid"] == 0.0
