"""Shared pieces of the Menart et al. (2024) experiments (B0-B7)."""

from __future__ import annotations

from . import _menart2024_claims as mc
from ._menart2024_plots import plot
from ._menart2024_trials import trial
from .registry import Claim, Experiment, register

__all__ = [
    "AD",
    "AM",
    "GD",
    "PP",
    "SP",
    "TH",
    "adaptive_beats",
    "adaptive_pl_rho_slope",
    "claim",
    "experiment",
    "spider_bound_validity",
    "spider_slope",
]

PAPER = (
    "Menart, Ullah, Arora, Bassily, Guzmán (2024), Differentially private non-convex "
    "optimization under the KL condition with optimal rates"
)
PRIVACY = (
    "Each run is rho-zCDP for the rho of its grid point under replace-one (n public); noise "
    "recalibrated from first principles (docs/menart2024.md); seeded noise. Excess risk, "
    "gradient norms and oracle KL constants are non-private evaluation quantities."
)
#: Method names of the trials (see :mod:`._menart2024_trials`).
SP, TH, AD, AM, GD, PP = (
    "spider-practical",
    "spider-theory",
    "adaptive",
    "adaptive-min-norm",
    "noisy-gd",
    "proximal",
)


def claim(name: str, statement: str, evaluate, *, deviation: bool = False) -> Claim:
    """A claim evaluated at the quick and paper scales; ``deviation`` when it asserts one."""
    return Claim(
        name=name,
        statement=statement,
        evaluate=evaluate,
        deviation=deviation,
        paper=_PAPER_SAYS.get(name.split(" (")[0].rsplit(" p=", 1)[0], ""),
    )


#: The theorem each claim tests (the paper has no experiments), shown beside ours.
_PAPER_SAYS = {
    "spider n-slope": "Thm 1 (KL-Spider, kappa = 2): excess O~(d/(n^2 rho)), i.e. ~ n^-2.",
    "spider rho-slope": "Thm 1 (KL-Spider): excess O~((d/(n^2 rho))^(kappa/2)), rho^-1 at kappa 2.",
    "spider d-slope": "Thm 1 (KL-Spider, kappa = 2): excess O~(d/(n^2 rho)), proportional to d.",
    "spider lam-slope": "Thm 1 with kappa = 2 and mu = lam: excess ~ 1/(mu^2 ...) up to logs.",
    "adaptive n-slope": "Thm 4 (adaptive GD): excess ~ d/(n^2 rho) + 1/(n sqrt rho) up to logs.",
    "adaptive rho-slope": "Thm 4 (adaptive GD): excess ~ d/(n^2 rho) + 1/(n sqrt rho) up to logs.",
    "adaptive beats spider": "Sec. 5: the adaptive algorithm needs no KL constants.",
    "bound validity": "Thm 1: the bound holds with probability 1 - beta.",
    "proximal rho-slope": "Thm 2 (private proximal point, kappa > 2): excess ~ rho^(-kappa/2).",
}


def experiment(bench, title, description, grid, replicates, claims) -> Experiment:
    """Register benchmark ``bench`` as ``menart2024-<bench>``, with the budget claim added."""
    budget = Claim(
        name="budget",
        statement="Every run spent at most its rho (filter and calibration).",
        evaluate=mc.budget,
        scales=("smoke", "quick", "paper"),
    )
    return register(
        Experiment(
            name=f"menart2024-{bench}",
            paper=PAPER,
            figure=f"benchmark {bench.upper()}: {title} (the paper has no figures)",
            description=description,
            grid=grid,
            replicates=replicates,
            trial=trial,
            claims=[*claims, budget],
            plot=plot,
            privacy=PRIVACY,
        )
    )


def spider_slope(
    x: str,
    nominal: float,
    *,
    method: str = SP,
    note: str = "",
    approaches: bool = False,
    below_nominal: bool = False,
) -> Claim:
    """KL-Spider's slope in ``x`` (sweep of the same name) between ``nominal`` and the floor's.

    ``approaches=True`` where the run shows otherwise: the slope is shallower than the floor's
    (the excess approaches Thm 1's bound from below as ``x`` grows), asserted as such.
    ``below_nominal=True``: the slope is below ``nominal`` by 3 s.e. (a deviation: the
    exponent is not reached), between the floor's and ``nominal``.
    """
    preset = "theory preset, paper constants" if method == TH else "practical"
    suffix = f" {note}" if note else ""
    name = f"spider {x}-slope" + (" (theory preset)" if method == TH else "")
    if approaches:
        return claim(
            name,
            f"Deviation. Paper (Thm 1): excess ~ {x}^({nominal:+g}) up to log factors. "
            f"KL-Spider ({preset}) is shallower on this grid than both {nominal:+g} and the "
            "slope of its floor (Thm 1's bound) by more than 3 s.e.: excess / floor rises "
            f"with {x}, the floor staying valid (see bound validity).{suffix}",
            mc.shallower_than_bound(method=method, sweep=x, x=x, nominal=nominal),
            deviation=True,
        )
    if below_nominal:
        return claim(
            name,
            f"Deviation. Paper (Thm 1): excess ~ {x}^({nominal:+g}) up to log factors. "
            f"KL-Spider ({preset}): the slope of excess in {x} is below {nominal:+g} by more "
            "than 3 s.e. and not outside [its floor's slope, nominal] by 3 s.e.: on this "
            "grid the log factors of Thm 1's bound, computed on the same points, set it, "
            f"not {x} itself.{suffix}",
            mc.below_nominal(method=method, sweep=x, x=x, nominal=nominal),
            deviation=True,
        )
    return claim(
        name,
        f"Paper (Thm 1): excess ~ {x}^({nominal:+g}) up to log factors. KL-Spider ({preset}): "
        f"slope of excess in {x} between {nominal:+g} and its floor's slope, within 3 "
        "s.e. (the floor is Thm 1's bound with its log factors, K and ln(1/beta'), computed "
        f"on the same points: the exponent the theorem predicts on this grid).{suffix}",
        mc.slope(method=method, sweep=x, x=x, nominal=nominal),
    )


def adaptive_pl_rho_slope() -> Claim:
    """Adaptive GD's slope in rho for kappa = 2: between -1 and -1/2 (Thm 4's two terms)."""
    return claim(
        "adaptive rho-slope",
        "Paper (Thm 4, kappa = 2): excess ~ d/(n^2 rho) + 1/(n sqrt rho) up to log factors, "
        "so its slope in rho lies between -1 and -1/2 whichever term dominates. Adaptive GD: "
        "slope in rho in [-1, -1/2] within 3 s.e.",
        mc.slope(method=AD, sweep="rho", x="rho", nominal=-0.75, band=(-1.0, -0.5)),
    )


def adaptive_beats(losers: dict[str, str], note: str = "") -> Claim:
    """Adaptive GD below each ``{sweep: loser method}`` at every point of that sweep."""

    def evaluate(results):
        verdicts = [mc.beats(AD, [loser], s, s)(results) for s, loser in losers.items()]
        out = verdicts[0]
        for v in verdicts[1:]:
            out = mc.both(out, v)
        return out

    where = " and ".join(f"every {s} ({m})" for s, m in losers.items())
    return claim(
        "adaptive beats spider" if all(m in (SP, TH) for m in losers.values()) else "adaptive wins",
        f"Adaptive GD has lower median excess than {where}.{' ' + note if note else ''}",
        evaluate,
    )


def spider_bound_validity(methods=(SP,)) -> Claim:
    """At least 95% of non-trivial KL-Spider runs end below the schedule's floor."""
    return claim(
        "bound validity",
        "At least 95% of non-trivial KL-Spider runs end below the schedule's floor (Thm 1's "
        "bound with explicit constants).",
        mc.bound_validity(list(methods)),
    )
