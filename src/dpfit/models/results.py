"""The one result type of dpfit's models: a frozen record of a private linear-in-parameters fit.

A :class:`Result` holds only releases and public inputs: term names, the released point
estimate, the m released estimates a confidence interval is built from (and how they were
built), the public n, a snapshot of the privacy ledger, the noise provenance, the public
configuration and notes. Derived values (``params``) are cached properties
(linearmodels, statsmodels ``cache_readonly``); outputs are indexed by term names. The only
non-private field is ``diagnostics``, which nothing else reads, the summary shows only on
request, under a title that says so, and pickles and copies leave out.

Both the estimators (``DPLinearRegression.result_``, ``DPIVRegression.result_``) and the
formula API (:func:`dpfit.ols`, :func:`dpfit.iv`) return this type.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from functools import cached_property
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from .._arrays import readonly
from .._deprecation import warn_renamed
from .._validation import check_delta, check_interval_alpha, check_option, user_stacklevel
from .._version import __version__
from ..exceptions import LargeBudgetWarning
from ..inference import t_interval, t_interval_from_stderr
from ..inference.population import TARGETS, CovarianceEstimate, sample_covariance
from ..privacy import PrivacyLedger
from ._hypothesis import two_sided_pvalues
from ._result_iv import IVReleases, IVTestsMixin
from ._result_predict import PredictMixin
from ._result_summary import POPULATION_HINT, result_summary
from ._result_tests import TestsMixin
from .summary import Summary

__all__ = ["Result", "snapshot_ledger"]


def snapshot_ledger(ledger: PrivacyLedger) -> PrivacyLedger:
    """A budget-free copy of ``ledger``'s entries (a value that can be stored and pickled).

    A fitted model keeps this snapshot rather than the live ledger, so it never holds a
    reference to a spendable :class:`~dpfit.Budget`.
    """
    copy = PrivacyLedger(relation=ledger.relation)
    for entry in ledger.entries:
        copy.charge(entry)  # no budget: recorded as it is
    return copy


@dataclass(frozen=True, kw_only=True, eq=False)
class Result(PredictMixin, TestsMixin, IVTestsMixin):
    """Released estimates, confidence intervals and privacy accounting of one private fit.

    Parameters
    ----------
    names : sequence of str
        Term names, one per coefficient (``"Intercept"`` first when there is one).
    estimate : array-like of shape (p,)
        The released point estimate.
    interval_estimates : array-like of shape (m, p) or None
        The m >= 2 released estimates the Student-t interval is built from (independent
        runs, checkpoints or batch means), or None when the method releases no interval.
    interval_method : str
        One sentence saying how ``interval_estimates`` were built and what they cover.
    n : int
        The number of records, public under the ledger's relation.
    ledger : PrivacyLedger
        Every charged release of the fit (stored as a budget-free snapshot).
    model : str
        Model name for the summary title, e.g. ``"DP linear regression"``.
    method : str
        Algorithm with its reference, e.g. ``"DP-GD (Brown et al. 2024, Alg. 1)"``.
    response : str, default="y"
        Name of the dependent variable.
    noise_backend : str
        ``"fast"`` or ``"secure"``.
    seeded : bool
        Whether the noise came from a seeded (reproducible, not for release) source.
    config : Mapping
        The public configuration the fit used (clip, steps, step size, bounds, ...).
    notes : sequence of str, default=()
        Method-specific notes for the summary.
    experimental : bool, default=False
        Label the interval experimental (no coverage guarantee, or measured coverage below
        nominal); the summary says so in its first note.
    diagnostics : Mapping, default={}
        **Non-private** quantities (fraction clipped, ...). Never used by any other field,
        shown only by ``summary(diagnostics=True)``, and left out of pickles and copies.
    version : str
        dpfit version that produced the fit.
    population : CovarianceEstimate, optional
        Covariance of ``estimate`` around the population parameter (sampling + privacy
        error; :mod:`dpfit.inference.population`), or None when the fit released no
        population interval (then only ``target="sample"`` is available).
    predictors : tuple, default=()
        The formula's checked designs (built from the formula and the data's dtypes only,
        :mod:`dpfit.models._design`), so that :meth:`predict` and :meth:`get_prediction` build
        the terms of new public data as the fit did; empty for array fits.
    identification : IVReleases, optional
        The released moments of a noisy-moment IV fit, for its identification tests
        (:meth:`first_stage`, :meth:`ar_interval`, :meth:`sargan`, :meth:`wu_hausman`);
        None for other fits.

    Notes
    -----
    statsmodels' in-sample ``fittedvalues``, ``resid``, ``rsquared`` and their kin are refused
    with an ``AttributeError`` that says why: each is computed on the private rows.
    """

    names: Sequence[str]
    estimate: np.ndarray
    interval_estimates: np.ndarray | None
    interval_method: str
    n: int
    ledger: PrivacyLedger
    model: str
    method: str
    response: str = "y"
    noise_backend: str
    seeded: bool
    config: Mapping[str, Any]
    notes: Sequence[str] = ()
    experimental: bool = False
    diagnostics: Mapping[str, Any] = field(default_factory=dict)
    version: str = __version__
    population: CovarianceEstimate | None = None
    predictors: tuple[Any, ...] = ()
    identification: IVReleases | None = None

    def __post_init__(self) -> None:
        names = tuple(str(n) for n in self.names)
        estimate = readonly(self.estimate)
        if estimate.shape != (len(names),):
            raise ValueError(f"estimate must have shape ({len(names)},), got {estimate.shape}")
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "estimate", estimate)
        if self.interval_estimates is not None:
            est = readonly(self.interval_estimates)
            if est.ndim != 2 or est.shape[1] != len(names) or est.shape[0] < 2:
                raise ValueError(
                    f"interval_estimates must have shape (m >= 2, {len(names)}), got {est.shape}"
                )
            object.__setattr__(self, "interval_estimates", est)
        if not isinstance(self.ledger, PrivacyLedger):
            raise TypeError(f"ledger must be a PrivacyLedger, got {type(self.ledger).__name__}")
        if self.ledger.budget is not None:
            object.__setattr__(self, "ledger", snapshot_ledger(self.ledger))
        object.__setattr__(self, "config", MappingProxyType(dict(self.config)))
        object.__setattr__(self, "diagnostics", MappingProxyType(dict(self.diagnostics)))
        object.__setattr__(self, "notes", tuple(str(n) for n in self.notes))
        object.__setattr__(self, "predictors", tuple(self.predictors))
        if self.population is not None:
            if not isinstance(self.population, CovarianceEstimate):
                raise TypeError("population must be a CovarianceEstimate or None")
            if self.population.cov.shape != (len(names), len(names)):
                raise ValueError("population covariance must be p x p")

    # Pickling: mapping proxies cannot be pickled, and cached values are recomputed. The
    # non-private diagnostics stay behind: a pickle (or copy) of a fit is something users
    # store and share, and it must hold releases and public inputs only (docs/threat-model.md).
    def __getstate__(self) -> dict[str, Any]:
        state = {f.name: getattr(self, f.name) for f in fields(self)}
        state["config"] = dict(self.config)
        state["diagnostics"] = {}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        for key, value in state.items():
            object.__setattr__(self, key, value)
        self.__post_init__()

    # -- released values, indexed by term name ------------------------------------------------
    @cached_property
    def params(self) -> pd.Series:
        """The released coefficients, indexed by term name."""
        return pd.Series(self.estimate, index=list(self.names), name="coef")

    @property
    def m(self) -> int | None:
        """Number of estimates behind the sample interval (None when there is none)."""
        return None if self.interval_estimates is None else self.interval_estimates.shape[0]

    @property
    def nobs(self) -> int:
        """The public number of records (statsmodels' name)."""
        return self.n

    @property
    def targets(self) -> tuple[str, ...]:
        """The interval targets this fit released: ``"population"`` and/or ``"sample"``."""
        have = {"population": self.population is not None, "sample": self.m is not None}
        return tuple(t for t in TARGETS if have[t])

    def covariance(self, target: str = "population") -> CovarianceEstimate:
        """The released estimate's covariance around ``target``, with degrees of freedom.

        ``"population"``: sampling + privacy error, around the population parameter theta*
        (:mod:`dpfit.inference.population`). ``"sample"``: privacy error only, around the
        data's own clipped-loss minimiser (Brown et al. 2024, eq. 12).

        Raises
        ------
        ValueError
            Unknown target, or the fit released no interval for it.
        """
        target = check_option(target, "target", TARGETS)
        if target == "population":
            if self.population is None:
                raise ValueError(
                    f"target='population': this fit ({self.method}) released no population "
                    "interval. "
                    + (
                        "target='sample' gives the interval for the data's own minimiser "
                        "(privacy error only). "
                        if self.m is not None
                        else ""
                    )
                    + POPULATION_HINT
                )
            return self.population
        return self._sample_covariance

    @cached_property
    def _sample_covariance(self) -> CovarianceEstimate:
        if self.interval_estimates is None:
            what = (
                "a population interval only (target='population')"
                if self.population is not None
                else "a point estimate only"
            )
            raise ValueError(
                f"no confidence interval for target='sample': {self.method} releases {what}"
            )
        return sample_covariance(self.interval_estimates, self.interval_method)

    def cov_params(self, target: str = "population") -> pd.DataFrame:
        """Estimated covariance matrix of ``params`` around ``target`` (p x p frame)."""
        cov = self.covariance(target).cov
        return pd.DataFrame(cov, index=list(self.names), columns=list(self.names))

    def _series(self, values: np.ndarray, name: str) -> pd.Series:
        return pd.Series(values, index=list(self.names), name=name)

    @property
    def bse(self) -> pd.Series:
        """Standard errors around the population parameter.

        For the privacy-only standard errors use ``covariance("sample").bse``.
        """
        return self._series(self.covariance("population").bse, "std err")

    @property
    def std_errors(self) -> pd.Series:
        """Deprecated name of :attr:`bse` (linearmodels' name; dpfit's is statsmodels')."""
        warn_renamed("Result.std_errors", "Result.bse")
        return self.bse

    @property
    def tvalues(self) -> pd.Series:
        """params / bse (population target)."""
        return self._series(self.estimate / self.covariance("population").bse, "t")

    @property
    def pvalues(self) -> pd.Series:
        """Two-sided p-values of H0: coefficient = 0 (population target)."""
        cov = self.covariance("population")
        return self._series(two_sided_pvalues(self.estimate / cov.bse, cov.dof), "P>|t|")

    def _interval(self, alpha: float, target: str) -> tuple[np.ndarray, np.ndarray]:
        if target == "sample":  # Brown et al. (2024) eq. 12, exactly
            self.covariance("sample")  # raises when there is no interval
            _, lower, upper = t_interval(self.interval_estimates, alpha)
            return lower, upper
        cov = self.covariance(target)
        _, lower, upper = t_interval_from_stderr(self.estimate, cov.bse, dof=cov.dof, alpha=alpha)
        return lower, upper

    def conf_int(self, alpha: float = 0.05, target: str = "population") -> pd.DataFrame:
        """Per-coefficient intervals of level 1 - alpha for ``target``.

        Parameters
        ----------
        alpha : float, default=0.05
        target : {"population", "sample"}, default="population"
            ``"population"`` covers the population coefficient theta* (what statsmodels'
            intervals cover): estimate +/- t * sqrt(V_sampling + V_privacy). ``"sample"``
            covers the data's own clipped-loss minimiser only: Brown et al.'s (2024, eq.
            12) Student-t interval over the m released estimates.

        Returns
        -------
        pandas.DataFrame
            Columns ``lower`` and ``upper``, indexed by term name.

        Raises
        ------
        ValueError
            ``alpha`` is not in (0, 0.5) (it is the miss rate), or the fit released no
            interval for ``target``.
        """
        alpha = check_interval_alpha(alpha)
        target = check_option(target, "target", TARGETS)
        lower, upper = self._interval(alpha, target)
        return pd.DataFrame({"lower": lower, "upper": upper}, index=list(self.names))

    # -- privacy ------------------------------------------------------------------------------
    @property
    def rho(self) -> float:
        """Total zCDP cost of the fit."""
        return self.ledger.rho

    @property
    def default_delta(self) -> float:
        """delta used when none is given: 1e-5, or a power of ten below 1 / (10 n) for large n."""
        return 10.0 ** math.floor(math.log10(min(1e-5, 0.1 / self.n)))

    def epsilon(self, delta: float | None = None) -> float:
        """epsilon of the (epsilon, delta)-DP guarantee implied by ``rho`` (CKS conversion)."""
        return self.ledger.epsilon(self.default_delta if delta is None else check_delta(delta))

    # -- summary ------------------------------------------------------------------------------
    def summary(
        self,
        alpha: float = 0.05,
        *,
        target: str | None = None,
        delta: float | None = None,
        diagnostics: bool = False,
    ) -> Summary:
        """A statsmodels-like table of the release, with numbered notes and a privacy statement.

        Parameters
        ----------
        alpha : float, default=0.05
            The intervals have level 1 - alpha.
        target : {"population", "sample"}, optional
            What the standard errors and intervals cover; by default the population
            parameter when the fit released a population interval, else the sample
            minimiser. The header names it either way.
        delta : float, optional
            delta at which epsilon is reported; by default :attr:`default_delta` (1e-5, or
            smaller for n > 10^4). A :class:`~dpfit.LargeBudgetWarning` is emitted when it
            exceeds 1/n.
        diagnostics : bool, default=False
            Also show the **non-private** diagnostics, in a section labelled as such. Never
            publish a summary printed with ``diagnostics=True``.

        Returns
        -------
        Summary
        """
        alpha = check_interval_alpha(alpha)
        delta = self.default_delta if delta is None else check_delta(delta)
        if delta > 1.0 / self.n:
            warnings.warn(
                f"delta={delta:g} exceeds 1/n = {1.0 / self.n:.3g}: the (epsilon, delta) "
                "guarantee is weak; choose delta < 1/n",
                LargeBudgetWarning,
                stacklevel=user_stacklevel(),
            )
        if target is None:
            target = self.targets[0] if self.targets else None
        else:
            target = check_option(target, "target", TARGETS)
            self.covariance(target)  # raises when the fit released no interval for it
        return result_summary(self, alpha, target, delta, diagnostics)

    def plot(self, alpha: float = 0.05, **kwargs: Any) -> Any:
        """A coefficient plot on one shared scale with a dashed zero line (a matplotlib
        ``Figure``); see :func:`dpfit.models.plotting.plot_result` for the options."""
        from .plotting import plot_result

        return plot_result(self, alpha, **kwargs)

    def __str__(self) -> str:
        return self.summary().as_text()

    def __repr__(self) -> str:
        return (
            f"Result(model={self.model!r}, method={self.method!r}, n={self.n}, "
            f"rho={self.rho:.4g}, terms={list(self.names)!r})"
        )

    def _repr_html_(self) -> str:
        return self.summary().as_html()
