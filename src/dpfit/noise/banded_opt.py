"""Banded Toeplitz encoders optimised for amplification, and the band width chosen per epsilon.

Amplified banded matrix factorisation (Choquette-Choo, Ganesh, McKenna, McMahan, Rush,
Thakurta & Xu 2023, arXiv 2306.08153): with a lower-triangular Toeplitz encoder C of ``bands``
= m bands and cyclic Poisson sampling over m groups with probability q, the release is the
composition of ceil(T / m) subsampled Gaussian mechanisms of sensitivity ||c||_2 per unit of
clip (:mod:`dpfit.noise.amplified`). With noise multiplier z(epsilon, q, ceil(T / m)) from the
PLD accountant, the expected squared error of the T noisy prefix sums is

    z^2 x ||c||_2^2 x ||A C^{-1}||_F^2          (prefix-sum workload A, 2024 paper eq. 3).

For a fixed m the accountant's z does not depend on c, so the best encoder minimises
||c||^2 ||A C^{-1}||_F^2 over c_0 = 1 >= c_1 >= .. >= c_{m-1} > 0 (:func:`optimal_banded`; the
paper's amplified objective restricted to Toeplitz C). Non-negative non-increasing c keeps
the decoder C^{-1} stable (all zeros of c(x) lie outside the open unit disc, by the
Enestrom-Kakeya theorem) and the multi-participation sensitivity exact (the monotone formula
of :mod:`dpfit.noise.sensitivity`). Unconstrained L-BFGS from the same start reaches the
same optimum at T = 2000 for m = 4, 10 and 50 (and fails at m = 2 by leaving the stable
region). The same c is optimal without amplification whenever m <= b: columns of C more
than m - 1 steps apart never share a row, so sens_{k,b}^2 = k ||c||^2 exactly.
:func:`amplified_banded_choice` then picks m per epsilon among candidates, trading the
amplification of small m (m = 1 is DP-SGD with Poisson sampling) against the correlation of
large m (m = n / B: q = 1, no amplification).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, signal, special

from .._validation import check_int
from ..privacy import subsampled_gaussian_noise_multiplier
from .toeplitz import ToeplitzMechanism, inverse_coefficients, nu_dpftrl_coefficients

__all__ = ["BandChoice", "amplified_banded_choice", "optimal_banded"]


def _decoder(c: np.ndarray, steps: int) -> np.ndarray:
    """beta = power-series reciprocal of the banded c (an IIR filter applied to e_0)."""
    impulse = np.zeros(steps)
    impulse[0] = 1.0
    return signal.lfilter([1.0], c, impulse)


def _column(u: np.ndarray) -> np.ndarray:
    """c_0 = 1, c_j = prod_{i <= j} expit(u_i): positive and non-increasing."""
    return np.concatenate(([1.0], np.cumprod(special.expit(u))))


def _log_objective(u: np.ndarray, steps: int) -> tuple[float, np.ndarray]:
    """log(||c||^2 ||A B||_F^2) with c = :func:`_column` (u) and its gradient in u.

    d beta = -(beta * beta * dc) since c * beta = e_0, so with s = cumsum(beta) and
    r = reverse-cumsum(2 (T - t) s): d ||A B||_F^2 / dc_j = -sum_t r_t (beta * beta)_{t-j};
    dc_j / du_i = c_j (1 - expit(u_i)) for 1 <= i <= j.
    """
    c = _column(u)
    beta = _decoder(c, steps)
    s = np.cumsum(beta)
    weights = steps - np.arange(steps, dtype=np.float64)
    prefix = float((weights * s * s).sum())
    norm2 = float(c @ c)
    r = np.cumsum((2.0 * weights * s)[::-1])[::-1]
    q = signal.fftconvolve(beta, beta)[:steps]
    d_prefix = signal.fftconvolve(r[::-1], q)[:steps][::-1][: c.size]
    grad_c = (2.0 * c / norm2 - d_prefix / prefix)[1:]
    grad_u = np.cumsum((grad_c * c[1:])[::-1])[::-1] * (1.0 - special.expit(u))
    return math.log(norm2 * prefix), grad_u


@functools.lru_cache(maxsize=64)
def _optimal_column(steps: int, bands: int) -> tuple[float, ...]:
    # Start: nu-DP-FTRL's encoder at nu = 1/bands cut to the bands, c_j / c_{j-1} = (j - 1/2)/j.
    c = nu_dpftrl_coefficients(1.0 / bands, bands)[1]
    start = special.logit(c[1:] / c[:-1])
    res = optimize.minimize(
        _log_objective,
        start,
        args=(steps,),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": 5000, "maxfun": 20000, "ftol": 1e-13, "gtol": 1e-10},
    )
    return tuple(_column(res.x).tolist())


def optimal_banded(steps: int, bands: int) -> ToeplitzMechanism:
    """The Toeplitz encoder of ``bands`` bands minimising ||c||_2^2 x ||A C^{-1}||_F^2.

    Parameters
    ----------
    steps : int
        Number of steps T.
    bands : int
        m: non-zero coefficients c_0 = 1, c_1 .. c_{m-1} of the encoder (1 gives DP-SGD).

    Returns
    -------
    ToeplitzMechanism
        ``encoder_bands == bands`` (or fewer if a coefficient is exactly 0); usable with
        :func:`~dpfit.noise.amplified_noise` for ``groups >= bands`` and, unamplified, with
        the exact sensitivity k ||c||^2 whenever bands <= b. Cached per process.

    Examples
    --------
    >>> mech = optimal_banded(100, 4)
    >>> mech.encoder_bands
    4
    """
    steps = check_int(steps, "steps", low=1)
    bands = check_int(bands, "bands", low=1, high=steps)
    c = np.zeros(steps)
    c[:bands] = _optimal_column(steps, bands) if bands > 1 else (1.0,)
    return ToeplitzMechanism(
        beta=inverse_coefficients(c), inverse=c, name=f"optimal-banded(bands={bands})"
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class BandChoice:
    """The band width chosen for one (epsilon, delta) and what it implies (all public).

    Attributes
    ----------
    mechanism : ToeplitzMechanism
        :func:`optimal_banded` for ``bands``.
    bands : int
        m, also the number of sampling groups.
    sampling_probability : float
        q = min(1, batch_size x m / dataset_size).
    compositions : int
        ceil(T / m).
    noise_multiplier : float
        z: noise std per unit of one composition's sensitivity.
    objective : float
        z^2 ||c||^2 ||A C^{-1}||_F^2, the prefix-sum squared error per unit clip^2.
    objectives : dict
        The same for every candidate band width tried.
    """

    mechanism: ToeplitzMechanism
    bands: int
    sampling_probability: float
    compositions: int
    noise_multiplier: float
    objective: float
    objectives: dict[int, float]


def amplified_banded_choice(
    steps: int,
    *,
    epsilon: float,
    delta: float,
    batch_size: int,
    dataset_size: int,
    candidates: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64),
) -> BandChoice:
    """The band width m (and its optimised encoder) with the least prefix-sum error at epsilon.

    Every candidate with q = batch_size m / dataset_size <= 1 and m <= T is calibrated by the
    PLD accountant (:func:`dpfit.privacy.subsampled_gaussian_noise_multiplier`, one call per
    candidate; q = 1 is the Gaussian composition, no amplification) and the least
    z^2 ||c||^2 ||A C^{-1}||_F^2 wins. Data-free: uses T, the public batch size and n only.
    """
    steps = check_int(steps, "steps", low=1)
    batch = check_int(batch_size, "batch_size", low=1)
    n = check_int(dataset_size, "dataset_size", low=batch)
    objectives: dict[int, float] = {}
    plans = {}
    for m in sorted({check_int(m, "candidate", low=1) for m in candidates}):
        if m > steps or batch * m > n:
            continue
        mech = optimal_banded(steps, m)
        q, count = batch * m / n, math.ceil(steps / m)
        z = subsampled_gaussian_noise_multiplier(
            epsilon, sampling_probability=q, count=count, delta=delta
        )
        norm2 = math.fsum(np.asarray(mech.inverse) ** 2)
        objectives[m] = z * z * norm2 * mech.prefix_error()
        plans[m] = (mech, q, count, z)
    if not objectives:
        raise ValueError("no candidate band width has m <= steps and batch_size m <= dataset_size")
    best = min(objectives, key=objectives.__getitem__)
    mech, q, count, z = plans[best]
    return BandChoice(
        mechanism=mech,
        bands=best,
        sampling_probability=q,
        compositions=count,
        noise_multiplier=z,
        objective=objectives[best],
        objectives=objectives,
    )
