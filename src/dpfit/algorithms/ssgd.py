"""DP-SSGD: one pass of batch-size-1 SGD with a fixed clip (Varshney et al. 2022, Alg. 1).

The records are read once, in a data-independent (by default uniformly random) order; step
t releases the clipped gradient of record t plus Gaussian noise of std ``alpha * 2 clip``
(its replacement sensitivity times alpha), then w_{t+1} = w_t - eta * (noisy gradient). The
estimate is the tail average of w_{N/2+1..N}, kept as a running sum.

Two privacy analyses, each used only where its preconditions hold:

* parallel composition (always valid, any epsilon, any order, also for streams): each record
  is read by one step only, so the run is 1/(2 alpha^2)-zCDP;
* amplification by shuffling (:mod:`dpfit.privacy.shuffling`, Feldman et al. 2021): only
  for a target (epsilon, delta), when the records are processed in the order of a uniformly
  random permutation of all N that stays secret (:mod:`dpfit.algorithms.onepass`; never for
  a stream or ``shuffle=False``), and when the theorem's precondition on eps0 holds. It
  typically needs epsilon of order sqrt(ln(N/delta)/N) to beat parallel composition.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._deprecation import renamed_keyword
from .._floats import quiet_floats
from .._validation import check_delta, check_epsilon, check_int, check_positive, check_rho
from ..mechanisms import (
    check_descent_scale,
    clip_factors,
    gaussian,
    make_noise_source,
    noise_multiplier_for_rho,
    noise_std_within,
    rho_for_noise_std,
    row_norms,
)
from ..mechanisms.limits import NOISE_SIGMAS
from ..privacy import Relation, cks_rho, sum_sensitivity
from ..privacy.ledger import prepare_ledger
from ..privacy.shuffling import shuffled_gaussian_noise_multiplier
from .ambssgd import replace_one_only
from .onepass import one_pass_data
from .trajectory import Trajectory

__all__ = ["dp_ssgd", "ssgd_noise_multiplier"]

#: Records per read from the data (I/O only; privacy is per record).
_CHUNK = 4096


def ssgd_noise_multiplier(
    epsilon: float, delta: float, n: int, *, shuffled: bool
) -> tuple[float, str]:
    """The smallest valid alpha for an (epsilon, delta) target and the analysis that gives it.

    Parallel composition needs 1/(2 alpha^2) <= rho_CKS(epsilon, delta) (the optimal zCDP to
    (epsilon, delta) conversion); shuffling (only if ``shuffled``) uses
    :func:`dpfit.privacy.shuffling.shuffled_gaussian_noise_multiplier`. Returns
    ``(alpha, "parallel" or "shuffle")``.
    """
    eps, delta = check_epsilon(epsilon), check_delta(delta)
    alpha = noise_multiplier_for_rho(cks_rho(eps, delta))
    amplified = shuffled_gaussian_noise_multiplier(eps, delta, n) if shuffled else None
    if amplified is not None and amplified < alpha:
        return amplified, "shuffle"
    return alpha, "parallel"


@quiet_floats()
def dp_ssgd(
    X: Any,
    y: Any = None,
    *,
    clip: float,
    step_size: float,
    rho: float | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    shuffle: bool | None = None,
    iterate_stride: int | None = None,
    relation: Relation | str = "replace-one",
    n_public: int | None = None,
    ledger: Any = None,
    rng: Any = None,
    diagnostics: bool = False,
    n: int | None = None,
) -> Trajectory:
    """One pass of DP-SSGD (Alg. 1): fixed clip, batch size 1, tail averaging.

    Parameters
    ----------
    X, y, n_public, shuffle
        Data, as for :func:`dpfit.algorithms.dp_ambssgd`.
    clip : float
        zeta, the fixed per-example gradient clip (public; Thm. 3.2's value is
        :func:`dpfit.theory.ssgd.ssgd_clip`).
    step_size : float
        eta (public; see :func:`dpfit.theory.ssgd.ssgd_step_size`).
    rho : float, optional
        zCDP budget: alpha = 1/sqrt(2 rho) by parallel composition. Give either ``rho`` or
        both ``epsilon`` and ``delta``.
    epsilon, delta : float, optional
        An (epsilon, delta) target: alpha is the smaller of parallel composition's and
        (for shuffled arrays) amplification by shuffling's (:func:`ssgd_noise_multiplier`).
    iterate_stride : int, optional
        Keep every k-th iterate in ``iterates`` (default: about 1000 kept); all are private.
    relation : {"replace-one"}, default="replace-one"
        Only replace-one is supported.
    ledger, rng
        As for :func:`dpfit.algorithms.dp_ambssgd`.
    diagnostics : bool, default=False
        Also record the NON-PRIVATE fraction of clipped gradients.
    n : int, optional
        Deprecated name of ``n_public`` (DeprecationWarning).

    Returns
    -------
    Trajectory
        ``config`` holds alpha, the analysis used (``"accountant"``) and, for an (epsilon,
        delta) target, the guaranteed ``epsilon`` and ``delta``.

    Notes
    -----
    Privacy (replace-one, public n; Thm. 3.1). Given the past releases, step t's clipped
    gradient has sensitivity 2 zeta (:func:`dpfit.privacy.sum_sensitivity` of a batch of one,
    whose float64 rounding allowance, 2^-52 zeta, is at most one ulp of 2 zeta) and noise
    std alpha times that: 1/(2 alpha^2)-zCDP, and each record is read by one step only. The ledger
    records this parallel composition, whose zCDP cost holds in every case. When the shuffle
    analysis was used, the run is in addition (epsilon, delta)-DP for the target: the records
    are processed in the order of a uniform permutation of all N, drawn from the noise source
    and kept secret; that statement is in ``config`` (the zCDP ledger cannot express it).

    Examples
    --------
    >>> import warnings
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((20_000, 2))
    >>> y = X @ np.array([1.0, -1.0]) + 0.1 * rng.standard_normal(20_000)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     traj = dp_ssgd(X, y, clip=5.0, step_size=0.002, rho=2.0, rng=1)
    >>> np.round(traj.estimate, 1), round(traj.ledger.rho, 12)
    (array([ 1. , -0.9]), 2.0)
    """
    relation = replace_one_only(relation, "dp_ssgd")
    zeta = check_positive(clip, "clip")
    eta = check_positive(step_size, "step_size")
    if not isinstance(diagnostics, bool):
        raise TypeError(f"diagnostics must be a bool, got {type(diagnostics).__name__}")
    if (rho is None) == (epsilon is None and delta is None):
        raise TypeError("give either rho, or epsilon and delta (not both, not neither)")
    if rho is not None:
        rho = check_rho(rho)
    elif epsilon is None or delta is None:
        raise TypeError("an (epsilon, delta) target needs both epsilon and delta")
    n_public = renamed_keyword(n_public, n, new="n_public", old="n")
    data = one_pass_data(X, y, n=n_public, shuffle=shuffle)
    N = data.n
    if delta is not None:
        check_delta(delta, n=N)  # warns when delta > 1/N
    if rho is not None:
        alpha, accountant = noise_multiplier_for_rho(rho), "parallel"
    else:
        shuffled = data.shuffle and data.kind != "stream"
        alpha, accountant = ssgd_noise_multiplier(epsilon, delta, N, shuffled=shuffled)
    stride = (
        -(-N // 1000) if iterate_stride is None else check_int(iterate_stride, "iterate_stride")
    )
    sens = sum_sensitivity(zeta, relation, n=1)  # a batch of one, with its rounding allowance
    noise_std = alpha * sens
    if not (math.isfinite(noise_std) and noise_std > 0):
        raise ValueError("noise scale not finite: clip and the privacy target give no valid noise")
    check_descent_scale(  # before the charge: nothing below can overflow
        zeta,
        lambda c: (c, c + NOISE_SIGMAS * alpha * sum_sensitivity(c, relation, n=1)),
        step_size=eta,
        steps=N,
        what="one record's clipped gradient and its noise",
    )
    if rho is not None:  # alpha * sens can be charged an ulp above rho: raise it within rho
        noise_std = noise_std_within(sens, noise_std, rho)
    source = make_noise_source(rng)
    charged = rho_for_noise_std(sens, noise_std)  # what each step is charged, exactly
    ledger = prepare_ledger(ledger, relation, charged, name="dp_ssgd")

    w = np.zeros(data.d)
    tail_sum = np.zeros(data.d)
    tail_from = N - N // 2  # steps t >= tail_from produce w_{N/2+1..N}
    kept: list[np.ndarray] = []
    n_clipped = 0
    sizes = [_CHUNK] * (N // _CHUNK) + ([N % _CHUNK] if N % _CHUNK else [])
    # An extreme record (e.g. 1e308) may overflow its residual or gradient; its clip factor is
    # then 0 or tiny, and no numpy warning reveals it (quiet_floats: warnings are releases too).
    with ledger.parallel("dp_ssgd", rho_per_block=charged) as blocks:
        t = 0
        for Xc, yc in data.segments(sizes, source.generator):
            norms = row_norms(Xc)
            for x, target, norm in zip(Xc, yc, norms, strict=True):
                r = float(x @ w) - target
                factor = float(clip_factors(np.array([norm * abs(r)]), zeta)[0])
                grad = x * (r * factor) if factor > 0 else np.zeros_like(x)
                noisy = gaussian(
                    grad,
                    sensitivity=sens,
                    noise_std=noise_std,
                    ledger=blocks.block(),
                    rng=source,
                    label="dp_ssgd/gradient",
                )
                w = w - eta * noisy
                n_clipped += factor < 1.0
                if t >= tail_from:
                    tail_sum += w
                t += 1
                if t % stride == 0 or t == N:
                    kept.append(w)
    config: dict[str, Any] = {
        "n": N,
        "d": data.d,
        "clip": zeta,
        "step_size": eta,
        "noise_multiplier": alpha,
        "accountant": accountant,
        "iterate_stride": stride,
        "shuffle": data.shuffle,
        "data_kind": data.kind,
        "relation": relation.value,
        "rho": charged,
    }
    if rho is None:
        config.update(epsilon=float(epsilon), delta=float(delta))  # type: ignore[arg-type]
    return Trajectory(
        algorithm="dp_ssgd",
        iterates=np.array(kept),
        estimate=tail_sum / (N // 2) if N >= 2 else w,
        ledger=ledger,
        config=config,
        noise_backend=source.backend,
        seeded=source.seeded,
        diagnostics={"fraction_clipped": n_clipped / N} if diagnostics else {},
    )
