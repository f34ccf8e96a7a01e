"""Public-parameter checks that keep every clipped sum, sensitivity and noisy release finite.

A public setting such as ``clip=1e307`` with 18 records makes the clipped gradient sum
overflow float64 (18 x 1e307 > 1.8e308); found after the budget was charged, that failure
would be a release (whether it happens depends on how many records reach the clip) and a
waste of budget. So every entry point proves, **before its first charge and from public
inputs only** (sizes, bounds, clips, rho, steps), that everything it will compute stays
finite, and otherwise refuses with one line naming the parameter and its largest allowed
value (``docs/threat-model.md``, "Public-parameter checks").

What is bounded, for each release (:func:`release_peaks`):

* the computed query before any division (n x C for a clipped sum or mean, n x B^2 for a
  second moment or an eigenvalue; :func:`dpfit.privacy.queries.query_peak`), which also
  bounds every partial sum in any summation order;
* its sensitivity and noise std, sigma = Delta / sqrt(2 rho'), rho' the release's share;
* the noisy release, |value| + Z sigma per coordinate with Z = :data:`NOISE_SIGMAS`: a
  standard normal beyond 40 has probability below 1e-349, under the smallest positive
  float64, and the samplers' own maxima are far below it;
* where the inference squares the release (``squared=True``: a second moment that becomes a
  sandwich's meat or bread, whose de-spreading subtracts s^2 and whose degrees of freedom
  divide V^2 by the variance the noise gives V), the square of the noisy release, which
  also bounds sigma^2 and |value|^2.

Each must stay below :data:`LIMIT`, the largest float64 divided by the :data:`HEADROOM` 2^64.
A factor that scales a result down (the map of a covariance back to the data's units through
wide public bounds) must keep its square at or above :data:`SMALLEST`, the smallest normal
float64 times the same headroom (:func:`check_smallest_factor`): a variance of 1e-400 is 0
in float64, and a standard error of 0 claims a point interval.
The headroom absorbs the post-processing dpfit applies to releases (a solve, sums of T
steps, a covariance of m estimates, a product with a public whitener or rescaling) and a
private record count larger than the public one under add/remove. Entry points add their
own post-processing peaks (e.g. DP-GD's iterates, at most T eta (C + Z sigma sqrt(p)) from
their start) where it can exceed the headroom.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Iterable

from ..privacy.queries import Query, query_peak, query_sensitivity
from ..privacy.relations import Relation

__all__ = [
    "HEADROOM",
    "LIMIT",
    "NOISE_SIGMAS",
    "SMALLEST",
    "check_descent_scale",
    "check_noisy_sum_scale",
    "check_public_scale",
    "check_smallest_factor",
    "largest_allowed",
    "release_peaks",
]

#: Noise draws are taken to be at most this many standard deviations (module docstring).
NOISE_SIGMAS = 40.0
#: Factor left below the largest float64 for post-processing (module docstring).
HEADROOM = 2.0**64
#: Every bounded quantity must stay at or below this (about 9.7e288).
LIMIT = 1.7976931348623157e308 / HEADROOM
#: A factor's square that scales results down must stay at or above this (about 4.1e-289):
#: then any value down to 2^-64 it multiplies stays a normal float64.
SMALLEST = 2.2250738585072014e-308 * HEADROOM

#: peaks(value) -> the magnitudes the computation reaches when the parameter is ``value``.
Peaks = Callable[[float], Iterable[float]]


def release_peaks(
    query: Query | str,
    *,
    bound: float,
    n: int,
    rho: float,
    relation: Relation | str = Relation.REPLACE_ONE,
    count: int = 1,
    columns: int = 1,
    dim: int | None = None,
    divided: bool | None = None,
    squared: bool = False,
) -> tuple[float, ...]:
    """(peak of the computed query, peak of one noisy release) for ``count`` releases of a
    query calibrated together to ``rho`` (each rho / count), from public inputs only; with
    ``squared``, the square of the noisy release's peak too (module docstring).

    ``divided`` says whether the released value is the sum divided by n (default: for the
    mean kinds); the noise std then follows the mean's sensitivity. Overflow anywhere gives
    ``inf`` (never an exception), so a caller can search for the largest allowed value.
    """
    try:
        peak = query_peak(query, bound=bound, n=n) * math.sqrt(columns)
        sensitivity = query_sensitivity(
            query, bound=bound, n=n, relation=relation, columns=columns, dim=dim
        )
        noise_std = sensitivity / math.sqrt(2.0 * rho / count)
    except (OverflowError, ValueError):  # a bound of inf, an overflowing square
        return (math.inf,) * (3 if squared else 2)
    mean = Query(query).divided if divided is None else divided
    value = peak / n if mean else peak
    noisy = value + NOISE_SIGMAS * noise_std
    return (peak, noisy, noisy * noisy) if squared else (peak, noisy)


def _finite_below_limit(peaks: Peaks, value: float, limit: float = LIMIT) -> bool:
    try:
        return all(p <= limit for p in peaks(value))  # False for NaN and inf
    except (OverflowError, ValueError, ZeroDivisionError):
        return False


def _bits(x: float) -> int:
    return struct.unpack("<q", struct.pack("<d", x))[0]


def _float(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<q", bits))[0]


def largest_allowed(peaks: Peaks, value: float, limit: float = LIMIT) -> float:
    """The largest float in (0, ``value``] whose peaks stay below :data:`LIMIT` (0.0 if none).

    Bisection over the float64 bit patterns, which order positive floats; ``peaks`` must be
    non-decreasing in the value (true of every peak: sums, squares and noise stds grow with
    a bound).
    """
    lo, hi = 0, _bits(value)  # invariant: lo allowed (or 0), hi not allowed
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _finite_below_limit(peaks, _float(mid), limit):
            lo = mid
        else:
            hi = mid
    return _float(lo)


def check_public_scale(
    name: str, value: float, peaks: Peaks, *, what: str, limit: float = LIMIT
) -> float:
    """Return ``value`` when every peak it leads to stays below :data:`LIMIT`; else raise.

    Parameters
    ----------
    name : str
        The public parameter checked (e.g. ``"clip"``), named in the error.
    value : float
        Its value, finite and > 0 (already validated).
    peaks : callable
        ``peaks(v)`` -> the magnitudes the computation reaches with the parameter at ``v``
        and every other public input as given (e.g. from :func:`release_peaks`).
    what : str
        What those magnitudes are, for the error (e.g. ``"the clipped gradient sum of
        n = 18 records and its noise"``).
    limit : float, default=LIMIT
        The bound they must stay below (smaller for float32 results).

    Raises
    ------
    ValueError
        One line: ``name``, the largest allowed value for these public inputs and ``what``.
        Raised before anything is charged or drawn.
    """
    if _finite_below_limit(peaks, value, limit):
        return value
    allowed = largest_allowed(peaks, value, limit)
    most = f"at most {allowed:.6g}" if allowed > 0 else "smaller than the other settings allow"
    room = "float64's largest value / 2^64" if limit == LIMIT else "the result dtype's range"
    raise ValueError(
        f"{name} must be {most} for these settings: {what} must stay below {limit:.3g} "
        f"({room}), got {value:.6g}"
    )


def check_descent_scale(
    clip: float,
    release: Peaks,
    *,
    step_size: float,
    steps: int,
    start: float = 0.0,
    what: str,
    name: str = "clip",
) -> None:
    """The checks of a noisy gradient descent: ``release(clip)`` (the clipped sum's and the
    noisy release's peaks, :func:`release_peaks`), then the iterates, which move by at most
    ``step_size`` x the noisy release per step, |theta_t| <= start + t eta (C + Z sigma), and
    their squares (an interval's covariance of iterates). Raises ValueError naming ``name``
    (the clip), or for the iterates both the clip and ``step_size`` with the largest value of
    each at the other's setting."""
    check_public_scale(name, clip, release, what=what)

    def iterates(c: float, eta: float) -> tuple[float, float]:
        peak = start + steps * eta * max(release(c))
        return peak, peak * peak

    if _finite_below_limit(lambda c: iterates(c, step_size), clip):
        return
    by_clip = largest_allowed(lambda c: iterates(c, step_size), clip)
    by_step = largest_allowed(lambda eta: iterates(clip, eta), step_size)
    raise ValueError(
        f"{name} must be at most {by_clip:.6g} at step_size = {step_size:g}, or step_size at "
        f"most {by_step:.6g} at {name} = {clip:g}, for these settings: the iterates of "
        f"{steps} noisy steps and their squares (an interval's covariance) must stay below "
        f"{LIMIT:.3g} (float64's largest value / 2^64), got {name} = {clip:.6g}, "
        f"step_size = {step_size:.6g}"
    )


def check_noisy_sum_scale(
    clip: float,
    *,
    summands: int,
    noise_std: float,
    noise_gain: float = 1.0,
    divisor: float = 1.0,
    limit: float = LIMIT,
) -> float:
    """Refuse a ``clip`` whose noisy sums of ``summands`` clipped vectors could overflow.

    Each release is a sum of at most ``summands`` vectors of norm <= ``clip``, plus noise of
    std ``noise_std`` x ``noise_gain`` per coordinate (a correlated stream's largest decoder
    row norm), divided by ``divisor``. ``noise_std`` is the calibrated std at ``clip``;
    calibration makes it proportional to the clip, so the check scales it with the value.
    ``limit`` bounds the divided release (e.g. float32's largest value over 2^32 for a
    float32 model's gradients) and :data:`LIMIT` the float64 sum.
    """

    def peaks(c: float) -> tuple[float, float]:
        total = query_peak(Query.SUM, bound=c, n=summands)
        noisy = (total + NOISE_SIGMAS * noise_std * (c / clip) * noise_gain) / divisor
        return total * (limit / LIMIT), noisy  # the float64 sum against LIMIT, rescaled

    return check_public_scale(
        "clip",
        clip,
        peaks,
        what=f"the noisy sums of {summands} clipped gradients per step",
        limit=limit,
    )


def check_smallest_factor(name: str, factor: float, *, what: str, fix: str) -> None:
    """Refuse a public ``factor`` whose square falls below :data:`SMALLEST` (one line).

    ``factor`` multiplies a result and its square a variance (e.g. y's half-range over a
    feature's when a covariance is mapped back to the data's units); below the floor a
    variance can underflow to 0 and a standard error of 0 claims a point interval. ``name``
    starts the message, ``what`` says what the factor is and ``fix`` what to change.
    """
    if factor * factor >= SMALLEST:  # False for NaN
        return
    raise ValueError(
        f"{name}: {what} is {factor:.3g}, and its square (the map of a variance back to the "
        f"original units) must stay at or above {SMALLEST:.3g} (float64's smallest normal "
        f"value x 2^64), so the factor at least {math.sqrt(SMALLEST):.3g}: {fix}"
    )
