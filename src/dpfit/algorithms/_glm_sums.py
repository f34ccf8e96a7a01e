"""The per-record sums behind the releases of the private GLM (one block function per pass).

Every release of :func:`dpfit.algorithms.glm.dp_glm` is a sum over records of a per-record
quantity computed from public arguments (the bounds, the released whitener P, the current
iterate or the released estimate, the clips) and the record (d_i, y_i, o_i): design row,
response and offset. Each function here computes that sum over the rows of a block, so
that :func:`dpfit.inference.preconditioner.record_sum` evaluates it on all rows in memory or
as one distributed reduction on Dask, the same numbers up to the order of addition. Each
docstring states the per-record bound its release's sensitivity assumes; the clips here
make it hold for the computed terms (:func:`dpfit.mechanisms.clip_rows` has a relative
margin of 2^-40).
"""

from __future__ import annotations

import numpy as np

from ..inference.preconditioner import upper_gram
from ..mechanisms import clip_factors, clip_rows, row_norms
from .glm_family import Family

__all__ = [
    "bread_sum",
    "excess_sums",
    "gradient_sum",
    "gram_sum",
    "margin_sums",
    "response_sum",
    "sandwich_sums",
    "scale_sum",
]


def gram_sum(D: np.ndarray, y: np.ndarray, o: np.ndarray, bound: float) -> np.ndarray:
    """upper(sum_i d_i d_i') of the rows clipped to ``bound``: the first stage of the whitener
    (each term has norm at most bound^2)."""
    with np.errstate(all="ignore"):
        return upper_gram(clip_rows(D, bound))


def response_sum(D: np.ndarray, y: np.ndarray, o: np.ndarray, cap: float) -> np.ndarray:
    """[sum_i min(max(y_i, 0), cap)]: the mean response behind the descent's start (each term
    in [0, cap])."""
    with np.errstate(all="ignore"):
        return np.array([np.clip(y, 0.0, cap).sum()])


def scale_sum(
    D: np.ndarray, y: np.ndarray, o: np.ndarray, theta: np.ndarray, family: Family, cap: float
) -> np.ndarray:
    """[sum_i min(r_i^2, cap)] at ``theta``: the residual scale behind the Poisson clips (each
    term in [0, cap])."""
    with np.errstate(all="ignore"):
        return np.array([np.minimum(family.score(D @ theta + o, y) ** 2, cap).sum()])


def gradient_sum(
    D: np.ndarray, y: np.ndarray, o: np.ndarray, theta: np.ndarray, family: Family, clip: float
) -> np.ndarray:
    """sum_i clip_C(-r_i d_i) at ``theta``: the clipped gradient of the negative
    log-likelihood (each term of norm at most ``clip``; r_i the family's score residual at
    eta_i = d_i'theta + o_i). The clip scales r_i d_i by min(1, C / (|r_i| ||d_i||)), the
    factor :func:`dpfit.mechanisms.clip_rows` uses."""
    with np.errstate(all="ignore"):
        r = family.score(D @ theta + o, y)
        factors = clip_factors(np.abs(r) * row_norms(D), clip)
        return -(D.T @ (r * factors))


def sandwich_sums(
    D: np.ndarray,
    y: np.ndarray,
    o: np.ndarray,
    P: np.ndarray,
    theta: np.ndarray,
    family: Family,
    row_clip: float,
    weight_cap: float,
    meat_clip: float,
) -> np.ndarray:
    """[upper(sum_i w_i c_i c_i'), upper(sum_i s_i s_i')] at ``theta``, in whitened coordinates.

    z_i = P' d_i, c_i = z_i clipped to ``row_clip``, w_i the family's observed weight capped
    at ``weight_cap`` (the bread: rows sqrt(w_i) c_i of norm at most sqrt(weight_cap)
    row_clip), and s_i = r_i z_i clipped to ``meat_clip`` (the meat: the whitened scores).
    A row of high leverage (||z_i|| > row_clip) or a weight above the cap only lowers the
    bread, which widens the interval.
    """
    with np.errstate(all="ignore"):
        meat = clip_rows((D @ P) * family.score(D @ theta + o, y)[:, None], meat_clip)
        bread = bread_sum(D, y, o, P, theta, family, row_clip, weight_cap)
        return np.concatenate([bread, upper_gram(meat)])


def bread_sum(
    D: np.ndarray,
    y: np.ndarray,
    o: np.ndarray,
    P: np.ndarray,
    theta: np.ndarray,
    family: Family,
    row_clip: float,
    weight_cap: float,
) -> np.ndarray:
    """upper(sum_i w_i c_i c_i') at ``theta``: the bread of :func:`sandwich_sums` alone (for
    the clustered meat, released from per-unit sums instead)."""
    with np.errstate(all="ignore"):
        eta = D @ theta + o
        w = np.clip(family.weight(eta, y), 0.0, weight_cap)
        return upper_gram(clip_rows(D @ P, row_clip) * np.sqrt(w)[:, None])


def margin_sums(
    D: np.ndarray,
    y: np.ndarray,
    o: np.ndarray,
    theta: np.ndarray,
    family: Family,
    first: float,
    second: float,
) -> np.ndarray:
    """[sum_i a_i, sum_i a_i^2 / first, sum_i b_i d_i] at ``theta``, with a_i = dmu/deta and
    b_i = d^2 mu / deta^2 at eta_i, each capped: a_i to [0, ``first``] and b_i d_i to norm
    ``second``. The average marginal effect of coefficient j is mean(a) theta_j; the second
    term gives the spread of a_i over the records and the third the derivative of mean(a) in
    theta (the delta method). Each record's terms have norm at most
    sqrt(first^2 + first^2 + second^2)."""
    with np.errstate(all="ignore"):
        eta = D @ theta + o
        a = np.clip(family.mean_derivative(eta), 0.0, first)
        b = clip_rows(D * family.mean_second_derivative(eta)[:, None], second)
        return np.concatenate([[a.sum(), (a * a).sum() / first], b.sum(axis=0)])


def excess_sums(
    D: np.ndarray,
    y: np.ndarray,
    o: np.ndarray,
    theta: np.ndarray,
    family: Family,
    clip: float,
    window: float,
    far: float,
) -> np.ndarray:
    """[sum_i (clip_{C + w}(g_i) - clip_C(g_i)), #{i : ||g_i|| > far}] at ``theta``, with
    g_i = r_i d_i the negative gradient, C = ``clip`` and w = ``window``: the clipped excess
    behind the gap to the maximum-likelihood fit (each term of norm at most w) and the
    number of records far beyond the clip (each term 0 or 1)."""
    with np.errstate(all="ignore"):
        raw = D * family.score(D @ theta + o, y)[:, None]
        excess = (clip_rows(raw, clip + window) - clip_rows(raw, clip)).sum(axis=0)
        count = np.count_nonzero(row_norms(raw) > far)
        return np.concatenate([excess, [float(count)]])
