"""The noise source: where every random bit of dpfit comes from (``docs/privacy.md``).

Policy (after diffprivlib, Opacus and Tumult):

* ``rng=None`` -> a fresh source seeded with 128 bits from the OS CSPRNG (``secrets``); it
  reseeds itself after ``os.fork()`` so parent and children never share noise.
* an ``int`` or a :class:`numpy.random.Generator` -> reproducible noise for research and
  tests; the source is flagged ``seeded=True`` and an
  :class:`~dpfit.InsecureRandomnessWarning` is emitted.
* ``secure=True`` -> exact discrete Gaussian noise from OpenDP with OS randomness (the
  ``secure`` extra); combining it with a seed is a ``ValueError`` (Opacus precedent).

The fast backend (numpy's PCG64) is **not** hardened against floating-point or RNG-state
attacks (Mironov 2012; Jin et al. 2022); results record which backend produced them.
Global RNG state (``np.random``, ``random``) is never read or written.
"""

from __future__ import annotations

import os
import secrets
import warnings
from typing import Any

import numpy as np

from .._validation import user_stacklevel
from ..exceptions import InsecureRandomnessWarning

__all__ = ["NoiseSource", "make_noise_source"]

_BACKENDS = ("fast", "secure")


class NoiseSource:
    """A stream of randomness with a known provenance (seeded or not, fast or secure).

    Build one with :func:`make_noise_source`. Privacy noise is drawn only by
    :mod:`dpfit.mechanisms`; algorithms may use :attr:`generator` for non-privacy randomness
    such as shuffling (which must never depend on the data).
    """

    __slots__ = ("_backend", "_generator", "_pid", "_seed_seq", "_seeded")

    def __init__(self, seed_seq: np.random.SeedSequence, *, seeded: bool, backend: str = "fast"):
        if backend not in _BACKENDS:
            raise ValueError(f"backend must be one of {list(_BACKENDS)}, got {backend!r}")
        self._seed_seq = seed_seq
        self._seeded = seeded
        self._backend = backend
        self._pid = os.getpid()
        self._generator = np.random.Generator(np.random.PCG64(seed_seq))

    @property
    def seeded(self) -> bool:
        """True when the noise is reproducible (an int or Generator was supplied)."""
        return self._seeded

    @property
    def backend(self) -> str:
        """``"fast"`` (numpy, not floating-point hardened) or ``"secure"`` (OpenDP)."""
        return self._backend

    @property
    def generator(self) -> np.random.Generator:
        """The underlying numpy generator, reseeded from the OS after a fork when unseeded."""
        if not self._seeded and os.getpid() != self._pid:
            self._seed_seq = np.random.SeedSequence(secrets.randbits(128))
            self._generator = np.random.Generator(np.random.PCG64(self._seed_seq))
            self._pid = os.getpid()
        return self._generator

    def spawn(self, k: int) -> list[NoiseSource]:
        """``k`` statistically independent child sources with the same provenance."""
        self.generator  # noqa: B018 - trigger the fork check before spawning
        children = self._seed_seq.spawn(k)
        return [NoiseSource(c, seeded=self._seeded, backend=self._backend) for c in children]

    def keyed_generator(self, key: int) -> np.random.Generator:
        """A counter-based (Philox) generator determined by this source's seed and ``key``.

        Used to *regenerate* the same noise for a step on demand (O(1) state per step).
        """
        entropy = self._seed_seq.generate_state(4, dtype=np.uint64)
        return np.random.Generator(np.random.Philox(key=entropy[:2], counter=[0, 0, 0, int(key)]))

    def __repr__(self) -> str:
        return f"NoiseSource(backend={self._backend!r}, seeded={self._seeded})"


def make_noise_source(rng: Any = None, *, secure: bool = False, name: str = "rng") -> NoiseSource:
    """Normalise ``rng`` (None, int, Generator or NoiseSource) into a :class:`NoiseSource`.

    ``name`` is the argument the caller's user passed ``rng`` as (estimators take
    ``random_state``), so that an error names what the user wrote.

    Raises
    ------
    TypeError
        ``rng`` is of another type (e.g. ``random.Random`` or a legacy ``RandomState``).
    ValueError
        ``secure=True`` together with a seed or a Generator.
    """
    if not isinstance(secure, bool):
        raise TypeError(f"secure must be a bool, got {type(secure).__name__}")
    if isinstance(rng, NoiseSource):
        if secure and rng.backend != "secure":
            raise ValueError("secure=True requires a secure NoiseSource")
        return rng
    if rng is None:
        backend = "secure" if secure else "fast"
        return NoiseSource(
            np.random.SeedSequence(secrets.randbits(128)), seeded=False, backend=backend
        )
    if isinstance(rng, bool) or not isinstance(rng, (int, np.integer, np.random.Generator)):
        raise TypeError(
            f"{name} must be None, an int or a numpy.random.Generator, got {type(rng).__name__}"
        )
    if secure:
        raise ValueError("secure=True cannot be combined with a seed: secure noise is unseedable")
    if isinstance(rng, np.random.Generator):
        seed_seq = np.random.SeedSequence(rng.integers(0, 2**63, size=4).tolist())
    else:
        if rng < 0:
            raise ValueError(f"{name} seed must be >= 0, got {int(rng)}")
        seed_seq = np.random.SeedSequence(int(rng))
    warnings.warn(
        "noise is drawn from a seeded generator: reproducible, but not for real releases",
        InsecureRandomnessWarning,
        stacklevel=user_stacklevel(),
    )
    return NoiseSource(seed_seq, seeded=True)
