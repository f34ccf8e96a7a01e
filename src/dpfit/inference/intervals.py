"""Confidence intervals from released iterates: the Student-t interval and its three inputs.

Brown et al. (2024, Section 3.1) build m estimates theta^(1..m) from the released iterates
of DP-GD and apply one per-coordinate Student-t interval (eq. 12):

    center_j = mean_l theta^(l)_j,   s_j^2 = sum_l (theta^(l)_j - center_j)^2 / (m - 1),
    CI_j     = center_j +/- t_{1 - alpha/2, m - 1} * s_j / sqrt(m).

:func:`t_interval` is that interval; every estimator in dpfit that averages m estimates
uses it. The m estimates come from one of three constructions (one spelling each):

``"independent-runs"``
    m runs of T steps (``dp_gd(..., runs=m)``). Formal (Thm 3.1): the final iterate of each
    run. Experimental (App. B): the mean of each run's iterates after the first ``burn_in``.
``"checkpoints"``
    One run. Formal (Thm 3.1): theta_{lT}, l = 1..m (the iterates split into m consecutive
    blocks, each block's last iterate). Experimental: the same after dropping the first
    ``burn_in`` iterates.
``"batched-means"``
    One run. The means of m consecutive blocks (formal: all iterates; experimental: after
    dropping the first ``burn_in``). No formal guarantee; needs blocks much longer than the
    autocorrelation time ~ 1 / (eta * mu_min(X^T X / n)) and m >= ~10.

When the iterates to split are not a multiple of m, the remainder is dropped at the front
(a choice Section 3.1 leaves open). The intervals target the empirical minimiser theta_hat
(the Huber-loss minimiser under clipping, Section 2.5), **not** the population parameter.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from .._validation import check_alpha, check_array, check_int, check_option, user_stacklevel
from ..exceptions import CoverageWarning

__all__ = [
    "CONSTRUCTIONS",
    "VARIANTS",
    "confidence_interval",
    "interval_estimates",
    "t_interval",
    "t_interval_from_stderr",
    "t_quantile",
]

CONSTRUCTIONS = ("batched-means", "checkpoints", "independent-runs")
VARIANTS = ("experimental", "formal")

#: Burn-in of the experimental variants (Brown et al. 2024, App. B).
DEFAULT_BURN_IN = 20
#: Default number of checkpoints / batches (App. B).
DEFAULT_M = 10


def t_quantile(prob: float, dof: ArrayLike) -> np.ndarray:
    """Upper quantile per coordinate: Student-t with ``dof`` (normal where dof is inf)."""
    dof = np.asarray(dof, dtype=np.float64)
    out = np.full(dof.shape, float(stats.norm.ppf(prob)))
    finite = np.isfinite(dof)
    out[finite] = stats.t.ppf(prob, dof[finite])
    return out


def t_interval_from_stderr(
    center: ArrayLike, stderr: ArrayLike, *, dof: int | ArrayLike, alpha: float = 0.05
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """center +/- t_{1 - alpha/2, dof} * stderr, elementwise (the one Student-t step).

    ``dof`` is an int >= 1, or per-coordinate degrees of freedom >= 1 (floats, e.g.
    Welch-Satterthwaite; ``inf`` gives the normal quantile).

    Returns
    -------
    center, lower, upper : ndarray
    """
    alpha = check_alpha(alpha)
    if np.ndim(dof) == 0:
        dof = check_int(dof, "dof", low=1)
    elif not (np.asarray(dof, dtype=np.float64) >= 1.0).all():
        raise ValueError("dof must be >= 1 (inf for a normal quantile)")
    center = np.asarray(center, dtype=np.float64)
    half = t_quantile(1.0 - alpha / 2.0, dof) * np.asarray(stderr, dtype=np.float64)
    return center, center - half, center + half


def t_interval(
    estimates: ArrayLike, alpha: float = 0.05
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-coordinate Student-t interval from m estimates (Brown et al. 2024, eq. 12).

    Parameters
    ----------
    estimates : array-like of shape (m, p)
        m >= 2 estimates of a p-vector (independent, or nearly so, and equally distributed).
    alpha : float, default=0.05
        The interval has level 1 - alpha.

    Returns
    -------
    center, lower, upper : ndarray of shape (p,)
        The mean of the estimates and the interval's end points, using the sample std with
        ddof = 1 and the upper 1 - alpha/2 quantile of Student's t with m - 1 degrees of
        freedom (the paper's t_{alpha/2, m-1}).

    Notes
    -----
    Exact for m i.i.d. Gaussian estimates; Thm 3.1 transfers it (up to a TV term beta) to the
    formal independent-runs and checkpoint estimates of unclipped DP-GD. Privacy: a function
    of released estimates only, so it costs nothing.

    Examples
    --------
    >>> center, lower, upper = t_interval([[0.0], [1.0], [2.0]], alpha=0.05)
    >>> center.tolist(), [round(float(upper[0] - center[0]), 4)]
    ([1.0], [2.4841])
    """
    estimates = check_array(estimates, "estimates", ndim=2)
    m = estimates.shape[0]
    if m < 2:
        raise ValueError(f"estimates must have m >= 2 rows, got {m}")
    stderr = estimates.std(axis=0, ddof=1) / math.sqrt(m)
    return t_interval_from_stderr(estimates.mean(axis=0), stderr, dof=m - 1, alpha=alpha)


def _blocks(iterates: np.ndarray, m: int, burn_in: int) -> np.ndarray:
    """Drop ``burn_in`` iterates, then the remainder at the front; shape (m, L, p)."""
    usable = iterates.shape[0] - burn_in
    length = usable // m
    if length < 1:
        raise ValueError(
            f"{iterates.shape[0]} iterates cannot make m={m} blocks after burn_in={burn_in}"
        )
    start = burn_in + usable - m * length
    return iterates[start:].reshape(m, length, iterates.shape[1])


def batch_means(iterates: ArrayLike, m: int, burn_in: int) -> np.ndarray:
    """The means of m consecutive batches of one run's iterates after ``burn_in`` (the
    remainder dropped at the front): the estimates of ``interval_estimates(...,
    "batched-means")`` (Brown et al. 2024, eq. 12), shape (m, p)."""
    return _blocks(np.asarray(iterates, dtype=np.float64), m, burn_in).mean(axis=1)


def interval_estimates(
    trajectory: Any,
    construction: str = "batched-means",
    *,
    m: int | None = None,
    burn_in: int | None = None,
    variant: str = "experimental",
    warn: bool = True,
) -> np.ndarray:
    """The m estimates that a construction builds from a trajectory's released iterates.

    Parameters
    ----------
    trajectory : Trajectory
        A DP-GD run (``config["runs"]`` runs of ``config["steps"]`` iterates each).
    construction : {"batched-means", "checkpoints", "independent-runs"}
        See the module docstring.
    m : int, optional
        Number of estimates, >= 2. For independent runs it must equal the number of runs
        (the default); otherwise it defaults to 10.
    burn_in : int, optional
        Iterates dropped first (per run for independent runs). Defaults to 20 for the
        experimental variant and must be 0 (the default) for the formal one.
    variant : {"experimental", "formal"}, default="experimental"
        ``"formal"`` is the Thm 3.1 construction, ``"experimental"`` the App. B one.
    warn : bool, default=True
        Emit the CoverageWarning below. ``False`` is for a dry run on public shapes (an
        estimator checking its settings before any charge, whose real construction warns
        after the fit): a flag rather than ``warnings.catch_warnings()``, which is not
        thread-safe.

    Returns
    -------
    numpy.ndarray of shape (m, p)

    Warns
    -----
    CoverageWarning
        Batched means with m < 10 (the paper's rule of thumb), unless ``warn=False``.
    """
    construction = check_option(construction, "construction", CONSTRUCTIONS)
    variant = check_option(variant, "variant", VARIANTS)
    if burn_in is None:
        burn_in = DEFAULT_BURN_IN if variant == "experimental" else 0
    burn_in = check_int(burn_in, "burn_in", low=0)
    if variant == "formal" and burn_in:
        raise ValueError("burn_in applies to variant='experimental' only; use burn_in=0")
    iterates = np.asarray(trajectory.iterates)
    runs = int(trajectory.config.get("runs", 1))
    steps = int(trajectory.config.get("steps", iterates.shape[0]))

    if construction == "independent-runs":
        m = runs if m is None else check_int(m, "m", low=2)
        if m != runs or runs < 2:
            raise ValueError(
                f"independent-runs needs a trajectory of m >= 2 runs (dp_gd(..., runs=m)); "
                f"it has {runs} run(s) and m={m}"
            )
        per_run = iterates.reshape(runs, steps, -1)
        if variant == "formal":
            return per_run[:, -1, :].copy()
        if steps <= burn_in:
            raise ValueError(f"independent-runs needs steps > burn_in, got {steps} <= {burn_in}")
        return per_run[:, burn_in:, :].mean(axis=1)

    m = DEFAULT_M if m is None else check_int(m, "m", low=2)
    if runs != 1:
        raise ValueError(f"{construction} needs a single run, the trajectory has {runs} runs")
    if warn and construction == "batched-means" and m < 10:
        warnings.warn(
            f"batched-means with m={m} < 10 batches may under-cover (Brown et al. 2024, 3.1)",
            CoverageWarning,
            stacklevel=user_stacklevel(),
        )
    blocks = _blocks(iterates, m, burn_in)
    if construction == "checkpoints":
        return blocks[:, -1, :].copy()
    return blocks.mean(axis=1)


def confidence_interval(
    trajectory: Any,
    construction: str = "batched-means",
    *,
    m: int | None = None,
    burn_in: int | None = None,
    variant: str = "experimental",
    alpha: float = 0.05,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`t_interval` of :func:`interval_estimates` (same parameters); free in privacy.

    Returns
    -------
    center, lower, upper : ndarray of shape (p,)
        Per-coordinate level 1 - alpha intervals for theta_hat (not theta*).

    Examples
    --------
    >>> import numpy as np
    >>> from dpfit.algorithms import dp_gd
    >>> X = np.random.default_rng(0).standard_normal((2000, 2))
    >>> y = X @ np.array([1.0, -1.0]) + np.random.default_rng(1).standard_normal(2000)
    >>> traj = dp_gd(X, y, rho=0.5, clip=10.0, steps=520, step_size=0.2, rng=2)
    >>> center, lower, upper = confidence_interval(traj, "batched-means")
    >>> bool(np.all(lower < upper))
    True
    """
    alpha = check_alpha(alpha)
    estimates = interval_estimates(trajectory, construction, m=m, burn_in=burn_in, variant=variant)
    return t_interval(estimates, alpha)
