"""One targeted neighbour test per leak of issue 13 (findings 1-9) and per leak this layer found.

Each test is the smallest neighbour pair that shows the leak. While the leak is open (listed
in ``neighbour_known.KNOWN``) its test is ``xfail(strict=True)``; when the fix lands the
test passes, strict xfail reports it as a failure, and its reason says which key to delete
(which also re-enables the comparisons the layer had left out).
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from neighbour_data import Neighbour, grouped, instrumental, linear, unit_ball
from neighbour_known import cases, others, until_fixed
from neighbour_registry import (
    ENTRY_POINTS,
    GD,
    IV_BOUNDS,
    KL,
    KL_LOSS,
    RHO,
    SEED,
    formula,
    private_linear_training,
    xy,
)

import dpfit
from dpfit import algorithms as alg
from dpfit import baselines
from dpfit.mechanisms import recording
from dpfit.testing import check_neighbours, observe

EXTREME_ROW = Neighbour("extreme-row", -1, value=1.7e308)
ADD_EXTREME = Neighbour("add", 0, value=1.7e308)


def _check(run, frame, neighbour, *, leak: str, like: str, **kw):
    """check_neighbours on (frame, neighbour), leaving out what *other* open leaks change in
    the registry entry ``like`` (the entry point this run resembles)."""
    assert like in ENTRY_POINTS, like
    kw.setdefault("ignore", others(leak, like))
    return check_neighbours(run, (frame,), (neighbour.apply(frame),), **kw)


# -- finding 1: one-pass order --
@until_fixed("finding 1")
def test_finding_1_dp_ssgd_reads_records_in_a_uniformly_random_order():
    # The shuffle accountant needs a uniform permutation: the step at which a replaced record
    # is read (the first release that differs between D and D') must vary with the seed.
    X, y = xy(linear(1, n=1000))
    X2 = X.copy()
    X2[7] = [30.0, -30.0, 30.0]
    positions = set()
    for seed in range(8):
        runs = []
        for data in (X, X2):
            with recording() as rec:
                traj = alg.dp_ssgd(
                    data, y, epsilon=1.0, delta=1e-3, clip=1.0, step_size=0.05, rng=seed
                )
            runs.append(rec)
        assert traj.config["accountant"] == "shuffle"
        pairs = zip(runs[0].releases, runs[1].releases, strict=True)
        moved = [not np.array_equal(a.value, b.value) for a, b in pairs]
        positions.add(moved.index(True))
    assert len(positions) >= 6, f"record 7 was read at steps {sorted(positions)} only"


# -- finding 2: stateful formula transforms --
@until_fixed("finding 2")
@pytest.mark.parametrize("transform", ["scale", "center", "standardize", "poly", "bs"])
@pytest.mark.parametrize("api", ["ols", "iv"])
def test_finding_2_stateful_transforms_are_not_fitted_to_the_data(api, transform):
    # a transform that learns the column's mean, sd or knots makes every row depend on every
    # record: one changed record would move every row (or the design is refused for all data)
    if api == "ols":
        run = formula(dpfit.ols, f"y ~ {transform}(x0) + x1", **GD)
        data = linear(1)
    else:
        run = formula(dpfit.iv, f"y ~ 1 + [x0 ~ {transform}(z0) + z1]", steps=6, m=3)
        data = instrumental(1)
    column = "x0" if api == "ols" else "z0"
    _check(run, data, Neighbour("extreme-cell", 0, column, 1e3), leak="finding 2", like=api)


# -- finding 3: category levels read off the data --
@until_fixed("finding 3")
@pytest.mark.parametrize(
    "api, text",
    [
        ("ols", "y ~ x0 + x1 + C(g)"),
        ("ols", "y ~ x0 + x1 + g"),
        ("ols", "y ~ x0 + C(g, levels=['a', 'b', 'c'])"),
        ("iv", "y ~ 1 + C(g) + [x0 ~ x1]"),
        ("iv", "y ~ 1 + C(g, levels=['a', 'b', 'c']) + [x0 ~ x1]"),
    ],
)
def test_finding_3_a_new_level_in_one_record_changes_nothing_public(api, text):
    params = GD if api == "ols" else {}
    run = formula(getattr(dpfit, api), text, **params)
    _check(run, grouped(1), Neighbour("new-level", -1), leak="finding 3", like=api)


# -- finding 4: add/remove shows the private n --
@until_fixed("finding 4")
@pytest.mark.parametrize(
    "name, run",
    [
        ("ssp", lambda f: baselines.ssp(*xy(f), rho=RHO, x_bound=2.0, y_bound=3.0,
                                        relation="add-remove", rng=SEED)),
        ("adassp", lambda f: baselines.adassp(*xy(f), rho=RHO, x_bound=2.0, y_bound=3.0,
                                              relation="add-remove", rng=SEED)),
        ("DPLinearRegression adassp", lambda f: dpfit.DPLinearRegression(
            rho=RHO, method="adassp", interval=None, relation="add-remove",
            bounds=[(-3, 3)] * 3, y_bounds=(-6, 6), random_state=SEED).fit(*xy(f))),
        ("DPLinearRegression gd", lambda f: dpfit.DPLinearRegression(
            rho=RHO, relation="add-remove", random_state=SEED, **GD).fit(*xy(f))),
    ],
)  # fmt: skip
def test_finding_4_add_remove_never_shows_the_private_n(name, run):
    # without n_public: refused (the same error on D and D'), or nothing shows the count
    for neighbour in (ADD_EXTREME, Neighbour("remove", 0)):
        _check(run, linear(1, n=30), neighbour, leak="finding 4", like=f"{name} add-remove")


# -- finding 5: a finite extreme instrument makes DP-2S-GD raise after releases --
@until_fixed("finding 5")
@pytest.mark.parametrize("name", ["dp_two_stage_gd", "DPIVRegression unscaled batched-means"])
def test_finding_5_two_stage_gd_survives_an_extreme_finite_instrument(name):
    entry = ENTRY_POINTS[name]
    neighbour = Neighbour("extreme-cell", -1, "z0", 1.7e308)
    _check(entry.run, instrumental(1), neighbour, leak="finding 5", like=name)


# -- finding 6: adaptive methods report their realised (data-dependent) spend --
@until_fixed("finding 6")
@pytest.mark.parametrize(
    "method, options", [("adaptive-gd", {}), ("kl-spider", KL)], ids=["adaptive-gd", "kl-spider"]
)
def test_finding_6_the_privacy_claim_of_adaptive_methods_is_public(method, options):
    def run(frame):
        return dpfit.minimize(
            KL_LOSS, xy(frame), rho=RHO, method=method, random_state=SEED, **options
        )

    frame = unit_ball(1, n=5000)
    neighbour = Neighbour("extreme-row", 0, value=1.0, signs=(1, -1))
    report = _check(run, frame, neighbour, leak="finding 6", like=f"minimize {method}")
    on_d = report.observations[0].value
    assert on_d.rho == RHO  # the guarantee is the budget fixed before the first release
    assert on_d.ledger.epsilon(1e-5) == dpfit.privacy.zcdp_to_approx_dp(RHO, 1e-5)


def _torch_training(X, y, **options):
    pytest.importorskip("torch", reason="torch is not installed (optional extra)")
    return private_linear_training(X, y, **{"epochs": 1, "rho": RHO, **options})


# -- finding 7: the torch optimizer privatises any vector --
@until_fixed("finding 7")
def test_finding_7_the_torch_optimizer_privatises_only_what_it_clipped():
    # the trusting path (privatise whatever vector the caller passes) is gone: step() takes
    # no gradient, and a neighbour whose record is extreme moves the release by at most its
    # declared sensitivity (the registry's training loop)
    training = _torch_training(*xy(linear(1)))
    next(iter(training.data_loader))
    with recording() as rec, pytest.raises((TypeError, ValueError)):
        training.optimizer.step(np.full(4, 1e6))  # a sum no per-example clip produced
    assert len(rec) == 0
    entry = ENTRY_POINTS["torch make_private fixed-epoch"]
    _check(
        entry.run,
        linear(1),
        EXTREME_ROW,
        leak="finding 7",
        like="torch make_private fixed-epoch",
        encoders=entry.encoders,
    )


# -- finding 8: numpy warnings, Toeplitz inverse, pickled diagnostics --
WARNING_ENTRIES = [
    "dp_ssgd epsilon-delta",
    "dp_gd",
    "dp_ssgd rho",
    "fixed_clip_sgd",
    "noisy_gd",
    "ssp",
    "dp_two_stage_gd",
    "dp_ftrl nu-dpftrl",
    "DPLinearRegression gd",
]


@pytest.mark.parametrize("name", cases("finding 8 warnings", WARNING_ENTRIES))
def test_finding_8_no_numpy_warning_depends_on_one_record(name):
    entry = ENTRY_POINTS[name]
    frame = entry.data(1)
    neighbours = [
        EXTREME_ROW,
        Neighbour("extreme-row", 0, value=1e154, signs=(1, -1)),
        Neighbour("extreme-cell", -1, "x0", 1.7e308),
        Neighbour("extreme-cell", -1, "y", -1.7e308),
    ]
    for neighbour in neighbours:
        shown = observe(entry.run, neighbour.apply(frame), views=entry.views)
        shown = shown.components["warnings"]
        assert "RuntimeWarning" not in shown, f"{neighbour}: {shown}"


@until_fixed("finding 8 toeplitz")
def test_finding_8_a_toeplitz_mechanism_checks_its_inverse():
    from dpfit.noise import ToeplitzMechanism, nu_dpftrl

    mech = nu_dpftrl(0.1, steps=6)
    wrong = mech.inverse.copy()
    wrong[1:] *= 0.5  # not the reciprocal series of beta: the sensitivity would be wrong
    with pytest.raises(ValueError, match="inverse"):
        ToeplitzMechanism(beta=mech.beta, inverse=wrong)


@until_fixed("finding 8 pickles")
@pytest.mark.parametrize("name", ["DPLinearRegression gd", "DPIVRegression bounds", "ols", "iv"])
def test_finding_8_a_pickled_fit_holds_no_non_private_diagnostic(name):
    entry = ENTRY_POINTS[name]
    frame = entry.data(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. a CoverageWarning for few batches
        fitted = entry.run(frame)
    assert b"fraction_clipped" not in pickle.dumps(fitted)
    # the pickled state is compared in full
    _check(entry.run, frame, EXTREME_ROW, leak="finding 8 pickles", like=name)


# -- finding 9: Dask --
@until_fixed("finding 9 categories")
def test_finding_9_an_undeclared_category_on_dask_is_the_zero_record():
    pytest.importorskip("dask.dataframe", reason="dask is not installed (optional extra)")
    run = ENTRY_POINTS["dask ols"].run
    frame = grouped(1)
    outside = Neighbour("new-level", 3).apply(frame)
    missing = Neighbour("nonfinite", 3, "x0", np.nan).apply(frame)  # the zero-record rule
    values = []
    for data in (outside, missing):
        with recording() as rec, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # CoverageWarning for few batches
            run(data)
        values.append([r.value for r in rec.releases])
    for a, b in zip(*values, strict=True):
        np.testing.assert_array_equal(a, b)


@until_fixed("finding 9 n_public")
@pytest.mark.parametrize("source", ["DataFrame", "Parquet"])
def test_finding_9_n_public_is_checked_on_dask_frames(source, tmp_path):
    dd = pytest.importorskip("dask.dataframe", reason="dask is not installed (optional extra)")
    frame = linear(1, n=40)
    if source == "Parquet":
        pytest.importorskip("pyarrow", reason="pyarrow is not installed")
        frame.to_parquet(tmp_path / "data.parquet")
        data = dd.read_parquet(tmp_path / "data.parquet")
    else:
        data = dd.from_pandas(frame, npartitions=2)
    with recording() as rec, pytest.raises(ValueError, match="n_public"):
        dpfit.ols("y ~ x0 + x1", data, rho=RHO, n_public=41, random_state=SEED, **GD)
    assert len(rec) == 0


# -- found by this layer --
@until_fixed("new: Trajectory repr")
def test_new_a_trajectory_repr_shows_no_non_private_diagnostic():
    entry = ENTRY_POINTS["dp_gd"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traj = entry.run(linear(1))
    assert "fraction_clipped" not in repr(traj)
    _check(entry.run, linear(1), EXTREME_ROW, leak="new: Trajectory repr", like="dp_gd")


@until_fixed("new: formula overflow")
@pytest.mark.parametrize(
    "api, text",
    [("ols", "y ~ x0 + I(x1 * 2)"), ("ols", "y ~ np.exp(x0)"), ("iv", "y ~ 1 + [x0 ~ I(z0 * 2)]")],
)
def test_new_a_row_wise_transform_that_overflows_is_not_an_error(api, text):
    # a finite record whose transformed value overflows to inf: refusing it would make the
    # outcome depend on one record (the zero-record rule applies instead)
    if api == "ols":
        run, frame, column = formula(dpfit.ols, text, **GD), linear(1), "x1"
        column = "x0" if "exp" in text else column
    else:
        run = formula(dpfit.iv, text, **IV_BOUNDS, steps=6, m=3)
        frame, column = instrumental(1), "z0"
    value = 1e3 if "exp" in text else 1.7e308
    neighbour = Neighbour("extreme-cell", -1, column, value)
    _check(run, frame, neighbour, leak="new: formula overflow", like=api)


@until_fixed("new: IV moments claim")
@pytest.mark.parametrize("name", ["DPIVRegression moments", "iv moments"])
def test_new_the_privacy_claim_of_iv_moments_is_public(name):
    # the moments and Omega releases take their sensitivity from the released column
    # moments; their rho, hence the ledger's total, must still not depend on the data
    entry = ENTRY_POINTS[name]
    _check(
        entry.run,
        instrumental(1),
        Neighbour("extreme-cell", -1, "x0", 1.7e308),
        leak="new: IV moments claim",
        like=name,
    )


@until_fixed("new: optimizer clipped count")
def test_new_the_torch_optimizer_keeps_no_non_private_count():
    training = _torch_training(*xy(linear(1)))
    for _ in training.data_loader:
        training.optimizer.step()
    public = {k for k in vars(training.optimizer) if not k.startswith("_")}
    assert not {k for k in public if "clip" in k}, public


@pytest.mark.slow  # PLD calibration of the Poisson noise (seconds per run)
@until_fixed("new: Poisson coupling")
def test_new_adding_a_record_leaves_the_other_poisson_inclusions_unchanged():
    # with the same public randomness, record i < n joins the same steps whether or not a
    # record n is added, so replay can freeze the mask and check each step's sensitivity
    X, y = xy(linear(1, n=40))
    batches = []
    for rows in (40, 41):
        Xr, yr = np.vstack([X, X[:1]])[:rows], np.append(y, y[:1])[:rows]
        options = {"sampling": "poisson", "n_public": 40, "rho": None, "epsilon": 2.0}
        training = _torch_training(Xr, yr, delta=1e-5, **options)
        batches.append([sorted(set(b) - {40}) for b in training.data_loader.sampler])
    assert batches[0] == batches[1]


@until_fixed("new: DPOptimizer unpickle")
def test_new_unpickling_a_torch_optimizer_breaks_no_later_training():
    pytest.importorskip("torch", reason="torch is not installed (optional extra)")
    from dpfit.torch import DPOptimizer

    first = _torch_training(*xy(linear(1)))
    step = DPOptimizer.__dict__["step"]
    try:
        try:
            pickle.loads(pickle.dumps(first.optimizer))
        except Exception:  # refusing to pickle is fine; corrupting the class is not
            pass
        second = _torch_training(*xy(linear(2)))
        for _ in second.data_loader:
            second.optimizer.step()
    finally:
        DPOptimizer.step = step  # never leave the class patched for later tests


def test_new_removing_a_record_leaves_the_others_cyclic_poisson_chances_unchanged():
    # Under add/remove, the chance that another record joins a step must not depend on
    # whether record 0 is there. Record 1's frequency in step 0 over S seeds in D and S other
    # seeds in D' (row 0 removed): each frequency has SE <= 0.5 / sqrt(S), their (independent)
    # difference <= 0.035 at S = 400; the test allows 0.15 (over 4 SE). Grouping by index
    # makes the difference q = 0.5 (record 1 is in group 1 in D, in group 0 in D').
    pytest.importorskip("torch", reason="torch is not installed (optional extra)")
    from dpfit.mechanisms import make_noise_source
    from dpfit.torch import PoissonSampler

    n, q, seeds = 12, 0.5, 400
    freq = []
    for rows, index, first in ((n, 1, 0), (n - 1, 0, seeds)):  # record 1's index in D, D'
        joined = 0
        for seed in range(first, first + seeds):
            sampler = PoissonSampler(
                rows, sample_rate=q, epochs=1, rng=make_noise_source(seed), groups=2
            )
            joined += index in next(iter(sampler))
        freq.append(joined / seeds)
    assert abs(freq[0] - freq[1]) < 0.15, freq


@until_fixed("new: replayed scalar")
def test_new_a_replayed_scalar_release_has_the_type_of_the_live_one():
    # the recorder's replay must be indistinguishable from the live mechanism, or the layer
    # compares a replayed run that the library never produces
    from dpfit.mechanisms import gaussian, make_noise_source
    from dpfit.privacy import PrivacyLedger

    def release(x):
        return gaussian(
            np.clip(x, -1.0, 1.0).mean(),
            sensitivity=2.0 / len(x),
            noise_std=0.1,
            ledger=PrivacyLedger(),
            rng=make_noise_source(SEED),
            label="mean",
        )

    x = np.linspace(-1.0, 1.0, 20)
    live = observe(release, x)
    replayed = observe(release, x, replay=live.recording)
    assert type(replayed.value) is type(live.value)


def test_the_layer_covers_every_entry_point_family():
    # a reminder to register new public entry points (one line in neighbour_registry)
    names = " ".join(ENTRY_POINTS)
    for family in ["dp_gd", "dp_ambssgd", "dp_ssgd", "dp_two_stage_gd", "adaptive_gd",
                   "kl_spider", "proximal_point", "noisy_gd", "dp_ftrl", "minimize", "ssp",
                   "adassp", "fixed_clip_sgd", "onepass_sgd", "DPLinearRegression gd",
                   "DPLinearRegression adassp", "DPLinearRegression ambssgd", "DPIVRegression",
                   "ols", "iv", "cli fit", "cli iv", "torch make_private", "dask", "dp_glm",
                   "DPLogisticRegression", "DPPoissonRegressor", "logit", "poisson",
                   "cli fit binomial"]:  # fmt: skip
        assert family in names, family
    assert any("add-remove" in name for name in ENTRY_POINTS)
