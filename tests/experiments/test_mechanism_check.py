"""The mechanism-check experiment: its trial, its claims (able to fail), its quick-scale run."""

import numpy as np
import pandas as pd
import pytest

from dpfit.experiments import get, run, trial_seed


def _table(exp, scale):
    rows = []
    for params, rep in exp.tasks(scale):
        seed = trial_seed(exp.name, params, rep)
        rows.append({**params, "replicate": rep, "seed": seed, **exp.trial(params, seed)})
    return pd.DataFrame(rows)


def test_trial_is_deterministic_and_charges_exactly_rho():
    exp = get("mechanism-check")
    params = {"rho": 0.5, "sensitivity": 2.0, "dim": 1000}
    a, b = exp.trial(params, 7), exp.trial(params, 7)
    assert a == b and a != exp.trial(params, 8)
    assert a["predicted_variance"] == 4.0 and a["ledger_rho"] == pytest.approx(0.5, rel=1e-15)


def test_claims_pass_on_smoke_and_fail_on_miscalibrated_noise():
    exp = get("mechanism-check")
    df = _table(exp, "smoke")
    assert all(c.evaluate(df).passed for c in exp.claims)
    # Noise 20% too large in variance: a cell pools 2 x 2000 draws, so the ratio's sampling
    # se is sqrt(2 / 4000) = 0.022 and the shift is 8.9 se, far past the claim's 5 se (the
    # observed ratios are within 1.4 se of 1, so the shifted ones are > 7.5 se away).
    bad = df.assign(variance_ratio=df["variance_ratio"] * 1.2)
    variance = next(c for c in exp.claims if c.name == "variance")
    assert not variance.evaluate(bad).passed
    ledger = next(c for c in exp.claims if c.name == "ledger")
    assert not ledger.evaluate(df.assign(ledger_rho=df["ledger_rho"] * 2)).passed


def _synthetic(variance_factor: float = 1.0, ledger_factor: float = 1.0) -> pd.DataFrame:
    """Rows as the trial writes them, without running it: the mean of ``dim`` squared N(0, 1)
    draws is chi^2_dim / dim, the trial's variance ratio when the noise is calibrated."""
    rng = np.random.default_rng(17)
    rows = []
    for rho in (0.01, 0.1, 1.0):
        for sensitivity in (0.5, 2.0):
            for rep in range(5):
                ratio = rng.chisquare(20_000) / 20_000 * variance_factor
                predicted = sensitivity**2 / (2 * rho)
                rows.append(
                    {
                        "rho": rho,
                        "sensitivity": sensitivity,
                        "dim": 20_000,
                        "replicate": rep,
                        "empirical_variance": ratio * predicted,
                        "predicted_variance": predicted,
                        "variance_ratio": ratio,
                        "ledger_rho": rho * ledger_factor,
                    }
                )
    return pd.DataFrame(rows)


def _passes(claim: str, results: pd.DataFrame) -> bool:
    (found,) = [c for c in get("mechanism-check").claims if c.name == claim]
    return found.evaluate(results).passed


@pytest.mark.negative_control("mechanism-check", "variance", "ledger")
def test_claims_fail_on_noise_off_by_10_percent_either_way_and_on_a_wrong_charge():
    """A cell pools 5 x 20,000 draws, so the variance ratio's s.e. is sqrt(2 / 1e5) = 0.0045:
    noise variance 10% too large or too small is 22 s.e. off, far past the claim's 5 s.e.
    The ledger must be charged exactly rho: twice or half of it fails."""
    fine = _synthetic()
    assert _passes("variance", fine) and _passes("ledger", fine)
    assert not _passes("variance", _synthetic(variance_factor=1.1))
    assert not _passes("variance", _synthetic(variance_factor=0.9))
    assert not _passes("ledger", _synthetic(ledger_factor=2.0))
    assert not _passes("ledger", _synthetic(ledger_factor=0.5))


def test_plot_draws_one_figure():
    figs = get("mechanism-check").plot(_table(get("mechanism-check"), "smoke"))
    assert len(figs) == 1 and len(figs[0].axes) == 2


@pytest.mark.slow
def test_claims_hold_at_quick_scale(tmp_path):
    result = run(
        "mechanism-check", scale="quick", store_path=tmp_path / "s.sqlite", jobs=2, progress=False
    )
    exp = get("mechanism-check")
    df = result.results[exp.name]
    assert len(df) == 60
    for claim in exp.claims:
        outcome = claim.evaluate(df)
        print(claim.name, outcome.numbers)
        assert outcome.passed, (claim.name, outcome.numbers)
