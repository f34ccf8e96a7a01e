"""The three checks of a canary audit on one set of runs (docs/auditing.md) and their verdict.

Scores are standardised so that, if the claim holds with equality, a run on D gives
s ~ N(0, 1) and a run on D' gives s ~ N(mu, 1) with mu = sqrt(2 rho) (a composition of
Gaussian mechanisms of total rho is mu-GDP):

1. **Nonparametric** (rigorous, no distributional assumption): Clopper-Pearson epsilon
   lower bounds at several delta' (:mod:`dpfit.audit.bounds`) against the claimed
   epsilon(delta') by the CKS conversion of rho. Fails if any bound exceeds its claim.
2. **Parametric mu test** (powerful, assumes Gaussian scores): mu_hat = (mean_1 - mean_0) /
   pooled sd with SE = sqrt(1/M0 + 1/M1 + mu_hat^2 / (2 (M0 + M1))); fails if
   |mu_hat| - z SE > sqrt(2 rho), z = Phi^-1(1 - alpha/2) (a shift in the unexpected
   direction is a violation too). Paired with a Kolmogorov-Smirnov
   test of the null scores against N(0, 1) at level alpha/2.
3. **Null calibration**: the sample variance of the null scores must have 1 inside its
   two-sided 1 - alpha chi-square interval. This catches a wrong noise scale even when the
   canary path is fine.

Each check has false-alarm level <= alpha for a correct mechanism, so the verdict's is
<= 3 alpha. Checks 2-3 need the null law of the score to be known exactly (the audit
target says so). Otherwise check 1 decides, with

2'. **Mean shift** (scores calibrated to N(0, 1) on D, e.g. through a simulated or held-out
   null CDF): for a mu-GDP pair every such score is stochastically smaller on D' than
   N(mu, 1) (the Gaussian trade-off curve, Dong, Roth & Su 2022), so its mean shift is at
   most mu = sqrt(2 rho); fails if mean_1 - mean_0 - z SE > mu, SE = sqrt(s0^2/M0 + s1^2/M1),
   z = Phi^-1(1 - alpha) (one-sided). Its level is alpha up to the calibration's error.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from numpy.typing import ArrayLike
from scipy import stats

from .._validation import check_alpha, check_array, check_rho
from ..privacy import gaussian_epsilon, zcdp_to_approx_dp
from .bounds import DEFAULT_DELTAS, DEFAULT_THRESHOLDS, EpsilonBound, epsilon_lower_bounds

__all__ = [
    "AuditResult",
    "MeanShift",
    "MuTest",
    "NullCalibration",
    "assess",
    "mean_shift",
    "mu_test",
    "null_calibration",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class MuTest:
    """Parametric test of the Gaussian shift mu against the claim sqrt(2 rho)."""

    mu_hat: float
    se: float
    mu_claim: float
    z: float
    ks_pvalue: float
    alpha: float

    @property
    def passed(self) -> bool:
        """False when |mu_hat| is significantly above the claim or the null is not N(0, 1)."""
        mu_ok = abs(self.mu_hat) - self.z * self.se <= self.mu_claim
        return bool(mu_ok and self.ks_pvalue >= self.alpha / 2)


@dataclass(frozen=True, slots=True, kw_only=True)
class MeanShift:
    """One-sided test of the calibrated scores' mean shift against mu = sqrt(2 rho)."""

    shift_hat: float
    se: float
    mu_claim: float
    z: float

    @property
    def passed(self) -> bool:
        """False when the mean shift is significantly above the claimed mu."""
        return bool(self.shift_hat - self.z * self.se <= self.mu_claim)


def mean_shift(null: ArrayLike, alt: ArrayLike, *, rho: float, alpha: float = 1e-3) -> MeanShift:
    """Check 2': mean(alt) - mean(null) of calibrated scores against sqrt(2 rho)."""
    null = check_array(null, "null", ndim=1)
    alt = check_array(alt, "alt", ndim=1)
    rho, alpha = check_rho(rho), check_alpha(alpha)
    return MeanShift(
        shift_hat=float(alt.mean() - null.mean()),
        se=math.sqrt(null.var(ddof=1) / null.size + alt.var(ddof=1) / alt.size),
        mu_claim=math.sqrt(2 * rho),
        z=float(stats.norm.isf(alpha)),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class NullCalibration:
    """Sample sd of the null scores and its acceptance interval (claimed sd = 1)."""

    sd: float
    low: float
    high: float

    @property
    def passed(self) -> bool:
        """Whether the claimed sd 1 is consistent with the sample sd."""
        return bool(self.low <= self.sd <= self.high)


def mu_test(null: ArrayLike, alt: ArrayLike, *, rho: float, alpha: float = 1e-3) -> MuTest:
    """Check 2: the standardised mean shift between D' and D against sqrt(2 rho)."""
    null = check_array(null, "null", ndim=1)
    alt = check_array(alt, "alt", ndim=1)
    rho, alpha = check_rho(rho), check_alpha(alpha)
    m0, m1 = null.size, alt.size
    pooled = math.sqrt(((m0 - 1) * null.var(ddof=1) + (m1 - 1) * alt.var(ddof=1)) / (m0 + m1 - 2))
    mu_hat = float((alt.mean() - null.mean()) / pooled) if pooled > 0 else math.inf
    se = math.sqrt(1 / m0 + 1 / m1 + mu_hat**2 / (2 * (m0 + m1)))
    return MuTest(
        mu_hat=mu_hat,
        se=se,
        mu_claim=math.sqrt(2 * rho),
        z=float(stats.norm.isf(alpha / 2)),
        ks_pvalue=float(stats.kstest(null, "norm").pvalue),
        alpha=alpha,
    )


def null_calibration(null: ArrayLike, *, alpha: float = 1e-3) -> NullCalibration:
    """Check 3: the sd of the null scores against its chi-square interval around 1."""
    null = check_array(null, "null", ndim=1)
    alpha = check_alpha(alpha)
    df = null.size - 1
    return NullCalibration(
        sd=float(null.std(ddof=1)),
        low=math.sqrt(stats.chi2.ppf(alpha / 2, df) / df),
        high=math.sqrt(stats.chi2.isf(alpha / 2, df) / df),
    )


@dataclass(frozen=True, kw_only=True)
class AuditResult:
    """Outcome of one audit: bounds next to the claim, the three checks and the verdict.

    Attributes
    ----------
    target : str
        What was audited (e.g. ``"dp_gd"``), with its public configuration in ``config``.
    rho : float
        The claimed zCDP cost of one run.
    runs : tuple of int
        Runs on D and on D'.
    bounds : tuple of EpsilonBound
        Empirical epsilon lower bounds, one per delta'.
    claimed : Mapping[float, float]
        Claimed epsilon(delta') by the CKS conversion of ``rho``.
    gaussian : Mapping[float, float]
        Exact epsilon(delta') of a mu-GDP mechanism with mu = sqrt(2 rho): the true epsilon
        of a pure Gaussian composition, for reference (the verdict uses ``claimed``).
    mu : MuTest or None
        Check 2 (None when the target's null law is not exact).
    null : NullCalibration or None
        Check 3 (None when the target's null law is not exact).
    shift : MeanShift or None
        Check 2' (when the null law is calibrated, not exact).
    """

    target: str
    rho: float
    runs: tuple[int, int]
    bounds: tuple[EpsilonBound, ...]
    claimed: Mapping[float, float]
    gaussian: Mapping[float, float]
    mu: MuTest | None
    null: NullCalibration | None
    config: Mapping[str, Any] = field(default_factory=dict)
    shift: MeanShift | None = None

    def __post_init__(self) -> None:
        for name in ("claimed", "gaussian", "config"):
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))

    @property
    def nonparametric_passed(self) -> bool:
        """Check 1: no epsilon lower bound exceeds the claim at its delta'."""
        return all(b.epsilon <= self.claimed[b.delta] for b in self.bounds)

    @property
    def failures(self) -> tuple[str, ...]:
        """Names of the failed checks (empty when the audit found no violation)."""
        out = [] if self.nonparametric_passed else ["nonparametric"]
        if self.mu is not None and not self.mu.passed:
            out.append("mu")
        if self.null is not None and not self.null.passed:
            out.append("null-calibration")
        if self.shift is not None and not self.shift.passed:
            out.append("mean-shift")
        return tuple(out)

    @property
    def passed(self) -> bool:
        """True when no check refuted the claim (which does *not* prove the claim)."""
        return not self.failures

    def table(self) -> str:
        """A plain-text report: bounds next to the claim per delta', then checks and verdict."""
        lines = [
            f"audit of {self.target}: rho = {self.rho:.6g} claimed, "
            f"{self.runs[0]} runs on D and {self.runs[1]} on D'",
            f"{'delta':>8}  {'eps lower bound':>15}  {'claimed eps (CKS)':>17}  "
            f"{'exact Gaussian eps':>18}  result",
        ]
        for b in self.bounds:
            ok = "ok" if b.epsilon <= self.claimed[b.delta] else "REFUTED"
            lines.append(
                f"{b.delta:>8.3g}  {b.epsilon:>15.4f}  {self.claimed[b.delta]:>17.4f}  "
                f"{self.gaussian[b.delta]:>18.4f}  {ok}"
            )
        if self.mu is not None:
            lines.append(
                f"mu test: mu_hat = {self.mu.mu_hat:.4f} +- {self.mu.se:.4f} (claim "
                f"{self.mu.mu_claim:.4f}), KS p = {self.mu.ks_pvalue:.3g}: "
                f"{'ok' if self.mu.passed else 'FAIL'}"
            )
        if self.null is not None:
            lines.append(
                f"null sd / claimed = {self.null.sd:.4f} (accept [{self.null.low:.4f}, "
                f"{self.null.high:.4f}]): {'ok' if self.null.passed else 'FAIL'}"
            )
        if self.shift is not None:
            lines.append(
                f"mean shift of calibrated scores = {self.shift.shift_hat:.4f} +- "
                f"{self.shift.se:.4f} (claim <= {self.shift.mu_claim:.4f}): "
                f"{'ok' if self.shift.passed else 'FAIL'}"
            )
        verdict = "no violation found" if self.passed else "VIOLATION: " + ", ".join(self.failures)
        lines.append(f"verdict: {verdict} (an audit can refute a claim, never prove it)")
        return "\n".join(lines)


def assess(
    null: ArrayLike,
    alt: ArrayLike,
    *,
    rho: float,
    target: str = "mechanism",
    exact_null: bool = True,
    shift: float | None = None,
    thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
    deltas: Sequence[float] = DEFAULT_DELTAS,
    alpha: float = 1e-3,
    config: Mapping[str, Any] | None = None,
) -> AuditResult:
    """Run the audit's checks on standardised scores from D (``null``) and D' (``alt``).

    Parameters
    ----------
    null, alt : array-like of shape (M0,) and (M1,)
        Scores of independent runs, standardised by the *claimed* null law (N(0, 1) on D).
    rho : float
        Claimed zCDP cost of one run; the claimed shift is mu = sqrt(2 rho).
    target : str, default="mechanism"
        Name of what was audited, for the report.
    exact_null : bool, default=True
        Whether the null law N(0, 1) is exact for a correct mechanism; if not, the parametric
        and calibration checks are skipped and only the rigorous check 1 decides.
    shift : float, optional
        Claimed separation of the scores, placing the reverse-direction events
        {s < shift - t}; sqrt(2 rho) by default. Must not be derived from the scores.
    thresholds, deltas : sequences of float
        Pre-registered thresholds and delta' values (see :func:`epsilon_lower_bounds`).
    alpha : float, default=1e-3
        False-alarm level of each check.
    config : Mapping, optional
        Public configuration echoed in the result.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> res = assess(rng.standard_normal(2000), 1.0 + rng.standard_normal(2000), rho=0.5)
    >>> res.passed, round(res.claimed[1e-5], 3)
    (True, 4.728)
    """
    rho = check_rho(rho)
    mu = math.sqrt(2 * rho)
    null = check_array(null, "null", ndim=1)
    alt = check_array(alt, "alt", ndim=1)
    bounds = epsilon_lower_bounds(
        null,
        alt,
        shift=mu if shift is None else shift,
        thresholds=thresholds,
        deltas=deltas,
        alpha=alpha,
    )
    return AuditResult(
        target=target,
        rho=rho,
        runs=(null.size, alt.size),
        bounds=tuple(bounds),
        claimed={b.delta: zcdp_to_approx_dp(rho, b.delta) for b in bounds},
        gaussian={b.delta: gaussian_epsilon(mu, b.delta) for b in bounds},
        mu=mu_test(null, alt, rho=rho, alpha=alpha) if exact_null else None,
        null=null_calibration(null, alpha=alpha) if exact_null else None,
        config=config or {},
        shift=None if exact_null else mean_shift(null, alt, rho=rho, alpha=alpha),
    )
