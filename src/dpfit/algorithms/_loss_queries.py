"""The shared step of the per-example-loss optimisers: clip, average, add noise, charge.

:class:`LossQueries` is the only place where :mod:`dpfit.algorithms.kl_spider`,
:mod:`~dpfit.algorithms.proximal`, :mod:`~dpfit.algorithms.adaptive_gd` and
:mod:`~dpfit.algorithms.noisy_gd` touch the private data. Each query averages per-example
rows clipped to a declared bound over the public n and releases the mean through
:func:`dpfit.mechanisms.gaussian` with sensitivity ``mean_sensitivity(bound, n, relation)``
(2 bound / n under replace-one). :func:`prepare` validates every public input and the data
before any charge, and :func:`finish` builds the :class:`~dpfit.algorithms.Trajectory`.
With a privacy unit n counts units and each query sums at most K clipped rows per unit
(:mod:`dpfit.algorithms._loss_units`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from .._validation import RHO_FLOOR, check_rho, check_vector
from ..distributed import check_dask_rows, is_dask
from ..losses.base import Loss, check_loss, checked_gradients, split_data
from ..mechanisms import (
    NoiseSource,
    check_public_scale,
    gaussian,
    make_noise_source,
    release_peaks,
)
from ..privacy import Budget, PrivacyLedger, Query, mean_sensitivity, parse_relation, public_n
from ..privacy.ledger import prepare_ledger
from ..privacy.unit_level import PrivacyUnit
from ._kernels import clipped_row_sum, loss_sums
from ._loss_units import capped_rows, loss_unit, unit_ledger
from .trajectory import Trajectory

__all__ = [
    "LossQueries",
    "Run",
    "clip_keyword_message",
    "finish",
    "prepare",
    "refuse_clip_keyword",
]

_F = TypeVar("_F", bound=Callable[..., Any])


def clip_keyword_message(name: str, value: Any) -> str:
    """The one-line hint for ``clip=`` given to a KL algorithm: everywhere else in dpfit
    ``clip`` is a norm, so these algorithms spell their bool ``clipping`` and take their
    norms from the loss's declared constants."""
    if isinstance(value, bool):
        return f"{name}: clip={value} is spelt clipping={value} (clip is a norm elsewhere in dpfit)"
    return (
        f"{name}: no clip norm; gradients are clipped at loss.lipschitz (L0), and "
        "clipping=<bool> only says whether that clipping is relied on"
    )


def refuse_clip_keyword(func: _F) -> _F:
    """Wrap a KL algorithm so that the old keyword ``clip=`` raises a :class:`TypeError`
    with :func:`clip_keyword_message` instead of Python's bare "unexpected keyword"."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if "clip" in kwargs:
            raise TypeError(clip_keyword_message(func.__name__, kwargs["clip"]))
        return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


class LossQueries:
    """Private full-batch queries of a per-example loss on one dataset.

    Parameters
    ----------
    loss : Loss
    X, y : ndarray or dask.array.Array
        Validated data (``y`` is None for unsupervised losses). On Dask, each query is one
        distributed reduction (:func:`dpfit.algorithms._kernels.loss_sums`).
    n : int
        The public record count dividing every sum.
    clipping : bool
        Whether the caller relies on clipping (``True``) or claims that the declared loss
        constants hold for every record (``False``). Either way every per-example row is
        clipped to the query's bound: the declared sensitivity is enforced, never trusted
        (with a true claim the clipping changes nothing), so privacy holds for any data.
        ``False`` only turns off the clipped-fraction diagnostic.
    ledger : PrivacyLedger
    source : NoiseSource
    prefix : str
        Ledger label prefix (the algorithm's name).
    rows_per_unit : int, default=1
        K with a privacy unit: ``n`` counts units, each summing at most K clipped rows, so
        every release's sensitivity is K times the row one (:meth:`sensitivity`).
    """

    def __init__(
        self, loss, X, y, *, n, clipping, ledger, source, prefix, rows_per_unit=1
    ) -> None:
        self.loss, self.X, self.y, self.n = loss, X, y, n
        self.rows_per_unit = rows_per_unit
        self.clipping, self.ledger, self.source = clipping, ledger, source
        self.prefix = prefix
        self.max_fraction_clipped = 0.0  # NON-PRIVATE diagnostic
        self._cache: list[tuple[bytes, np.ndarray]] = []
        self._dask_sums = loss_sums(loss, X, y) if is_dask(X) else None
        self._rows: np.ndarray | None = None  # n x p buffer of every query's clipped rows

    def grads(self, theta: np.ndarray) -> np.ndarray:
        """Raw per-example gradients at ``theta`` (shape-checked); the last two are cached."""
        key = theta.tobytes()
        for k, G in self._cache:
            if k == key:
                return G
        G = checked_gradients(self.loss, theta, self.X, self.y)
        self._cache = [*self._cache[-1:], (key, G)]
        return G

    def mean(self, thetas: tuple[np.ndarray, ...], bound: float) -> np.ndarray:
        """(1/n) sum_i of the per-example gradients at ``thetas[0]`` (minus those at
        ``thetas[1]``): non-finite rows zeroed, the others clipped to ``bound`` whatever
        ``clipping`` says (:func:`~dpfit.algorithms._kernels.clipped_row_sum`)."""
        if self._dask_sums is not None:
            total, clipped = self._dask_sums(thetas, bound)
            rows = self.n
        else:
            G = self.grads(thetas[0])
            if self._rows is None:
                self._rows = np.empty_like(G)  # G's memory layout: the same summation order
            if len(thetas) == 2:
                with np.errstate(invalid="ignore", over="ignore"):  # inf - inf rows are zeroed
                    G = np.subtract(G, self.grads(thetas[1]), out=self._rows)
            # enforced, never trusted; clipped into the buffer (G itself may be cached)
            total, clipped = clipped_row_sum(G, bound, out=self._rows)
            rows = G.shape[0]
        if self.clipping:
            self.max_fraction_clipped = max(self.max_fraction_clipped, clipped / rows)
        return total / self.n

    def sensitivity(self, bound: float) -> float:
        """The declared sensitivity of a mean of rows clipped to ``bound``: one row's, or
        with a privacy unit one unit's (at most ``rows_per_unit`` rows)."""
        return mean_sensitivity(bound, self.n, self.ledger.relation, self.rows_per_unit)

    def release(self, value: Any, *, bound: float, noise_std: float, label: str) -> np.ndarray:
        """Release a mean of rows clipped to ``bound`` (or a 1-Lipschitz function of one)."""
        sensitivity = self.sensitivity(bound)  # the helper's, for one row or one unit
        return gaussian(
            value,
            sensitivity=sensitivity,
            noise_std=noise_std,
            ledger=self.ledger,
            rng=self.source,
            label=f"{self.prefix}/{label}",
        )

    def gradient(self, theta: np.ndarray) -> np.ndarray:
        """Exact (clipped at L0) mean gradient; **not private** until released."""
        return self.mean((theta,), self.loss.lipschitz)

    def noisy_gradient(self, theta: np.ndarray, noise_std: float, label: str = "gradient"):
        """The mean gradient at ``theta`` plus N(0, noise_std^2 I); sensitivity from L0."""
        return self.release(
            self.gradient(theta), bound=self.loss.lipschitz, noise_std=noise_std, label=label
        )

    def noisy_difference(self, new: np.ndarray, old: np.ndarray, *, bound: float, noise_std):
        """grad F(new) - grad F(old) + noise; per-example differences clipped to ``bound``."""
        value = self.mean((new, old), bound)
        return self.release(value, bound=bound, noise_std=noise_std, label="difference")


@dataclass(frozen=True, slots=True, kw_only=True)
class Run:
    """Validated inputs of one run: data, start, public n and p, ledger, noise, queries."""

    X: np.ndarray
    y: np.ndarray | None
    theta0: np.ndarray
    n: int
    p: int
    rho: float
    ledger: PrivacyLedger
    source: NoiseSource
    queries: LossQueries
    unit: PrivacyUnit | None = None


def prepare(
    loss: Any,
    X: Any,
    y: Any,
    *,
    rho: Any,
    theta0: Any,
    clipping: Any,
    relation: Any,
    n_public: Any,
    ledger: Any,
    rng: Any,
    prefix: str,
    groups: Any = None,
    max_rows_per_unit: Any = None,
) -> Run:
    """Validate everything public and the data's shape, and check that the ledger's budget
    can afford ``rho`` (no charge, no draw, no data read); with ``groups``, keep at most
    ``max_rows_per_unit`` rows per unit (:mod:`dpfit.algorithms._loss_units`)."""
    loss: Loss = check_loss(loss)
    rho = check_rho(rho)
    if not isinstance(clipping, bool):
        raise TypeError(f"clipping must be a bool, got {type(clipping).__name__}")
    relation = parse_relation(relation)
    units, X, y = loss_unit(
        loss, X, y, groups, max_rows_per_unit, n_public=n_public, relation=relation
    )
    if units is not None:
        if ledger is None:
            ledger = PrivacyLedger(relation=relation, budget=Budget(rho=rho), unit=units.unit)
        ledger = unit_ledger(ledger, units.unit)
    ledger = prepare_ledger(ledger, relation, rho, name=prefix)  # budget checked: no draw yet
    rows = 1 if units is None else units.unit.max_rows
    if units is not None:
        n = units.n
    elif is_dask(X) or is_dask(y):
        arrays = {"X": (X, 2)} if y is None else {"X": (X, 2), "y": (y, 1)}
        (X, *rest), n = check_dask_rows(arrays, n_public=n_public, relation=relation)
        y = rest[0] if rest else None
    else:
        X, y = split_data(loss, (X,) if y is None else (X, y))
        n = public_n(X.shape[0], n_public, relation)
    p = loss.n_params(X.shape[1])
    theta0 = np.zeros(p) if theta0 is None else check_vector(theta0, "theta0", size=p)
    check_public_scale(  # any release's rho is >= RHO_FLOOR, so its noise std is bounded
        "lipschitz",
        loss.lipschitz,
        lambda c: release_peaks(Query.MEAN, bound=c * rows, n=n, rho=RHO_FLOOR, relation=relation),
        what=f"the clipped gradient sum of n = {n} "
        + ("records" if units is None else f"units of up to {rows} rows")
        + " and the noise of any release",
    )
    source = make_noise_source(rng)
    if units is not None:
        X, y = capped_rows(units, X, y, source)
    queries = LossQueries(
        loss, X, y, n=n, clipping=clipping, ledger=ledger, source=source, prefix=prefix,
        rows_per_unit=rows,
    )  # fmt: skip
    return Run(
        X=X, y=y, theta0=theta0, n=n, p=p, rho=rho, ledger=ledger, source=source,
        queries=queries, unit=None if units is None else units.unit,
    )  # fmt: skip


def finish(
    run: Run,
    iterates: list[np.ndarray] | np.ndarray,
    estimate: np.ndarray,
    *,
    config: dict[str, Any],
    releases: dict[str, Any] | None = None,
    diagnostics: dict[str, Any] | None = None,
) -> Trajectory:
    """The run's :class:`Trajectory` (diagnostics gain the NON-PRIVATE clipped fraction)."""
    its = np.asarray(iterates, dtype=np.float64).reshape(-1, run.p)
    diag = {"max_fraction_clipped": run.queries.max_fraction_clipped, **(diagnostics or {})}
    base = {
        "n": run.n,
        "p": run.p,
        "rho": run.rho,
        "relation": run.ledger.relation.value,
        "clipping": run.queries.clipping,
        "lipschitz": run.queries.loss.lipschitz,
        "loss": type(run.queries.loss).__name__,
    }
    if run.unit is not None:  # n counts units
        base.update(privacy_unit=run.unit.describe(), max_rows_per_unit=run.unit.max_rows)
    return Trajectory(
        algorithm=run.queries.prefix,
        iterates=its,
        estimate=estimate,
        ledger=run.ledger,
        config={**base, **config},
        noise_backend=run.source.backend,
        seeded=run.source.seeded,
        releases=releases or {},
        diagnostics=diag,
    )
