"""Accounting golden values (reliability spec 4.1-4.4) and properties of the conversions.

Provenance: the tables were computed by the spec's author with mpmath at 50 digits,
OpenDP 0.16 and dp-accounting 0.6 (reliability.md section 4). Values are given to 10
decimals, so the 1e-9 relative tolerance also covers their rounding.
"""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpfit.privacy import (
    approx_dp_to_zcdp,
    bun_steinke_epsilon,
    bun_steinke_rho,
    cks_delta,
    cks_epsilon,
    cks_rho,
    gaussian_delta,
    gaussian_epsilon,
    gaussian_mu,
    zcdp_to_approx_dp,
)

# rho, delta, BS16, CKS20, dp_accounting RDP (ZCDpEvent), exact GDP  (reliability 4.1)
TABLE_41 = [
    (0.001, 1e-5, 0.2155966026, 0.1573353932, 0.165867, 0.1416853671),
    (0.001, 1e-6, 0.2360788000, 0.1828953772, 0.190735, 0.1679435941),
    (0.01, 1e-5, 0.6886140424, 0.5457255483, 0.545813, 0.4969753639),
    (0.01, 1e-6, 0.7533844378, 0.6216926546, 0.621697, 0.5750551858),
    (0.03125, 1e-5, 1.2308814780, 1.0122866378, 1.012551, 0.9263415040),
    (0.03125, 1e-6, 1.3453804424, 1.1429257096, 1.143169, 1.0607018623),
    (0.05, 1e-5, 1.5674271294, 1.3081183429, 1.308497, 1.1993695738),
    (0.05, 1e-6, 1.7122581363, 1.4715947505, 1.471656, 1.3675714751),
    (0.1, 1e-5, 2.2459660263, 1.9142388320, 1.914250, 1.7600571495),
    (0.1, 1e-6, 2.4507880005, 2.1419389284, 2.143044, 1.9945269007),
    (0.125, 1e-5, 2.5242629561, 2.1657155452, 2.165716, 1.9930914044),
    (0.125, 1e-6, 2.7532608849, 2.4190931769, 2.419102, 2.2540846502),
    (0.25, 1e-5, 3.6430702122, 3.1889711589, 3.188992, 2.9432252398),
    (0.25, 1e-6, 3.9669221888, 3.5422913005, 3.542361, 3.3076007226),
    (0.5, 1e-5, 5.2985259122, 4.7283869849, 4.728507, 4.3771780957),
    (0.5, 1e-6, 5.7565217698, 5.2215344445, 5.221540, 4.8865541175),
    (1, 1e-5, 7.7861404244, 7.0771966958, 7.077392, 6.5729700670),
    (1, 1e-6, 8.4338443777, 7.7662166253, 7.766238, 7.2860809664),
    (2, 1e-5, 11.5970518244, 10.7248241129, 10.725510, 9.9972561464),
    (2, 1e-6, 12.5130435395, 11.6885962494, 11.688627, 10.9971512142),
    (5, 1e-5, 20.1742712939, 19.0472595523, 19.053598, 17.8565868301),
    (5, 1e-6, 21.6225813627, 20.5519488140, 20.551992, 19.4236564740),
]

# epsilon, delta, max rho CKS, BS16 closed form, max mu exact GDP  (reliability 4.2)
TABLE_42 = [
    (0.5, 1e-5, 0.00850553, 0.00531390, 0.14221056),
    (1.0, 1e-5, 0.03055660, 0.02081994, 0.26805112),
    (1.0, 1e-6, 0.02435597, 0.01746890, 0.23670438),
    (2.0, 1e-5, 0.10825636, 0.08004538, 0.50155169),
    (3.0, 1e-6, 0.18506984, 0.14726389, 0.64772653),
    (8.0, 1e-5, 1.22971453, 1.04913620, 1.66603060),
]

# epsilon, delta, analytic sigma/Delta (Balle-Wang; reliability 4.4)
TABLE_44 = [
    (0.5, 1e-5, 7.031827),
    (1.0, 1e-5, 3.730632),
    (1.0, 1e-6, 4.224679),
    (2.0, 1e-5, 1.993812),
    (4.0, 1e-6, 1.193519),
    (8.0, 1e-5, 0.600229),
    (10.0, 1e-5, 0.49989),
    (20.0, 1e-5, 0.29004),
    (50.0, 1e-5, 0.14976),
]


@pytest.mark.parametrize("rho, delta, bs, cks, _rdp, gdp", TABLE_41)
def test_table_41_golden_values(rho, delta, bs, cks, _rdp, gdp):
    assert cks_epsilon(rho, delta) == pytest.approx(cks, rel=1e-9)
    assert zcdp_to_approx_dp(rho, delta) == pytest.approx(cks, rel=1e-9)
    assert gaussian_epsilon(math.sqrt(2 * rho), delta) == pytest.approx(gdp, rel=1e-9)
    assert bun_steinke_epsilon(rho, delta) == pytest.approx(bs, rel=1e-9)
    assert zcdp_to_approx_dp(rho, delta, method="bun-steinke") == pytest.approx(bs, rel=1e-9)


@pytest.mark.parametrize("eps, delta, rho_cks, rho_bs, mu", TABLE_42)
def test_table_42_inverse_maps(eps, delta, rho_cks, rho_bs, mu):
    # Table precision is 8 decimals: tolerance 5e-9 absolute on rho and mu.
    assert cks_rho(eps, delta) == pytest.approx(rho_cks, abs=5e-9)
    assert approx_dp_to_zcdp(eps, delta) == pytest.approx(rho_cks, abs=5e-9)
    assert bun_steinke_rho(eps, delta) == pytest.approx(rho_bs, abs=5e-9)
    assert approx_dp_to_zcdp(eps, delta, method="bun-steinke") == pytest.approx(rho_bs, abs=5e-9)
    assert gaussian_mu(eps, delta) == pytest.approx(mu, abs=5e-9)


@pytest.mark.parametrize("eps, delta, sigma", TABLE_44)
def test_table_44_analytic_gaussian_and_classic_trap(eps, delta, sigma):
    # The analytic Gaussian sigma/Delta is 1/mu_max of the exact curve (6 decimals in the table).
    assert 1.0 / gaussian_mu(eps, delta) == pytest.approx(sigma, abs=6e-6)
    classic = math.sqrt(2 * math.log(1.25 / delta)) / eps
    if eps >= 10:  # the classic formula under-noises: dpfit never uses it
        assert classic < 1.0 / gaussian_mu(eps, delta)


def test_table_43_calibration_identities():
    # Full-batch DP-GD, T = 100 steps, noise multiplier 10 on the clipped sum (add/remove):
    # rho = T / (2 z^2) = 0.5; under replace-one the sensitivity doubles: rho = 2.0.
    assert 100 / (2 * 10.0**2) == 0.5
    assert cks_epsilon(0.5, 1e-5) == pytest.approx(4.7283869849, rel=1e-9)
    assert cks_epsilon(2.0, 1e-5) == pytest.approx(10.7248241129, rel=1e-9)


def test_opendp_anchor_values():
    # OpenDP's own unit test of make_zCDP_to_approxDP at rho = 1/32.
    assert cks_epsilon(1 / 32, 1e-3) == pytest.approx(0.6880024554878086, rel=1e-12)
    assert cks_delta(1 / 32, 0.0) == pytest.approx(0.1508457845622862, rel=1e-12)
    # Exact GDP at eps = 0 is the total variation 2 Phi(mu/2) - 1 = erf(mu / (2 sqrt 2)).
    assert gaussian_delta(0.25, 0.0) == pytest.approx(math.erf(0.125 / math.sqrt(2)), rel=1e-12)


@pytest.mark.parametrize("rho, delta", [(r[0], r[1]) for r in TABLE_41])
def test_delta_and_epsilon_curves_are_inverse(rho, delta):
    eps = cks_epsilon(rho, delta)
    assert cks_delta(rho, eps) == pytest.approx(delta, rel=1e-8)
    mu = math.sqrt(2 * rho)
    assert gaussian_delta(mu, gaussian_epsilon(mu, delta)) == pytest.approx(delta, rel=1e-8)


# ------------------------------------------------------------------- cross-checks


@pytest.mark.parametrize("rho, delta, _bs, _cks, rdp, _gdp", TABLE_41)
def test_dp_accounting_rdp_grid_is_one_sided_upper_bound(rho, delta, _bs, _cks, rdp, _gdp):
    dp_accounting = pytest.importorskip("dp_accounting")
    accountant = dp_accounting.rdp.RdpAccountant()
    accountant.compose(dp_accounting.ZCDpEvent(rho))
    grid = accountant.get_epsilon(delta)
    assert grid == pytest.approx(rdp, abs=1e-6)
    assert cks_epsilon(rho, delta) <= grid + 1e-9


@pytest.mark.parametrize("rho, delta", [(0.01, 1e-5), (0.5, 1e-5), (2.0, 1e-6)])
def test_dp_accounting_pld_agrees_with_exact_gaussian(rho, delta):
    dp_accounting = pytest.importorskip("dp_accounting")
    accountant = dp_accounting.pld.PLDAccountant(value_discretization_interval=1e-4)
    accountant.compose(dp_accounting.GaussianDpEvent(1.0 / math.sqrt(2 * rho)))
    # The pessimistic PLD sits above the exact curve by its discretisation (<= 1.1e-7 seen).
    exact = gaussian_epsilon(math.sqrt(2 * rho), delta)
    assert accountant.get_epsilon(delta) == pytest.approx(exact, abs=1e-6)


@pytest.mark.parametrize("rho, delta", [(1 / 32, 1e-3), (0.001, 1e-6), (0.5, 1e-5), (5, 1e-6)])
def test_opendp_cks_conversion_agrees(rho, delta):
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib")
    meas = dp.m.make_gaussian(
        dp.atom_domain(T=float, nan=False),
        dp.absolute_distance(T=float),
        scale=1.0 / math.sqrt(2 * rho),
    )
    curve = dp.c.make_zCDP_to_approxDP(meas).map(1.0)
    assert cks_epsilon(rho, delta) == pytest.approx(curve.epsilon(delta), rel=1e-12)


# ------------------------------------------------------------------- properties

rhos = st.floats(min_value=1e-12, max_value=1e3)
deltas = st.floats(min_value=1e-300, max_value=0.5)


@given(rhos, deltas)
def test_no_nan_or_overflow_and_ordering(rho, delta):
    cks = cks_epsilon(rho, delta)
    gdp = gaussian_epsilon(math.sqrt(2 * rho), delta)
    bs = bun_steinke_epsilon(rho, delta)
    for value in (cks, gdp, bs):
        assert math.isfinite(value) and value >= 0
    # BS16 >= CKS >= exact GDP (the tolerance absorbs rounding at eps near 0).
    assert bs >= cks * (1 - 1e-12) - 1e-15
    assert cks >= gdp * (1 - 1e-12) - 1e-15


@given(rhos, deltas, st.floats(min_value=1.0001, max_value=10.0))
def test_epsilon_increases_in_rho(rho, delta, factor):
    assert cks_epsilon(rho * factor, delta) >= cks_epsilon(rho, delta)
    mu = math.sqrt(2 * rho)
    assert gaussian_epsilon(mu * factor, delta) >= gaussian_epsilon(mu, delta)


@given(rhos, deltas, st.floats(min_value=1.0001, max_value=1e6))
def test_epsilon_decreases_in_delta(rho, delta, factor):
    bigger = min(0.5, delta * factor)
    assert cks_epsilon(rho, bigger) <= cks_epsilon(rho, delta)
    mu = math.sqrt(2 * rho)
    assert gaussian_epsilon(mu, bigger) <= gaussian_epsilon(mu, delta)


def test_epsilon_vanishes_as_rho_vanishes():
    values = [cks_epsilon(r, 1e-5) for r in np.logspace(-2, -12, 6)]
    assert all(a >= b for a, b in itertools.pairwise(values))
    # At rho = 1e-12 even delta(eps = 0) (a total variation of order sqrt(rho)) is below
    # 1e-5, so epsilon is exactly 0.
    assert values[-1] == 0.0 and cks_delta(1e-12, 0.0) <= 1e-5


@given(
    st.floats(min_value=1e-3, max_value=200.0),
    st.floats(min_value=1e-300, max_value=0.5),
)
def test_inverse_maps_round_trip(eps, delta):
    assert cks_epsilon(cks_rho(eps, delta), delta) == pytest.approx(eps, rel=1e-9)
    assert gaussian_epsilon(gaussian_mu(eps, delta), delta) == pytest.approx(eps, rel=1e-9)
    rho_bs = bun_steinke_rho(eps, delta)
    assert bun_steinke_epsilon(rho_bs, delta) == pytest.approx(eps, rel=1e-9)


@pytest.mark.parametrize(
    "call",
    [
        lambda: cks_epsilon(0.5, 0.0),
        lambda: cks_epsilon(0.5, 1.0),
        lambda: cks_epsilon(0.5, float("nan")),
        lambda: cks_epsilon(-1.0, 1e-5),
        lambda: cks_rho(0.0, 1e-5),
        lambda: gaussian_epsilon(float("inf"), 1e-5),
        lambda: zcdp_to_approx_dp(0.5, 1e-5, method="rdp"),
    ],
)
def test_bad_conversion_inputs_raise_value_error(call):
    with pytest.raises(ValueError):
        call()


def test_delta_zero_has_a_specific_message():
    with pytest.raises(ValueError, match="cannot give delta = 0"):
        cks_epsilon(0.5, 0)


# ------------------------------------------------------------------- huge rho
# A public rho can be any finite float, and a fit charged at it must still print its
# statement. Before, cks_epsilon raised ValueError (a bracket that did not change sign) for
# rho from about 5e69 on, depending on rounding, and the exact Gaussian epsilon lost 8 digits
# from rho ~ 1e18 on (1.5e-8 relative, below the truth).

HUGE = [float(r) for r in np.geomspace(1e60, 1e308, 61)] + [1.7976931348623157e308]


@pytest.mark.parametrize("delta", [1e-300, 1e-5, 0.5])
def test_cks_epsilon_is_finite_and_rho_to_float_precision_for_huge_rho(delta):
    # CKS 2020, Prop. 12: eps = rho + 2 sqrt(rho L) - O(log rho), so for rho >= 1e60 the
    # excess over rho is below 1e-28 of it: eps rounds to rho (never below the zCDP claim's
    # own rho by more than rounding).
    for rho in HUGE:
        eps = cks_epsilon(rho, delta)
        assert math.isfinite(eps) and eps == pytest.approx(rho, rel=4e-16), rho
        assert eps >= rho * (1 - 2**-52), rho


@pytest.mark.parametrize("delta", [1e-300, 1e-5, 0.4])
def test_exact_gaussian_epsilon_for_large_mu_matches_its_asymptote(delta):
    # For mu >= 1e9 the exact curve's second term, e^eps Phi(-eps/mu - mu/2), is below
    # phi(t) / mu of the first, so eps = mu^2/2 + mu t with Phi(-t) = delta to a relative
    # 1e-9 in t, i.e. 1e-18 in eps: the reference below is exact to float precision.
    from statistics import NormalDist

    t = -NormalDist().inv_cdf(delta)
    for rho in [1e18, 1e20, 1e24, 1e32, 1e70, 1e150, 1e300, 1e307]:
        mu = math.sqrt(2.0) * math.sqrt(rho)
        want = mu * (mu / 2.0 + t)
        assert gaussian_epsilon(mu, delta) == pytest.approx(want, rel=1e-14), rho
    assert gaussian_epsilon(math.sqrt(2.0) * math.sqrt(1.7976931348623157e308), delta) > 1e308


def test_a_huge_rho_ledger_prints_its_statement():
    from dpfit.privacy import GaussianEntry, PrivacyLedger

    for rho in (1e70, 9.999999999999999e69, 1e300, 8e307):
        ledger = PrivacyLedger()
        ledger.charge(GaussianEntry(label="x", sensitivity=1.0, noise_std=math.sqrt(0.5 / rho)))
        text = ledger.statement()
        assert f"Implies ({ledger.epsilon(1e-5):.4g}, 1e-05)-DP" in text
        assert ledger.gaussian_epsilon(1e-5) == pytest.approx(ledger.rho, rel=1e-15)
