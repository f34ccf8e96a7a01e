"""A new user's mistakes after a fit, and warnings that name their culprit.

Each mistake on a result (a misspelt term, a frame missing a variable, a file name where
alpha goes, one result where a list goes) is one line naming the culprit and the fix, never
a third-party ``KeyError``. ``score`` says that it computes on the data it is given. The
zero-record warning names the formula's terms that can make a zero record, and the budget's
refusal shows a rounding residue as 0.
"""

import math
import re
import warnings

import numpy as np
import pandas as pd
import pytest

import dpfit
from dpfit.codebook import load_codebook
from dpfit.exceptions import BudgetExceededError, NonPrivateWarning, SideConditionWarning
from dpfit.serve.schema import parse_schema

RNG = np.random.default_rng(31)
N = 1500
FRAME = pd.DataFrame({"x": RNG.uniform(0, 10, N), "z": RNG.integers(0, 2, N).astype(float)})
FRAME["g"] = np.where(RNG.uniform(size=N) < 0.5, "North", "South")
FRAME["y"] = 1.0 + 0.5 * FRAME["x"] - FRAME["z"] + RNG.normal(0, 1, N)
KW = {"rho": 1.0, "bounds": {"x": (0, 10), "z": (0, 1)}, "y_bounds": (-5, 15)}
KW |= {"steps": 400, "random_state": 0}


@pytest.fixture(scope="module")
def res():
    return dpfit.ols("y ~ x + z", FRAME, **KW)


def _one_line(exc_info) -> str:
    message = str(exc_info.value)
    assert "\n" not in message
    return message


def test_t_test_of_a_misspelt_term_names_it_and_the_terms(res):
    with pytest.raises(ValueError) as info:
        res.t_test("xx = 0")
    message = _one_line(info)
    assert "'xx' is not a term of the model; did you mean 'x'?" in message
    assert "['Intercept', 'x', 'z']" in message


def test_t_test_syntax_error_is_one_line(res):
    with pytest.raises(ValueError, match=r"restrictions 'x == 0': .*e\.g\. 'educ = 0") as info:
        res.t_test("x == 0")
    _one_line(info)


def test_predict_without_a_variable_names_the_missing_column(res):
    with pytest.raises(ValueError) as info:
        res.predict(pd.DataFrame({"x": [1.0, 2.0]}))
    assert "exog lacks the columns ['z']" in _one_line(info)


def test_plot_given_a_file_name_says_to_savefig(res):
    with pytest.raises(TypeError) as info:
        res.plot("coef.png")
    assert "res.plot().savefig('coef.png')" in _one_line(info)


def test_summary_col_of_one_result_asks_for_a_list(res):
    with pytest.raises(TypeError) as info:
        dpfit.summary_col(res)
    assert "summary_col([res])" in _one_line(info)


def test_score_warns_that_it_computes_on_the_data_it_is_given():
    X, y = FRAME[["x", "z"]].to_numpy(), FRAME["y"].to_numpy()
    model = dpfit.DPLinearRegression(
        rho=1.0, bounds=[(0, 10), (0, 1)], y_bounds=(-5, 15), random_state=0
    ).fit(X, y)
    with pytest.warns(NonPrivateWarning, match=r"score\(\) computes R\^2 .* without privacy"):
        r2 = model.score(X, y)
    # The same number scikit-learn's RegressorMixin.score gives: 1 - SS_res / SS_tot.
    resid = y - model.predict(X)
    assert r2 == pytest.approx(1 - resid @ resid / np.sum((y - y.mean()) ** 2), rel=1e-12)


@pytest.mark.parametrize(
    "formula, terms",
    [
        # Levels in the wrong case: every record is outside them.
        ("y ~ x + C(g, levels=['north', 'south'])", [r"C\(g, levels=\['north', 'south'\]\)"]),
        # A transform undefined for some values (y <= 2 for about a quarter of the records).
        ("np.log(y - 2) ~ x + z", [r"np\.log\(y - 2\)"]),
    ],
)
def test_many_zero_records_warn_naming_the_terms_that_can_make_them(formula, terms):
    kw = {**KW, "bounds": {"x": (0, 10), **({"z": (0, 1)} if "z" in formula else {})}}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dpfit.ols(formula, FRAME, **kw)
    zero = [str(w.message) for w in caught if issubclass(w.category, SideConditionWarning)]
    zero = [m for m in zero if "zero records" in m]
    assert len(zero) == 1, [str(w.message) for w in caught]
    assert "text column" not in zero[0]  # the old hint, which fitted none of these
    for term in terms:
        assert re.search(rf"terms that can make one: {term} \(", zero[0]), zero[0]


def test_a_rounding_residue_of_the_budget_reads_as_zero():
    budget = dpfit.Budget(rho=0.5)
    # What a fit's split shares leave: their charges sum to a few ulps below the total.
    budget.spend(math.nextafter(0.5, 0.0))
    assert 0.0 < budget.remaining < 1e-15  # the accounting keeps the exact residue
    with pytest.raises(BudgetExceededError, match=r"the remaining budget 0 \(total 0\.5\)"):
        budget.spend(0.25)


def test_what_is_left_reads_below_the_charge_it_refuses():
    budget = dpfit.Budget(rho=0.5)
    for _ in range(9):
        budget.spend(0.05)  # float(0.05) is above 0.05: nine of them leave just under 0.05
    left = repr(budget.remaining)
    with pytest.raises(BudgetExceededError, match=rf"remaining budget {left} \(total 0\.5\)"):
        budget.spend(0.05)
    budget = dpfit.Budget(rho=1.0)
    budget.spend(0.75)
    with pytest.raises(BudgetExceededError, match=r"remaining budget 0\.25 \(total 1\)"):
        budget.spend(0.5)


def test_codebook_and_serve_schema_accept_each_others_type_spellings():
    book = load_codebook(
        {
            "x": {"type": "numeric", "bounds": [0, 10]},
            "g": {"type": "categorical", "levels": ["North", "South"]},
            "z": {"type": "boolean"},
        }
    )
    assert book.columns["x"].type == "number" and book.bounds("x") == (0.0, 10.0)
    assert book.categories() == {"g": ("North", "South")}
    assert book.bounds("z") == (0.0, 1.0)
    schema = parse_schema(
        {
            "columns": {
                "x": {"type": "number", "bounds": [0, 10]},
                "g": {"type": "category", "levels": ["North", "South"]},
            }
        }
    )
    assert [c.type for c in schema.columns] == ["numeric", "categorical"]


def test_estimator_names_the_frame_columns_with_missing_values():
    """A frame with blanks in two columns: the refusal names both columns (the public
    schema) and no value or row, before anything is charged."""
    import pandas as pd

    from dpfit import Budget, DPLinearRegression

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"educ": rng.uniform(0, 18, 50), "tenure": rng.uniform(0, 9, 50),
                      "exper": rng.uniform(0, 30, 50)})
    X.loc[3, "tenure"] = np.nan
    X.loc[7, "exper"] = np.inf
    budget = Budget(rho=1.0)
    est = DPLinearRegression(rho=0.5, bounds=(0.0, 30.0), y_bounds=(0.0, 5.0), random_state=0)
    with pytest.raises(ValueError) as info:
        est.fit(X, rng.uniform(0, 5, 50), budget=budget)
    message = str(info.value)
    assert "'tenure', 'exper'" in message and "'educ'" not in message
    assert not any(ch.isdigit() for ch in message)
    assert budget.spent == 0
