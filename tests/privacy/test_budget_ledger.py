"""Budget atomicity, exact shares, ledger composition and the privacy statement."""

import copy
import math
import pickle
from fractions import Fraction

import numpy as np
import pytest

from dpfit import BudgetExceededError
from dpfit.mechanisms import gaussian, make_noise_source, recording
from dpfit.privacy import (
    Budget,
    GaussianEntry,
    PrivacyLedger,
    Relation,
    format_rho,
    mean_sensitivity,
    parse_relation,
    portions,
    split,
    split_rest,
    sum_sensitivity,
)
from dpfit.privacy.budget import exact_units, units_to_float


def test_spend_and_remaining():
    b = Budget(rho=1.0)
    b.spend(0.25)
    b.spend(0.5)
    assert b.spent == 0.75 and b.remaining == 0.25


def test_overspend_is_atomic():
    b = Budget(rho=1.0)
    b.spend(0.6)
    with pytest.raises(BudgetExceededError, match="exceeds the remaining budget"):
        b.spend(0.5)
    assert b.spent == 0.6
    assert isinstance(BudgetExceededError("x"), ValueError)


def test_what_remains_can_be_spent_exactly():
    # remaining used to be total - spent in floats, an ulp above what is exactly left in
    # about half of these sequences, so spend(remaining) was refused
    gen = np.random.default_rng(0)  # the amounts spent, not privacy noise
    for _ in range(300):
        b = Budget(rho=1.0)
        for amount in gen.uniform(0.001, 0.1, 5):
            b.spend(float(amount))
        left = b.remaining
        assert b.can_afford(left)
        b.spend(left)
        assert 0.0 <= b.remaining < 1e-15
        assert exact_units(b.spent) <= exact_units(1.0)


def test_the_limit_is_exact_and_shares_come_from_split():
    # 0.1 + 0.1 + 0.1 > 0.3 exactly (reliability pitfall P10): the third charge is refused;
    # split(0.3, 3) gives shares whose exact sum is at most 0.3, and all three fit.
    b = Budget(rho=0.3)
    b.spend(0.1)
    b.spend(0.1)
    with pytest.raises(BudgetExceededError):
        b.spend(0.1)
    b = Budget(rho=0.3)
    for share in split(0.3, 3):
        b.spend(share)
    assert 3 * Fraction(split(0.3, 3)[0]) <= Fraction(0.3)


def test_a_charge_just_over_the_total_is_refused_and_never_printed_as_round():
    # A relative tolerance of 1e-12 on the total let rho = 1 + 9e-13 through, and the
    # statement then read "1-zCDP".
    with pytest.raises(BudgetExceededError, match=r"rho=1\.0000000000009 exceeds"):
        Budget(rho=1.0).spend(1 + 9e-13)
    Budget(rho=1.0).spend(1.0)
    ledger = PrivacyLedger()  # no budget: the statement must still show the excess
    ledger.charge(GaussianEntry(label="q", sensitivity=math.sqrt(2 * (1 + 9e-13)), noise_std=1.0))
    assert ledger.rho > 1.0
    assert ledger.statement().startswith(f"Privacy: {ledger.rho!r}-zCDP")
    assert format_rho(1 + 9e-13) == "1.0000000000009" and format_rho(0.25) == "0.25"
    assert format_rho(1 - 1e-13) == "1"  # rounding up overstates the loss: kept short
    assert format_rho(1.0000001) == "1"  # beyond 1e-9: ordinary 6-digit rounding


@pytest.mark.parametrize(
    "rho, parts",
    [(0.3, 3), (1.0, 7), (0.9, 39), (1e-300, 3), (5e-324, 1), (0.7, [0.98, 0.02]),
     (1.0, [1, 2, 3]), (0.1, [1e-3, 0.5, 0.499]), (3.7, [0.25, 0.25, 0.25, 0.25])],
)  # fmt: skip
def test_split_shares_never_sum_above_the_whole(rho, parts):
    shares = split(rho, parts)
    assert all(s > 0 for s in shares) and sum(map(Fraction, shares)) <= Fraction(rho)
    k = parts if isinstance(parts, int) else len(parts)
    weights = [1.0] * k if isinstance(parts, int) else parts
    for s, w in zip(shares, weights, strict=True):  # each share within a few ulps of its part
        assert s == pytest.approx(rho * w / math.fsum(weights), rel=1e-15, abs=5e-324)
    if not isinstance(parts, int):
        assert shares[:-1] == [rho * (w / math.fsum(weights)) for w in weights[:-1]]


def test_split_refuses_what_cannot_be_shared():
    with pytest.raises(ValueError, match="too small"):
        split(5e-324, 2)
    with pytest.raises(ValueError, match="weight"):
        split(1.0, [1.0, 0.0])
    with pytest.raises(TypeError, match="k"):
        split(1.0, True)


@pytest.mark.parametrize(
    "rho, fractions",
    [(0.3, {"a": 0.1, "b": 0.1}), (1.0, {"a": 0.25}), (0.7, {"a": 0.02, "b": 0.08, "c": 0.05}),
     (1e-300, {"a": 1 / 3, "b": 1 / 3}), (2.9, {})],
)  # fmt: skip
def test_split_rest_names_plain_products_and_leaves_the_rest_within_rho(rho, fractions):
    shares = split_rest(rho, fractions, rest="rest")
    assert list(shares) == [*fractions, "rest"]
    assert all(shares[name] == rho * f for name, f in fractions.items())  # plain products
    assert sum(map(Fraction, shares.values())) <= Fraction(rho)
    # the rest is the largest float that keeps the exact sum within rho
    above = math.nextafter(shares["rest"], math.inf)
    named = sum(Fraction(shares[name]) for name in fractions)
    assert named + Fraction(above) > Fraction(rho) or above > rho - math.fsum(
        shares[name] for name in fractions
    )


def test_split_rest_refuses_fractions_that_leave_nothing():
    with pytest.raises(ValueError, match="less than 1"):
        split_rest(1.0, {"a": 0.5, "b": 0.5}, rest="c")
    with pytest.raises(ValueError, match=">= 0"):
        split_rest(1.0, {"a": -0.1}, rest="c")
    with pytest.raises(ValueError, match="also a named part"):
        split_rest(1.0, {"a": 0.1}, rest="a")


def test_portions_multiply_before_dividing():
    # s * 2 / 10 is s / 5 bit for bit, and s * 3 / 10 the float a reader writes by hand;
    # a power-of-two total divides exactly.
    for s in (0.25, 0.2, 0.1, 1 / 3, 0.123456789):
        parts = portions(s, {"xtx": 2, "whiten": 2, "hessian": 3, "omega": 3})
        assert parts == {"xtx": s / 5.0, "whiten": s / 5.0, "hessian": s * 3.0 / 10.0,
                         "omega": s * 3.0 / 10.0}  # fmt: skip
        eighths = portions(s, {"scale": 2, "clipped_y": 1, "omega": 13})
        assert eighths == {"scale": s / 8, "clipped_y": s / 16, "omega": s * (13 / 16)}
    with pytest.raises(ValueError, match="weight"):
        portions(0.2, {"a": 0.0})
    with pytest.raises(ValueError, match="at least one"):
        portions(0.2, {})


@pytest.mark.parametrize("k", [1, 3, 7, 10, 1000])
def test_split_gives_exact_shares(k):
    b = Budget(rho=1.0)
    b.spend(0.3)
    shares = b.split(k)
    assert len(shares) == k
    assert math.fsum(s.total for s in shares) <= 0.7
    assert math.fsum(s.total for s in shares) == pytest.approx(0.7, rel=1e-12)
    assert len({s.total for s in shares}) == 1
    assert b.remaining == pytest.approx(0.0, abs=1e-15)
    for s in shares:  # each child can spend its whole share
        s.spend(s.total)


def test_budget_cannot_be_copied_or_pickled():
    b = Budget(rho=1.0)
    for op in (copy.copy, copy.deepcopy, pickle.dumps):
        with pytest.raises(TypeError, match="Budget"):
            op(b)


@pytest.mark.parametrize(
    "bad, exc",
    [
        (None, TypeError),
        (0, ValueError),
        (-1, ValueError),
        (float("nan"), ValueError),
        (float("inf"), ValueError),
        (True, TypeError),
        ("1", TypeError),
    ],
)
def test_budget_rejects_bad_rho(bad, exc):
    with pytest.raises(exc, match="rho"):
        Budget(rho=bad)


def test_entry_derives_rho_and_validates_at_construction():
    e = GaussianEntry(label="q", sensitivity=2.0, noise_std=4.0, count=3)
    assert e.rho == 3 * 4.0 / (2 * 16.0)
    assert e.noise_multiplier == 2.0
    with pytest.raises(ValueError, match="noise_std"):
        GaussianEntry(label="q", sensitivity=1.0, noise_std=0.0)
    with pytest.raises(TypeError, match="count"):
        GaussianEntry(label="q", sensitivity=1.0, noise_std=1.0, count=True)
    with pytest.raises(ValueError, match="noise scale not finite"):
        GaussianEntry(label="q", sensitivity=1e200, noise_std=1e-200)


def test_per_step_entries_equal_one_counted_entry():
    # Two routes, one answer: T entries vs one entry with count = T.
    steps, sens, std = 100, 0.02, 0.2
    a = PrivacyLedger()
    for _ in range(steps):
        a.charge(GaussianEntry(label="g", sensitivity=sens, noise_std=std))
    b = PrivacyLedger()
    b.charge(GaussianEntry(label="g", sensitivity=sens, noise_std=std, count=steps))
    assert a.rho == pytest.approx(b.rho, rel=1e-15)
    assert a.epsilon(1e-5) == pytest.approx(b.epsilon(1e-5), rel=1e-12)


def test_ledger_refuses_mixed_relations():
    ledger = PrivacyLedger(relation="add-remove")
    with pytest.raises(ValueError, match="relation"):
        ledger.charge(GaussianEntry(label="g", sensitivity=1.0, noise_std=1.0))


def test_ledger_with_budget_is_atomic_and_draws_nothing():
    budget = Budget(rho=0.5)
    ledger = PrivacyLedger(budget=budget)
    source = make_noise_source(1)
    state = source.generator.bit_generator.state
    with recording() as rec, pytest.raises(BudgetExceededError):
        gaussian(np.zeros(4), sensitivity=1.0, noise_std=0.5, ledger=ledger, rng=source, label="g")
    assert len(rec) == 0 and len(ledger) == 0 and budget.spent == 0.0
    assert source.generator.bit_generator.state == state  # no noise drawn


def test_epsilon_and_gaussian_epsilon_and_statement():
    ledger = PrivacyLedger()
    ledger.charge(GaussianEntry(label="dp_gd/gradient", sensitivity=0.02, noise_std=0.2, count=100))
    assert ledger.rho == pytest.approx(0.5, rel=1e-14)
    assert ledger.epsilon(1e-5) == pytest.approx(4.7283869849, rel=1e-9)
    assert ledger.gaussian_epsilon(1e-5) == pytest.approx(4.3771780957, rel=1e-9)
    text = ledger.statement(1e-5)
    for fragment in (
        "0.5-zCDP",
        "replace-one",
        "dp_gd/gradient",
        "100 Gaussian",
        "4.728",
        "Canonne",
        "4.377",
    ):
        assert fragment in text
    sub = PrivacyLedger()
    sub.charge(GaussianEntry(label="s", sensitivity=1.0, noise_std=1.0, subsampled=True))
    assert sub.gaussian_epsilon(1e-5) is None
    assert "no amplification" in sub.statement()
    assert PrivacyLedger().epsilon(1e-5) == 0.0


def test_relations_and_sensitivities():
    assert parse_relation("replace-one") is Relation.REPLACE_ONE
    assert parse_relation(Relation.ADD_REMOVE) is Relation.ADD_REMOVE
    with pytest.raises(ValueError, match=r"\['replace-one', 'add-remove'\]"):
        parse_relation("swap")
    assert sum_sensitivity(1.5) == 3.0
    assert sum_sensitivity(1.5, "add-remove") == 1.5
    # Exact value plus the float64 rounding relaxation 2 gamma_{n-1} n C + 2 u n C.
    u = 2.0**-53
    excess = 2 * (199 * u / (1 - 199 * u)) * 200 + 2 * u * 200
    assert mean_sensitivity(1.0, 200) == pytest.approx((2.0 + excess) / 200, rel=1e-15)
    assert mean_sensitivity(1.0, 200, Relation.ADD_REMOVE) == pytest.approx(
        (1.0 + excess) / 200, rel=1e-15
    )
    assert mean_sensitivity(1.0, 200) > 0.01
    assert sum_sensitivity(1.0, n=10**6) == pytest.approx(2.0 * (1 + 1.1102e-4), rel=1e-6)
    with pytest.raises(TypeError, match="n"):
        mean_sensitivity(1.0, 200.0)


def _fraction_reference(total: float, charges: list[float]) -> list[bool]:
    """The budget's rule in exact rational arithmetic: spend while the sum <= total."""
    limit = Fraction(total)
    spent, out = Fraction(0), []
    for c in charges:
        ok = spent + Fraction(c) <= limit
        spent += Fraction(c) if ok else 0
        out.append(ok)
    return out


def test_float_check_agrees_with_exact_arithmetic_at_the_boundary():
    at = 1.0  # the limit is exactly the total
    above = math.nextafter(at, math.inf)
    assert Budget(rho=1.0).can_afford(at) and not Budget(rho=1.0).can_afford(above)
    b = Budget(rho=1.0)
    b.spend(0.5)
    assert b.can_afford(at - 0.5) and not b.can_afford(math.nextafter(above - 0.5, math.inf))
    gen = np.random.default_rng(3)
    for _ in range(200):  # random charge sequences that end near the total
        total = float(gen.uniform(0.1, 10.0))
        k = int(gen.integers(1, 40))
        charges = list(gen.dirichlet(np.ones(k)) * total * (1 + gen.normal(0, 1e-12)))
        charges += [float(gen.uniform(0, 1e-11)) * total]
        b = Budget(rho=total)
        got = [b.can_afford(c) and (b.spend(c) is None) for c in charges]
        assert got == _fraction_reference(total, charges)


def test_exact_units_match_fraction_sums():
    gen = np.random.default_rng(0)
    values = [*np.exp(gen.uniform(-700, 700, 500)).tolist(), 5e-324, 2.2250738585072014e-308]
    assert units_to_float(sum(map(exact_units, values))) == float(sum(map(Fraction, values)))


def test_counted_spend_is_exactly_repeated_spends():
    a, b = Budget(rho=1.0), Budget(rho=1.0)
    for _ in range(700):
        a.spend(1e-3 / 7)
    b.spend(1e-3 / 7, count=700)
    assert a.spent == b.spent and a.remaining == b.remaining
    with pytest.raises(BudgetExceededError):
        b.spend(0.5, count=2)
    assert b.spent == a.spent
    with pytest.raises(TypeError, match="count"):
        b.spend(0.1, count=True)


def test_one_counted_entry_is_exactly_the_per_release_entries():
    for steps, sens, std in [(100, 0.02, 0.2), (777, 3e-4, 0.011), (3, 1.0, 3.0)]:
        a = PrivacyLedger(budget=Budget(rho=10.0))
        for _ in range(steps):
            a.charge(GaussianEntry(label="g", sensitivity=sens, noise_std=std))
        b = PrivacyLedger(budget=Budget(rho=10.0))
        b.charge(GaussianEntry(label="g", sensitivity=sens, noise_std=std, count=steps))
        assert a.rho == b.rho and a.budget.spent == b.budget.spent
        assert a.statement(1e-6) == b.statement(1e-6)
        assert b.entries[0].rho == b.rho


def test_entry_validation_fast_path_and_slow_path_agree():
    fast = GaussianEntry(label="q", sensitivity=2.0, noise_std=4.0)
    slow = GaussianEntry(
        label="q", sensitivity=np.float32(2.0), noise_std=4, relation="replace-one"
    )
    assert fast == slow and type(slow.sensitivity) is float and type(slow.noise_std) is float
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="sensitivity"):
            GaussianEntry(label="q", sensitivity=bad, noise_std=1.0)
    with pytest.raises(TypeError, match="label"):
        GaussianEntry(label="", sensitivity=1.0, noise_std=1.0)
    with pytest.raises(ValueError, match="noise scale not finite"):
        GaussianEntry(label="q", sensitivity=1e150, noise_std=1.0, count=10**10)
