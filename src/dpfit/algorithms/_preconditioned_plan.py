"""The shares of rho and the public scale checks of the preconditioned DP-GD default.

:func:`release_shares` gives every release of
:func:`~dpfit.algorithms.preconditioned_gd.preconditioned_gd` its exact share of rho (the
plan of ``DPLinearRegression`` lists the same shares); :func:`check_preconditioned_scales`
refuses, from public inputs only and before anything is charged, settings whose releases
could overflow.
"""

from __future__ import annotations

from ..inference.clipping_bias import CLIP_GROWTH
from ..inference.whitened import GD_CLIP_MULTIPLIER as CLIP_MULTIPLIER
from ..inference.whitened import gradient_clip
from ..mechanisms import check_public_scale, release_peaks
from ..privacy import Query, Relation, portions, split_rest
from .dp_gd import check_dp_gd_scales

__all__ = [
    "DEFAULT_MOMENT_SHARE",
    "LINEAR_TARGETS",
    "PRECONDITIONED_STEPS",
    "PRECONDITIONED_STEP_SIZE",
    "check_preconditioned_scales",
    "release_shares",
]

#: Share of rho for the four moment releases, divided among them by MOMENT_WEIGHTS (H~ and
#: the whitened H~ a fifth each, Hh~ and Omega~ 3/10 each).
DEFAULT_MOMENT_SHARE = 0.25
MOMENT_WEIGHTS = {"xtx": 2, "whiten": 2, "hessian": 3, "omega": 3}
#: Default steps and step size in whitened coordinates.
PRECONDITIONED_STEPS = 200
PRECONDITIONED_STEP_SIZE = 0.5
#: What the default fit estimates (``target``): the population least-squares coefficient
#: (a clip that grows with n, and a warning when the released gap to least squares is
#: material), or the Huber-type minimiser of the loss clipped at 3 sqrt(k) residual scales.
LINEAR_TARGETS = ("least-squares", "huber")
#: Shares of rho for the releases behind the gap to least squares: the clipped excess in a
#: window above the clip, and the count of records far beyond it (the more telling one:
#: its detection threshold, 3.29 / sqrt(2 rho_far) records, sets which heavy tails are
#: caught).
GAP_SHARE = 0.02
FAR_SHARE = 0.08
#: Share of rho for each of the two releases behind the private clip (X'y/n, residual scale).
SCALE_SHARE = 0.025


def release_shares(rho: float, moment_share: float, private_clip: bool) -> dict[str, float]:
    """Every release's share of rho, their exact sum at most rho, DP-GD's the rest
    (:func:`dpfit.privacy.split_rest`)."""
    fractions = {**portions(moment_share, MOMENT_WEIGHTS), "gap": GAP_SHARE, "far": FAR_SHARE}
    if private_clip:
        fractions.update(pilot=SCALE_SHARE, scale=SCALE_SHARE)
    return split_rest(rho, fractions, rest="gd")


def check_preconditioned_scales(
    k: int,
    *,
    rho: float,
    moment_share: float,
    clip: float | None,
    target: str,
    step_size: float,
    steps: int,
    n: int,
    relation: Relation | str,
) -> None:
    """Refuse, before any charge, settings whose releases could overflow (public only).

    The moment releases have rows of norm <= sqrt(k) and scale terms in [0, 4], so only the
    clip matters: DP-GD's clipped gradient sum and iterates (:func:`check_dp_gd_scales`)
    and Omega~, a second moment of rows clipped to C (n C^2; the overflow of C^2 in its
    sensitivity raised after DP-GD was charged), with its noise s.d. s ~ C^2 squared (the
    sandwich de-spreads the meat by s^2 and weighs its degrees of freedom by V^2: C^4
    overflowed there after 0.9 of rho was charged). Without a given clip, C is at most
    3 sqrt(k) (q + Z s_q)^(1/2), q~'s largest release (the private clip), times
    :data:`~dpfit.inference.clipping_bias.CLIP_GROWTH` for the least-squares target (the
    clip grows with n up to that factor; the meat's clip is at most C).
    """
    common = {"n": n, "relation": relation}
    shares = release_shares(rho, moment_share, private_clip=clip is None)
    if clip is None:
        _, q_peak = release_peaks(Query.BOUNDED_MEAN, bound=4.0, rho=shares["scale"], **common)
        clip = gradient_clip(CLIP_MULTIPLIER, k, q_peak, q_peak)
        if target == "least-squares":
            clip *= CLIP_GROWTH
    omega = {"rho": shares["omega"], "squared": True, **common}
    check_public_scale(
        "clip",
        clip,
        lambda c: release_peaks(Query.SECOND_MOMENT, bound=c, **omega),
        what=f"the second moment of n = {n} whitened gradients clipped to it (Omega), its "
        "noise and their squares (the sandwich's variance)",
    )
    check_dp_gd_scales(clip, step_size, rho=shares["gd"], total=steps, **common)
