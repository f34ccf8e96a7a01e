"""The exponential families of the private GLM: the per-record score, weight and public bounds.

A generalised linear model has a linear predictor eta_i = d_i'theta + o_i (o_i an offset,
e.g. log exposure) and a mean mu_i = g^-1(eta_i). Its negative log-likelihood l_i(theta)
has gradient -r_i d_i and Hessian w_i d_i d_i', with the **score residual** r_i and the
**observed weight** w_i >= 0 given here per family (McCullagh & Nelder 1989, ch. 2 and 4;
for the canonical links r = y - mu and w = Var(mu)):

=========  ======  =====================================  ========================  ==========
family     link    r_i                                    w_i (observed)            |r| bound
=========  ======  =====================================  ========================  ==========
binomial   logit   y - mu                                 mu (1 - mu), <= 1/4       1 (exact)
binomial   probit  y l1 - (1 - y) l0                      y l1 (eta + l1)           3
                                                          + (1 - y) l0 (l0 - eta)
poisson    log     y - mu                                 mu                        K
=========  ======  =====================================  ========================  ==========

with l1 = phi(eta) / Phi(eta) and l0 = phi(eta) / (1 - Phi(eta)) (the probit weight is in
[0, 1]).

The private fit clips each record's gradient at ``score_bound`` times the public row bound.
For the logit link |y - mu| <= 1 for every y in [0, 1], so that clip is exact: nothing is
ever clipped and the clipped fit *is* the maximum-likelihood fit (no clipping bias, at any
n). The probit score grows like |eta| for a badly predicted record, so it is clipped at
:data:`PROBIT_SCORE` (a record with y = 1 needs eta < -2.8, a fitted probability below
0.3%, to reach it). The Poisson count is clipped to the public [0, K] and its score
y - mu is clipped at K, which binds only where the fitted mean exceeds K.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special, stats

from .._validation import check_option

__all__ = ["FAMILIES", "LINKS", "PROBIT_SCORE", "Family", "get_family"]

#: The probit score's clip (module docstring).
PROBIT_SCORE = 3.0
#: Linear predictors are capped at this size before exp: e^50 ~ 5e21, far beyond any count
#: bound, so the cap changes no clipped gradient (a larger mean is clipped anyway).
ETA_CAP = 50.0
#: Families and their links (the first is the default, the canonical one).
LINKS = {"binomial": ("logit", "probit"), "poisson": ("log",)}
FAMILIES = tuple(LINKS)


def _cap(eta: np.ndarray) -> np.ndarray:
    return np.clip(eta, -ETA_CAP, ETA_CAP)


@dataclass(frozen=True)
class Family:
    """One family and link: the per-record quantities of the fit and their public bounds.

    Parameters
    ----------
    name : {"binomial", "poisson"}
    link : str
        One of ``LINKS[name]``.
    """

    name: str
    link: str

    # -- the mean and its derivatives ------------------------------------------------------
    def mean(self, eta: np.ndarray) -> np.ndarray:
        """mu = g^-1(eta)."""
        eta = _cap(np.asarray(eta, dtype=np.float64))
        if self.link == "logit":
            return special.expit(eta)
        if self.link == "probit":
            return special.ndtr(eta)
        return np.exp(eta)

    def link_of(self, mu: float) -> float:
        """eta = g(mu), for a public or released mean (the descent's start)."""
        if self.link == "logit":
            return float(special.logit(mu))
        if self.link == "probit":
            return float(special.ndtri(mu))
        return math.log(mu)

    def mean_derivative(self, eta: np.ndarray) -> np.ndarray:
        """dmu/deta (for marginal effects)."""
        eta = _cap(np.asarray(eta, dtype=np.float64))
        if self.link == "logit":
            mu = special.expit(eta)
            return mu * (1.0 - mu)
        if self.link == "probit":
            return stats.norm.pdf(eta)
        return np.exp(eta)

    def mean_second_derivative(self, eta: np.ndarray) -> np.ndarray:
        """d^2 mu / deta^2 (for the delta method of marginal effects)."""
        eta = _cap(np.asarray(eta, dtype=np.float64))
        if self.link == "logit":
            mu = special.expit(eta)
            return mu * (1.0 - mu) * (1.0 - 2.0 * mu)
        if self.link == "probit":
            return -eta * stats.norm.pdf(eta)
        return np.exp(eta)

    # -- the score and the observed weight ---------------------------------------------------
    def score(self, eta: np.ndarray, y: np.ndarray) -> np.ndarray:
        """r with grad l = -r d (module docstring's table)."""
        eta = _cap(np.asarray(eta, dtype=np.float64))
        if self.link == "probit":
            l1, l0 = self._mills(eta)
            return y * l1 - (1.0 - y) * l0
        return y - self.mean(eta)

    def weight(self, eta: np.ndarray, y: np.ndarray) -> np.ndarray:
        """w >= 0 with Hessian of l = w d d' (module docstring's table)."""
        eta = _cap(np.asarray(eta, dtype=np.float64))
        if self.link == "probit":
            l1, l0 = self._mills(eta)
            return np.clip(y * l1 * (eta + l1) + (1.0 - y) * l0 * (l0 - eta), 0.0, 1.0)
        if self.link == "logit":
            mu = special.expit(eta)
            return mu * (1.0 - mu)
        return np.exp(eta)

    @staticmethod
    def _mills(eta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """phi/Phi and phi/(1 - Phi), computed on the log scale (no 0/0 in the tails)."""
        log_pdf = stats.norm.logpdf(eta)
        return np.exp(log_pdf - special.log_ndtr(eta)), np.exp(log_pdf - special.log_ndtr(-eta))

    def fisher_weight(self, mu: float) -> float:
        """(dmu/deta)^2 / Var(mu) at a mean mu: the weight of the Fisher information of an
        intercept-only model, from which the descent's preconditioner is scaled."""
        if self.link == "logit":
            return mu * (1.0 - mu)
        if self.link == "probit":
            return float(stats.norm.pdf(special.ndtri(mu)) ** 2 / (mu * (1.0 - mu)))
        return mu

    # -- public bounds ---------------------------------------------------------------------
    def response_bound(self, count_bound: float | None) -> float:
        """The public upper bound of y: 1 for binomial, K for Poisson."""
        return 1.0 if self.name == "binomial" else float(count_bound)

    def score_bound(self, count_bound: float | None) -> float:
        """The clip of |r| (module docstring's table)."""
        if self.link == "logit":
            return 1.0
        if self.link == "probit":
            return PROBIT_SCORE
        return float(count_bound)

    @property
    def exact(self) -> bool:
        """Whether |r| never exceeds :meth:`score_bound` (then nothing is ever clipped)."""
        return self.link == "logit"

    def weight_bound(self, count_bound: float | None) -> float:
        """A public bound on w for the bread's release: 1/4 (logit), 1 (probit), K (Poisson;
        the bread clips larger weights, which only lowers it and widens the interval)."""
        if self.link == "logit":
            return 0.25
        if self.link == "probit":
            return 1.0
        return float(count_bound)

    def margin_bounds(self) -> tuple[float, float]:
        """Public bounds on dmu/deta and |d^2 mu / deta^2| of a binomial link (for the release
        behind average marginal effects): 1/4 and 1 / (6 sqrt(3)) (logit, at mu = 1/2 and
        mu = 1/2 -+ 1 / (2 sqrt(3))), phi(0) and phi(1) (probit)."""
        if self.link == "logit":
            return 0.25, 1.0 / (6.0 * math.sqrt(3.0))
        if self.link == "probit":
            return float(stats.norm.pdf(0.0)), float(stats.norm.pdf(1.0))
        raise ValueError("margin_bounds: the Poisson mean's derivatives are not bounded")

    def __str__(self) -> str:
        return f"{self.name} ({self.link} link)"


def get_family(family: str, link: str | None = None) -> Family:
    """The :class:`Family` of a family name and link (default: the canonical link).

    Raises
    ------
    ValueError
        Unknown family, or a link the family does not offer.
    """
    family = check_option(family, "family", FAMILIES)
    links = LINKS[family]
    link = links[0] if link is None else check_option(link, "link", links)
    return Family(family, link)
