"""Liang et al. (2025): Figures 7, 8 and 9 (step sizes, clipping threshold, 2S-GD vs 2SLS).

Settings as in :mod:`.liang2025` (docs/liang2025.md, Departures and choices).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import _liang2025_analysis as an
from ._liang2025_trials import convergence_trial, synthetic_trial
from ._stats import Estimate, Z, bootstrap
from .liang2025 import PAPER, PRIVACY
from .registry import ClaimResult, Experiment, docstring_claim, register

__all__ = ["EXPERIMENTS"]


# -- Figures 7 and 8: step sizes and clipping ---------------------------------------------------

_FIG78 = {"p": 5, "n": 2000, "steps": 20, "rho_theta": 5.0, "rho_beta": 5.0}


def _fig7_grid(k):
    fr = [i / (k + 1) for i in range(1, k + 1)]
    return [{**_FIG78, "panel": "eta", "eta_frac": f, "alpha_frac": 1.0} for f in fr] + [
        {**_FIG78, "panel": "alpha", "alpha_frac": f, "eta_frac": 0.9} for f in fr
    ]


#: Steps below this fraction of eq. 3's bound do not converge in T = 20 (Fig. 7's left end).
ADMISSIBLE = 0.25


def _fig7_curves(results: pd.DataFrame, panel: str) -> tuple[pd.Series, pd.Series]:
    x = f"{panel}_frac"
    return an.curve(results, x, "error", panel=panel), an.curve_se(results, x, "error", panel=panel)


def fig7_converge(results: pd.DataFrame) -> ClaimResult:
    """Paper (Fig. 7): within eq. 3's region the iterates converge whatever the steps. For
    each panel the mean error at every grid step from 25% to 95% of its bound is below that
    at the smallest grid step (1/21 of the bound, too small to converge in T = 20) by 3
    Monte Carlo s.e. on the log scale (delta method)."""
    checks, numbers = {}, {}
    for panel in ("eta", "alpha"):
        err, se = _fig7_curves(results, panel)
        small = err.index[0]
        gaps = [an.ratio(err, se, small, x) for x in err.index if x >= ADMISSIBLE]
        worst = min(gaps, key=lambda g: g.value - 3 * g.se, default=None)
        checks[f"{panel}: admissible steps beat the smallest"] = bool(
            worst is not None and all(g.above(0.0) for g in gaps)
        )
        if worst is not None:
            numbers.update(worst.numbers(f"{panel} smallest log(error at 1/21 / admissible)"))
        numbers[f"{panel} error at the smallest step"] = float(err.iloc[0])
    return an.verdict(checks, numbers)


def fig7_grows_to_the_bound(results: pd.DataFrame) -> ClaimResult:
    """Deviation. Paper (Fig. 7): the error is fairly insensitive to the steps inside eq. 3's
    region. Measured: it grows towards either bound (larger steps carry proportionally more
    noise per step): log(error at the largest grid step / the minimum over steps >= 25% of
    the bound) is above 0 by 3 Monte Carlo s.e. in both panels."""
    checks, numbers = {}, {}
    for panel in ("eta", "alpha"):
        err, se = _fig7_curves(results, panel)
        admissible = err[err.index >= ADMISSIBLE]
        if admissible.empty:
            checks[f"{panel}: points >= 25% of the bound"] = False
            continue
        rise = an.ratio(err, se, err.index[-1], admissible.idxmin())
        checks[f"{panel}: error at the bound above the best"] = rise.above(0.0)
        numbers.update(rise.numbers(f"{panel} log(error at largest step / best)"))
        numbers[f"{panel} best fraction"] = float(admissible.idxmin())
    return an.verdict(checks, numbers)


#: Fig. 8: a clip "avoids clipping" when it clips under this fraction of the per-example
#: gradients of either stage (mean over iterations and runs) ...
NO_CLIPPING = 0.25
#: ... and "clips much" above this fraction.
CLIPS_MUCH = 0.5


def fig8_u_shape(results: pd.DataFrame) -> ClaimResult:
    """Paper (Fig. 8): the error is U-shaped in gamma, and the best gamma is the smallest that
    avoids clipping. Checked on any grid of gamma, each at 3 Monte Carlo s.e.: both ends of
    the grid are >= 3x the minimum (log scale, delta method); the smallest grid gamma that
    clips < 25% of either stage's gradients is at the bottom (its error exceeds the minimum
    by at most 3 s.e. of the difference, so a flat bottom passes whichever side of the
    threshold its lowest point falls on); every gamma that clips > 50% (at least one on the
    grid) has an error above the minimum by more than 3 s.e. of the difference (clipping
    hurts)."""
    err = an.curve(results, "clip", "error")
    se = an.curve_se(results, "clip", "error")
    clipped = np.maximum(
        an.curve(results, "clip", "clipped_theta"), an.curve(results, "clip", "clipped_beta")
    )
    u_ok, numbers = an.u_shape(err, 3.0, se)
    best = err.idxmin()
    numbers["clipped fraction at the minimum"] = float(clipped[best])

    def above_min(clip) -> Estimate:
        return Estimate(float(err[clip] - err[best]), float(np.hypot(se[clip], se[best])))

    free = clipped.index[clipped < NO_CLIPPING]
    at_bottom = False
    if len(free):
        gap = above_min(free[0])
        at_bottom = not gap.above(0.0)
        numbers["smallest clip clipping < 25%"] = float(free[0])
        numbers.update(gap.numbers("its error - the minimum"))
    heavy = [above_min(c) for c in clipped.index[clipped > CLIPS_MUCH]]
    least = min(heavy, key=lambda g: g.value - Z * g.se, default=None)
    if least is not None:
        numbers.update(least.numbers("least excess of a clip clipping > 50%"))
    return an.verdict(
        {
            "U-shape": u_ok,
            "the smallest clip avoiding clipping is at the bottom": at_bottom,
            "clipping > 50% hurts": bool(heavy) and all(g.above(0.0) for g in heavy),
        },
        numbers,
        "Clipped fractions are a non-private simulation diagnostic.",
    )


_FIG7_PAPER = (
    "Fig. 7: within eq. 3's region the convergence is fairly insensitive to eta and alpha."
)

FIG7 = Experiment(
    name="liang2025-fig7",
    paper=PAPER,
    figure="Figure 7",
    description=(
        "Step sizes at n = 2000, p = q = r = 5, T = 20, rho1 = rho2 = 5: (a) eta over (0, "
        "eta_max) with alpha = alpha_max (on eq. 3's boundary, as the paper's); (b) alpha over "
        "(0, alpha_max) with eta = 0.9 eta_max; 20 points each (our choice)."
    ),
    grid=an.scales(_fig7_grid(3), _fig7_grid(20), _fig7_grid(20)),
    replicates=an.scales(2, 20, 100),
    trial=synthetic_trial,
    privacy=PRIVACY,
    plot=lambda r: [
        an.line_plot(
            r.assign(frac=np.where(r["panel"] == "eta", r["eta_frac"], r["alpha_frac"])),
            x="frac",
            value="error",
            series=["panel"],
            logx=False,
            title="Fig. 7: fraction of eq. 3's bound",
        ).figure
    ],
    claims=[
        docstring_claim(
            "admissible-steps-converge",
            fig7_converge,
            paper=_FIG7_PAPER,
        ),
        docstring_claim(
            "error-grows-towards-the-bound",
            fig7_grows_to_the_bound,
            paper=_FIG7_PAPER,
            deviation=True,
        ),
    ],
)

FIG8 = Experiment(
    name="liang2025-fig8",
    paper=PAPER,
    figure="Figure 8",
    description="Clipping threshold gamma1 = gamma2 in {1, 3, ..., 1000} at Fig. 7's setting.",
    grid=an.scales(
        [{**_FIG78, "clip": c} for c in (1.0, 100.0, 1000.0)],
        [{**_FIG78, "clip": c} for c in (1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0)],
        [{**_FIG78, "clip": c} for c in np.geomspace(1, 1000, 13).round(2).tolist()],
    ),
    replicates=an.scales(2, 20, 100),
    trial=synthetic_trial,
    privacy=PRIVACY,
    plot=lambda r: [
        an.line_plot(
            r, x="clip", value="error", series=["n"], title="Fig. 8: clipping threshold"
        ).figure
    ],
    claims=[
        docstring_claim(
            "U-shape-in-clip",
            fig8_u_shape,
            paper=(
                "Fig. 8 (n = 2000, p = 5, T = 20, rho1 = rho2 = 5): the error is U-shaped in "
                "gamma; the best gamma is the smallest that avoids clipping."
            ),
        )
    ],
)


# -- Figure 9: 2S-GD vs 2SLS ----------------------------------------------------------------------


def _fig9_p20(results: pd.DataFrame) -> pd.DataFrame:
    rows = results[results["p"] == 20]
    last = max(
        int(c.split("T")[-1])
        for c in rows.columns
        if c.startswith("dist_to_2sls_T") and rows[c].notna().any()
    )
    return rows.assign(dist_last=rows[f"dist_to_2sls_T{last}"]), last


def fig9_above_2sls(results: pd.DataFrame) -> ClaimResult:
    """Paper (Fig. 9, p = q = r = 20, T = 100): 2S-GD's error ||beta^(T) - beta|| is above
    2SLS's. The mean paired difference error(T = 100) - error(2SLS) over runs and n is above
    0 by 3 s.e. (bootstrap over runs within each n). The gap is non-convergence at T = 100,
    not a slower rate (the claim 2sgd-converges-to-2sls)."""
    rows, _ = _fig9_p20(results)
    (gap,) = bootstrap(rows, ["n"], lambda d: [(d["error_T100"] - d["error_2sls"]).mean()])
    return an.verdict({"2S-GD (T = 100) above 2SLS": gap.above(0.0)}, gap.numbers("mean gap"))


def fig9_converges(results: pd.DataFrame) -> ClaimResult:
    """Non-private 2S-GD converges to 2SLS (Liang et al. Section 3.1): at p = 5 it is within
    1e-10 of beta_hat by T = 1000 (numerical precision; the run is deterministic given the
    data); at p = 20 the mean distance to beta_hat falls from T = 10 to 100 and from 100 to
    the last T, each by 3 s.e. (paired over runs, bootstrap within each n)."""
    p5 = results[results["p"] == 5]
    worst = float(p5.get("dist_to_2sls_T1000", pd.Series(np.nan)).max())
    rows, last = _fig9_p20(results)
    early, late = bootstrap(
        rows,
        ["n"],
        lambda d: [
            (d["dist_to_2sls_T10"] - d["dist_to_2sls_T100"]).mean(),
            (d["dist_to_2sls_T100"] - d["dist_last"]).mean(),
        ],
    )
    return an.verdict(
        {
            "p=5 reaches 2SLS by T=1000": bool(worst < 1e-10),
            "p=20 distance falls T=10 -> 100": early.above(0.0),
            f"p=20 distance falls T=100 -> {last}": late.above(0.0),
        },
        {
            "p=5 max ||beta^(1000) - beta_hat||": worst,
            **early.numbers("p=20 fall T=10 -> 100"),
            **late.numbers(f"p=20 fall T=100 -> {last}"),
            f"p=20 mean distance at T={last}": float(rows["dist_last"].mean()),
        },
        "Non-private 2S-GD, no clipping.",
    )


FIG9 = Experiment(
    name="liang2025-fig9",
    paper=PAPER,
    figure="Figure 9",
    description=(
        "Non-private 2S-GD against 2SLS: p = q = r = 20 (and 5), n from 500 to 5000; the "
        "distance to 2SLS at T = 10, 100, 1000, ... shows the paper's T = 100 gap is "
        "non-convergence (2S-GD converges to 2SLS, the target of eq. 7)."
    ),
    grid=an.scales(
        [{"p": 5, "n": 500, "steps": 100}, {"p": 20, "n": 500, "steps": 300}],
        [{"p": 5, "n": n, "steps": 1000} for n in (500, 2000)]
        + [{"p": 20, "n": n, "steps": 3000} for n in (500, 1000, 2000, 3000, 5000)],
        [{"p": 5, "n": n, "steps": 1000} for n in (500, 2000)]
        + [{"p": 20, "n": n, "steps": 20_000} for n in (500, 1000, 2000, 3000, 4000, 5000)],
    ),
    replicates=an.scales(1, 5, 100),
    trial=convergence_trial,
    privacy="Non-private baseline.",
    plot=lambda r: [
        an.line_plot(
            r[r["p"] == 20],
            x="n",
            value="error_T100",
            series=["p"],
            title="Fig. 9: 2S-GD (T = 100) vs 2SLS",
            reference="error_2sls",
        ).figure
    ],
    claims=[
        docstring_claim(
            "2sgd-above-2sls-at-T100",
            fig9_above_2sls,
            paper=(
                "Fig. 9 (p = 20, T = 100): the convergence rate of 2S-GD is slower than that of "
                "2SLS."
            ),
        ),
        docstring_claim(
            "2sgd-converges-to-2sls",
            fig9_converges,
            paper="Fig. 9 and Remark 3.8: 2S-GD converges to 2SLS more slowly, by sqrt(p).",
            deviation=True,
        ),
    ],
)

EXPERIMENTS = [register(e) for e in (FIG7, FIG8, FIG9)]
