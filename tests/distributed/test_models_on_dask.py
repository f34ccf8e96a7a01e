"""dpfit.ols on a Dask DataFrame and DPLinearRegression.fit on Dask arrays (issue 10)."""

import numpy as np
import pytest

dd = pytest.importorskip("dask.dataframe", reason="dask[dataframe] is not installed")

import threading  # noqa: E402
import time  # noqa: E402

import dask  # noqa: E402
import dask.array as da  # noqa: E402
import pandas as pd  # noqa: E402

import dpfit  # noqa: E402
from dpfit import Budget, DPLinearRegression  # noqa: E402
from dpfit.distributed import WorkersLostError  # noqa: E402
from dpfit.mechanisms import recording  # noqa: E402

# g's categories are written out below (public), not learnt by astype("category").
pytestmark = [
    pytest.mark.usefixtures("client"),
    pytest.mark.filterwarnings("ignore::dpfit.exceptions.UndeclaredLevelsWarning"),
]

N = 2000
RNG = np.random.default_rng(11)
FRAME = pd.DataFrame(
    {
        "x": RNG.uniform(0, 10, N),
        "g": pd.Categorical(RNG.choice(["a", "b", "c"], N), categories=["a", "b", "c"]),
        "s": RNG.choice(["u", "v"], N),
    }
)
FRAME["y"] = 1.0 + 0.5 * FRAME["x"] + (FRAME["g"] == "b") + RNG.normal(0, 1, N)
DASK = dd.from_pandas(FRAME, npartitions=4)
BOUNDS = {"x": (0, 10), "I(x ** 2)": (0, 100), "C(g)[T.b]": (0, 1), "C(g)[T.c]": (0, 1)}
# precondition=False: plain DP-GD, 20 steps (the preconditioned default on Dask is compared
# with memory in test_population_dask.py).
OLS = {"rho": 1.0, "bounds": BOUNDS, "y_bounds": (-5, 15), "steps": 20, "m": 10, "burn_in": 0}
OLS["precondition"] = False


def test_ols_on_a_dask_frame_matches_pandas():
    formula = "y ~ x + I(x ** 2) + C(g)"
    mem = dpfit.ols(formula, FRAME, random_state=2, **OLS)
    lazy = dpfit.ols(formula, DASK, n_public=N, random_state=2, **OLS)
    assert list(lazy.params.index) == ["Intercept", "x", "I(x ** 2)", "C(g)[T.b]", "C(g)[T.c]"]
    np.testing.assert_allclose(lazy.params, mem.params, rtol=1e-10, atol=1e-12)
    sample = {"target": "sample"}
    np.testing.assert_allclose(
        lazy.conf_int(**sample), mem.conf_int(**sample), rtol=1e-10, atol=1e-12
    )
    assert lazy.n == N and lazy.ledger.rho == mem.ledger.rho
    assert lazy.summary().as_text() == mem.summary().as_text()


@pytest.mark.parametrize(
    "formula, exc, match",
    [
        ("y ~ x + C(s)", TypeError, r"C\(s, levels=\[\.\.\.\]\)"),  # a bare s is a number
        ("y ~ x + center(x)", ValueError, r"center\(\) is a stateful transform"),
    ],
)
def test_formula_columns_must_be_public_on_dask(formula, exc, match):
    with pytest.raises(exc, match=match):
        dpfit.ols(formula, DASK, n_public=N, rho=1.0, clip=1.0, random_state=0)


def test_unknown_categories_are_refused():
    unknown = DASK.assign(g=DASK["g"].cat.as_unknown())
    with pytest.raises(TypeError, match="unknown categories"):
        dpfit.ols("y ~ C(g)", unknown, n_public=N, rho=1.0, clip=1.0, random_state=0)


def test_estimator_on_dask_arrays_and_refusals():
    X, y = FRAME[["x"]].to_numpy(), FRAME["y"].to_numpy()
    Xd, yd = DASK[["x"]].to_dask_array(lengths=True), DASK["y"].to_dask_array(lengths=True)
    params = {"rho": 1.0, "clip": 20.0, "step_size": 0.01, "steps": 10, "interval": None}
    mem = DPLinearRegression(random_state=3, **params).fit(X, y)
    lazy = DPLinearRegression(random_state=3, n_public=N, **params).fit(Xd, yd)
    np.testing.assert_allclose(lazy.coef_, mem.coef_, rtol=1e-10)
    budget = Budget(rho=2.0)
    with pytest.raises(TypeError, match="method='adassp' needs in-memory data"):
        DPLinearRegression(
            rho=1.0, method="adassp", bounds=[(0, 10)], y_bounds=(-5, 15), interval=None,
            n_public=N,
        ).fit(Xd, yd, budget=budget)  # fmt: skip
    assert budget.spent == 0.0  # refused before the budget was touched
    with pytest.raises(TypeError, match="n_public is required"):
        DPLinearRegression(rho=1.0, clip=1.0).fit(Xd, yd)


# -- issue 13, finding 9 ----------------------------------------------------------------------
S_LEVELS = "C(s, levels=['u', 'v'])"
OUTSIDERS = [3, 500, 1999]


def _with_outsiders(y_shift=0.0):
    """FRAME with records outside the declared levels: s = 'w', and g missing."""
    frame = FRAME.copy()
    frame.loc[OUTSIDERS, "s"] = "w"
    frame.loc[[7, 8], "g"] = np.nan
    frame.loc[[*OUTSIDERS, 7, 8], "y"] += y_shift
    return frame


def test_outside_the_declared_levels_is_the_zero_record_on_dask_as_in_memory():
    formula = f"y ~ x + C(g) + {S_LEVELS}"
    kw = {**OLS, "bounds": {"x": (0, 10)}}
    mem = dpfit.ols(formula, _with_outsiders(), random_state=6, **kw)
    lazy = dpfit.ols(
        formula, dd.from_pandas(_with_outsiders(), npartitions=4), n_public=N, random_state=6, **kw
    )
    np.testing.assert_allclose(lazy.params, mem.params, rtol=1e-10, atol=1e-12)
    moved = dpfit.ols(
        formula,
        dd.from_pandas(_with_outsiders(y_shift=7.0), npartitions=4),
        n_public=N,
        random_state=6,
        **kw,
    )
    np.testing.assert_array_equal(moved.params, lazy.params)  # outsiders add nothing


def test_nonfinite_values_are_zero_records_even_with_bounds():
    """inf is not clipped into the bounds (a finite record): like NaN, it zeroes the record."""
    X, y = FRAME[["x"]].to_numpy(), FRAME["y"].to_numpy()
    params = {"rho": 1.0, "bounds": [(0, 10)], "y_bounds": (-5, 15), "steps": 10}
    params.update(interval=None, precondition=False, random_state=8, n_public=N)

    def lazy_fit(X, y):
        dX, dy = da.from_array(X, chunks=(500, 1)), da.from_array(y, chunks=500)
        return DPLinearRegression(**params).fit(dX, dy).coef_

    X_inf, y_inf, X_nan, y_nan = X.copy(), y.copy(), X.copy(), y.copy()
    X_inf[4, 0], y_inf[9], X_nan[4, 0], y_nan[9] = np.inf, -np.inf, np.nan, np.nan
    np.testing.assert_array_equal(lazy_fit(X_inf, y_inf), lazy_fit(X_nan, y_nan))
    X_hi = X.copy()
    X_hi[4, 0] = 10.0  # what clipping inf into the bounds would have given
    assert not np.array_equal(lazy_fit(X_inf, y), lazy_fit(X_hi, y))
    budget = Budget(rho=2.0)
    with pytest.raises(ValueError, match="NaN or infinite"):  # in memory: refused up front
        DPLinearRegression(**params).fit(X_inf, y, budget=budget)
    assert budget.spent == 0.0


FORMULA = "y ~ x + I(x ** 2) + C(g)"


@pytest.fixture
def parquet(tmp_path):
    path = tmp_path / "frame.parquet"
    FRAME.to_parquet(path)
    return str(path)


@pytest.mark.parametrize("source", ["frame", "parquet"])
def test_declared_n_is_checked_under_replace_one_only(source, parquet):
    data = DASK if source == "frame" else dd.read_parquet(parquet)
    if source == "parquet":
        data = data.assign(g=data["g"].astype(pd.CategoricalDtype(["a", "b", "c"])))
    budget = Budget(rho=5.0)
    with pytest.raises(ValueError, match=f"n_public={10 * N} does not match the {N} rows"):
        dpfit.ols(FORMULA, data, n_public=10 * N, budget=budget, random_state=0, **OLS)
    assert budget.spent == 0.0
    assert dpfit.ols(FORMULA, data, n_public=N, random_state=0, **OLS).n == N
    # add/remove: the row count is private, never compared; the declared n is used
    res = dpfit.ols(FORMULA, data, n_public=10 * N, relation="add-remove", random_state=0, **OLS)
    assert res.n == 10 * N


def test_unknown_chunk_sizes_are_counted_under_replace_one():
    Xu = DASK[["x"]].to_dask_array()
    yu = DASK["y"].to_dask_array()
    model = DPLinearRegression(rho=1.0, clip=20.0, steps=5, interval=None, n_public=N + 1)
    with pytest.raises(ValueError, match="does not match"):
        model.fit(Xu, yu)


_STORAGE = {"reads": 0}  # module state: the in-process workers share it


def _flaky(block):
    """Data that become unreadable at the fourth read (a worker-side failure mid-fit)."""
    _STORAGE["reads"] += 1
    if _STORAGE["reads"] >= 4:
        raise OSError("storage went away")
    return block


@pytest.mark.parametrize("stored", [False, True])
def test_a_failed_fit_keeps_only_what_it_charged(stored, tmp_path):
    """The releases before a failure stay spent; the rest of the budget is available."""
    _STORAGE["reads"] = 0
    # name=False: a fresh task key, so the cluster cannot answer with an earlier run's error
    X = da.from_array(FRAME[["x"]].to_numpy(), chunks=(N, 1), name=False)
    X = X.map_blocks(_flaky, dtype=np.float64)
    y = da.from_array(FRAME["y"].to_numpy(), chunks=N)
    if stored:  # a persistent budget: the undrawn steps come back as one refund row
        budget = Budget.open(tmp_path / "budget.sqlite", dataset="d", rho=3.0)
    else:
        budget = Budget(rho=3.0)
    model = DPLinearRegression(
        rho=1.0,
        bounds=[(0, 10)],
        y_bounds=(-5, 15),
        steps=10,
        interval=None,
        n_public=N,
        precondition=False,
    )
    with (
        dask.config.set({"dpfit.persist": False}),  # every step reads the storage again
        recording() as rec,
        pytest.raises(OSError, match="storage went away"),
    ):
        model.fit(X, y, budget=budget)
    drawn = len(rec)  # steps released before the data failed (rho 0.1 each)
    assert 0 < drawn < 10
    assert budget.spent == pytest.approx(0.1 * drawn, rel=1e-9)  # what was drawn, no more
    assert budget.remaining == pytest.approx(3.0 - 0.1 * drawn, rel=1e-9)
    if stored:
        # the fit is reserved as one transaction; what it did not draw comes back as one row
        assert [c.mechanism for c in budget.history()] == [
            "DPLinearRegression",
            "refund: the unspent part of charge 1",
        ]


@pytest.mark.parametrize("persist", ["auto", True])
def test_a_cluster_without_workers_fails_promptly(persist):
    distributed = pytest.importorskip("distributed")
    X = da.from_array(FRAME[["x"]].to_numpy(), chunks=(500, 1))
    y = da.from_array(FRAME["y"].to_numpy(), chunks=500)
    budget = Budget(rho=3.0)
    outcome = {}

    def fit():
        try:
            DPLinearRegression(rho=1.0, clip=20.0, steps=5, interval=None, n_public=N).fit(
                X, y, budget=budget
            )
        except Exception as exc:
            outcome["error"] = exc

    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as c,
        dask.config.set({"dpfit.lost-workers-timeout": 1.0, "dpfit.persist": persist}),
    ):
        c.retire_workers(list(c.nthreads()))
        thread = threading.Thread(target=fit, daemon=True)
        start = time.monotonic()
        thread.start()
        thread.join(timeout=60)
        assert not thread.is_alive(), "the fit hung on a cluster without workers"
    assert time.monotonic() - start < 30
    assert isinstance(outcome.get("error"), WorkersLostError)
    assert budget.spent <= 1.0  # at most the fit's own rho, never more
