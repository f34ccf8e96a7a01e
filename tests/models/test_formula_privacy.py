"""Formula designs are row-wise with public columns (issue 13, findings 2 and 3).

A formula may neither learn from the data (stateful transforms such as ``scale``) nor read its
categorical levels off the data; a record whose categorical value is not a declared level is
the zero record, the same rule as on Dask (``tests/distributed/test_models_on_dask.py``).
"""

import warnings

import numpy as np
import pandas as pd
import pytest

import dpfit
from dpfit.exceptions import CoverageWarning, IdentificationWarning, UndeclaredLevelsWarning
from dpfit.mechanisms import recording
from dpfit.models import design_matrices

N = 600
LEVELS = "levels=['a', 'b', 'c']"
G = f"C(g, {LEVELS})"
GD = {"rho": 1.0, "clip": 20.0, "steps": 60, "step_size": 0.01, "m": 10, "burn_in": 0}


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(13)
    df = pd.DataFrame(
        {
            "x": rng.uniform(1, 10, N),
            "z": rng.uniform(0, 1, N),
            "g": rng.choice(["a", "b", "c"], N),
        }
    )
    df["w"] = df["z"] + rng.normal(0, 0.5, N)
    df["y"] = 1.0 + 0.5 * df["x"] + (df["g"] == "b") + rng.normal(0, 1, N)
    return df


# -- finding 2: stateful transforms -----------------------------------------------------------
@pytest.mark.parametrize(
    ("term", "match"),
    [
        ("scale(x)", "scale\\(\\) is a stateful transform"),
        ("center(x)", "center\\(\\) is a stateful transform"),
        ("standardize(x)", "standardize\\(\\) is a stateful transform"),
        ("poly(x, 2)", "poly\\(\\) is a stateful transform"),
        ("bs(x, df=3)", "bs\\(\\) is a stateful transform"),
        ("lag(x)", "another record"),
        ("I(x - x.mean())", "x.mean\\(\\)"),
        ("np.mean(x)", "np.mean\\(\\) is not a row-wise transform"),
    ],
)
def test_stateful_transforms_are_refused_before_any_draw(frame, term, match):
    budget = dpfit.Budget(rho=5.0)
    with recording() as rec:
        with pytest.raises(ValueError, match=match) as err:
            dpfit.ols(f"y ~ x + {term}", frame, budget=budget, random_state=0, **GD)
        assert "formula term" in str(err.value) and "\n" not in str(err.value)
        with pytest.raises(ValueError, match=match):
            dpfit.iv(f"y ~ {term} + [w ~ z]", frame, rho=1.0, budget=budget, random_state=0)
    assert len(rec) == 0 and budget.spent == 0.0


@pytest.mark.parametrize(
    "formula",
    ["y ~ np.log(x) + I(x ** 2)", "y ~ x * z + np.clip(x, 2, 8)", "y ~ {x / 10} + log(x)"],
)
def test_row_wise_transforms_stay_allowed(frame, formula):
    res = dpfit.ols(formula, frame, random_state=0, **GD)
    assert np.isfinite(res.params).all()


def test_design_rows_depend_only_on_their_own_record(frame):
    """Replacing one record changes one design row (the premise of the 2C/n sensitivity)."""
    formula = f"y ~ np.log(x) + I(x ** 2) + x:z + {G}"
    other = frame.copy()
    other.loc[7, ["x", "z", "g", "y"]] = [9.5, 0.9, "c", 40.0]
    _, X, _ = design_matrices(formula, frame)
    _, X2, _ = design_matrices(formula, other)
    changed = (X != X2).any(axis=1).to_numpy()
    assert changed.tolist() == [i == 7 for i in range(N)]


# -- finding 3: category levels ---------------------------------------------------------------
def test_undeclared_levels_are_refused_with_a_hint(frame):
    budget = dpfit.Budget(rho=5.0)
    with recording() as rec:
        with pytest.raises(TypeError, match=r"C\(g, levels=\[\.\.\.\]\)"):
            dpfit.ols("y ~ x + C(g)", frame, budget=budget, random_state=0, **GD)
        with pytest.raises(TypeError, match=r"C\(g, levels=\[\.\.\.\]\)"):
            dpfit.iv("y ~ C(g) + [w ~ z]", frame, rho=1.0, budget=budget, random_state=0)
    assert len(rec) == 0 and budget.spent == 0.0


@pytest.mark.parametrize("term", ["g", "x:g"])
def test_a_text_variable_without_declared_levels_is_refused(frame, term):
    """Without C(g, levels=[...]) a variable is a number; a text column (its dtype, the
    public schema) is refused before anything is charged, with the fixes named, never read
    as all zero records (a full table of nothing)."""
    budget = dpfit.Budget(rho=5.0)
    with recording() as rec, pytest.raises(TypeError, match=r"column 'g' holds text.*C\(g, "):
        dpfit.ols(f"y ~ x + {term}", frame, budget=budget, random_state=0, **GD)
    assert len(rec) == 0 and budget.spent == 0.0


def test_a_number_coded_category_needs_declared_levels_too(frame):
    df = frame.assign(k=np.where(frame["g"] == "a", 1, 2))
    with pytest.raises(TypeError, match=r"C\(k, levels=\[\.\.\.\]\)"):
        dpfit.ols("y ~ C(k)", df, random_state=0, **GD)
    res = dpfit.ols("y ~ C(k, levels=[1, 2, 3])", df, random_state=0, **GD)
    assert list(res.names) == [
        "Intercept",
        "C(k, levels=[1, 2, 3])[T.2]",
        "C(k, levels=[1, 2, 3])[T.3]",
    ]


def test_declared_levels_not_the_data_fix_the_terms(frame):
    """A level absent from the data still has its term: names and dimension are public."""
    only_ab = frame[frame["g"] != "c"].reset_index(drop=True)
    res = dpfit.ols(f"y ~ x + {G}", only_ab, random_state=0, **GD)
    assert list(res.names) == ["Intercept", "x", f"{G}[T.b]", f"{G}[T.c]"]
    declared = only_ab.assign(g=only_ab["g"].astype(pd.CategoricalDtype(["a", "b", "c"])))
    with pytest.warns(UndeclaredLevelsWarning, match="column 'g' is categorical"):
        res = dpfit.ols("y ~ x + g", declared, random_state=0, **GD)
    assert list(res.names) == ["Intercept", "x", "g[T.b]", "g[T.c]"]


@pytest.mark.filterwarnings(  # a small test design: the released meat is mostly noise (public)
    "ignore:The population interval may not cover:dpfit.exceptions.CoverageWarning"
)
def test_indicator_columns_get_bounds_zero_one(frame):
    res = dpfit.ols(
        f"y ~ x + {G}",
        frame,
        bounds={"x": (0, 10)},
        y_bounds=(-5, 20),
        random_state=0,
        **{k: v for k, v in GD.items() if k not in ("clip", "step_size")},
    )
    assert f"{G}[T.b] [0, 1]" in res.config["bounds"]
    assert f"{G}[T.c] [0, 1]" in res.config["bounds"]
    with warnings.catch_warnings():  # a small frame: the instrument is weak against the noise
        warnings.simplefilter("ignore", CoverageWarning)
        warnings.simplefilter("ignore", IdentificationWarning)
        ivres = dpfit.iv(
            f"y ~ {G} + [w ~ z]",
            frame,
            rho=1.0,
            bounds={"w": (-3, 4), "z": (0, 1)},
            y_bounds=(-5, 20),
            random_state=0,
        )
    assert f"{G}[T.c] [0, 1]" in ivres.config["bounds"]


def _with_outsider(frame, x, y, g="zzz"):
    """The frame with record 0 given a categorical value outside the declared levels."""
    df = frame.copy()
    df.loc[0, ["x", "z", "w", "y", "g"]] = [x, 0.5, x / 5, y, g]
    return df


@pytest.mark.filterwarnings(  # a small test design: the released meat is mostly noise (public)
    "ignore:The population interval may not cover:dpfit.exceptions.CoverageWarning"
)
@pytest.mark.parametrize("declare", ["levels", "dtype"])
def test_a_value_outside_the_declared_levels_is_the_zero_record(frame, declare):
    """The outsider's other values do not matter (it adds nothing to any sum), and it is not
    counted in the reference level with its y kept."""
    kw = {"bounds": {"x": (0, 10)}, "y_bounds": (-5, 20), "steps": 60, "m": 10, "burn_in": 0}

    def fit(df):
        if declare == "dtype":  # pandas turns an undeclared value into a missing one
            df = df.assign(g=df["g"].where(df["g"].isin(["a", "b", "c"])))
            df = df.assign(g=df["g"].astype(pd.CategoricalDtype(["a", "b", "c"])))
            with pytest.warns(UndeclaredLevelsWarning):
                return dpfit.ols("y ~ x + g", df, rho=1.0, random_state=4, **kw)
        return dpfit.ols(f"y ~ x + {G}", df, rho=1.0, random_state=4, **kw)

    first = fit(_with_outsider(frame, 1.0, -3.0))
    second = fit(_with_outsider(frame, 9.0, 19.0))
    np.testing.assert_array_equal(first.estimate, second.estimate)
    in_reference_level = fit(_with_outsider(frame, 1.0, -3.0, g="a"))
    assert not np.array_equal(first.estimate, in_reference_level.estimate)
    assert first.n == N


@pytest.mark.filterwarnings(  # 40 steps: too few for DP-2S-GD's convergence check (public)
    "ignore:The convergence of DP-2S-GD cannot be checked:dpfit.exceptions.CoverageWarning"
)
def test_iv_outside_the_declared_levels_is_the_zero_record(frame):
    bounds = {"w": (-3, 4), "z": (0, 1), "x": (0, 10)}

    def fit(df):
        return dpfit.iv(
            f"y ~ x + {G} + [w ~ z]",
            df,
            rho=1.0,
            bounds=bounds,
            y_bounds=(-5, 20),
            method="2s-gd",
            steps=40,
            random_state=5,
        )

    first = fit(_with_outsider(frame, 1.0, -3.0))
    second = fit(_with_outsider(frame, 9.0, 19.0))
    np.testing.assert_array_equal(first.estimate, second.estimate)
    inside = fit(_with_outsider(frame, 1.0, -3.0, g="a"))
    assert not np.array_equal(first.estimate, inside.estimate)


@pytest.mark.parametrize("formula", ["y ~ x + np.log(x)", "np.log(y + 20) ~ x"])
def test_a_non_finite_transform_of_finite_data_is_the_zero_record(frame, formula):
    """np.log(0) = -inf, np.log(-1) = nan: whether a finite record hits such a value must not
    decide an error (one record would), so it is the zero record, as on Dask."""
    column = "x" if "log(x)" in formula else "y"
    first, second = frame.copy(), frame.copy()
    first.loc[0, column] = 0.0 if column == "x" else -20.0
    second.loc[0, column] = -1.0 if column == "x" else -25.0
    fits = [dpfit.ols(formula, df, random_state=3, **GD) for df in (first, second)]
    np.testing.assert_array_equal(fits[0].estimate, fits[1].estimate)
    assert np.isfinite(fits[0].estimate).all()


def test_infinite_data_are_refused_before_any_draw(frame):
    df = frame.copy()
    df.loc[0, "x"] = np.inf
    with recording() as rec, pytest.raises(ValueError, match="column 'x' has infinite values"):
        dpfit.ols("y ~ x", df, random_state=0, **GD)
    assert len(rec) == 0
