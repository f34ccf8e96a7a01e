"""Correlated-noise streams: privatise a stream of clipped gradient sums, step by step.

:func:`correlated_noise` declares the release's sensitivity from the mechanism and the
participation pattern, charges it ONCE through :func:`dpfit.mechanisms.gaussian_rows` (before
anything is drawn), and returns a :class:`NoiseStream` whose :meth:`~NoiseStream.privatize`
turns the step's clipped sum g_t into g_t + sigma (B z)_t.

Modes give the same noise (spec §2.7, A12):

=============  ====================  ===========================================  ==========
mode           memory                per-step work                                agreement
=============  ====================  ===========================================  ==========
"regenerate"   O(d)                  re-draw rows (counter-based RNG keyed by      reference
                                     row) for each of the ``bands`` products
"buffered"     O(cache_rows x d)     products only (rows drawn once)              bit for bit
"fft"          O(T x d)              all noise precomputed by FFT convolution     1e-12
                                     (Toeplitz only; offline simulation)
"auto"         --                    "buffered" when its buffer fits in            bit for bit
                                     ``max_buffer_bytes``, else "regenerate"
=============  ====================  ===========================================  ==========

For a banded mechanism (:func:`dpfit.noise.banded`) ``cache_rows`` is ``bands``: a ring buffer
of the last ``bands`` rows, O(bands x d) memory.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy import signal

from .._validation import check_int, check_option, check_positive
from ..mechanisms.rng import NoiseSource
from ..mechanisms.stream import GaussianRows, gaussian_rows
from ..privacy import GaussianEntry, PrivacyLedger
from .base import CorrelatedMechanism, check_mechanism
from .calibration import release_sensitivity
from .toeplitz import ToeplitzMechanism

__all__ = ["MODES", "NoiseStream", "correlated_noise"]

MODES = ("auto", "regenerate", "buffered", "fft")

#: Default cap on buffered noise memory (256 MiB); above it "auto" regenerates.
MAX_BUFFER_BYTES = 1 << 28


class NoiseStream:
    """Adds a charged mechanism's correlated noise to one clipped sum per step.

    Build it with :func:`correlated_noise`.
    """

    __slots__ = ("_mechanism", "_mode", "_offline", "_rows")

    def __init__(self, mechanism: CorrelatedMechanism, rows: GaussianRows, mode: str) -> None:
        self._mechanism, self._rows, self._mode = mechanism, rows, mode
        self._offline = _fft_noise(mechanism, rows) if mode == "fft" else None

    @property
    def mechanism(self) -> CorrelatedMechanism:
        """The public factorisation."""
        return self._mechanism

    @property
    def mode(self) -> str:
        """``"regenerate"``, ``"buffered"`` or ``"fft"`` (``"auto"`` resolved)."""
        return self._mode

    @property
    def entry(self) -> GaussianEntry:
        """The one ledger entry of the whole release."""
        return self._rows.entry

    @property
    def noise_std(self) -> float:
        """Standard deviation sigma of the i.i.d. noise."""
        return self._rows.noise_std

    @property
    def step(self) -> int:
        """The next step to privatise."""
        return self._rows.step

    @property
    def steps(self) -> int:
        """Total steps T covered by the charge."""
        return self._rows.steps

    @property
    def dim(self) -> int:
        """Dimension d of each gradient."""
        return self._rows.dim

    def _noise(self, step: int) -> np.ndarray:
        """sigma (B z)_step, the secret correlated noise of ``step`` (never expose it)."""
        if self._offline is not None:
            return self._offline[step].copy()
        return self._rows.noise_std * self._mechanism.step_noise(step, self._rows)

    def privatize(self, value: ArrayLike) -> np.ndarray:
        """Release ``value + sigma (B z)_t`` for the next step t.

        Parameters
        ----------
        value : array-like of shape (d,)
            The step's SUM of per-example (or per-user) clipped contributions.

        Returns
        -------
        ndarray of shape (d,)
            The privatised sum; divide by the public batch size afterwards if needed.
        """
        t = self._rows.step
        if t >= self._rows.steps:
            raise ValueError(f"the stream covers {self._rows.steps} steps; all are used")
        return self._rows.release(value, self._noise(t))


def _fft_noise(mechanism: CorrelatedMechanism, rows: GaussianRows) -> np.ndarray:
    """sigma (beta * Z) for all steps at once, by FFT convolution in column chunks."""
    T, d = rows.steps, rows.dim
    Z = rows.block(0, T)
    beta = np.asarray(mechanism.beta)
    out = np.empty((T, d))
    width = max(1, (1 << 22) // (2 * T))
    for s in range(0, d, width):
        out[:, s : s + width] = signal.fftconvolve(beta[:, None], Z[:, s : s + width], axes=0)[:T]
    out *= rows.noise_std
    return out


def correlated_noise(
    mechanism: CorrelatedMechanism,
    *,
    dim: int,
    clip: float,
    noise_std: float,
    ledger: PrivacyLedger,
    rng: NoiseSource,
    participations: int = 1,
    separation: int | None = None,
    order: str = "fixed-epoch",
    mode: str = "auto",
    label: str = "ftrl/gradients",
    max_buffer_bytes: int = MAX_BUFFER_BYTES,
) -> NoiseStream:
    """Charge a correlated-noise release and return its stream.

    Parameters
    ----------
    mechanism : CorrelatedMechanism
        The factorisation, e.g. :func:`dpfit.noise.nu_dpftrl` ``(nu, steps=T)``.
    dim : int
        Gradient dimension d.
    clip : float
        Per-example (or per-user) L2 clip norm of each contribution to a step's sum.
    noise_std : float
        Standard deviation sigma of the i.i.d. noise (see :func:`dpfit.noise.calibrate`).
    ledger : PrivacyLedger
        Charged once with the whole release; its relation sets the sensitivity factor.
    rng : NoiseSource
        Noise source (fast backend).
    participations, separation, order
        The participation pattern every record is guaranteed to respect (see
        :mod:`dpfit.noise.sensitivity`); the caller must enforce it.
    mode : {"auto", "regenerate", "buffered", "fft"}
        How rows are obtained (table above); the released values do not depend on it
        (up to 1e-12 for "fft").
    label : str
        Ledger label.
    max_buffer_bytes : int
        Memory cap for "auto"; an explicit "buffered" or "fft" above it is a ``ValueError``.

    Notes
    -----
    Privacy: the declared sensitivity is ``release_sensitivity(mechanism, clip=clip,
    relation=ledger.relation, ...)``, exact for the paper's mechanisms under the declared
    pattern (spec §2.4); the charge is rho = Delta^2 / (2 sigma^2), mu = Delta / sigma. No
    amplification by sampling is claimed (spec §6).
    """
    mechanism = check_mechanism(mechanism)
    if not isinstance(ledger, PrivacyLedger):
        raise TypeError(f"ledger must be a PrivacyLedger, got {type(ledger).__name__}")
    dim = check_int(dim, "dim", low=1)
    noise_std = check_positive(noise_std, "noise_std")
    mode = check_option(mode, "mode", MODES)
    max_buffer_bytes = check_int(max_buffer_bytes, "max_buffer_bytes", low=0)
    if mode == "fft" and not isinstance(mechanism, ToeplitzMechanism):
        raise ValueError("mode='fft' needs a Toeplitz mechanism")
    cache = mechanism.steps if mode == "fft" else mechanism.cache_rows
    need = 8 * cache * dim
    if mode == "auto":
        mode = "buffered" if need <= max_buffer_bytes else "regenerate"
    elif mode in ("buffered", "fft") and need > max_buffer_bytes:
        raise ValueError(
            f"mode={mode!r} needs {need / 2**20:.0f} MiB of noise buffer, above "
            f"max_buffer_bytes={max_buffer_bytes}; use mode='regenerate' (O(d) memory)"
        )
    sensitivity = release_sensitivity(
        mechanism,
        clip=clip,
        relation=ledger.relation,
        participations=participations,
        separation=separation,
        order=order,
    )
    rows = gaussian_rows(
        steps=mechanism.steps,
        rows=mechanism.noise_rows,
        dim=dim,
        sensitivity=sensitivity,
        noise_std=noise_std,
        ledger=ledger,
        rng=rng,
        label=label,
        cache_rows=cache if mode == "buffered" else 0,
    )
    return NoiseStream(mechanism, rows, mode)
