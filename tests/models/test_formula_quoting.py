"""Q("awkward name") is formulaic's quoting of a column name: a lookup, so dpfit allows it.

formulaic implements Q() as a stateful transform that learns nothing (its state is empty);
dpfit's backstop against stateful transforms (models/_design.py) refused it, and quoted the
whole right-hand side instead of the offending factor.
"""

import warnings

import numpy as np
import pandas as pd
import pytest

import dpfit
from dpfit.exceptions import CoverageWarning
from dpfit.models import _design

RNG = np.random.default_rng(15)
DF = pd.DataFrame({"Educ ": RNG.uniform(0, 1, 500), "y": RNG.uniform(0, 1, 500)})
KW = {"rho": 0.5, "random_state": 0, "bounds": {"Q('Educ ')": (0, 1)}, "y_bounds": (0, 1)}


def _frame(backend):
    if backend == "dask":
        dd = pytest.importorskip("dask.dataframe")
        return dd.from_pandas(DF, npartitions=2), {"n_public": len(DF)}
    return DF, {}


@pytest.mark.parametrize("backend", ["memory", "dask"])
def test_a_quoted_column_name_fits(backend):
    data, extra = _frame(backend)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CoverageWarning)  # a small design; not the point here
        fit = dpfit.ols("y ~ Q('Educ ')", data=data, **KW, **extra)
    assert list(fit.params.index) == ["Intercept", "Q('Educ ')"]


def test_the_stateful_backstop_names_the_factor_not_the_side(monkeypatch):
    monkeypatch.setattr(_design, "check_terms", lambda side: None)  # reach the backstop
    meta = DF.iloc[:0]
    with pytest.raises(ValueError, match=r"^formula term 'center\(y\)': stateful"):
        _design.design_spec("Q('Educ ') + center(y)", meta)
