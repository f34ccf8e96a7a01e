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
