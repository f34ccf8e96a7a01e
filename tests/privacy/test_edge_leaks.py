"""Edge leaks: something other than the noised quantity must not depend on one record.

Each test pins one path by which a single record used to change what the user sees beyond
its declared sensitivity, or to change another record's contribution
(``docs/threat-model.md``, "Known limitations inside the model").
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

import dpfit
from dpfit import algorithms as alg
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
        ("y ~ I(income ** 2)", "income", "18446744073709551616"),  # beyond uint64: text
        ("y ~ I(income ** 2)", "income", "abc"),
        ("y ~ x0 + I(income ** 2)", "x0", "0x10"),
    ],
)
def test_one_records_value_never_changes_another_records_row(formula, column, text):
    """A CSV cell that changes the column's inferred dtype changes only its own record's row
    (a text value makes that record the zero record, an all-NaN row)."""
    row = N - 1
    before = _design(formula, _csv(CODES))
    after = _design(formula, _csv(CODES, row, column, text))
    assert list(before.columns) == list(after.columns)
    others = np.arange(N) != row
    np.testing.assert_array_equal(before.to_numpy()[others], after.to_numpy()[others])
    assert np.isfinite(before.to_numpy()).all()
    if text in ("x", "2a", "2.5", "abc", "0x10"):
        assert after.iloc[row].isna().all()  # not a number / not a level: the zero record


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
    argv = ["--formula", formula, "--clip", "5", "--steps", "20", "--m", "2", "--burn-in", "0"]
    argv += ["--rho", "1", "--seed", "3"]
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


# -- clip=False: the declared bound is enforced, never trusted (docs/menart2024.md) ------------
KL_LOSS = SquaredLoss(y_bound=1.0, radius=2.0)  # L0 from the unit ball: |x| <= 1 declared
KL = {"gamma": 1.0, "kappa": 2.0, "loss_bound": 1.0}
NO_CLIP = {
    "noisy_gd": lambda X, y: alg.noisy_gd(KL_LOSS, X, y, rho=0.5, steps=4, clip=False, rng=1),
    "kl_spider": lambda X, y: alg.kl_spider(KL_LOSS, X, y, rho=0.5, clip=False, rng=1, **KL),
    "proximal_point": lambda X, y: alg.proximal_point(
        KL_LOSS, X, y, rho=0.5, clip=False, rng=1, inner_cap=4, **{**KL, "kappa": 3.0}
    ),
    "adaptive_gd": lambda X, y: alg.adaptive_gd(KL_LOSS, X, y, rho=0.5, clip=False, rng=1),
    "minimize": lambda X, y: dpfit.minimize(
        KL_LOSS, (X, y), rho=0.5, method="noisy-gd", steps=4, clip=False, random_state=1
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
    most its declared sensitivity, with clip=False too (it used to move 1e11 times that)."""
    X, y = _unit_ball(5000 if name in ("kl_spider", "proximal_point") else 200)
    X2 = X.copy()
    X2[-1, 0] = 1e6
    report = check_neighbours(NO_CLIP[name], (X, y), (X2, y))
    assert report.releases > 0 and report.max_share <= 1.0
