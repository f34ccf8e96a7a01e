"""Correlated-noise streams: privatise a stream of clipped gradient sums, step by step.

:func:`correlated_noise` declares the release's sensitivity from the mechanism and the
participation pattern, charges it ONCE through :func:`dpfit.mechanisms.gaussian_rows` (before
anything is drawn), and returns a :class:`NoiseStream` whose :meth:`~NoiseStream.privatize`
turns the step's clipped sum g_t into g_t + sigma (B z)_t.

Modes (``docs/choquettechoo2024.md``, "Streaming the noise"):

=============  ======================  ========================================  ============
mode           memory                  work at step t                            noise
=============  ======================  ========================================  ============
"recurrence"   O(r x d)                one row + O(r x d): r buffers of a BLT,   exact
                                       or r + 1 encoder bands of a banded C
"regenerate"   O(d)                    re-draws the ``bands`` rows it combines   exact
"buffered"     O(cache_rows x d)       combines ``bands`` cached rows            exact, same
                                                                                 bits as above
"fft"          T x d + FFT workspace   all noise precomputed (Toeplitz only;     exact to
                                       offline simulation)                       1e-12
"auto"         the default: never grows with t (below)
=============  ======================  ========================================  ============

``bands`` is min(t + 1, the mechanism's memory): t + 1 for nu-DP-FTRL, so its exact modes
cost O(t) per step (O(T^2) per run). ``"auto"`` never does that: it streams a recurrence, a
short-memory mechanism exactly, or the optimal BLT for the same (T, k, b) at the same rho in
place of a long-memory Toeplitz mechanism (the rule is in :mod:`dpfit.noise._stream_choice`).

:attr:`NoiseStream.choice` records what was picked, and why, with the error ratio.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from scipy import fft, signal

from .._validation import check_int, check_option, check_positive
from ..mechanisms.rng import NoiseSource
from ..mechanisms.stream import GaussianRows, gaussian_rows
from ..privacy import GaussianEntry, PrivacyLedger
from ._stream_choice import SHORT_MEMORY_ROWS, StreamChoice, _choose, _has_recurrence, _short_memory
from .base import CorrelatedMechanism, check_mechanism
from .blt import BLTMechanism, BLTNoise
from .calibration import release_sensitivity
from .toeplitz import EncoderRecurrence, ToeplitzMechanism

__all__ = ["MODES", "NoiseStream", "StreamChoice", "correlated_noise", "fft_workspace_bytes"]

MODES = ("auto", "recurrence", "regenerate", "buffered", "fft")

#: Default cap on buffered noise memory (256 MiB); above it "auto" regenerates.
MAX_BUFFER_BYTES = 1 << 28
#: Complex and real float64 arrays scipy.fft keeps alive per FFT column (input copy, two
#: spectra, their product and the inverse transform), in units of 8 bytes x padded length.
_FFT_ARRAYS = 6
#: Padded length x columns per FFT chunk (2^20 x 8 bytes x 6 = 48 MiB of workspace).
_FFT_CHUNK = 1 << 20


class NoiseStream:
    """Adds a charged mechanism's correlated noise to one clipped sum per step.

    Build it with :func:`correlated_noise`.
    """

    __slots__ = ("_choice", "_mechanism", "_mode", "_offline", "_rows", "_state")

    def __init__(
        self,
        mechanism: CorrelatedMechanism,
        rows: GaussianRows,
        mode: str,
        choice: StreamChoice,
    ) -> None:
        self._mechanism, self._rows, self._mode, self._choice = mechanism, rows, mode, choice
        self._offline = _fft_noise(mechanism, rows) if mode == "fft" else None
        self._state = _recurrence(mechanism, rows.dim) if mode == "recurrence" else None

    @property
    def mechanism(self) -> CorrelatedMechanism:
        """The public factorisation whose noise is added (see :attr:`choice`)."""
        return self._mechanism

    @property
    def mode(self) -> str:
        """``"recurrence"``, ``"regenerate"``, ``"buffered"`` or ``"fft"`` (``"auto"`` resolved)."""
        return self._mode

    @property
    def choice(self) -> StreamChoice:
        """What was picked and why, with the error ratio to the requested mechanism."""
        return self._choice

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
        """sigma (B z)_step, the secret correlated noise of ``step`` (never expose it), in a
        new array (scaled in place: a fresh array per step costs page faults at large d)."""
        if self._offline is not None:
            return self._offline[step].copy()
        if self._state is not None:
            noise = self._state.next(self._rows.block(step, step + 1)[0])
        else:
            noise = self._mechanism.step_noise(step, self._rows)
        noise *= self._rows.noise_std
        return noise

    def privatize(self, value: ArrayLike) -> np.ndarray:
        """Release ``value + sigma (B z)_t`` for the next step t.

        Parameters
        ----------
        value : array-like of shape (d,)
            The step's SUM of per-example (or per-user) clipped contributions, of at most
            the declared ``batch_size`` vectors.

        Returns
        -------
        ndarray of shape (d,)
            The privatised sum; divide by the public batch size afterwards if needed.
        """
        t = self._rows.step
        if t >= self._rows.steps:
            raise ValueError(f"the stream covers {self._rows.steps} steps; all are used")
        return self._rows.release(value, self._noise(t), consume=True)


def fft_workspace_bytes(steps: int, dim: int) -> int:
    """Peak bytes of ``mode="fft"``: the T x d noise plus the FFT workspace of one chunk."""
    padded = fft.next_fast_len(2 * steps - 1, real=True)
    width = min(dim, max(1, _FFT_CHUNK // padded))
    return 8 * steps * dim + 8 * _FFT_ARRAYS * padded * width


def _fft_noise(mechanism: CorrelatedMechanism, rows: GaussianRows) -> np.ndarray:
    """sigma (beta * Z) for all steps at once: in-place FFT convolution, column chunk by chunk."""
    T, d = rows.steps, rows.dim
    Z = rows.block(0, T)
    beta = np.asarray(mechanism.beta)
    width = min(d, max(1, _FFT_CHUNK // fft.next_fast_len(2 * T - 1, real=True)))
    for s in range(0, d, width):
        Z[:, s : s + width] = signal.fftconvolve(beta[:, None], Z[:, s : s + width], axes=0)[:T]
    Z *= rows.noise_std
    return Z


def _recurrence(mechanism: CorrelatedMechanism, dim: int) -> BLTNoise | EncoderRecurrence:
    if isinstance(mechanism, BLTMechanism):
        return BLTNoise(mechanism, dim)
    return EncoderRecurrence(mechanism, dim)


def _equal_rho_noise_std(noise_std: float, old: float, new: float) -> float:
    """sigma' = sigma new / old, rounded up until new^2 / (2 sigma'^2) <= old^2 / (2 sigma^2)."""
    sigma = noise_std * (new / old)
    while (new / sigma) > (old / noise_std):
        sigma = math.nextafter(sigma, math.inf)
    return sigma


def correlated_noise(
    mechanism: CorrelatedMechanism,
    *,
    dim: int,
    clip: float,
    batch_size: int,
    noise_std: float,
    ledger: PrivacyLedger,
    sum_excess: float | None = None,
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
    batch_size : int
        Largest public number of clipped contributions summed per step (sets the float64
        rounding allowance of the sensitivity; see :func:`dpfit.noise.release_sensitivity`).
    sum_excess : float, optional
        A summation routine's own rounding bound, replacing the float64 allowance (see
        :func:`dpfit.noise.release_sensitivity`).
    noise_std : float
        Standard deviation sigma of the i.i.d. noise (see :func:`dpfit.noise.calibrate`).
        When ``"auto"`` substitutes a BLT, the stream's :attr:`~NoiseStream.noise_std` is
        rescaled so that the charge (rho) is unchanged.
    ledger : PrivacyLedger
        Charged once with the whole release; its relation sets the sensitivity factor.
    rng : NoiseSource
        Noise source (fast backend).
    participations, separation, order
        The participation pattern every record is guaranteed to respect (see
        :mod:`dpfit.noise.sensitivity`); the caller must enforce it.
    mode : {"auto", "recurrence", "regenerate", "buffered", "fft"}, default="auto"
        How the noise is produced (module table). The exact modes add the requested
        mechanism's noise; ``"auto"`` may stream a BLT instead (see :attr:`NoiseStream.choice`).
    label : str
        Ledger label.
    max_buffer_bytes : int
        Memory cap: "auto" regenerates rather than buffer above it, and an explicit
        "buffered" or "fft" whose memory (for "fft" including the FFT workspace,
        :func:`fft_workspace_bytes`) exceeds it is a ``ValueError``.

    Notes
    -----
    Privacy: the declared sensitivity is :func:`~dpfit.noise.release_sensitivity` of the mechanism
    actually streamed, exact for the paper's mechanisms and for BLTs under the declared pattern
    (Choquette-Choo et al. 2024, Thm. 1.1 and App. A.2; arXiv 2405.13763, Thm. 2); the charge is rho
    = Delta^2 / (2 sigma^2), mu = Delta / sigma. A substituted BLT is charged the same rho as the
    requested mechanism (its sigma is Delta_BLT / Delta x the given one), so the privacy guarantee
    is the one the caller calibrated. No amplification by sampling is claimed
    (docs/choquettechoo2024.md, Privacy notes).
    """
    mechanism = check_mechanism(mechanism)
    if not isinstance(ledger, PrivacyLedger):
        raise TypeError(f"ledger must be a PrivacyLedger, got {type(ledger).__name__}")
    dim = check_int(dim, "dim", low=1)
    batch_size = check_int(batch_size, "batch_size", low=1)
    noise_std = check_positive(noise_std, "noise_std")
    mode = check_option(mode, "mode", MODES)
    max_buffer_bytes = check_int(max_buffer_bytes, "max_buffer_bytes", low=0)
    if mode == "fft" and not isinstance(mechanism, ToeplitzMechanism):
        raise ValueError("mode='fft' needs a Toeplitz mechanism")
    if mode == "recurrence" and not _has_recurrence(mechanism):
        raise ValueError(
            "mode='recurrence' needs a BLT mechanism (dpfit.noise.optimal_blt) or a banded "
            f"encoder of at most {SHORT_MEMORY_ROWS} bands (dpfit.noise.banded_encoder)"
        )
    pattern = dict(
        participations=participations, separation=separation, order=order, sum_excess=sum_excess
    )
    requested = release_sensitivity(
        mechanism, clip=clip, batch_size=batch_size, relation=ledger.relation, **pattern
    )
    if mode == "fft":
        need = fft_workspace_bytes(mechanism.steps, dim)
    else:
        need = 8 * mechanism.cache_rows * dim
    original = mechanism
    if mode == "auto":
        mechanism, choice = _choose(
            mechanism, participations, separation, order, need, max_buffer_bytes
        )
        mode = choice.mode
    else:
        if mode in ("buffered", "fft") and need > max_buffer_bytes:
            raise ValueError(
                f"mode={mode!r} needs {need / 2**20:.0f} MiB (noise buffer"
                f"{' and FFT workspace' if mode == 'fft' else ''}), above "
                f"max_buffer_bytes={max_buffer_bytes}; use mode='regenerate' (O(d) memory)"
            )
        choice = StreamChoice(
            mode=mode,
            mechanism=mechanism.name,
            requested=mechanism.name,
            error_ratio=1.0,
            per_step="constant"
            if mode in ("recurrence", "fft") or _short_memory(mechanism)
            else "grows with t",
            reason="exact: requested mode",
        )
    sensitivity = requested
    # By identity, not name: a mechanism may carry the substitute's name.
    if mechanism is not original:
        sensitivity = release_sensitivity(
            mechanism, clip=clip, batch_size=batch_size, relation=ledger.relation, **pattern
        )
        noise_std = _equal_rho_noise_std(noise_std, requested, sensitivity)
    rows = gaussian_rows(
        steps=mechanism.steps,
        rows=mechanism.noise_rows,
        dim=dim,
        sensitivity=sensitivity,
        noise_std=noise_std,
        ledger=ledger,
        rng=rng,
        label=label,
        cache_rows=mechanism.cache_rows if mode == "buffered" else 0,
    )
    return NoiseStream(mechanism, rows, mode, choice)
