"""Full-batch DP gradient descent for least squares (Brown et al. 2024, Algorithm 1).

Notation (the paper's symbols clash with common usage; see ``docs/brown2024.md``):

=========  ===============  ==============================================================
symbol     name here        meaning
=========  ===============  ==============================================================
gamma      ``clip``         per-example gradient L2 bound
lambda     ``noise_std``    std of the noise on the *averaged* gradient (not a ridge term)
eta        ``step_size``    step size
T          ``steps``        noisy steps of one run
m          ``runs``         independent runs (T_total = m * T noisy steps in all)
=========  ===============  ==============================================================

One step (Alg. 1): r = y - X theta; each per-example gradient g_i = -x_i r_i has norm
|r_i| * ||x_i||, so the row norms of X are computed once and clipping needs only the
residual vector. The clipped mean gradient is -(1/n) X^T (r * f) with f = min(1, gamma /
||g_i||), computed on cache-sized row blocks in buffers allocated once, so a step reads X
once and allocates nothing of size n
(:func:`dpfit.algorithms._kernels.least_squares_sums`, which also runs the sum as one
distributed reduction per step when X and y are Dask arrays). All ``runs * steps`` noisy
releases are charged to the ledger at once, before the first is drawn
(:func:`dpfit.mechanisms.gaussian_releases`), and for X in memory their noise is drawn a
block of steps at a time (the same stream, bit for bit); each step then adds its noise to
the mean gradient, on the driver, and theta <- theta - eta * (mean + noise).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._floats import quiet_floats
from .._validation import check_int, check_positive, check_real, check_rho, check_vector
from ..distributed import is_dask
from ..mechanisms import (
    check_descent_scale,
    gaussian_releases,
    make_noise_source,
    noise_std_for_rho,
    release_peaks,
    rho_within,
)
from ..privacy import PrivacyLedger, Query, Relation, mean_sensitivity, parse_relation, public_n
from ..privacy.ledger import prepare_ledger
from ._kernels import check_data, least_squares_sums
from .trajectory import Trajectory

__all__ = ["check_dp_gd_scales", "dp_gd", "dp_gd_given_noise", "dp_gd_noise_std"]

#: Ledger label of every noisy gradient release.
LABEL = "dp_gd/gradient"
#: Noise drawn ahead for X in memory: at most this many floats (a block of steps' releases),
#: enough to make the per-step draw cost a few nanoseconds. A run that fails keeps the
#: block's undrawn steps spent; on Dask (where a worker can fail) each step draws its own.
_NOISE_BLOCK_FLOATS = 4096


def dp_gd_noise_std(
    *, rho: float, clip: float, n: int, total_steps: int, relation: Relation | str = "replace-one"
) -> float:
    """Noise std lambda that makes ``total_steps`` noisy mean-gradient releases rho-zCDP.

    lambda = Delta * sqrt(T_total / (2 rho)), with Delta = 2 gamma / n (replace-one) or
    gamma / n (add/remove with a public n), i.e. lambda^2 = 2 T_total gamma^2 / (rho n^2)
    under replace-one (Brown et al. 2024, Lemma 2.1). The share is ``rho_within``'s
    rho / T_total (a few ulps below it where that rounds up), so the ledger's exact total of
    the T_total releases stays within rho.

    Examples
    --------
    >>> round(dp_gd_noise_std(rho=0.015, clip=5 * 10**0.5, n=10_000, total_steps=1000), 6)
    0.57735
    """
    rho = check_rho(rho)
    total_steps = check_int(total_steps, "total_steps", low=1)
    sensitivity = mean_sensitivity(clip, n, relation)
    return noise_std_for_rho(sensitivity, rho_within(sensitivity, rho, count=total_steps))


def check_dp_gd_scales(
    clip: float,
    step_size: float,
    theta0: np.ndarray | None = None,
    *,
    rho: float,
    n: int,
    relation: Relation | str,
    total: int,
) -> None:
    """Refuse, before any charge, a clip whose clipped gradient sum or noisy release, or a
    step size whose iterates, could overflow (:mod:`dpfit.mechanisms.limits`).

    ``total`` noisy mean gradients of n records, calibrated together to ``rho``: every
    step's noisy mean gradient has coordinates at most C + Z sigma, so |theta_t| <=
    |theta_0| + t eta (C + Z sigma). Raises ValueError naming ``clip`` or ``step_size``
    and its largest allowed value.
    """

    check_descent_scale(
        clip,
        lambda c: release_peaks(Query.MEAN, bound=c, n=n, rho=rho, relation=relation, count=total),
        step_size=step_size,
        steps=total,
        start=0.0 if theta0 is None else float(np.abs(theta0).max(initial=0.0)),
        what=f"the clipped gradient sum of n = {n} records and its noise",
    )


def _descend(
    X: Any,
    y: Any,
    theta0: np.ndarray,
    *,
    steps: int,
    step_size: float,
    normaliser: float,
    perturb: Callable[[np.ndarray, int], np.ndarray],
    sums: Callable[[np.ndarray], tuple[np.ndarray, int]],
) -> tuple[np.ndarray, np.ndarray]:
    """Run Alg. 1's loop; returns the iterates (steps x p) and the clipped count per step.

    ``sums(theta)`` is the clipped gradient sum of (X, y) and its clipped count
    (:func:`~dpfit.algorithms._kernels.least_squares_sums`); ``perturb(mean_gradient, t)``
    returns the noisy mean gradient. The clipped counts are non-private. The loop enters
    :func:`~dpfit._floats.quiet_floats` once, and an in-memory kernel's steps skip their own
    (:meth:`~dpfit.algorithms._kernels.LeastSquaresSums.quiet_call`). n and eta enter the
    ufuncs as 0-d float64 arrays, the same values as the Python numbers, which numpy 2
    converts at every call (about half a small ufunc's cost).
    """
    iterates = np.empty((steps, X.shape[1]))
    clipped = np.zeros(steps, dtype=np.int64)
    step = np.empty(X.shape[1])
    theta = theta0
    sums = getattr(sums, "quiet_call", sums)
    normaliser, step_size = np.array(float(normaliser)), np.array(float(step_size))
    with quiet_floats():
        for t in range(steps):
            total, clipped[t] = sums(theta)
            np.divide(total, normaliser, out=total)
            np.multiply(perturb(total, t), step_size, out=step)
            theta = np.subtract(theta, step, out=iterates[t])  # theta - eta * noisy gradient
    return iterates, clipped


@quiet_floats()
def dp_gd(
    X: ArrayLike,
    y: ArrayLike,
    *,
    rho: float,
    clip: float,
    steps: int,
    step_size: float = 0.25,
    runs: int = 1,
    theta0: ArrayLike | None = None,
    relation: Relation | str = "replace-one",
    n_public: int | None = None,
    ledger: PrivacyLedger | None = None,
    rng: Any = None,
    warn_large_rho: bool = True,
) -> Trajectory:
    """Run full-batch DP gradient descent for least squares and release every iterate.

    Each step clips the per-example gradients of 0.5 * (y_i - x_i @ theta)**2 to L2 norm
    ``clip``, averages them, adds N(0, noise_std^2 I) through
    :func:`dpfit.mechanisms.gaussian` and steps (Brown et al. 2024, Alg. 1). ``runs``
    independent runs start from the same ``theta0`` with fresh noise (the independent-runs
    interval construction, Section 3.1).

    Parameters
    ----------
    X : array-like or dask.array.Array of shape (n, p)
        Design matrix (private). Not standardised or centred: add an intercept column
        yourself, and choose ``clip`` for the scale of your data from public knowledge. A
        Dask array (with a Dask ``y``) runs each step as one distributed reduction
        (``docs/dask.md``); ``n_public`` is then required.
    y : array-like or dask.array.Array of shape (n,)
        Response (private).
    rho : float
        zCDP cost of the whole procedure (all ``runs * steps`` releases), finite and > 0.
    clip : float
        Per-example gradient norm bound (the paper's gamma), finite and > 0. Public: never set
        from X or y. With unit-scale features and noise of std sigma, the paper uses
        5 * sigma * sqrt(p) (see :func:`dpfit.theory.recommend_dp_gd`).
    steps : int
        Noisy steps T >= 1 of each run.
    step_size : float, default=0.25
        Step size eta > 0 (theory: 1/4 for 0.5 I <= X^T X / n <= 2 I; the paper's experiments
        use 0.2). Stability needs eta < 2 / lambda_max(X^T X / n).
    runs : int, default=1
        Independent runs m >= 1; the noise is calibrated to ``runs * steps`` releases.
    theta0 : array-like of shape (p,), optional
        Public, data-independent starting point; zeros by default.
    relation : {"replace-one", "add-remove"}, default="replace-one"
        Neighbouring relation of the guarantee.
    n_public : int, optional
        Public record count that divides the clipped sum. Required under add/remove and for
        Dask inputs; under replace-one n is public and this must be omitted or equal
        ``len(X)`` (for Dask, checked when the row chunk sizes are known).
    ledger : PrivacyLedger, optional
        Where the releases are charged (its relation must equal ``relation``); by default a
        new ledger with a :class:`~dpfit.privacy.Budget` of ``rho``.
    rng : None, int, numpy.random.Generator or NoiseSource, optional
        Noise source (see :func:`dpfit.mechanisms.make_noise_source`).
    warn_large_rho : bool, default=True
        Emit :class:`~dpfit.LargeBudgetWarning` when ``rho`` is large. An estimator that
        spends a share of its budget here, and has already warned about the whole, passes
        False.

    Returns
    -------
    Trajectory
        ``iterates`` of shape (runs * steps, p) in run order; ``estimate`` is the final
        iterate (the mean of the runs' final iterates when ``runs > 1``); ``config`` holds
        the public inputs with ``noise_std``, ``runs`` and ``steps``; ``diagnostics`` holds the
        **non-private** ``fraction_clipped`` and ``clipped_per_step``.

    Raises
    ------
    TypeError, ValueError
        Invalid inputs; raised before any charge or draw.
    BudgetExceededError
        ``ledger``'s budget cannot afford ``rho``; nothing was charged or drawn.

    Notes
    -----
    Privacy (Brown et al. 2024, Lemma 2.1): every clipped gradient has norm <= clip, so
    replacing one record moves the mean gradient by at most Delta = 2 clip / n (clip /
    n_public under add/remove). Each release is then Delta^2 / (2 noise_std^2)-zCDP and zCDP
    composes additively, so noise_std = Delta * sqrt(runs * steps / (2 rho)) makes the whole
    procedure rho-zCDP for every dataset, whether or not anything is clipped. Intervals
    built from the iterates (:mod:`dpfit.inference`) are post-processing and cost nothing
    more. The noise is float64 Gaussian noise unless ``rng`` is a secure source.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).standard_normal((1000, 3))
    >>> y = X @ np.array([1.0, -0.5, 0.25])
    >>> traj = dp_gd(X, y, rho=1.0, clip=5.0, steps=20, step_size=0.25, rng=1)
    >>> traj.iterates.shape, round(traj.rho, 12)
    ((20, 3), 1.0)
    """
    rho = check_rho(rho, warn=warn_large_rho)
    clip = check_positive(clip, "clip")
    steps = check_int(steps, "steps", low=1)
    step_size = check_positive(step_size, "step_size")
    runs = check_int(runs, "runs", low=1)
    relation = parse_relation(relation)
    ledger = prepare_ledger(ledger, relation, rho, name="dp_gd")
    source = make_noise_source(rng)
    X, y, n = check_data(X, y, n_public=n_public, relation=relation)
    p = X.shape[1]
    theta0 = np.zeros(p) if theta0 is None else check_vector(theta0, "theta0", size=p)
    normaliser = public_n(n, n_public, relation)

    total = runs * steps
    check_dp_gd_scales(
        clip, step_size, theta0, rho=rho, n=normaliser, relation=relation, total=total
    )
    sensitivity = mean_sensitivity(clip, normaliser, relation)
    # rho_within: the ledger adds the total charges exactly, and rho / total can round up
    noise_std = noise_std_for_rho(sensitivity, rho_within(sensitivity, rho, count=total))

    sums = least_squares_sums(X, y, clip)
    # all runs * steps releases charged now, before any draw; a failure returns the undrawn
    with gaussian_releases(
        count=total,
        sensitivity=sensitivity,
        noise_std=noise_std,
        ledger=ledger,
        rng=source,
        label=LABEL,
        block=1 if is_dask(X) else max(1, min(total, _NOISE_BLOCK_FLOATS // p)),
    ) as releases:

        def perturb(gradient: np.ndarray, t: int) -> np.ndarray:
            return releases.release(gradient)

        runs_out = [
            _descend(
                X,
                y,
                theta0,
                steps=steps,
                step_size=step_size,
                normaliser=normaliser,
                perturb=perturb,
                sums=sums,
            )
            for _ in range(runs)
        ]
    iterates = np.concatenate([it for it, _ in runs_out])
    clipped = np.concatenate([c for _, c in runs_out])
    finals = iterates[steps - 1 :: steps]
    return Trajectory(
        algorithm="dp_gd",
        iterates=iterates,
        estimate=finals.mean(axis=0) if runs > 1 else finals[0],
        ledger=ledger,
        config={
            "rho": rho,
            "clip": clip,
            "steps": steps,
            "runs": runs,
            "step_size": step_size,
            "theta0": tuple(theta0.tolist()),
            "relation": relation.value,
            "n": normaliser,
            "p": p,
            "noise_std": noise_std,
            "sensitivity": sensitivity,
        },
        noise_backend=source.backend,
        seeded=source.seeded,
        diagnostics={
            "fraction_clipped": float(clipped.sum()) / (total * n),
            "clipped_per_step": clipped,
        },
    )


@quiet_floats()
def dp_gd_given_noise(
    X: ArrayLike,
    y: ArrayLike,
    *,
    noise: ArrayLike,
    step_size: float,
    clip: float = math.inf,
    theta0: ArrayLike | None = None,
) -> np.ndarray:
    """Alg. 1's recursion with caller-supplied noise: a **non-private** reference.

    theta_t = theta_{t-1} - step_size * (clipped mean gradient + noise[t - 1]). Nothing is
    calibrated, charged or drawn, so the output is not a private release. It exists for
    tests and theory checks: with ``clip = inf`` it is the unclipped algorithm,
    whose law is exactly Gaussian, and feeding it the noise that :func:`dp_gd` drew
    (``noise_std * generator.standard_normal(p)`` per step, from the same seeded source)
    reproduces a run in which nothing is clipped bit for bit (the coupling of Lemma 2.2).
    ``noise = 0`` and a finite ``clip`` run noiseless clipped GD (the Huber target of Brown
    et al. 2024).

    Parameters
    ----------
    X : array-like of shape (n, p)
    y : array-like of shape (n,)
    noise : array-like of shape (steps, p)
        Noise added to the mean gradient at each step (already scaled by its std).
    step_size : float
        Step size eta > 0.
    clip : float, default=inf
        Per-example gradient norm bound; ``inf`` disables clipping.
    theta0 : array-like of shape (p,), optional
        Starting point; zeros by default.

    Returns
    -------
    numpy.ndarray of shape (steps, p)
        The iterates theta_1..theta_T.
    """
    X, y, n = check_data(X, y)
    p = X.shape[1]
    noise = np.asarray(noise, dtype=np.float64)
    if noise.ndim != 2 or noise.shape[1] != p or not np.isfinite(noise).all():
        raise ValueError(f"noise must be a finite array of shape (steps, {p})")
    step_size = check_positive(step_size, "step_size")
    clip = check_real(clip, "clip", low=0.0, high=math.inf, high_open=False)
    theta0 = np.zeros(p) if theta0 is None else check_vector(theta0, "theta0", size=p)
    iterates, _ = _descend(
        X,
        y,
        theta0,
        steps=noise.shape[0],
        step_size=step_size,
        normaliser=n,
        perturb=lambda gradient, t: gradient + noise[t],
        sums=least_squares_sums(X, y, None if math.isinf(clip) else clip),
    )
    return iterates
