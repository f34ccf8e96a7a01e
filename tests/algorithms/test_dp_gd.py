"""DP-GD (Brown et al. 2024, Alg. 1): calibration, coupling, record/replay and bad inputs."""

import importlib.util
import json
import math
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from dpfit import BudgetExceededError, InsecureRandomnessWarning
from dpfit.algorithms import dp_gd, dp_gd_given_noise, dp_gd_noise_std
from dpfit.datasets import draw_linear_design
from dpfit.mechanisms import gaussian_releases, make_noise_source, recording, replaying
from dpfit.privacy import Budget, PrivacyLedger, float_sum_excess, mean_sensitivity
from dpfit.privacy.budget import exact_units

N, P = 400, 5
DATA = draw_linear_design(N, P, rng=0)
X, Y = np.array(DATA.X), np.array(DATA.y)


def test_noise_is_calibrated_to_all_runs_and_steps():
    traj = dp_gd(X, Y, rho=0.2, clip=3.0, steps=7, runs=3, step_size=0.2, rng=1)
    # lambda^2 = T_total Delta^2 / (2 rho) with T_total = runs * steps = 21 (spec 2.2) and
    # Delta = (2 clip + float64 rounding relaxation) / n, i.e. 2 clip / n up to 8e-12.
    sensitivity = (2 * 3.0 + float_sum_excess(3.0, N)) / N
    expected = math.sqrt(21 * sensitivity**2 / (2 * 0.2))
    assert traj.config["noise_std"] == pytest.approx(expected, rel=1e-14)
    assert traj.config["noise_std"] == dp_gd_noise_std(rho=0.2, clip=3.0, n=N, total_steps=21)
    assert traj.iterates.shape == (21, P)
    (entry,) = traj.ledger.entries  # the 21 releases, charged at once before the first draw
    assert entry.count == 21 and entry.sensitivity == sensitivity
    assert sensitivity == pytest.approx(2 * 3.0 / N, rel=1e-11)
    assert traj.rho == pytest.approx(0.2, rel=1e-12)
    assert traj.ledger.budget.spent <= 0.2 * (1 + 1e-12)
    # The estimate of several runs is the mean of their final iterates.
    np.testing.assert_array_equal(traj.estimate, traj.iterates[6::7].mean(axis=0))


def test_independent_runs_are_noisier_per_step_than_one_run():
    one = dp_gd(X, Y, rho=0.2, clip=3.0, steps=7, rng=1).config["noise_std"]
    four = dp_gd(X, Y, rho=0.2, clip=3.0, steps=7, runs=4, rng=1).config["noise_std"]
    assert four == pytest.approx(2.0 * one, rel=1e-14)  # sqrt(m): pitfall of spec 7


def test_seeded_runs_are_reproducible_and_seeds_differ():
    a = dp_gd(X, Y, rho=0.5, clip=3.0, steps=5, rng=3).iterates
    b = dp_gd(X, Y, rho=0.5, clip=3.0, steps=5, rng=3).iterates
    c = dp_gd(X, Y, rho=0.5, clip=3.0, steps=5, rng=4).iterates
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_coupling_with_the_unclipped_run_is_exact():
    """Huge clip (nothing clipped) and clip = inf with the same noise: identical (spec 2.4)."""
    steps, step_size = 30, 0.25
    traj = dp_gd(X, Y, rho=1.0, clip=1e6, steps=steps, step_size=step_size, rng=11)
    assert traj.diagnostics["fraction_clipped"] == 0.0
    gen = make_noise_source(11).generator
    noise = np.array([traj.config["noise_std"] * gen.standard_normal(P) for _ in range(steps)])
    unclipped = dp_gd_given_noise(X, Y, noise=noise, step_size=step_size)
    assert np.array_equal(traj.iterates, unclipped)


def test_clipping_bounds_every_released_query():
    clip = 0.05
    with recording() as rec:
        traj = dp_gd(X, Y, rho=1.0, clip=clip, steps=5, rng=2)
    assert traj.diagnostics["fraction_clipped"] > 0.9
    for release in rec.releases:
        assert np.linalg.norm(release.value) <= clip  # a mean of vectors of norm <= clip


def _replay(X1, y1, X2, y2, **kwargs):
    with recording() as rec:
        first = dp_gd(X1, y1, **kwargs)
    with replaying(rec) as rep:
        second = dp_gd(X2, y2, **kwargs)
    return rec, rep, first, second


def _shares(rec, rep):
    """Each release's query movement over the sensitivity its entry declares (must be <= 1)."""
    pairs = zip(rec.releases, rep.releases, strict=True)
    return [np.linalg.norm(a.value - b.value) / a.entry.sensitivity for a, b in pairs]


def test_replay_on_a_worst_case_replace_one_neighbour():
    X2, y2 = X.copy(), Y.copy()
    X2[0] = -50.0 * X[0] / np.linalg.norm(X[0])  # opposite direction, saturates the clip
    y2[0] = 1e6
    rec, rep, first, second = _replay(X, Y, X2, y2, rho=0.3, clip=2.0, steps=12, rng=5)
    assert [r.entry for r in rec.releases] == [r.entry for r in rep.releases]
    # The declared sensitivity is the library's replace-one one (2 clip / n plus rounding) ...
    assert {r.entry.sensitivity for r in rec.releases} == {mean_sensitivity(2.0, N, "replace-one")}
    shares = _shares(rec, rep)
    assert max(shares) <= 1 + 1e-12  # ... and bounds what one replaced record moves
    assert max(shares) > 0.5  # the neighbour really moves the query
    assert np.array_equal(first.iterates, second.iterates)  # post-processing of releases only
    assert first.rho == second.rho == pytest.approx(0.3, rel=1e-12)


def test_replay_under_add_remove_uses_the_public_n():
    X2 = np.vstack([X, 40.0 * np.ones((1, P))])
    y2 = np.append(Y, -1e5)
    kwargs = {"rho": 0.3, "clip": 2.0, "steps": 6, "relation": "add-remove", "n_public": 500}
    rec, rep, first, second = _replay(X, Y, X2, y2, rng=6, **kwargs)
    # C / n_pub plus the float64 rounding relaxation for n_pub summands.
    assert {r.entry.sensitivity for r in rec.releases} == {(2.0 + float_sum_excess(2.0, 500)) / 500}
    assert mean_sensitivity(2.0, 500, "add-remove") == (2.0 + float_sum_excess(2.0, 500)) / 500
    shares = _shares(rec, rep)
    assert 0.5 < max(shares) <= 1 + 1e-12  # one added record moves the query, within Delta
    assert np.array_equal(first.iterates, second.iterates)


def test_add_remove_requires_a_public_n():
    with recording() as rec, pytest.raises(ValueError, match="n_public is required"):
        dp_gd(X, Y, rho=0.3, clip=2.0, steps=3, relation="add-remove", rng=0)
    with recording() as rec, pytest.raises(ValueError, match="n_public must equal"):
        dp_gd(X, Y, rho=0.3, clip=2.0, steps=3, n_public=N + 1, rng=0)
    assert len(rec) == 0


def test_a_too_small_budget_fails_before_any_draw():
    budget = Budget(rho=0.1)
    ledger = PrivacyLedger(budget=budget)
    with recording() as rec, pytest.raises(BudgetExceededError, match="dp_gd needs"):
        dp_gd(X, Y, rho=0.2, clip=1.0, steps=4, ledger=ledger, rng=0)
    assert len(rec) == 0 and budget.spent == 0 and len(ledger) == 0


def test_a_shared_ledger_is_charged_exactly_rho():
    budget = Budget(rho=1.0)
    ledger = PrivacyLedger(budget=budget)
    dp_gd(X, Y, rho=0.25, clip=1.0, steps=4, ledger=ledger, rng=0)
    dp_gd(X, Y, rho=0.5, clip=1.0, steps=9, ledger=ledger, rng=1)
    assert ledger.rho == pytest.approx(0.75, rel=1e-12)
    assert budget.remaining == pytest.approx(0.25, rel=1e-9)


def test_low_precision_and_integer_inputs_are_upcast():
    ref = dp_gd(X.astype(np.float32).astype(np.float64), Y, rho=1, clip=2, steps=3, rng=0)
    low = dp_gd(X.astype(np.float32), Y, rho=1, clip=2, steps=3, rng=0)
    assert np.array_equal(ref.iterates, low.iterates)
    ints = dp_gd(np.round(X * 10).astype(np.int64), Y.round(), rho=1, clip=2, steps=3, rng=0)
    assert ints.iterates.dtype == np.float64


def test_a_step_allocates_nothing_of_the_size_of_x():
    rng = np.random.default_rng(0)
    Xbig = rng.standard_normal((100_000, 40))  # 32 MB
    ybig = rng.standard_normal(100_000)
    tracemalloc.start()
    dp_gd(Xbig, ybig, rho=1.0, clip=5.0, steps=5, rng=0)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # Allowed: the n x p boolean finiteness check in validation (1/8 of X) and O(n) vectors.
    assert peak < 0.25 * Xbig.nbytes


GOOD = {"rho": 0.5, "clip": 1.0, "steps": 3}


@pytest.mark.parametrize(
    "row, args, kwargs, exc, fragment",
    [
        (19, (X[:, 0], Y), {}, ValueError, "X must be 2-dimensional.*reshape"),
        (19, (X, Y[:, None]), {}, ValueError, "y must be 1-dimensional.*ravel"),
        (19, (X[None], Y), {}, ValueError, "X must be 2-dimensional"),
        (20, (X, Y[:-1]), {}, ValueError, "same number of rows"),
        (21, (X[:0], Y[:0]), {}, ValueError, "no rows"),
        (22, (np.where(np.eye(N, P) > 0, np.nan, X), Y), {}, ValueError, "X contains NaN"),
        (22, (X, np.append(Y[:-1], np.inf)), {}, ValueError, "y contains NaN or infinite"),
        (26, (X.astype(object), Y), {}, TypeError, "X must have a numeric"),
        (26, (X.astype(complex), Y), {}, TypeError, "X must have a numeric"),
        (26, (np.full((N, P), "a"), Y), {}, TypeError, "X must have a numeric"),
        (32, (X, Y), {"theta0": np.zeros(P + 1)}, ValueError, "theta0 must have length"),
        (32, (X, Y), {"theta0": np.full(P, np.nan)}, ValueError, "theta0 contains NaN"),
        (32, (X, Y), {"theta0": np.zeros((P, 1))}, ValueError, "theta0 must be 1-dimensional"),
        (1, (X, Y), {"rho": None}, TypeError, "rho is required"),
        (2, (X, Y), {"rho": -1.0}, ValueError, "rho must be"),
        (3, (X, Y), {"rho": True}, TypeError, "rho must be a real number"),
        (4, (X, Y), {"rho": 1e-300}, ValueError, "noise scale not finite"),
        (10, (X, Y), {"clip": math.inf}, ValueError, "clip must be"),
        (10, (X, Y), {"clip": 0.0}, ValueError, "clip must be"),
        (11, (X, Y), {"steps": 2.5}, TypeError, "steps must be an integer"),
        (11, (X, Y), {"steps": 0}, ValueError, "steps must be in"),
        (11, (X, Y), {"steps": True}, TypeError, "steps must be an integer"),
        (11, (X, Y), {"runs": 0}, ValueError, "runs must be in"),
        (12, (X, Y), {"step_size": float("nan")}, ValueError, "step_size must be"),
        (15, (X, Y), {"relation": "add/remove"}, ValueError, "relation must be one of"),
        (33, (X, Y), {"rng": "seed"}, TypeError, "rng must be"),
    ],
)
def test_bad_inputs_raise_before_any_release(row, args, kwargs, exc, fragment):
    """reliability.md section 6; rows 23-25 (bounds) concern the SSP/AdaSSP baselines."""
    with recording() as rec, pytest.raises(exc, match=fragment):
        dp_gd(*args, **{**GOOD, **kwargs})
    assert len(rec) == 0, f"row {row}: a release happened before the error"


def test_row_28_sparse_input_is_a_type_error():
    sparse = pytest.importorskip("scipy.sparse")
    with recording() as rec, pytest.raises(TypeError, match="sparse"):
        dp_gd(sparse.csr_matrix(X), Y, **GOOD)
    assert len(rec) == 0


def test_errors_never_echo_data_values():
    Xbad = X.copy()
    Xbad[3, 2] = np.nan
    with pytest.raises(ValueError) as info:
        dp_gd(Xbad, Y, **GOOD)
    assert repr(float(X[3, 0]))[:6] not in str(info.value) and "3" not in str(info.value)


_GOLDEN_DIR = Path(__file__).parent / "golden"
GOLDEN = json.loads((_GOLDEN_DIR / "dp_gd_seeded.json").read_text())
_spec = importlib.util.spec_from_file_location("dp_gd_golden", _GOLDEN_DIR / "make_dp_gd_golden.py")
_generator = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_generator)
_golden_data = _generator.data  # the synthetic data of the reference runs


def _unhex(values: list[str], shape: tuple[int, ...]) -> np.ndarray:
    return np.array([float.fromhex(v) for v in values]).reshape(shape)


@pytest.mark.parametrize("name", sorted(GOLDEN["cases"]))
def test_seeded_trajectories_match_the_frozen_reference(name):
    """Same seed, same data: the trajectory of commit e649cbe (``golden/``, with provenance).

    The noise draws, noise std, rho and clipped counts are identical; the iterates agree up to
    the summation order of the gradient sums. Since e649cbe an X of at most 8 MiB is summed on
    a column-major copy (each dot product's terms in another order) and a larger X
    ("row-blocks", 12 MB) by row blocks (the blocks' sums in another order). Each step's mean
    gradient then moves by a few ulp of its scale and the iterates by at most a few dozen ulp
    of theirs over <= 24 steps: the tolerance is 1e-12 of the largest |iterate| (measured:
    at most 5.8e-15 of it, "row-blocks" and "add-remove"). A different noise draw would move
    the iterates by about eta * noise_std, over 1e6 times that tolerance (asserted), so the
    comparison also checks that the draws are the same. Where that commit charged above the
    requested rho ("clipped-tall": rho 0.2 over 15 steps, one ulp above), the noise std is now
    a few ulps larger and the charge within rho.
    """
    case = GOLDEN["cases"][name]
    X_, y_ = _golden_data(case["n"], case["p"], case["data_seed"])
    with pytest.warns(InsecureRandomnessWarning):
        traj = dp_gd(X_, y_, **case["kwargs"])
    expected = _unhex(case["iterates"], traj.iterates.shape)
    tolerance = 1e-12 * np.abs(expected).max()
    assert tolerance < 1e-6 * traj.config["step_size"] * traj.config["noise_std"]
    np.testing.assert_allclose(traj.iterates, expected, rtol=0, atol=tolerance)
    assert traj.diagnostics["clipped_per_step"].tolist() == case["clipped_per_step"]
    frozen_std, frozen_rho = float.fromhex(case["noise_std"]), float.fromhex(case["rho"])
    requested = exact_units(case["kwargs"]["rho"])
    # The declared sensitivity now covers the rounding of the n products of X'r too
    # (gamma_n n C, not gamma_{n-1} n C; dpfit.privacy.queries), so the noise std is larger by
    # about n 2^-53 relative (plus the few ulps by which that commit's "clipped-tall" charged
    # an ulp above rho); the draws themselves are the same (the iterates above).
    excess = traj.config["noise_std"] / frozen_std - 1.0
    assert 0.0 < excess <= 2.0 * case["n"] * 2.0**-53 + 8 * 2.0**-52
    assert sum(entry.rho_units for entry in traj.ledger) <= requested
    assert traj.rho == pytest.approx(frozen_rho, rel=1e-14)


def test_given_noise_matches_the_frozen_reference():
    # up to summation order, as above (measured: at most 2.4e-15 of the largest |iterate|)
    X_, y_ = _golden_data(50_000, 3, 1)
    noise = np.random.default_rng(9).standard_normal((6, 3)) * 1e-3
    for key, clip in (("iterates_unclipped", math.inf), ("iterates_clipped", 1.5)):
        got = dp_gd_given_noise(X_, y_, noise=noise, step_size=0.3, clip=clip)
        expected = _unhex(GOLDEN["given_noise"][key], got.shape)
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12 * np.abs(expected).max())


# -- the noise drawn a block of steps at a time (mechanisms.gaussian_releases(block=...)) ------
def _releases(block, count=10, seed=3, ledger=None):
    return gaussian_releases(
        count=count,
        sensitivity=0.5,
        noise_std=1.7,
        ledger=PrivacyLedger() if ledger is None else ledger,
        rng=make_noise_source(seed),
        label="g",
        block=block,
    )


def test_the_column_major_kernel_changes_only_the_summation_order(monkeypatch):
    """Against the same kernel on the row-major X (one block, as before the column-major copy):
    the same noise draws (the generator ends in the same state, and output - query agrees to
    rounding of the query), the same clipped counts, noise std and rho; the query values and
    iterates agree to summation order (1e-12 of their scale; measured in the golden cases:
    at most 5.8e-15)."""
    module = importlib.import_module("dpfit.algorithms.dp_gd")
    kernels = importlib.import_module("dpfit.algorithms._kernels")
    X_, y_ = _golden_data(30_000, 10, 3)  # 2.4 MB: one column-major block by default
    runs = {}
    for layout in ("column-major", "row-major"):
        if layout == "row-major":  # one block on X as given (block_rows = n: no copy)
            monkeypatch.setattr(
                module,
                "least_squares_sums",
                lambda a, b, clip: kernels.LeastSquaresSums(a, b, clip, block_rows=len(a)),
            )
        gen = np.random.default_rng(5)
        with recording() as rec:
            traj = dp_gd(X_, y_, rho=0.3, clip=2.0, steps=10, rng=gen)
        runs[layout] = traj, rec, gen.bit_generator.state
    (col, col_rec, col_state), (row, row_rec, row_state) = runs.values()
    assert col_state == row_state
    clipped = [t.diagnostics["clipped_per_step"].tolist() for t in (col, row)]
    assert clipped[0] == clipped[1] and sum(clipped[0]) > 0  # the clipping path is exercised
    assert col.config["noise_std"] == row.config["noise_std"] and col.rho == row.rho
    values = [np.array([r.value for r in rec.releases]) for rec in (col_rec, row_rec)]
    noise = [np.array([r.output - r.value for r in rec.releases]) for rec in (col_rec, row_rec)]
    scale = np.abs(values[1]).max()
    np.testing.assert_allclose(values[0], values[1], rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(noise[0], noise[1], rtol=0, atol=1e-12 * scale)
    assert 1e-12 * scale < 1e-6 * col.config["noise_std"]  # a different draw would fail
    tolerance = 1e-12 * np.abs(row.iterates).max()
    np.testing.assert_allclose(col.iterates, row.iterates, rtol=0, atol=tolerance)


@pytest.mark.parametrize("shape", [(3,), (2, 2), ()])
@pytest.mark.parametrize("block", [2, 4, 10, 64])
def test_noise_drawn_in_blocks_is_the_one_by_one_stream(shape, block):
    values = np.random.default_rng(1).standard_normal((10, *shape))
    one, many = _releases(1), _releases(block)
    with recording() as rec:
        got = [many.release(v) for v in values]
    expected = [one.release(v) for v in values]
    for a, b in zip(expected, got, strict=True):
        assert type(a) is type(b) and np.array_equal(a, b)  # bit for bit, 0-d a float64
    assert len(rec) == 10 and [r.entry.count for r in rec.releases] == [1] * 10
    state = lambda r: r._source.generator.bit_generator.state  # noqa: E731
    assert state(one) == state(many)  # 10 is drawn in all, whatever the block
    with pytest.raises(BudgetExceededError, match="all 10 charged releases"):
        many.release(values[0])


def test_a_replayed_block_draws_nothing():
    values = np.arange(8.0).reshape(4, 2)
    with recording() as rec:
        releases = _releases(3, count=4, seed=4)
        outputs = [releases.release(v) for v in values]
    with replaying(rec):
        again = _releases(3, count=4, seed=99)
        state = again._source.generator.bit_generator.state
        replayed = [again.release(v + 1.0) for v in values]
    assert np.array_equal(np.array(outputs), np.array(replayed))
    assert again._source.generator.bit_generator.state == state


class _StorageError(Exception):
    """A failure that is not the data's."""


def test_a_failed_block_keeps_the_noise_drawn_ahead_spent():
    ledger = PrivacyLedger(budget=Budget(rho=10.0))
    with pytest.raises(_StorageError):
        with _releases(4, ledger=ledger) as releases:
            for _ in range(5):  # two blocks of 4 drawn: 8 releases' noise exists
                releases.release(np.zeros(3))
            raise _StorageError
    assert releases.count == releases.made == 8 and ledger.entries[0].count == 8
    assert ledger.budget._spent_units == 8 * exact_units(ledger.entries[0].rho_each)
    with pytest.raises(BudgetExceededError, match="charged releases were made"):
        releases.release(np.zeros(3))  # the 3 drawn ahead are not released after the refund


@pytest.mark.parametrize(("steps", "kept"), [(2000, 819), (10, 10)])
def test_a_failed_dp_gd_run_keeps_its_drawn_noise_spent(monkeypatch, steps, kept):
    # X in memory: the noise of min(steps, 4096 // p) steps is drawn at the first step
    module = importlib.import_module("dpfit.algorithms.dp_gd")
    real = module.least_squares_sums

    def failing(X_, y_, clip):
        sums, calls = real(X_, y_, clip), []

        def after_three(theta):
            calls.append(1)
            if len(calls) > 3:
                raise _StorageError
            return sums(theta)

        return after_three

    monkeypatch.setattr(module, "least_squares_sums", failing)
    ledger = PrivacyLedger(budget=Budget(rho=1.0))
    with pytest.raises(_StorageError):
        dp_gd(X, Y, rho=0.5, clip=2.0, steps=steps, ledger=ledger, rng=0)
    (entry,) = ledger.entries
    assert entry.count == kept and P == 5
