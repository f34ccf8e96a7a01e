"""Release plans of dpfit.ols: the dry run shows what a fit charges, and a fit charges its plan
as one composed ledger entry."""

import numpy as np
import pandas as pd
import pytest

import dpfit
from dpfit.mechanisms.plan import PlannedRounds, ReleasePlan
from dpfit.privacy import GaussianEntry
from dpfit.privacy.entries import ComposedEntry
from dpfit.testing import recording

N = 2000
BOUNDS = {"x": (0, 10), "w": (-1, 1)}
Y_BOUNDS = (-8, 16)


@pytest.fixture(scope="module")
def frame():
    gen = np.random.default_rng(0)  # synthetic data, not privacy noise
    df = pd.DataFrame({"x": gen.uniform(0, 10, N), "w": gen.uniform(-1, 1, N)})
    df["y"] = 1.0 + 0.5 * df.x - 0.7 * df.w + gen.normal(0, 1, N)
    return df


#: Every planned path of dpfit.ols: the preconditioned default (private clip for both
#: targets, a given clip, another moment share, no bounds check, add/remove), plain DP-GD
#: with bounds (every interval construction) and without, AdaSSP with and without its
#: population interval.
CASES = {
    "default": {"bounds": BOUNDS, "y_bounds": Y_BOUNDS},
    "huber": {"bounds": BOUNDS, "y_bounds": Y_BOUNDS, "target": "huber"},
    "given-clip": {"bounds": BOUNDS, "y_bounds": Y_BOUNDS, "clip": 2.0},
    "moment-share": {"bounds": BOUNDS, "y_bounds": Y_BOUNDS, "moment_share": 0.4},
    "no-check": {"bounds": BOUNDS, "y_bounds": Y_BOUNDS, "bounds_check": 0},
    "add-remove": {"bounds": BOUNDS, "y_bounds": Y_BOUNDS, "relation": "add-remove",
                   "n_public": N},
    "plain": {"bounds": BOUNDS, "y_bounds": Y_BOUNDS, "precondition": False},
    "plain-runs": {"bounds": BOUNDS, "y_bounds": Y_BOUNDS, "precondition": False,
                   "interval": "independent-runs"},
    "plain-none": {"bounds": BOUNDS, "y_bounds": Y_BOUNDS, "precondition": False,
                   "interval": None},
    "no-bounds": {"clip": 5.0, "step_size": 0.01},
    "y-bounds-only": {"clip": 5.0, "step_size": 0.01, "y_bounds": Y_BOUNDS},
    "adassp": {"bounds": BOUNDS, "y_bounds": Y_BOUNDS, "method": "adassp"},
    "adassp-point": {"bounds": BOUNDS, "y_bounds": Y_BOUNDS, "method": "adassp",
                     "interval": None},
    "adassp-add-remove": {"bounds": BOUNDS, "y_bounds": Y_BOUNDS, "method": "adassp",
                          "relation": "add-remove", "n_public": N, "moment_share": 0.3},
}  # fmt: skip


def _fit(frame, dry_run=False, **kw):
    kw = {"rho": 0.8, **kw}
    return dpfit.ols("y ~ x + w", frame, random_state=3, dry_run=dry_run, **kw)


@pytest.mark.filterwarnings("ignore::dpfit.exceptions.CoverageWarning")  # not the subject
@pytest.mark.parametrize("case", list(CASES))
def test_the_dry_run_shows_what_the_fit_charges(frame, case):
    plan = _fit(frame, dry_run=True, **CASES[case])
    assert isinstance(plan, ReleasePlan) and plan.label == "dpfit.ols" and plan.rho == 0.8
    result = _fit(frame, **CASES[case])
    (entry,) = result.ledger.entries  # the whole fit: one entry, charged before any draw
    assert isinstance(entry, ComposedEntry) and entry.label == "dpfit.ols"
    assert len(entry.components) == len(plan.releases)
    for drawn, planned in zip(entry.components, plan.releases, strict=True):
        assert isinstance(drawn, GaussianEntry)  # every planned release was drawn
        assert (drawn.label, drawn.count) == (planned.label, planned.count)
        assert drawn.rho <= planned.rho
        if planned.noise_std is not None:  # known before the data: charged as planned
            assert (drawn.sensitivity, drawn.noise_std) == (planned.sensitivity,
                                                            planned.noise_std)  # fmt: skip
            assert drawn.rho == planned.entry(plan.relation).rho
        else:  # set at run time from earlier releases: its noise spends the share
            assert drawn.rho == pytest.approx(planned.rho, rel=1e-12)
    assert result.ledger.rho <= 0.8 and result.ledger.rho == pytest.approx(0.8, rel=1e-12)
    assert sum(r.rho for r in plan.releases) == pytest.approx(0.8, rel=1e-12)


def test_the_dry_run_reads_no_value_charges_nothing_and_prints_the_plan(frame):
    budget = dpfit.Budget(rho=1.0)
    with recording() as rec:
        plan = _fit(frame, dry_run=True, budget=budget, **CASES["default"])
    assert len(rec) == 0 and budget.spent == 0.0
    text = str(plan)
    for release in plan.releases:
        assert release.name in text
    assert "run time" in text  # the private clip's releases: set from earlier releases
    assert text.splitlines()[0].startswith("Release plan of dpfit.ols: n = 2000")


def test_a_fit_charges_its_plan_before_reading_the_data(frame):
    """The plan is spent from the budget at once: a budget that cannot pay it all refuses
    before the first release is drawn."""
    budget = dpfit.Budget(rho=1.0)
    _fit(frame, budget=budget, **CASES["default"])
    assert budget.remaining < 0.8
    with recording() as rec, pytest.raises(dpfit.BudgetExceededError):
        _fit(frame, budget=budget, **CASES["default"])
    assert len(rec) == 0


@pytest.mark.parametrize("kw", [{}, {"bounds_check": 0}, {"step_size": 0.3, "rho": 2.0}])
def test_the_ambssgd_dry_run_shows_what_the_fit_charges(frame, kw):
    """DP-AMBSSGD's plan is one parallel composition of T blocks (DP-STAT's counts, then the
    clipped gradient, each its own block): the fit charges it, then the bounds check, as one
    entry, each block's releases those planned."""
    fit = {"method": "ambssgd", "bounds": BOUNDS, "y_bounds": Y_BOUNDS, "interval": None,
           "steps": 2, **kw}  # fmt: skip
    rho = fit.pop("rho", 0.8)
    with recording() as rec:
        plan = _fit(frame, dry_run=True, **fit, rho=rho)
    assert len(rec) == 0 and plan.label == "dpfit.ols" and plan.rho == rho
    ledger = _fit(frame, **fit, rho=rho).ledger
    (entry,) = ledger.entries
    assert isinstance(entry, ComposedEntry) and entry.label == "dpfit.ols"
    drawn, *check = entry.components
    blocks, *planned_check = plan.releases
    assert [c.label for c in check] == [c.label for c in planned_check]
    assert (drawn.label, drawn.rho_per_block) == (blocks.label, blocks.rho)
    assert drawn.n_blocks == blocks.count == 2 * fit["steps"]
    stat, gradient = (block[0] for block in blocks.pattern)
    for block, _k in drawn.blocks:
        (release,) = block
        if release.label == stat.label:  # known before the data: charged as planned
            assert (release.sensitivity, release.noise_std) == (stat.sensitivity,
                                                                stat.noise_std)  # fmt: skip
        else:  # its clip is the block's private search: its noise spends the share
            assert release.label == gradient.label
            assert release.rho <= gradient.rho and release.rho == pytest.approx(gradient.rho)
    assert drawn.rho <= blocks.rho and ledger.rho <= rho
    assert "blocks" in str(plan) and "dp_stat" in str(plan)


def test_an_ambssgd_estimator_fit_is_its_plan(frame):
    model = dpfit.DPLinearRegression(rho=0.8, method="ambssgd", bounds=list(BOUNDS.values()),
                                     y_bounds=Y_BOUNDS, interval=None, steps=2, random_state=3)
    model.fit(frame[["x", "w"]].to_numpy(), frame["y"].to_numpy())
    (entry,) = model.privacy_.entries
    assert isinstance(entry, ComposedEntry) and entry.label == "DPLinearRegression"
    assert [part.label for part in entry.components] == ["dp_ambssgd"]


UNIT = {"privacy_unit": "person", "max_rows_per_unit": 2}


@pytest.mark.filterwarnings("ignore::dpfit.exceptions.CoverageWarning")  # not the subject
@pytest.mark.parametrize(
    "call, kw",
    [(dpfit.logit, {}), (dpfit.logit, {"bounds_check": 0}), (dpfit.logit, UNIT),
     (dpfit.probit, {"bounds_check": 0}), (dpfit.logit, {"margins": True}),
     (dpfit.poisson, {"y_bounds": (0, 30)}),
     (dpfit.poisson, {"y_bounds": (0, 30), "bounds_check": 0}),
     (dpfit.poisson, {"y_bounds": (0, 30), **UNIT})],
)  # fmt: skip
def test_the_glm_dry_run_shows_what_the_fit_charges(frame, call, kw):
    """A GLM formula fit, its bounds check included, is one composed entry labelled as its
    dry run, equal to it component by component: a release whose noise is known in advance
    as planned, one set at run time (a Poisson clip) within its planned share."""
    person = np.arange(len(frame)) // 2  # two rows per unit
    data = frame.assign(b=(frame.y > 3.5).astype(int), c=np.round(np.abs(frame.y)), person=person)
    formula = "c ~ x + w" if call is dpfit.poisson else "b ~ x + w"
    fit = {"rho": 1.5, "bounds": BOUNDS, "random_state": 2, **kw}
    with recording() as rec:
        plan = call(formula, data, dry_run=True, **fit)
    assert len(rec) == 0 and plan.label == "dpfit.glm"
    checked = "privacy_unit" not in kw and kw.get("bounds_check") != 0
    assert (plan.releases[-1].label == "bounds-check/outside-counts") is checked
    result = call(formula, data, **fit)
    (entry,) = result.ledger.entries  # no second entry for the bounds check
    assert isinstance(entry, ComposedEntry) and entry.label == plan.label
    planned = plan.composed().components
    assert len(entry.components) == len(planned)
    for drawn, part in zip(entry.components, planned, strict=True):
        if isinstance(part, GaussianEntry):  # noise known before the data
            assert drawn == part
        else:  # a clip set at run time: its release costs at most the share reserved
            assert (drawn.label, drawn.count, drawn.relation) == (part.label, part.count,
                                                                  part.relation)  # fmt: skip
            assert drawn.rho <= part.rho
    assert result.ledger.rho <= fit["rho"]
    assert any(note.startswith("Bounds check:") for note in result.notes) is checked


@pytest.mark.filterwarnings("ignore::dpfit.exceptions.CoverageWarning")  # not the subject
@pytest.mark.parametrize(
    "formula, kw",
    [("y ~ w + [x ~ z]", {}), ("y ~ w + [x ~ z]", {"bounds_check": 0}),
     ("y ~ 0 + w + [x ~ z]", {}), ("y ~ w + [x ~ z]", {"bounds": None, "y_bounds": None})],
)  # fmt: skip
def test_the_iv_dry_run_shows_what_the_fit_charges(iv_frame, formula, kw):
    data = iv_frame(2000)
    fit = {"rho": 2.0, "bounds": {"x": (-8, 11), "w": (-4, 4), "z": (0, 1)},
           "y_bounds": (-10, 14), "random_state": 0, **kw}  # fmt: skip
    with recording() as rec:
        plan = dpfit.iv(formula, data, dry_run=True, **fit)
    assert len(rec) == 0 and plan.label == "dpfit.iv"
    ledger = dpfit.iv(formula, data, **fit).ledger
    (entry,) = ledger.entries  # the fit and its bounds check: one entry, as planned
    assert entry.label == "dpfit.iv" and entry.components == plan.composed().components
    assert ledger.rho <= fit["rho"]


@pytest.mark.filterwarnings("ignore::dpfit.exceptions.CoverageWarning")  # not the subject
@pytest.mark.parametrize(
    "kw", [{}, {"bounds_check": 0}, {"noise_calibration": "paper", "interval": None},
           {"interval": "batched-means", "steps": 60}, {"bounds": None, "y_bounds": None}],
)  # fmt: skip
def test_the_two_stage_iv_dry_run_shows_what_the_fit_charges(iv_frame, kw):
    """DP-2S-GD's plan: the standardisation, then both stages' gradients in turn at every
    step of every run, then the bounds check; the fit charges exactly these, as one entry
    (it charged one entry per release, and the dry run refused the method)."""
    data = iv_frame(1000)
    fit = {"rho": 2.0, "bounds": {"x": (-8, 11), "w": (-4, 4), "z": (0, 1)},
           "y_bounds": (-10, 14), "random_state": 0, "method": "2s-gd", "steps": 10, **kw}
    with recording() as rec:
        plan = dpfit.iv("y ~ w + [x ~ z]", data, dry_run=True, **fit)
    assert len(rec) == 0 and plan.label == "dpfit.iv"
    assert "theta-gradient" in str(plan) and "beta-gradient" in str(plan)
    ledger = dpfit.iv("y ~ w + [x ~ z]", data, **fit).ledger
    (entry,) = ledger.entries
    assert entry.label == "dpfit.iv" and entry.components == plan.composed().components
    (rounds,) = [r for r in plan.releases if isinstance(r, PlannedRounds)]
    labels = [e.label for e in entry.components]
    assert labels.count("two_stage/theta-gradient") == rounds.count  # runs x steps
    assert labels[labels.index("two_stage/theta-gradient") + 1] == "two_stage/beta-gradient"
    assert ledger.rho <= 2.0


@pytest.mark.filterwarnings("ignore::dpfit.exceptions.CoverageWarning")  # not the subject
@pytest.mark.parametrize("estimator", ["linear", "iv"])
def test_an_estimator_fit_on_a_stored_budget_is_one_reservation_with_its_releases(
    tmp_path, frame, iv_frame, estimator
):
    # fit(budget=stored) used to write each planned release as its own "direct spend" row
    # (and a reserved share's exchange as a "the fit failed" refund): now one row, as ols
    store = dpfit.Budget.open(tmp_path / "b.db", dataset="d", rho=2.0)
    if estimator == "linear":
        model = dpfit.DPLinearRegression(rho=0.5, bounds=[BOUNDS["x"], BOUNDS["w"]],
                                         y_bounds=Y_BOUNDS, random_state=1)  # fmt: skip
        model.fit(frame[["x", "w"]].to_numpy(), frame["y"].to_numpy(), budget=store)
        name = "DPLinearRegression"
    else:
        data = iv_frame(2000)
        model = dpfit.DPIVRegression(rho=0.5, bounds={"x0": (-8, 11), "z0": (0, 1)},
                                     y_bounds=(-10, 14), random_state=0)  # fmt: skip
        model.fit(data[["x"]].to_numpy(), data["y"].to_numpy(), Z=data[["z"]].to_numpy(),
                  budget=store)  # fmt: skip
        name = "DPIVRegression"
    rows = [c for c in store.history() if c.rho > 0]
    assert [c.mechanism for c in rows] == [name]
    released = [label for label, _count, _rho in rows[0].releases]
    assert released == [e.label for e in model.privacy_.releases]
    assert store.spent == pytest.approx(model.privacy_.rho, rel=1e-12)


@pytest.mark.parametrize("rho", [0.3, 2.0])
def test_the_two_stage_scale_check_uses_the_plans_smallest_stage_share(iv_frame, monkeypatch, rho):
    """DP-2S-GD's clips are checked, before any charge, at the smallest share a stage
    spends; that share is the plan's own (exact shares of rho), not a float product a few
    ulps above it (which checked a larger share than the fit spends)."""
    import importlib

    checked, plans = [], []
    config, module = (importlib.import_module(f"dpfit.models.{m}") for m in ("_iv_config", "iv"))
    check, plan_of = config.check_stage_scale, module.iv_plan
    monkeypatch.setattr(config, "check_stage_scale",
                        lambda *a, **k: (checked.append(k["rho"]), check(*a, **k))[1])  # fmt: skip
    monkeypatch.setattr(module, "iv_plan",
                        lambda *a, **k: (plans.append(plan_of(*a, **k)), plans[-1])[1])  # fmt: skip
    data = iv_frame(1000)
    model = dpfit.DPIVRegression(rho=rho, bounds={"x0": (-8, 11), "z0": (0, 1)},
                                 y_bounds=(-10, 14), random_state=0, method="2s-gd", steps=10,
                                 noise_calibration="paper", interval=None)  # fmt: skip
    model.fit(data[["x"]].to_numpy(), data["y"].to_numpy(), Z=data[["z"]].to_numpy())
    (rounds,) = [r for r in plans[0].releases if isinstance(r, PlannedRounds)]
    assert set(checked) == {min(r.rho for r in rounds.pattern)}
