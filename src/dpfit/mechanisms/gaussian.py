"""The Gaussian mechanism: the one path through which dpfit adds privacy noise.

Order of operations (STYLE principle 1): validate -> build the ledger entry -> charge the
ledger (and its budget) -> draw. If the charge fails, nothing is drawn and nothing changes.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_positive, check_rho
from ..privacy.ledger import GaussianEntry, PrivacyLedger
from . import recorder
from .rng import NoiseSource

__all__ = ["gaussian", "noise_std_for_rho", "rho_for_noise_std"]


def noise_std_for_rho(sensitivity: float, rho: float) -> float:
    """sigma = Delta / sqrt(2 rho): the std that makes one release rho-zCDP (exact)."""
    sensitivity = check_positive(sensitivity, "sensitivity")
    rho = check_rho(rho)
    sigma = sensitivity / math.sqrt(2.0 * rho)
    if not (math.isfinite(sigma) and sigma > 0):
        raise ValueError("noise scale not finite: rho is too small for this sensitivity")
    return sigma


def rho_for_noise_std(sensitivity: float, noise_std: float) -> float:
    """rho = Delta^2 / (2 sigma^2), the zCDP cost of one Gaussian release (exact)."""
    return GaussianEntry(label="query", sensitivity=sensitivity, noise_std=noise_std).rho


#: The secure backend's grid spacing 2^k is at most this fraction of sensitivity / sqrt(d).
_GRID_FRACTION = 2.0**-30
#: OpenDP's finest float64 granularity (subnormal spacing), the smallest allowed k.
_MIN_K = -1074


def _secure_gaussian(value: np.ndarray, entry: GaussianEntry) -> np.ndarray:
    """Discrete Gaussian on the grid Z * 2^k from OpenDP, with OS randomness.

    OpenDP rounds each coordinate of the query to the nearest multiple of 2^k before adding
    an exact discrete Gaussian on Z * 2^k, which can move the query by up to 2^k per
    coordinate, so a query of L2 sensitivity Delta has sensitivity up to
    Delta_eff = Delta + 2^k sqrt(d) on the grid (reliability section 2, point 3; OpenDP's
    privacy map adds the same rounding distance). With 2^k <= 2^-30 Delta / sqrt(d), the
    noise std is raised from sigma to sigma * Delta_eff / Delta (a relative increase below
    1e-9), so the release costs no more than the rho charged for (Delta, sigma). The charge
    is cross-checked against OpenDP's own privacy map before anything is drawn. A coarse
    grid is about 5x faster to sample than OpenDP's default (the float64 subnormal spacing).
    """
    try:
        import opendp.prelude as dp
    except ImportError as exc:  # pragma: no cover - depends on the optional extra
        raise ImportError(
            "secure noise needs the optional extra: pip install 'dpfit[secure]'"
        ) from exc
    dp.enable_features("contrib")
    flat = value.ravel().tolist()
    size = len(flat)
    k = max(_MIN_K, math.floor(math.log2(_GRID_FRACTION * entry.sensitivity / math.sqrt(size))))
    inflation = (entry.sensitivity + math.ldexp(math.sqrt(size), k)) / entry.sensitivity
    meas = dp.m.make_gaussian(
        dp.vector_domain(dp.atom_domain(T=float, nan=False), size=size),
        dp.l2_distance(T=float),
        scale=entry.noise_std * inflation * (1.0 + 2.0**-40),  # margin over float rounding
        k=k,
    )
    if not meas.map(entry.sensitivity) <= entry.rho / entry.count:
        raise RuntimeError(  # pragma: no cover - internal invariant
            f"{entry.label}: OpenDP's privacy map exceeds the charged rho; nothing was drawn"
        )
    return np.asarray(meas(flat), dtype=np.float64).reshape(value.shape)


def gaussian(
    value: ArrayLike,
    *,
    sensitivity: float,
    noise_std: float,
    ledger: PrivacyLedger,
    rng: NoiseSource,
    label: str,
    subsampled: bool = False,
) -> np.ndarray:
    """Release ``value + N(0, noise_std^2 I)``, charged to ``ledger`` before anything is drawn.

    Parameters
    ----------
    value : array-like
        The exact query answer (a clipped sum or mean, a count, ...). Must be finite.
    sensitivity : float
        Its L2 sensitivity under ``ledger.relation``, declared by the caller.
    noise_std : float
        Absolute noise standard deviation, finite and > 0.
    ledger : PrivacyLedger
        Where the release is charged; raises :class:`~dpfit.BudgetExceededError` (nothing drawn)
        when its budget cannot afford rho = sensitivity^2 / (2 noise_std^2).
    rng : NoiseSource
        Source of the noise (see :func:`~dpfit.mechanisms.make_noise_source`).
    label : str
        Name of the release in the ledger, e.g. ``"dp_gd/gradient"``.
    subsampled : bool, default=False
        Whether the query ran on a random subsample (disables exact GDP accounting).

    Returns
    -------
    numpy.ndarray
        The noisy release, float64, with the shape of ``value``.
    """
    if not isinstance(ledger, PrivacyLedger):
        raise TypeError(f"ledger must be a PrivacyLedger, got {type(ledger).__name__}")
    if not isinstance(rng, NoiseSource):
        raise TypeError(f"rng must be a NoiseSource, got {type(rng).__name__}")
    value = np.asarray(value, dtype=np.float64)
    if not np.isfinite(value).all():  # internal invariant: callers clip and zero non-finite rows
        raise ValueError(f"{label}: the query value is not finite")
    entry = GaussianEntry(
        label=label,
        sensitivity=sensitivity,
        noise_std=noise_std,
        relation=ledger.relation,
        subsampled=subsampled,
    )
    ledger.charge(entry)
    output = recorder.replayed_output(entry, value)
    if output is None:
        if rng.backend == "secure":
            output = _secure_gaussian(value, entry)
        else:
            output = value + entry.noise_std * rng.generator.standard_normal(value.shape)
    recorder.notify(entry, value, output)
    return output
