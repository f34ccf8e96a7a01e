"""The Gaussian mechanism: the one path through which dpfit adds privacy noise.

Order of operations: validate -> build the ledger entry -> charge the
ledger (and its budget) -> draw. If the charge fails, nothing is drawn and nothing changes.

:func:`gaussian` charges and draws one release. :func:`gaussian_releases` charges ``count``
releases of one query (same sensitivity, same noise) at once, as one ledger entry with that
count, before any of them is drawn, and returns a :class:`GaussianReleases` that releases them
one by one: an iterative algorithm's per-step release then costs little more than the draw
itself (with ``block``: than adding a row of noise drawn for many releases at once). The
entry's rho is exactly the sum of the per-release entries' (zCDP composes additively, also
adaptively; Bun & Steinke 2016, Lemma 2.3), so the ledger's statement and epsilon are the
same either way. Used as a context manager, a :class:`GaussianReleases` whose
block fails returns the releases it never drew (see :meth:`GaussianReleases.__exit__`).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_int
from ..exceptions import BudgetExceededError
from ..privacy.ledger import GaussianEntry, PrivacyLedger
from . import recorder
from .calibration import noise_std_for_rho, noise_std_within, rho_for_noise_std, rho_within
from .rng import NoiseSource

__all__ = [
    "GaussianReleases",
    "gaussian",
    "gaussian_releases",
    "noise_std_for_rho",
    "noise_std_within",
    "rho_for_noise_std",
    "rho_within",
]


#: Query values of at most this many coordinates are checked for finiteness in plain Python.
_SMALL = 16

#: The secure backend's grid spacing 2^k is at most this fraction of sensitivity / sqrt(d).
_GRID_FRACTION = 2.0**-30
#: OpenDP's finest float64 granularity (subnormal spacing), the smallest allowed k.
_MIN_K = -1074


def _secure_gaussian(value: np.ndarray, entry: GaussianEntry) -> np.ndarray:
    """Discrete Gaussian on the grid Z * 2^k from OpenDP, with OS randomness.

    OpenDP rounds each coordinate of the query to the nearest multiple of 2^k before adding
    an exact discrete Gaussian on Z * 2^k, which can move the query by up to 2^k per
    coordinate, so a query of L2 sensitivity Delta has sensitivity up to
    Delta_eff = Delta + 2^k sqrt(d) on the grid (OpenDP's privacy map adds the same
    rounding distance). With 2^k <= 2^-30 Delta / sqrt(d), the
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
    output = np.asarray(meas(flat), dtype=np.float64).reshape(value.shape)
    return output[()] if output.ndim == 0 else output  # 0-d: a float64, as value + noise is


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
    _check_ledger_and_source(ledger, rng)
    value = _finite_value(value, label)
    entry = GaussianEntry(
        label=label,
        sensitivity=sensitivity,
        noise_std=noise_std,
        relation=ledger.relation,
        subsampled=subsampled,
    )
    ledger.charge(entry)
    return _draw(value, entry, rng)


def _check_ledger_and_source(ledger: PrivacyLedger, rng: NoiseSource) -> None:
    if not isinstance(ledger, PrivacyLedger):
        raise TypeError(f"ledger must be a PrivacyLedger, got {type(ledger).__name__}")
    if not isinstance(rng, NoiseSource):
        raise TypeError(f"rng must be a NoiseSource, got {type(rng).__name__}")


def _finite_value(value: ArrayLike, label: str) -> np.ndarray:
    """``value`` as a float64 array; ValueError if any entry is not finite.

    Internal invariant: callers clip and zero non-finite rows. Small values (a few
    coordinates, as in every step of an iterative algorithm) are checked in plain Python,
    several times cheaper than ``np.isfinite(v).all()`` there.
    """
    value = np.asarray(value, dtype=np.float64)
    if value.size <= _SMALL:
        finite = all(map(math.isfinite, value.reshape(-1).tolist()))
    else:
        finite = bool(np.isfinite(value).all())
    if not finite:
        raise ValueError(f"{label}: the query value is not finite")
    return value


def _draw(value: np.ndarray, entry: GaussianEntry, rng: NoiseSource) -> np.ndarray:
    """value + N(0, noise_std^2 I) for one charged release (or its replayed output)."""
    output = recorder.replayed_output(entry, value)
    if output is None:
        if rng.backend == "secure":
            output = _secure_gaussian(value, entry)
        else:
            output = value + entry.noise_std * rng.generator.standard_normal(value.shape)
    recorder.notify(entry, value, output)
    return output


class GaussianReleases:
    """``count`` Gaussian releases of one query, charged at once; drawn one by one.

    Build it with :func:`gaussian_releases` (which charges the ledger first). Each
    :meth:`release` is exactly what :func:`gaussian` does after its charge: the same noise
    from the same source, the same record/replay hooks, one release of ``count``.

    With ``block`` > 1 (numpy backend), the noise of up to ``block`` releases is drawn in one
    call, ``noise_std * generator.standard_normal((k, *shape))``, and each release adds the
    next row. The generator fills that array in the order in which ``k`` calls would have
    drawn it, and the product and sum are the same float operations, so every release is
    bit for bit what it is with ``block=1`` (``tests/algorithms/test_dp_gd.py``). Noise
    drawn ahead of its release counts as drawn: a failed block keeps it spent.

    Use it as a context manager around the loop that draws the releases: when the block
    raises, the releases not yet drawn are returned to the ledger and its budget
    (:meth:`__exit__`), so a fit that fails part-way keeps spent only what it drew.
    """

    __slots__ = (
        "__weakref__",
        "_block",
        "_broken",
        "_charged",
        "_count",
        "_drawn",
        "_each",
        "_ledger",
        "_made",
        "_next",
        "_noise",
        "_source",
    )

    def __init__(
        self,
        *,
        each: GaussianEntry,
        count: int,
        source: NoiseSource,
        ledger: PrivacyLedger,
        charged: GaussianEntry,
        block: int = 1,
    ) -> None:
        self._each, self._count, self._source = each, count, source
        self._ledger, self._charged = ledger, charged
        self._made = 0
        self._broken = False  # set when a query value broke the finiteness invariant
        # releases drawn ahead (block > 1): their noise, the next row to use, how many drawn
        self._block = block if source.backend == "fast" else 1
        self._noise: np.ndarray | None = None
        self._next = self._drawn = 0

    @property
    def entry(self) -> GaussianEntry:
        """The entry of one release (the ledger holds it with ``count`` releases)."""
        return self._each

    @property
    def count(self) -> int:
        """Number of releases charged (after a refund, the number drawn)."""
        return self._count

    @property
    def made(self) -> int:
        """Number of releases made so far (after a refund: the number kept spent)."""
        return self._made

    def release(self, value: ArrayLike) -> np.ndarray:
        """Release ``value + N(0, noise_std^2 I)``: the next of the charged releases.

        Raises
        ------
        BudgetExceededError
            All ``count`` charged releases were made; nothing was drawn.
        ValueError
            ``value`` is not finite (an internal invariant); nothing was drawn.
        """
        if self._made >= self._count:
            raise BudgetExceededError(
                f"{self._each.label}: all {self._count} charged releases were made; "
                "nothing was drawn"
            )
        try:
            value = _finite_value(value, self._each.label)
        except ValueError:
            self._broken = True
            raise
        self._made += 1  # counted before the draw: an interrupted draw stays charged
        if self._block == 1:
            return _draw(value, self._each, self._source)
        return self._release_drawn_ahead(value)

    def _release_drawn_ahead(self, value: np.ndarray) -> np.ndarray:
        """:func:`_draw` with the noise taken from a block drawn ahead (``block`` > 1)."""
        entry = self._each
        output = recorder.replayed_output(entry, value)
        if output is None:
            noise = self._noise
            if noise is None or self._next == len(noise):
                size = min(self._block, self._count - self._drawn)
                self._drawn += size  # counted before the draw, as in release()
                generator = self._source.generator
                noise = self._noise = entry.noise_std * generator.standard_normal(
                    (size, *value.shape)
                )
                self._next = 0
            elif noise.shape[1:] != value.shape:
                self._broken = True  # a caller's bug: keep the whole charge spent
                raise ValueError(f"{entry.label}: the query changed shape between releases")
            output = value + noise[self._next]
            self._next += 1
        recorder.notify(entry, value, output)
        return output

    def __enter__(self) -> GaussianReleases:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        """On a failure, return the undrawn releases' rho; never on a normal exit.

        What stays spent is every release :meth:`release` began to draw, so a release whose
        draw was interrupted is kept. The ledger's entry is replaced by one of the drawn
        count (removed when none was drawn) and its budget gets exactly the undrawn
        releases' rho back (a stored budget rounds the refund down; ``docs/threat-model.md``).

        Why the refund reveals nothing about a record: the number drawn is the index of the
        step at which the block failed, so it must not depend on the data. Every failure a
        record's value could cause is ruled out after the charge: queries are clipped sums,
        finite for every finite input, and inputs are validated before the charge
        (``tests/mechanisms/test_gaussian_refund.py`` runs DP-GD on rows of +-1.7e308 to the
        end). What remains are failures outside the data (a storage or worker error, an
        interrupt, memory), and a refund by the count they leave is a fully adaptive
        composition whose total never exceeds the budget, which stays a guarantee (Feldman &
        Zrnic 2021; Whitehouse et al. 2023). If a query value is nevertheless not finite,
        which only a bug could cause, nothing is refunded: the whole charge stays spent, so
        the budget does not show the step at which it happened. A normal exit with releases
        left (an algorithm that stopped early) refunds nothing either, since its stop may
        depend on the data. Noise drawn ahead of its release (``block`` > 1) stays spent.
        """
        drawn = max(self._made, self._drawn)
        if exc_type is None or self._broken or drawn >= self._count:
            return
        self._made = self._count = drawn  # no release may be made after this
        self._noise = None
        self._ledger._return_undrawn(self._charged, drawn=drawn)


def gaussian_releases(
    *,
    count: int,
    sensitivity: float,
    noise_std: float,
    ledger: PrivacyLedger,
    rng: NoiseSource,
    label: str,
    subsampled: bool = False,
    block: int = 1,
) -> GaussianReleases:
    """Charge ``count`` releases of one query to ``ledger`` now; draw them later, one by one.

    The ledger gets one :class:`~dpfit.privacy.GaussianEntry` with ``count`` releases, which
    costs exactly ``count`` times one release (the same statement and epsilon as ``count``
    separate entries). Use it when an algorithm's number of releases and their noise are
    fixed by public inputs before it starts (DP-GD's T steps); releases may then be chosen
    adaptively, as zCDP composes adaptively.

    Parameters
    ----------
    count : int
        Number of releases (>= 1).
    sensitivity, noise_std, ledger, rng, label, subsampled
        As for :func:`gaussian`; every release has this sensitivity and noise.
    block : int, default=1
        Draw the noise of up to ``block`` releases at once (numpy backend; the releases are
        bit-identical to ``block=1``). Only for a caller that draws nothing else from ``rng``
        between these releases (noise drawn ahead moves the generator on) and whose query
        values all have one shape.

    Returns
    -------
    GaussianReleases
        Its :meth:`~GaussianReleases.release` draws the next release.

    Raises
    ------
    BudgetExceededError
        ``ledger``'s budget cannot afford the ``count`` releases; nothing was charged or drawn.

    Notes
    -----
    Charging before the first draw is what :func:`gaussian` does for one release: the budget
    refuses an overspend before any noise exists. If the algorithm stops early, the ledger
    overstates the cost (never understates it). Draw inside ``with gaussian_releases(...) as
    releases:`` so that a failure returns the releases never drawn
    (:meth:`GaussianReleases.__exit__`).
    """
    _check_ledger_and_source(ledger, rng)
    count = check_int(count, "count", low=1)
    block = check_int(block, "block", low=1)
    each = GaussianEntry(
        label=label,
        sensitivity=sensitivity,
        noise_std=noise_std,
        relation=ledger.relation,
        subsampled=subsampled,
    )
    charged = GaussianEntry(
        label=label,
        sensitivity=each.sensitivity,
        noise_std=each.noise_std,
        count=count,
        relation=each.relation,
        subsampled=subsampled,
    )
    ledger.charge(charged)
    return GaussianReleases(
        each=each, count=count, source=rng, ledger=ledger, charged=charged, block=block
    )
