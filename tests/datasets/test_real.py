"""Offline real datasets load with the documented shapes and reproduce published OLS values."""

import numpy as np
import pytest

from dpfit.baselines import nonprivate_ols
from dpfit.datasets import load_card, load_dataset, load_labsup, load_mroz
from dpfit.models import design_matrices


def _ols(formula, df):
    y, X, _ = design_matrices(formula, df)
    return nonprivate_ols(np.column_stack([np.ones(len(X)), X.to_numpy()]), y.to_numpy())


def test_card_samples():
    assert load_card().shape == (3010, 34)
    liang = load_card(sample="liang2025")
    assert len(liang) == 2191  # spec A9 / data.md
    assert not liang[["nearc2", "nearc4", "fatheduc", "motheduc", "KWW"]].isna().any().any()


def test_card_wage_equation_matches_published_ols():
    # data.md C1 [verified]: OLS, Verbeek 5.1 / Card T2(1) controls: b_educ 0.07401 (0.00350).
    fit = _ols("lwage ~ educ + exper + expersq + black + smsa + south", load_card())
    assert fit.params[1] == pytest.approx(0.07401, abs=5e-6)
    # data.md used linearmodels' unadjusted s^2 = RSS / n; ours divides by n - p (p = 7).
    assert fit.bse[1] * np.sqrt((3010 - 7) / 3010) == pytest.approx(0.00350, abs=5e-6)


def test_mroz_working_sample_matches_published_ols():
    # data.md C3 [verified]: Mroz OLS lwage ~ educ on the 428 working women: 0.1086 (0.0144).
    df = load_mroz(sample="working")
    assert df.shape == (428, 22) and load_mroz().shape == (753, 22)
    fit = _ols("lwage ~ educ", df)
    assert fit.params[1] == pytest.approx(0.1086, abs=5e-5)
    assert fit.bse[1] == pytest.approx(0.0144, abs=5e-5)  # n - p vs n: within 5e-5


def test_labsup_samples_are_fixed():
    full = load_labsup()
    assert full.shape == (31857, 20)
    a, b = load_labsup(sample="liang2025"), load_labsup(sample="liang2025")
    assert len(a) == 8065 and a.equals(b)


def test_load_dataset_by_name_and_errors():
    assert load_dataset("diabetes").shape == (442, 11)
    assert len(load_dataset("card", sample="liang2025")) == 2191
    with pytest.raises(ValueError, match="dataset must be one of"):
        load_dataset("nope")
    with pytest.raises(ValueError, match="sample must be one of"):
        load_dataset("card", sample="tiny")
