"""The private GLM (algorithms/glm.py): its plan, calibration, record/replay, bad inputs and fit."""

import math

import numpy as np
import pytest
import statsmodels.api as sm

from dpfit import BudgetExceededError
from dpfit.algorithms.glm import dp_glm, plan_glm
from dpfit.algorithms.glm_family import get_family
from dpfit.inference.population_glm import glm_doubts, glm_population
from dpfit.mechanisms import recording, replaying
from dpfit.privacy import Budget, PrivacyLedger, Query, query_sensitivity
from dpfit.privacy.budget import exact_units

pytestmark = pytest.mark.filterwarnings("ignore::dpfit.InsecureRandomnessWarning")


def _logit_data(n, seed=0, beta=(-0.5, 1.0, -0.5, 0.25)):
    gen = np.random.default_rng(seed)  # synthetic data, not privacy noise
    D = np.column_stack([np.ones(n), gen.uniform(-1, 1, (n, len(beta) - 1))])
    y = (gen.uniform(size=n) < 1 / (1 + np.exp(-D @ np.asarray(beta)))).astype(float)
    return D, y


def _poisson_data(n, seed=0, beta=(0.5, 0.6, -0.4, 0.2), K=30):
    gen = np.random.default_rng(seed)
    D = np.column_stack([np.ones(n), gen.uniform(-1, 1, (n, len(beta) - 1))])
    exposure = gen.uniform(0.5, 2.0, n)
    y = np.minimum(gen.poisson(exposure * np.exp(D @ np.asarray(beta))), K).astype(float)
    return D, y, np.log(exposure)


D, Y = _logit_data(600)


@pytest.mark.parametrize(
    "family, link, K, margins",
    [("binomial", "logit", None, True), ("binomial", "probit", None, False),
     ("poisson", "log", 30.0, False)],
)  # fmt: skip
def test_the_ledger_holds_the_plan_and_spends_at_most_rho(family, link, K, margins):
    fam = get_family(family, link)
    plan = plan_glm(fam, n=600, k=4, rho=0.3, count_bound=K, margins=margins)
    assert sum(exact_units(r.rho) for r in plan.releases) <= exact_units(0.3)
    y = Y * (3 if family == "poisson" else 1)
    with recording() as rec:
        traj = dp_glm(D, y, rho=0.3, family=family, link=link, count_bound=K, margins=margins,
                      rng=1)  # fmt: skip
    (composed,) = traj.ledger.entries  # the plan, charged as one entry before any draw
    assert composed.label == "dp_glm" and composed.releases() == traj.ledger.releases
    labels = [e.label for e in traj.ledger.releases]
    assert labels == [r.label for r in plan.releases]
    assert traj.rho <= 0.3 and traj.rho == pytest.approx(0.3, rel=1e-12)
    for entry, planned in zip(traj.ledger.releases, plan.releases, strict=True):
        assert entry.rho <= planned.rho * (1 + 1e-15)
        if planned.sensitivity is not None:  # bounds known before the data: as planned
            assert (entry.sensitivity, entry.noise_std) == (planned.sensitivity, planned.noise_std)
    xtx = traj.ledger.releases[0]
    assert xtx.sensitivity == query_sensitivity(Query.SECOND_MOMENT, bound=2.0, n=600)
    gradient = next(e for e in traj.ledger.releases if e.label == "glm/gradient")
    assert gradient.count == 200 and len(rec) == len(plan.releases) - 1 + 200


def test_the_logit_gradient_is_never_clipped_and_bounds_every_release():
    """|y - mu| <= 1 and ||d|| <= sqrt(k): the logit clip is exact, so every released mean
    gradient is within clip (a mean of vectors of norm <= clip)."""
    with recording() as rec:
        traj = dp_glm(D, Y, rho=0.5, rng=2)
    assert traj.config["clip"] == math.sqrt(4)
    for release in rec.releases:
        if release.entry.label == "glm/gradient":
            assert np.linalg.norm(release.value) <= traj.config["clip"]


def _shares(rec, rep):
    pairs = zip(rec.releases, rep.releases, strict=True)
    return [np.linalg.norm(a.value - b.value) / a.entry.sensitivity for a, b in pairs]


@pytest.mark.parametrize("family", ["binomial", "poisson"])
def test_replay_on_a_worst_case_neighbour(family):
    """One record replaced by an extreme one: the same releases, each query moved by at
    most its declared sensitivity (and some by a sizeable share of it), every output equal."""
    if family == "poisson":
        X1, y1, o1 = _poisson_data(500)
    else:
        (X1, y1), o1 = _logit_data(500), None
    X2, y2 = X1.copy(), y1.copy()
    X2[0, 1:] = [1.0, -1.0, 1.0]
    y2[0] = 1e6 if family == "poisson" else 0.0 if y1[0] else 1.0
    o2 = None if o1 is None else o1.copy()
    if o2 is not None:
        o2[0] = 40.0
    kwargs = {"rho": 0.4, "family": family, "count_bound": 30.0 if family == "poisson" else None}
    with recording() as rec:
        first = dp_glm(X1, y1, offset=o1, rng=5, **kwargs)
    with replaying(rec) as rep:
        second = dp_glm(X2, y2, offset=o2, rng=5, **kwargs)
    assert [r.entry for r in rec.releases] == [r.entry for r in rep.releases]
    shares = _shares(rec, rep)
    assert max(shares) <= 1 + 1e-12
    assert max(shares) > 0.3
    assert np.array_equal(first.iterates, second.iterates)
    assert np.array_equal(first.estimate, second.estimate)
    for key, value in first.releases.items():
        assert np.array_equal(value, second.releases[key]), key


def test_add_remove_divides_by_the_public_n():
    X2, y2 = np.vstack([D, np.ones((1, 4))]), np.append(Y, 1.0)
    kwargs = {"rho": 0.4, "relation": "add-remove", "n_public": 600}
    with recording() as rec:
        dp_glm(D, Y, rng=6, **kwargs)
    with replaying(rec) as rep:
        dp_glm(X2, y2, rng=6, **kwargs)
    assert max(_shares(rec, rep)) <= 1 + 1e-12
    assert rec.releases[0].entry.sensitivity == query_sensitivity(
        Query.SECOND_MOMENT, bound=2.0, n=600, relation="add-remove"
    )


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"family": "gamma"}, ValueError, "family"),
        ({"link": "log"}, ValueError, "link"),
        ({"family": "poisson"}, TypeError, "y_bounds"),
        ({"family": "poisson", "count_bound": -1.0}, ValueError, "count bound"),
        ({"steps": 0}, ValueError, "steps"),
        ({"steps": 20, "burn_in": 20}, ValueError, "too few"),
        ({"rho": float("nan")}, ValueError, "rho"),
        ({"rho": True}, TypeError, "rho"),
        ({"margins": True, "family": "poisson", "count_bound": 5.0}, ValueError, "margins"),
        ({"offset": np.zeros(3)}, ValueError, "offset"),
        ({"relation": "add-remove"}, ValueError, "n_public"),
        ({"family": "poisson", "count_bound": 1e300}, ValueError, "y_bounds"),
    ],
)
def test_bad_inputs_raise_before_any_release(kwargs, exc, match):
    params = {"rho": 0.5, "rng": 0, **kwargs}
    with recording() as rec, pytest.raises(exc, match=match):
        dp_glm(D, Y, **params)
    assert len(rec) == 0


def test_a_too_small_budget_fails_before_any_draw():
    ledger = PrivacyLedger(budget=Budget(rho=0.1))
    with recording() as rec, pytest.raises(BudgetExceededError, match="dp_glm"):
        dp_glm(D, Y, rho=0.2, ledger=ledger, rng=0)
    assert len(rec) == 0 and ledger.budget.spent == 0.0


def test_seeded_fits_are_reproducible():
    a, b = (dp_glm(D, Y, rho=0.5, rng=3) for _ in range(2))
    assert np.array_equal(a.iterates, b.iterates) and np.array_equal(a.estimate, b.estimate)
    assert not np.array_equal(a.estimate, dp_glm(D, Y, rho=0.5, rng=4).estimate)


def test_str_of_the_plan_lists_every_release():
    text = str(plan_glm(get_family("poisson"), n=1000, k=3, rho=1.0, count_bound=10.0))
    for name in ("xtx", "whiten", "mean", "scale", "gradient", "bread", "meat"):
        assert f"\n{name} " in text
    assert "run time" in text  # the Poisson clips follow the released mean and scale


@pytest.mark.parametrize("family", ["logit", "poisson"])
def test_the_fit_is_the_mle_up_to_its_noise_and_the_interval_is_the_sandwich(family):
    """At n = 20000, rho = 2 the released estimate is within 4 of its own privacy s.d. (plus
    2e-3, the first-order curvature shift's error) of statsmodels' MLE, and the population
    standard errors are within 15% of statsmodels' HC0 ones (the privacy part adds a few
    percent; the bread's and meat's noise a few more)."""
    if family == "poisson":
        X, y, o = _poisson_data(20000, seed=1)
        traj = dp_glm(X, y, rho=2.0, family="poisson", count_bound=30.0, offset=o, rng=7)
        ref = sm.GLM(y, X, family=sm.families.Poisson(), offset=o).fit(cov_type="HC0")
    else:
        X, y = _logit_data(20000, seed=1)
        traj = dp_glm(X, y, rho=2.0, margins=True, rng=7)
        ref = sm.Logit(y, X).fit(disp=0, cov_type="HC0")
    inference = glm_population(traj)
    privacy_se = np.sqrt(np.diag(inference.population.parts["privacy"]))
    assert np.all(np.abs(traj.estimate - ref.params) < 4 * privacy_se + 2e-3)
    ratio = inference.population.bse / ref.bse
    assert np.all((ratio > 0.95) & (ratio < 1.15)), ratio
    assert glm_doubts(inference, traj) == []


def test_separated_data_warn():
    """A feature that separates the outcomes: no MLE exists, and the releases say so."""
    X, _ = _logit_data(2000, seed=2)
    y = (X[:, 1] > 0).astype(float)
    traj = dp_glm(X, y, rho=1.0, rng=8)
    reasons = " ".join(d.reason for d in glm_doubts(glm_population(traj), traj))
    assert "separated" in reasons


def test_few_events_warn():
    X, y = _logit_data(2000, seed=3, beta=(-5.0, 1.0, -0.5, 0.25))
    traj = dp_glm(X, y, rho=1.0, rng=9)
    reasons = " ".join(d.reason for d in glm_doubts(glm_population(traj), traj))
    assert "per coefficient" in reasons


@pytest.mark.parametrize("family", ["binomial", "poisson"])
def test_noise_far_larger_than_the_data_never_breaks_a_release(family):
    """One record at rho = 5: the noise dwarfs everything, yet the start stays inside the
    link's range and the clamped iterates keep every query finite, so the charged fit ends
    (it used to raise 'the query value is not finite' after the charge)."""
    X, y = np.array([[1.0, 0.5, 0.2, -0.3]]), np.array([1.0])
    traj = dp_glm(X, y, rho=5.0, family=family, count_bound=5.0 if family == "poisson" else None,
                  rng=0)  # fmt: skip
    assert np.isfinite(traj.iterates).all() and np.isfinite(traj.estimate).all()
    assert np.abs(traj.iterates).max() <= 1e4


def test_a_long_tail_of_counts_is_caught_by_the_released_gap():
    """2% of the counts at K = 20 where the mean is about 0.4: the clip (a few residual
    scales) binds on them, and the released gap to the maximum-likelihood fit says so; the
    same design without the tail is silent about clipping."""
    gen = np.random.default_rng(4)
    n = 20000
    X = np.column_stack([np.ones(n), gen.uniform(-1, 1, (n, 2))])
    y = gen.poisson(np.exp(-1.0 + 0.5 * X[:, 1])).astype(float)
    tail = y.copy()
    tail[gen.uniform(size=n) < 0.02] = 20.0

    def reasons(counts):
        traj = dp_glm(X, counts, rho=1.0, family="poisson", count_bound=20.0, rng=10)
        assert "glm/gap" in [e.label for e in traj.ledger.releases]
        return " ".join(d.reason for d in glm_doubts(glm_population(traj), traj))

    assert "Clipping moves the estimate" in reasons(tail)
    assert "Clipping" not in reasons(y)
