"""Per-record inputs of the GLMs that are not numbers a fit can use are refused value-free.

An outside review (branch r-glm28, findings 3 and 4) found that a NaN, zero or negative
exposure silently made its record the zero record, unlike a missing cell of any other column,
and that DPLogisticRegression with labels mixing text and numbers failed inside numpy. Every
refusal here happens before anything is charged, names the column, and quotes no value.
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

import dpfit
from dpfit.models.glm import DPLogisticRegression, DPPoissonRegressor
from dpfit.privacy import Budget

N = 200
BAD_EXPOSURES = [np.nan, 0.0, -2.0, np.inf, -5e-324]


def _counts() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"x": rng.uniform(0, 1, N), "t": rng.uniform(0.5, 2.0, N)})
    frame["y"] = rng.poisson(frame["t"]).astype(float)
    return frame


def _refused(fit, match: str) -> str:
    budget = Budget(rho=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=match) as err:
            fit(budget)
    assert budget.spent == 0.0
    return str(err.value)


@pytest.mark.parametrize("bad", BAD_EXPOSURES)
def test_an_exposure_that_is_not_positive_is_refused_by_every_entry_point(bad):
    frame = _counts()
    frame.loc[7, "t"] = bad
    formula = _refused(
        lambda b: dpfit.poisson("y ~ x", frame, rho=0.5, bounds={"x": (0, 1)},
                                y_bounds=(0, 10), exposure="t", budget=b, random_state=1),
        "exposure column 't' has missing, infinite, zero or negative values",
    )  # fmt: skip
    estimator = _refused(
        lambda b: DPPoissonRegressor(rho=0.5, bounds=(0, 1), y_bounds=(0, 10), random_state=1)
        .fit(frame[["x"]], frame["y"], exposure=frame["t"].to_numpy(), budget=b),
        "exposure has missing, infinite, zero or negative values",
    )  # fmt: skip
    for message in (formula, estimator):
        assert "does not drop records" in message and "nan" not in message.lower()
        assert "inf " not in message and "-2" not in message


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_missing_or_infinite_offset_is_refused(bad):
    frame = _counts().assign(o=0.3)
    frame.loc[3, "o"] = bad
    _refused(
        lambda b: dpfit.poisson("y ~ x", frame, rho=0.5, bounds={"x": (0, 1)},
                                y_bounds=(0, 10), offset="o", budget=b, random_state=1),
        "offset column 'o' has missing or infinite values",
    )  # fmt: skip
    _refused(
        lambda b: DPPoissonRegressor(rho=0.5, bounds=(0, 1), y_bounds=(0, 10), random_state=1)
        .fit(frame[["x"]], frame["y"], offset=frame["o"].to_numpy(), budget=b),
        "offset has missing or infinite values",
    )  # fmt: skip


def test_a_negative_offset_is_a_number_like_any_other():
    frame = _counts().assign(o=-0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = dpfit.poisson("y ~ x", frame, rho=0.5, bounds={"x": (0, 1)}, y_bounds=(0, 10),
                            offset="o", random_state=1)  # fmt: skip
    assert np.isfinite(res.params).all()


def test_the_cli_refuses_an_empty_exposure_cell(tmp_path):
    frame = _counts()
    frame.loc[5, "t"] = np.nan
    path = tmp_path / "d.csv"
    frame.to_csv(path, index=False)
    run = subprocess.run(
        [sys.executable, "-m", "dpfit", "fit", str(path), "--family", "poisson",
         "--formula", "y ~ x", "--bound", "x=0,1", "--y-bounds", "0,10", "--exposure", "t",
         "--rho", "0.5"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert run.returncode != 0 and run.stdout == ""
    assert "exposure column 't' has missing, infinite, zero or negative values" in run.stderr


def test_exposure_with_dask_data_is_refused_before_any_charge():
    dd = pytest.importorskip("dask.dataframe")
    frame = dd.from_pandas(_counts(), npartitions=2)
    for exposure in ("t", None):
        budget = Budget(rho=1.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(TypeError, match="exposure= and offset= need in-memory data"):
                dpfit.poisson("y ~ x", frame, rho=0.5, bounds={"x": (0, 1)}, y_bounds=(0, 10),
                              exposure=exposure, offset=None if exposure else "t",
                              n_public=N, budget=budget)  # fmt: skip
        assert budget.spent == 0.0


@pytest.mark.parametrize(
    "labels",
    [
        lambda y: np.where(y > 0, "yes", "no").astype(object),  # text, and one int below
        lambda y: y.astype(object),  # numbers, and one text label below
    ],
)
def test_labels_mixing_text_and_numbers_get_the_librarys_message(labels):
    frame = _counts()
    y = labels((frame["y"] > 1).to_numpy(float))
    y[11] = 7 if isinstance(y[0], str) else "yes"
    message = _refused(
        lambda b: DPLogisticRegression(rho=0.5, bounds=(0, 1), random_state=1)
        .fit(frame[["x"]], y, budget=b),
        "y holds labels of more than one type",
    )  # fmt: skip
    assert "'<' not supported" not in message and "7" not in message
