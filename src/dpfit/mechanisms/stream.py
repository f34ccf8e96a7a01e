"""A streamed Gaussian release: one matrix mechanism ``C G + Z``, charged once, used row by row.

Correlated-noise training (DP-FTRL, matrix factorisation; Choquette-Choo et al. 2024,
eq. 11) releases ``C G + Z`` for a (rows x steps) encoder ``C``, the (steps x d) matrix ``G``
of per-step clipped gradient sums and ``Z`` with i.i.d. N(0, noise_std^2) entries. That is
ONE Gaussian mechanism whose L2 (Frobenius) sensitivity is ``max ||C (G - G')||_F`` over
neighbouring datasets. Each step outputs ``g_t + noise_std * (B Z~)_t`` with ``B = C^{-1}``
and ``Z~ = Z / noise_std`` standard normal, a post-processing of that one release.

:func:`gaussian_rows` charges the whole release to the ledger *before* any noise exists and
returns a :class:`GaussianRows`, the only source of the i.i.d. standard-normal rows ``z_i``.
Row ``i`` is drawn from a counter-based Philox generator keyed by ``i`` (a fresh child of the
noise source per release, so two releases never share noise), hence it can be regenerated
bit for bit at any time: memory is O(d) when nothing is cached, and a cache of the most
recent rows trades memory for speed without changing a single bit of the output.

:meth:`GaussianRows.release` adds the correlated noise to the step's query value and is
hooked to the recorder (:mod:`dpfit.mechanisms.recorder`): a recording keeps the per-step
query values and outputs of the whole release as one entry, and a replay returns the
recorded outputs, so a test can check ``||C (G - G')||_F <= sensitivity``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_int
from ..privacy.ledger import GaussianEntry, PrivacyLedger
from ..privacy.pld import PLDLedger, SubsampledGaussianEntry
from . import recorder
from .rng import NoiseSource

__all__ = ["GaussianRows", "gaussian_rows", "subsampled_gaussian_rows"]


class GaussianRows:
    """The i.i.d. standard-normal rows of one charged matrix release, and its step releases.

    Build it with :func:`gaussian_rows` (which charges the ledger first). Rows are available
    for ``0 <= index < rows``; steps are released in order ``0, 1, ..., steps - 1``, each once.
    """

    __slots__ = (
        "_cache",
        "_cache_hi",
        "_cache_rows",
        "_dim",
        "_entry",
        "_next_step",
        "_record",
        "_replay",
        "_rows",
        "_source",
        "_steps",
    )

    def __init__(
        self,
        *,
        entry: GaussianEntry | SubsampledGaussianEntry,
        steps: int,
        rows: int,
        dim: int,
        source: NoiseSource,
        cache_rows: int,
        replay: np.ndarray | None,
        record: tuple[np.ndarray, np.ndarray] | None,
    ) -> None:
        self._entry = entry
        self._steps, self._rows, self._dim = steps, rows, dim
        self._source = source
        self._cache_rows = cache_rows
        self._cache = np.empty((cache_rows, dim)) if cache_rows else None
        self._cache_hi = 0  # rows [max(0, hi - cache_rows), hi) are in the ring cache
        self._replay, self._record = replay, record
        self._next_step = 0

    @property
    def entry(self) -> GaussianEntry | SubsampledGaussianEntry:
        """The ledger entry of the whole release (charged once)."""
        return self._entry

    @property
    def noise_std(self) -> float:
        """Absolute standard deviation of each entry of ``Z``."""
        return self._entry.noise_std

    @property
    def steps(self) -> int:
        """Number of step releases T."""
        return self._steps

    @property
    def rows(self) -> int:
        """Number of i.i.d. noise rows (rows of the encoder C)."""
        return self._rows

    @property
    def dim(self) -> int:
        """Dimension d of every row."""
        return self._dim

    @property
    def step(self) -> int:
        """The next step to be released (``steps`` once all are released)."""
        return self._next_step

    def _draw(self, index: int, out: np.ndarray) -> None:
        self._source.keyed_generator(index).standard_normal(out=out)

    def block(self, start: int, stop: int) -> np.ndarray:
        """Rows ``z_start .. z_{stop-1}`` as a (stop - start, d) array (read it, don't keep it).

        Every call returns the same bits for the same index, whether the row comes from the
        cache or is regenerated. The rows are the mechanism's secret noise: mechanism code
        combines them into :meth:`release`'s ``noise``; never log, store or release them.
        """
        if not (0 <= start < stop <= self._rows):
            raise IndexError(f"noise rows [{start}, {stop}) outside [0, {self._rows})")
        m = self._cache_rows
        if m == 0 or stop - start > m:
            out = np.empty((stop - start, self._dim))
            for i in range(start, stop):
                self._draw(i, out[i - start])
            return out
        # Ring cache: extend it up to ``stop`` (rows are drawn once), then read.
        for i in range(max(self._cache_hi, stop - m), stop):
            self._draw(i, self._cache[i % m])
        self._cache_hi = max(self._cache_hi, stop)
        lo = self._cache_hi - m
        if start < lo:  # older than the cache: regenerate (same bits)
            out = np.empty((stop - start, self._dim))
            for i in range(start, stop):
                self._draw(i, out[i - start])
            return out
        a, b = start % m, (stop - 1) % m + 1
        if a < b:
            return self._cache[a:b]
        return np.concatenate((self._cache[a:], self._cache[:b]))

    def release(self, value: ArrayLike, noise: ArrayLike, *, consume: bool = False) -> np.ndarray:
        """Release ``value + noise`` for the next step (``noise`` built from this object's rows).

        Parameters
        ----------
        value : array-like of shape (d,)
            The step's exact query value (a sum of clipped contributions). Must be finite.
        noise : array-like of shape (d,)
            ``noise_std * (B Z~)_t``, the step's correlated noise.
        consume : bool, default=False
            ``noise`` is a float64 array that only the caller holds and no longer needs: the
            output is written into it (the same sum, without allocating another d floats).

        Returns
        -------
        ndarray of shape (d,)
            The noisy value (under replay: the recorded output of this step).
        """
        t = self._next_step
        if t >= self._steps:
            raise ValueError(f"all {self._steps} steps of {self._entry.label} are released")
        value = np.asarray(value, dtype=np.float64)
        noise = np.asarray(noise, dtype=np.float64)
        if value.shape != (self._dim,) or noise.shape != (self._dim,):
            raise ValueError(f"{self._entry.label}: value and noise must have shape ({self._dim},)")
        if not np.isfinite(value).all():  # internal invariant: callers clip and zero rows
            raise ValueError(f"{self._entry.label}: the query value is not finite")
        if self._replay is not None:
            output = self._replay[t].copy()
        elif consume and noise.flags.writeable:
            output = np.add(value, noise, out=noise)
        else:
            output = value + noise
        if self._record is not None:
            self._record[0][t] = value
            self._record[1][t] = output
        self._next_step = t + 1
        return output


def gaussian_rows(
    *,
    steps: int,
    rows: int,
    dim: int,
    sensitivity: float,
    noise_std: float,
    ledger: PrivacyLedger,
    rng: NoiseSource,
    label: str,
    cache_rows: int = 0,
) -> GaussianRows:
    """Charge one matrix Gaussian release ``C G + Z`` and return its noise rows.

    Parameters
    ----------
    steps : int
        Number of step releases T (rows of ``G``).
    rows : int
        Number of i.i.d. noise rows (rows of the encoder ``C``; T for a square factorisation).
    dim : int
        Dimension d of each row.
    sensitivity : float
        L2 (Frobenius) sensitivity ``max ||C (G - G')||_F`` under ``ledger.relation``, declared
        by the caller (see :mod:`dpfit.noise.sensitivity`).
    noise_std : float
        Standard deviation of each entry of ``Z``.
    ledger : PrivacyLedger
        Charged once, before anything is drawn; raises :class:`~dpfit.BudgetExceededError`
        (nothing charged, nothing drawn) when its budget cannot afford the release.
    rng : NoiseSource
        The noise source; a fresh child is spawned for this release. Must be the fast
        backend: the secure (OpenDP) backend cannot regenerate rows.
    label : str
        Name of the release in the ledger, e.g. ``"ftrl/gradients"``.
    cache_rows : int, default=0
        Keep the most recent ``cache_rows`` rows in memory (``rows`` buffers them all);
        0 regenerates every row on demand (O(d) memory). Outputs are identical either way.

    Returns
    -------
    GaussianRows

    Notes
    -----
    Privacy: the release is the Gaussian mechanism on the matrix ``C G`` with Frobenius
    sensitivity ``sensitivity``, hence rho = sensitivity^2 / (2 noise_std^2)-zCDP and
    exactly mu = sensitivity / noise_std GDP; it is recorded as one
    :class:`~dpfit.privacy.GaussianEntry`. Choosing ``G``'s rows adaptively is covered because
    ``C`` is lower triangular (Denisov et al. 2022).
    """
    if not isinstance(ledger, PrivacyLedger):
        raise TypeError(f"ledger must be a PrivacyLedger, got {type(ledger).__name__}")
    entry = GaussianEntry(
        label=label, sensitivity=sensitivity, noise_std=noise_std, relation=ledger.relation
    )
    return _charged_rows(entry, ledger, steps, rows, dim, rng, cache_rows)


def subsampled_gaussian_rows(
    *,
    steps: int,
    rows: int,
    dim: int,
    sensitivity: float,
    noise_std: float,
    sampling_probability: float,
    compositions: int,
    ledger: PLDLedger,
    rng: NoiseSource,
    label: str,
    cache_rows: int = 0,
) -> GaussianRows:
    """Like :func:`gaussian_rows`, for a release amplified by Poisson sampling.

    The release is charged to a :class:`~dpfit.privacy.pld.PLDLedger` as ``compositions``
    Poisson-subsampled Gaussian mechanisms with inclusion probability
    ``sampling_probability``, each moved by at most ``sensitivity`` by one record (add/remove),
    before anything is drawn. The caller declares why the release decomposes so (DP-SGD: one
    composition per step; banded matrix factorisation with cyclic Poisson sampling: one per
    epoch, Choquette-Choo et al. 2023, arXiv 2306.08153, Thm. 4) and must sample as declared.
    """
    if not isinstance(ledger, PLDLedger):
        raise TypeError(f"ledger must be a PLDLedger, got {type(ledger).__name__}")
    entry = SubsampledGaussianEntry(
        label=label,
        sensitivity=sensitivity,
        noise_std=noise_std,
        sampling_probability=sampling_probability,
        count=compositions,
        relation=ledger.relation,
    )
    return _charged_rows(entry, ledger, steps, rows, dim, rng, cache_rows)


def _charged_rows(entry, ledger, steps, rows, dim, rng, cache_rows) -> GaussianRows:
    """Validate, charge ``entry`` to ``ledger`` (before any draw) and open the rows."""
    if not isinstance(rng, NoiseSource):
        raise TypeError(f"rng must be a NoiseSource, got {type(rng).__name__}")
    if rng.backend != "fast":
        raise ValueError(
            "correlated-noise streams need regenerable noise: the secure backend is not "
            "supported (use the fast backend)"
        )
    steps = check_int(steps, "steps", low=1)
    rows = check_int(rows, "rows", low=1)
    dim = check_int(dim, "dim", low=1)
    cache_rows = min(check_int(cache_rows, "cache_rows", low=0), rows)
    ledger.charge(entry)
    recorder.announce(entry)
    replay = recorder.replayed_output(entry, np.broadcast_to(np.float64(0.0), (steps, dim)))
    record = recorder.open_stream(entry, (steps, dim))
    (source,) = rng.spawn(1)
    return GaussianRows(
        entry=entry,
        steps=steps,
        rows=rows,
        dim=dim,
        source=source,
        cache_rows=cache_rows,
        replay=replay,
        record=record,
    )
