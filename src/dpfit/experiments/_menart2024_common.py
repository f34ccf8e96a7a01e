"""Shared pieces of the Menart et al. (2024) experiments (B0-B7)."""

from __future__ import annotations

from . import _menart2024_claims as mc
from ._menart2024_plots import plot
from ._menart2024_trials import trial
from .registry import Claim, Experiment, register

__all__ = ["AD", "AM", "GD", "PP", "SP", "TH", "claim", "experiment"]

PAPER = (
    "Menart, Ullah, Arora, Bassily, Guzmán (2024), Differentially private non-convex "
    "optimization under the KL condition with optimal rates"
)
PRIVACY = (
    "Each run is rho-zCDP for the rho of its grid point under replace-one (n public); noise "
    "recalibrated from first principles (spec §3); seeded noise. Excess risk, gradient norms "
    "and oracle KL constants are non-private evaluation quantities."
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


def claim(name: str, statement: str, evaluate) -> Claim:
    """A claim evaluated at the quick and paper scales."""
    return Claim(name=name, statement=statement, evaluate=evaluate)


def experiment(bench, title, description, grid, replicates, claims) -> Experiment:
    """Register benchmark ``bench`` as ``menart2024-<bench>``, with the budget claim added."""
    budget = claim("budget", "Every run spent at most its rho (filter and calibration).", mc.budget)
    return register(
        Experiment(
            name=f"menart2024-{bench}",
            paper=PAPER,
            figure=f"spec benchmark {bench.upper()}: {title} (the paper has no figures)",
            description=description,
            grid=grid,
            replicates=replicates,
            trial=trial,
            claims=[*claims, budget],
            plot=plot,
            privacy=PRIVACY,
        )
    )
