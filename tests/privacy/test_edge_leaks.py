"""Edge leaks: something other than the noised quantity must not depend on one record.

Each test pins one path by which a single record used to change what the user sees beyond
its declared sensitivity, or to change another record's contribution
(``docs/threat-model.md``, "Known limitations inside the model").
"""

from __future__ import annotations

import io
import warnings

import numpy as np
import pandas as pd
import pytest

import dpfit
from dpfit import algorithms as alg
from dpfit import baselines
from dpfit.exceptions import RepeatedFitWarning
from dpfit.losses import SquaredLoss
from dpfit.mechanisms import recording
from dpfit.models import design_matrices
from dpfit.testing import check_neighbours

# -- one record never changes how another is read (models/_values.py) -------------------------
N = 60
RNG = np.random.default_rng(20261124)
CODES = pd.DataFrame(
    {
        "x0": RNG.standard_normal(N),
        "g": RNG.integers(1, 4, N),
        "income": RNG.integers(1, 10**4, N),
    }
)
CODES.loc[0, "income"] = 5_000_000_000  # its square wraps around in int64
CODES["y"] = CODES["x0"] + (CODES["g"] == 2) + RNG.standard_normal(N)


def _csv(frame: pd.DataFrame, row: int | None = None, column: str = "", text: str = "") -> str:
    """The CSV text of ``frame`` with one cell written as ``text``."""
    lines = frame.to_csv(index=False, float_format="%.17g").splitlines()
    if row is not None:
        cells = lines[row + 1].split(",")
        cells[list(frame.columns).index(column)] = text
        lines[row + 1] = ",".join(cells)
    return "\n".join(lines) + "\n"


def _design(formula: str, text: str) -> pd.DataFrame:
    _, X, _ = design_matrices(formula, pd.read_csv(io.StringIO(text)))
    return X


@pytest.mark.parametrize(
    ("formula", "column", "text"),
    [
        ("y ~ x0 + C(g, levels=[1, 2, 3])", "g", "x"),  # g becomes text: no code matched
        ("y ~ x0 + C(g, levels=[1, 2, 3])", "g", "2a"),
        ("y ~ x0 + C(g, levels=[1, 2, 3])", "g", "2.5"),  # g becomes float64
        ("y ~ I(income ** 2)", "income", "4.5"),  # int64 -> float64: no wrap-around
    ],
)
def test_one_records_value_never_changes_another_records_row(formula, column, text):
    """A CSV cell that changes the column's inferred dtype changes only its own record's row
    (a value outside the declared levels makes that record the zero record, an all-NaN row)."""
    row = N - 1
    before = _design(formula, _csv(CODES))
    after = _design(formula, _csv(CODES, row, column, text))
    assert list(before.columns) == list(after.columns)
    others = np.arange(N) != row
    np.testing.assert_array_equal(before.to_numpy()[others], after.to_numpy()[others])
    assert np.isfinite(before.to_numpy()).all()
    if text in ("x", "2a", "2.5"):
        assert after.iloc[row].isna().all()  # not a declared level: the zero record


@pytest.mark.parametrize(
    ("formula", "column", "text"),
    [
        ("y ~ I(income ** 2)", "income", "18446744073709551616"),  # beyond uint64: text
        ("y ~ I(income ** 2)", "income", "secret-abc"),
        ("y ~ x0 + I(income ** 2)", "x0", "0x10"),
    ],
)
def test_a_column_read_as_text_is_refused_by_its_schema(formula, column, text):
    """A cell that makes a numeric column text puts the file outside its schema (the dtypes
    are public, like the refusal of a missing value): refused before anything is built,
    naming the column and its dtype, never the value."""
    with pytest.raises(TypeError, match=rf"column '{column}' holds text") as info:
        _design(formula, _csv(CODES, N - 1, column, text))
    assert text not in str(info.value)


def test_int64_columns_are_read_as_float64():
    """I(income ** 2) is computed in float64 (an int64 column used to wrap around)."""
    X = _design("y ~ I(income ** 2)", _csv(CODES))
    assert X.iloc[0, 0] == 2.5e19


@pytest.mark.parametrize(
    ("levels", "values"),
    [
        ("[1, 2, 3]", ["2", 2, 2.0, " 2 ", np.int64(2)]),
        ("['1', '2', '3']", ["2", 2, 2.0, " 2"]),
        ("['a', 'b', 'c']", ["b", " b "]),
    ],
)
def test_declared_levels_match_value_by_value(levels, values):
    """Each value matches the declared level it equals whatever the column's dtype: numbers
    compare numerically, strings with blanks stripped."""
    frame = pd.DataFrame({"g": pd.Series(values, dtype=object), "y": 1.0})
    _, X, _ = design_matrices(f"y ~ C(g, levels={levels})", frame)
    level_2 = [c for c in X.columns if c.endswith(("[T.2]", "[T.'2']", "[T.b]"))]
    assert len(level_2) == 1
    np.testing.assert_array_equal(X[level_2[0]].to_numpy(), 1.0)


def test_cli_numeric_codes_with_one_text_value_move_one_record(tmp_path):
    """``dpfit fit`` on a CSV whose numeric category codes include one text value: the first
    release moves by at most its declared sensitivity (it used to move 21 times that, every
    record becoming the zero record)."""
    from dpfit.cli import main

    formula = "y ~ x0 + C(g, levels=[1, 2, 3])"
    argv = ["--formula", formula, "--clip", "5", "--total-steps", "20", "--m", "2"]
    argv += ["--burn-in", "0", "--rho", "1", "--seed", "3"]
    queries = []
    for name, text in (("D", _csv(CODES)), ("D2", _csv(CODES, N - 1, "g", "x"))):
        path = tmp_path / f"{name}.csv"
        path.write_text(text)
        with recording() as rec:
            assert main(["fit", str(path), *argv]) == 0
        first = rec.releases[0]
        queries.append((np.asarray(first.value), first.entry.sensitivity))
    (q, sensitivity), (q2, _) = queries
    assert np.linalg.norm(q - q2) <= sensitivity


# -- clipping=False: the declared bound is enforced, never trusted (docs/menart2024.md) ------------
KL_LOSS = SquaredLoss(y_bound=1.0, radius=2.0)  # L0 from the unit ball: |x| <= 1 declared
KL = {"gamma": 1.0, "kappa": 2.0, "loss_bound": 1.0}
NO_CLIP = {
    "noisy_gd": lambda X, y: alg.noisy_gd(KL_LOSS, X, y, rho=0.5, steps=4, clipping=False, rng=1),
    "kl_spider": lambda X, y: alg.kl_spider(KL_LOSS, X, y, rho=0.5, clipping=False, rng=1, **KL),
    "proximal_point": lambda X, y: alg.proximal_point(
        KL_LOSS, X, y, rho=0.5, clipping=False, rng=1, inner_cap=4, **{**KL, "kappa": 3.0}
    ),
    "adaptive_gd": lambda X, y: alg.adaptive_gd(KL_LOSS, X, y, rho=0.5, clipping=False, rng=1),
    "minimize": lambda X, y: dpfit.minimize(
        KL_LOSS, (X, y), rho=0.5, method="noisy-gd", steps=4, clipping=False, random_state=1
    ),
}


def _unit_ball(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    X = rng.standard_normal((n, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X, np.clip(X @ [1.0, -1.0, 0.5] + 0.3 * rng.standard_normal(n), -1.0, 1.0)


@pytest.mark.parametrize("name", sorted(NO_CLIP))
def test_clip_false_still_enforces_the_declared_bound(name):
    """One record far outside the loss's declared domain (x0 = 1e6) moves every release by at
    most its declared sensitivity, with clipping=False too (it used to move 1e11 times that)."""
    X, y = _unit_ball(5000 if name in ("kl_spider", "proximal_point") else 200)
    X2 = X.copy()
    X2[-1, 0] = 1e6
    report = check_neighbours(NO_CLIP[name], (X, y), (X2, y))
    # the far record moves some release by a sizeable share of its sensitivity (0.5-0.73 here)
    assert report.releases > 0 and 0.2 < report.max_share <= 1.0


# -- RepeatedFitWarning: keyed by public quantities (models/_refits.py) ------------------------
FIT = {"rho": 0.1, "clip": 3.0, "steps": 20, "interval": None, "random_state": 0}


@pytest.mark.parametrize("moved", [False, True], ids=["D", "D'"])
def test_repeated_fit_warning_does_not_depend_on_the_records(moved):
    """After four fits of D, the fifth warns whether it is fitted on D or on a neighbour D'
    (one response moved by one ulp); it used to warn on D only (a digest of the data)."""
    n = 211 + moved  # a shape of this test's own: the count is per public shape
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, 2))
    y = X @ [1.0, -1.0] + rng.standard_normal(n)
    y5 = y.copy()
    if moved:
        y5[0] = np.nextafter(y5[0], np.inf)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(4):
            dpfit.DPLinearRegression(**FIT).fit(X, y)
        caught.clear()
        dpfit.DPLinearRegression(**FIT).fit(X, y5)
    assert [w.category for w in caught if issubclass(w.category, RepeatedFitWarning)] == [
        RepeatedFitWarning
    ]


# -- numpy's global error state is the caller's (dpfit/_floats.py) -----------------------------
def _xy(n: int = 200) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(11)
    X = rng.uniform(-1, 1, (n, 2))
    return X, np.clip(X @ [1.0, -0.5] + 0.2 * rng.standard_normal(n), -1.0, 1.0)


SEEDED = {"rng": 0}
FLOAT_CASES = {
    "ols": lambda X, y: dpfit.ols(
        "y ~ x0 + x1",
        pd.DataFrame({"x0": X[:, 0], "x1": X[:, 1], "y": y}),
        rho=0.5,
        clip=5.0,
        steps=40,
        m=4,
        burn_in=0,
        random_state=0,
    ),
    "DPLinearRegression bounds": lambda X, y: dpfit.DPLinearRegression(
        rho=0.5, bounds=[(-2, 2)] * 2, y_bounds=(-2, 2), steps=40, random_state=0
    ).fit(X, y),
    "dp_ssgd": lambda X, y: alg.dp_ssgd(X, y, rho=0.5, clip=1.0, step_size=0.05, **SEEDED),
    "noisy_gd": lambda X, y: alg.noisy_gd(KL_LOSS, X, y, rho=0.5, steps=4, **SEEDED),
    "adaptive_gd": lambda X, y: alg.adaptive_gd(KL_LOSS, X, y, rho=0.5, **SEEDED),
    "dp_ftrl": lambda X, y: alg.dp_ftrl(
        X, y, loss=KL_LOSS, clip=1.0, epochs=2, batch_size=50, step_size=0.5, rho=0.5, **SEEDED
    ),
    "ssp": lambda X, y: baselines.ssp(X, y, rho=0.5, x_bound=2.0, y_bound=3.0, **SEEDED),
    "adassp": lambda X, y: baselines.adassp(X, y, rho=0.5, x_bound=2.0, y_bound=3.0, **SEEDED),
    "fixed_clip_sgd": lambda X, y: baselines.fixed_clip_sgd(
        X, y, rho=0.5, clip=1.0, steps=8, step_size=0.1, sampling_rate=0.5, **SEEDED
    ),
    "DPIVRegression": lambda X, y: dpfit.DPIVRegression(
        rho=0.5, bounds={"x0": (-2, 2), "z0": (-2, 2)}, y_bounds=(-2, 2), random_state=0
    ).fit(pd.DataFrame({"x0": X[:, 0]}), pd.Series(y, name="y"), Z=pd.DataFrame({"z0": X[:, 1]})),
}


@pytest.mark.parametrize("value", [5e-324, 1e-300, 1.7e308])
@pytest.mark.parametrize("name", sorted(FLOAT_CASES))
def test_the_callers_numpy_error_state_never_sees_a_record(name, value):
    """Under np.seterr(all="raise") one record at 5e-324 raised FloatingPointError part-way
    through a fit (after budget was charged), and under all="warn" underflow warnings appeared
    for it only: every computation on records now ignores floating-point conditions."""
    X, y = _xy()
    X[5, 0] = value
    with np.errstate(all="raise"), warnings.catch_warnings():
        warnings.simplefilter("ignore", dpfit.PrivacyWarning)
        FLOAT_CASES[name](X, y)
    with np.errstate(all="warn"), warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        warnings.simplefilter("ignore", dpfit.PrivacyWarning)  # some are RuntimeWarnings
        FLOAT_CASES[name](X, y)


# -- the IV claim never exceeds the requested rho (models/_iv_moments.py) ----------------------
@pytest.mark.parametrize("rho", [0.5, 0.3, 0.7, 1.0, 0.1, 2.0])
def test_iv_moments_charge_at_most_the_requested_rho(rho):
    """The ledger's exact total (the claim) is at most rho: shares of a budget are split
    exactly, and each release's charge Delta^2 / (2 sigma^2) is kept within its share (it
    used to exceed rho = 0.5 by one ulp)."""
    rng = np.random.default_rng(3)
    z = rng.standard_normal((300, 2))
    x = z @ [1.0, 0.5] + rng.standard_normal(300)
    y = 0.5 * x + rng.standard_normal(300)
    bounds = {"x0": (-5, 5), "z0": (-4, 4), "z1": (-4, 4)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpfit.PrivacyWarning)
        model = dpfit.DPIVRegression(rho=rho, bounds=bounds, y_bounds=(-8, 8), random_state=0)
        model.fit(x[:, None], y, Z=z)
    assert model.privacy_.rho <= rho
    assert model.privacy_.rho == pytest.approx(rho, rel=1e-15)


# -- dpfit.torch: only clipped, noised gradients are ever applied ------------------------------
def _torch_run(extra: bool = False, frozen: bool = False, y_last: float = 0.3):
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader, TensorDataset

    from dpfit.torch import make_private

    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 3))
    y = X @ [1.0, 0.0, -1.0] + 0.5 * rng.standard_normal(40)
    y[-1] = y_last
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Linear(2, 1)).double()
    if frozen:
        model[1].bias.requires_grad_(False)
    params = list(model.parameters())
    scale = torch.nn.Parameter(torch.zeros((), dtype=torch.float64))
    opt = torch.optim.SGD([*params, scale] if extra else params, lr=0.1)
    data = TensorDataset(torch.from_numpy(X), torch.from_numpy(y)[:, None])
    private = make_private(
        model, opt, DataLoader(data, batch_size=10), loss_fn=torch.nn.functional.mse_loss,
        clip=1.0, epochs=1, rho=0.5, random_state=7,
    )  # fmt: skip
    frozen_before = model[1].bias.detach().clone()
    for xb, yb in private.data_loader:
        private.optimizer.zero_grad()
        ((model(xb) - yb) ** 2).mean().backward()  # the ordinary PyTorch habit before step()
        model[1].bias.grad = torch.full_like(model[1].bias, float(y_last))  # a raw gradient
        private.optimizer.step()
    return model, frozen_before


def test_torch_refuses_an_optimizer_parameter_outside_the_model():
    """A tensor the optimizer holds but the model does not got the caller's raw, unclipped
    gradient at every step (a deterministic function of one record); it is refused before
    anything is charged."""
    with recording() as rec, pytest.raises(ValueError, match="not a parameter of the model"):
        _torch_run(extra=True)
    assert len(rec) == 0


@pytest.mark.parametrize("y_last", [0.3, 1e3])
def test_torch_never_applies_a_frozen_parameters_raw_gradient(y_last):
    model, before = _torch_run(frozen=True, y_last=y_last)
    np.testing.assert_array_equal(model[1].bias.detach().numpy(), before.numpy())


@pytest.mark.parametrize("n", [39, 40])
def test_torch_poisson_groups_are_checked_against_the_public_n(n):
    """Under add/remove n is private: ``groups`` is checked against n_public only (it used to
    fail for n = 39 < groups = 40 with a message quoting n)."""
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader, TensorDataset

    from dpfit.torch import make_private

    X = torch.zeros((n, 2), dtype=torch.float64)
    data = DataLoader(TensorDataset(X, X[:, :1]), batch_size=1)
    kw = {"loss_fn": torch.nn.functional.mse_loss, "clip": 1.0, "epochs": 1}
    kw |= {"sampling": "poisson", "n_public": 40, "epsilon": 2.0, "delta": 1e-5}
    for groups, ok in ((40, True), (41, False)):
        model = torch.nn.Linear(2, 1).double()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        if ok:
            make_private(model, opt, data, groups=groups, random_state=1, **kw)
        else:
            with pytest.raises(ValueError, match=r"groups must be in \[1, 40\]"):
                make_private(model, opt, data, groups=groups, random_state=1, **kw)


# -- Dask CSV: one record's text fails before any charge, quoting nothing; or is a zero record --
def _dask_csv(tmp_path, value: str, **read):
    dd = pytest.importorskip("dask.dataframe")
    rng = np.random.default_rng(0)
    n = 4000
    frame = pd.DataFrame({"x0": rng.standard_normal(n), "y": rng.standard_normal(n)})
    frame = frame.astype({"x0": object})
    frame.loc[n - 1, "x0"] = value  # in the last block: Dask inferred float64 from the first
    path = tmp_path / f"{abs(hash(value))}.csv"
    frame.to_csv(path, index=False)
    return dd.read_csv(path, blocksize=20_000, **read), n


DASK_FIT = {"clip": 3.0, "steps": 4, "m": 2, "burn_in": 0, "random_state": 0}


@pytest.mark.parametrize("relation", ["replace-one", "add-remove"])
def test_dask_csv_text_fails_before_any_charge_and_quotes_nothing(tmp_path, relation):
    """Dask's reader used to raise part-way through an add/remove fit (after 0.5 was charged),
    with a message quoting the value; every Dask input is now read once before any charge and
    the error is a fixed DataError (it names no column either: which column failed is a
    record's; tests/neighbours/test_record_errors.py compares two bad values)."""
    dask = pytest.importorskip("dask")
    data, n = _dask_csv(tmp_path, "secret-value-42")
    budget = dpfit.Budget(rho=1.0)
    with dask.config.set(scheduler="synchronous"), recording() as rec:
        with pytest.raises(dpfit.DataError, match="withheld") as err:
            dpfit.ols("y ~ x0", data, rho=0.5, budget=budget, n_public=n, relation=relation,
                      **DASK_FIT)  # fmt: skip
    assert "secret" not in str(err.value) and "\n" not in str(err.value)
    assert len(rec) == 0 and budget.spent == 0.0


def test_dask_csv_column_declared_as_text_is_refused_before_any_read(tmp_path):
    """A column whose Dask metadata says text is refused by the schema (as in memory), before
    anything is read or charged, naming the column and never a value."""
    pytest.importorskip("dask")
    data, n = _dask_csv(tmp_path, "secret-value-42", dtype={"x0": "object"})
    with recording() as rec, pytest.raises(TypeError, match="column 'x0' holds text") as info:
        dpfit.ols("y ~ x0", data, rho=0.5, n_public=n, relation="add-remove", **DASK_FIT)
    assert len(rec) == 0 and "secret" not in str(info.value)
