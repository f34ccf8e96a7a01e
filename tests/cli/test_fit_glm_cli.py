"""``dpfit fit DATA --family binomial|poisson``: the private GLM from the shell."""

import numpy as np
import pandas as pd
import pytest

from dpfit.cli import main


@pytest.fixture(scope="module")
def counts(tmp_path_factory):
    gen = np.random.default_rng(3)  # synthetic data, not privacy noise
    df = pd.DataFrame({"x": gen.uniform(0, 10, 4000), "years": gen.uniform(0.5, 2, 4000)})
    df["visits"] = gen.poisson(df.years * np.exp(-0.5 + 0.15 * df.x))
    df["any"] = (df.visits > 0).astype(int)
    path = tmp_path_factory.mktemp("glm") / "visits.csv"
    df.to_csv(path, index=False)
    return str(path)


COMMON = ["--rho", "1", "--seed", "1", "--bound", "x=0,10"]


def test_binomial_prints_a_logistic_summary(counts, capsys):
    assert main(["fit", counts, "--family", "binomial", "--formula", "any ~ x", *COMMON]) == 0
    out = capsys.readouterr().out
    assert "DP logistic regression results" in out
    assert "the population coefficients of the maximum-likelihood fit" in out


def test_probit_link(counts, capsys):
    args = ["fit", counts, "--family", "binomial", "--link", "probit", "--formula", "any ~ x"]
    assert main([*args, *COMMON]) == 0
    assert "DP probit regression results" in capsys.readouterr().out


def test_poisson_with_exposure(counts, capsys):
    args = ["fit", counts, "--family", "poisson", "--formula", "visits ~ x"]
    assert main([*args, *COMMON, "--y-bounds", "0,30", "--exposure", "years"]) == 0
    out = capsys.readouterr().out
    assert "DP Poisson regression results" in out and "[0, 30] (counts above K" in out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--family", "binomial", "--clip", "2"], "--clip applies to --family gaussian only"),
        (["--family", "binomial", "--method", "adassp"], "--method applies to --family gaussian"),
        (["--family", "poisson"], "y_bounds=(0, K) is required"),
        (["--family", "poisson", "--y-bounds", "1,30"], "(0, K)"),
        (["--family", "poisson", "--link", "probit", "--y-bounds", "0,30"], "--link applies"),
        (["--family", "binomial", "--exposure", "years"], "--exposure applies"),
        (["--family", "gamma"], "family must be one of"),
    ],
)
def test_glm_mistakes_exit_2(counts, capsys, extra, message):
    formula = "visits ~ x" if "poisson" in extra else "any ~ x"
    assert main(["fit", counts, "--formula", formula, *COMMON, *extra]) == 2
    assert message in capsys.readouterr().err


def test_a_glm_needs_bounds(counts, capsys):
    args = ["fit", counts, "--family", "binomial", "--formula", "any ~ x", "--rho", "1"]
    assert main(args) == 2
    assert "--bound TERM=LOW,HIGH is required" in capsys.readouterr().err


@pytest.fixture(scope="module")
def survey(tmp_path_factory):
    """A user's CSV: a yes/no outcome written as text, a missing value in one column."""
    gen = np.random.default_rng(5)  # synthetic data, not privacy noise
    n = 3000
    df = pd.DataFrame({"age": gen.uniform(20, 60, n), "kids": gen.integers(0, 4, n)})
    works = gen.uniform(size=n) < 1 / (1 + np.exp(1 - 0.05 * (df.age - 40) + 0.5 * df.kids))
    df["answer"] = np.where(works, "yes", "no")
    df["income"] = gen.uniform(0, 100, n)
    df.loc[11, "income"] = np.nan
    path = tmp_path_factory.mktemp("survey") / "survey.csv"
    df.to_csv(path, index=False)
    return str(path)


SURVEY = ["--family", "binomial", "--rho", "1", "--seed", "1"]
AGE_KIDS = ["--bound", "age=20,60", "--bound", "kids=0,4"]


def test_a_text_outcome_is_declared_in_the_formula(survey, capsys):
    formula = "C(answer, levels=['no', 'yes']) ~ age + kids"
    assert main(["fit", survey, "--formula", formula, *SURVEY, *AGE_KIDS]) == 0
    assert "DP logistic regression results" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("formula", "bounds", "message"),
    [
        ("answer ~ age + kids", AGE_KIDS, "C(answer, levels=[non-event, event])"),
        (
            "C(answer, levels=['no', 'yes']) ~ age + income",
            ["--bound", "age=20,60", "--bound", "income=0,100"],
            "'income' has missing values",
        ),
        (
            "C(answer, levels=['no', 'yes']) ~ age + kids + income",
            AGE_KIDS,
            "add --bound income=LOW,HIGH",
        ),
        ("C(answer, levels=['no', 'yes']) ~ agee", ["--bound", "agee=20,60"], "did you mean 'age'"),
    ],
)
def test_a_users_csv_gets_clear_errors_without_values(survey, capsys, formula, bounds, message):
    assert main(["fit", survey, "--formula", formula, *SURVEY, *bounds]) == 2
    err = capsys.readouterr().err
    assert message in err and "yes" not in err.replace("'yes']", "")
