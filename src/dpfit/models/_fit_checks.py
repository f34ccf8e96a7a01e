"""Fits that would run but silently mislead: warnings from public inputs and charged releases.

:func:`dpfit.ols` (``models/_ols_fit.py``, and so ``dpfit fit``) adds the checks below to
:class:`~dpfit.DPLinearRegression`. The first runs for every fit of
:class:`~dpfit.DPLinearRegression`, called from its method table (``_linear_methods.py``):

* **too few records per coefficient** (public n and p): with n < 10 p the private fit's
  noise, of order p / (n sqrt(rho)) per coefficient (Brown et al. 2024, Thm 3.1), swamps
  the estimate; with p >= n least squares is not identified at all;
* **too few steps to converge** (public steps, step size and m): on the public rescaling to
  [-1, 1], every diagonal entry of X'X / n is at most 1, so the smallest eigenvalue is at
  most 1 and gradient descent forgets its start no faster than in 1 / step_size steps; a
  batch (or run, or the whole fit) much shorter than that reports the start, not the fit
  (``docs/user-guide.md``, "Steps, step size and mixing");
* **bounds that do not contain the data**: a private count, per bounded column, of the
  records outside the public bounds (which the fit clips), released through
  :func:`dpfit.mechanisms.gaussian` with a declared share ``bounds_check`` of rho (2% by
  default), charged on the fit's ledger, and a warning when a noisy count is large.

:func:`dpfit.models._iv_check.checked_iv_fit` gives an instrumental-variable fit the same
bounds check (``dpfit iv``).
Every warning is built from public inputs or from the charged noisy counts only.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from .._validation import user_stacklevel
from ..distributed import is_dask
from ..exceptions import SideConditionWarning
from ..mechanisms import gaussian, noise_std_for_rho, rho_within
from ..privacy import Budget, PrivacyLedger, Query, query_sensitivity, split
from ._design import zero_record_causes

__all__ = [
    "CLIPPED_SHARE",
    "DEFAULT_BOUNDS_CHECK",
    "ZERO_RECORDS",
    "bounds_check",
    "bounds_check_shares",
    "clipped_limit",
    "outside_queries",
    "refuse_response_bounds",
    "release_outside_counts",
    "reservation",
    "warn_few_records",
    "warn_public_settings",
]

#: Share of rho spent on the private count of records outside the bounds (on by default).
DEFAULT_BOUNDS_CHECK = 0.02
#: Fewer records than this per coefficient draws a warning.
RECORDS_PER_COEFFICIENT = 10
#: A batch (run, or fit) shorter than this many times 1 / step_size draws a warning.
MIXING_FACTOR = 10
#: DP-GD's number of steps when none is given (``models/_linear_methods.py``).
_DEFAULT_GD_STEPS = 1000
#: A noisy count above min(this share of n, sqrt(n)) plus 3 noise s.d. warns (clipped_limit).
CLIPPED_SHARE = 0.05
#: Key of the zero-record count among :func:`release_outside_counts`' results.
ZERO_RECORDS = "zero records"


def clipped_limit(n: int, noise_std: float) -> float:
    """Noisy count of clipped (or zero) records above which the bounds check warns.

    Clipping a share f of the records biases the fit by about f x their leverage while its
    standard error falls like 1 / sqrt(n), so the bias in standard errors grows like
    f sqrt(n): min(5% of n, sqrt(n)) records, plus three noise s.d. (docs/inference.md).
    """
    return min(CLIPPED_SHARE * n, math.sqrt(n)) + 3.0 * noise_std


def warn_few_records(*, n: int | None, p: int) -> None:
    """Warn when there are fewer than :data:`RECORDS_PER_COEFFICIENT` records per coefficient.

    ``p`` counts the coefficients (intercept included) and ``n`` is the public record count
    (None when it is not public: then nothing is said). Public quantities only; raised by
    every linear method before anything is drawn.
    """
    if n is None or n >= RECORDS_PER_COEFFICIENT * p:
        return
    why = (
        "more coefficients than records: least squares is not identified"
        if p >= n
        else f"fewer than {RECORDS_PER_COEFFICIENT} records per coefficient: the privacy "
        "noise will swamp the estimates"
    )
    warnings.warn(
        f"p = {p} coefficients with n = {n} records: {why}; drop terms or pool categories",
        SideConditionWarning,
        stacklevel=user_stacklevel(),
    )


def warn_public_settings(
    *,
    p: int,
    method: str,
    steps: int | None,
    step_size: float | None,
    m: int,
    interval: str | None,
    rescaled: bool,
    default_steps: bool,
) -> None:
    """Warn when dpfit's default steps cannot converge, from public quantities only.

    ``p`` counts the coefficients (intercept included); ``rescaled`` says whether public
    bounds map every feature to [-1, 1]; ``default_steps`` whether ``steps`` is dpfit's
    default (a number of steps the user chose is theirs to judge).
    """
    if method != "gd" or not rescaled or not default_steps or steps is None:
        return
    eta = 1.0 / p if step_size is None else step_size  # the default after public rescaling
    parts = 1 if interval is None else m
    what = {None: "the fit", "independent-runs": "each run"}.get(interval, "each batch")
    needed = math.ceil(MIXING_FACTOR / eta)
    if steps // parts < needed:
        warnings.warn(
            f"steps = {steps} gives {what} {steps // parts} steps, but at step_size = {eta:.3g} "
            f"gradient descent needs over 1 / step_size = {1 / eta:.0f} steps to forget its "
            f"start even on perfectly conditioned data, so the default steps cannot converge: "
            f"use steps >= {needed * parts}; see docs/user-guide.md, 'Steps, step size and "
            "mixing'",
            SideConditionWarning,
            stacklevel=user_stacklevel(),
        )


def _bounded_columns(X: Any, bounds: Any, indicators: tuple[str, ...]) -> list[tuple[Any, Any]]:
    """(column of X, (low, high)) for every bounded column that can hold outside values."""
    names = list(getattr(X, "columns", range(np.shape(X)[1])))
    if bounds is None:  # y_bounds only: the response is checked, no design column
        return []
    if isinstance(bounds, Mapping):
        pairs = [(name, bounds[name]) for name in names if name in bounds]
    else:
        pairs = list(zip(names, np.asarray(bounds, dtype=np.float64), strict=False))
    return [(name, pair) for name, pair in pairs if name not in indicators]


def release_outside_counts(
    X: Any,
    y: Any,
    *,
    bounds: Any,
    y_bounds: Any,
    rho: float,
    ledger: PrivacyLedger,
    source: Any,
    indicators: tuple[str, ...] = (),
) -> tuple[dict[str, float], float]:
    """Noisy counts of the records outside the public bounds, per bounded column, and of the
    zero records.

    A zero record (a value that is not a number or not finite, or a category outside the
    declared levels: an all-NaN row of the design or a NaN response) is fitted as all zeros
    and never counted as outside; its count comes last, under :data:`ZERO_RECORDS`, so that
    a text column read as numbers (every record a zero record) is not a silent fit.
    Replacing (or adding or removing) one record moves each of the k counts by at most 1,
    so the vector has L2 sensitivity sqrt(k) under either relation; it is released once
    with noise std sqrt(k) / sqrt(2 rho') (Gaussian mechanism, zCDP), rho' from
    :func:`~dpfit.mechanisms.rho_within` so that its charge, rounded once, is at most ``rho``.
    Returns the counts keyed by column name and the noise std.
    """
    columns = _bounded_columns(X, bounds, indicators)
    queries = []
    for name, (low, high) in columns:
        values = X[name] if hasattr(X, "columns") else X[:, name]
        queries.append(((values < low) | (values > high)).sum())
    names = [str(name) for name, _ in columns]
    if y_bounds is not None:
        low, high = y_bounds
        queries.append(((y < low) | (y > high)).sum())
        names.append(str(getattr(y, "name", None) or "y"))
    queries.append(_zero_record_count(X, y))
    names.append(ZERO_RECORDS)
    if any(hasattr(q, "compute") for q in queries):  # Dask: one distributed reduction
        from ..distributed._compute import compute_all

        queries = compute_all(queries)
    sensitivity = query_sensitivity(Query.COUNT, columns=len(queries))
    noise_std = noise_std_for_rho(sensitivity, rho_within(sensitivity, rho))
    noisy = gaussian(
        np.asarray(queries, dtype=np.float64),
        sensitivity=sensitivity,
        noise_std=noise_std,
        ledger=ledger,
        rng=source,
        label="bounds-check/outside-counts",
    )
    return dict(zip(names, (float(v) for v in noisy), strict=True)), noise_std


def _zero_record_count(X: Any, y: Any) -> Any:
    """The number of zero records: rows with a NaN in the design or the response."""
    if hasattr(X, "isna"):
        null = X.isna().any(axis=1)
    else:
        null = np.isnan(np.asarray(X, dtype=np.float64)).any(axis=1)
    return (null | (y.isna() if hasattr(y, "isna") else np.isnan(y))).sum()


def refuse_response_bounds(bounds: Any, X: Any, y: Any) -> None:
    response = getattr(y, "name", None)
    if isinstance(bounds, Mapping) and response in bounds and response not in X.columns:
        raise ValueError(
            f"bounds has the response {response!r}: give its bounds as y_bounds=(low, high) "
            "(dpfit's one convention: bounds for the design, y_bounds for the response)"
        )


def bounds_check_shares(rho: float, share: float) -> tuple[float, float]:
    """The fit's and the bounds check's exact shares of ``rho`` (:func:`dpfit.privacy.split`):
    ``rho * (1 - share)`` and ``rho * share``, the latter lowered by the ulps that would
    take their exact sum above ``rho``; ``(rho, 0.0)`` without a check."""
    return (rho, 0.0) if share == 0 else tuple(split(rho, [1.0 - share, share]))


def reservation(budget: Budget | None, rho: float, mechanism: str) -> Any:
    """A stored budget reserves the whole fit in one transaction (``privacy/store.py``).

    Inside an open reservation (a checked fit whose fit is itself checked) the outer one
    covers it: its spends draw from the outer reservation, which caps them.
    """
    from ..privacy.store import StoredBudget

    if not isinstance(budget, StoredBudget) or budget.reserving:
        return contextlib.nullcontext()
    return budget.reserve(rho, mechanism=mechanism)


def outside_queries(X: Any, bounds: Any, y_bounds: Any, indicators: tuple[str, ...]) -> int:
    """How many counts :func:`release_outside_counts` releases (public: the bounded columns,
    the response when bounded, and the zero records)."""
    return len(_bounded_columns(X, bounds, indicators)) + (y_bounds is not None) + 1


def bounds_check(
    X: Any,
    y: Any,
    *,
    n: int,
    fit_rho: float,
    rho: float,
    ledger: PrivacyLedger,
    source: Any,
    indicators: tuple[str, ...],
    params: Mapping[str, Any],
) -> str:
    """Release the outside counts with ``rho``, warn when one is large; returns the note for
    the summary (``fit_rho``: what the fit itself was charged)."""
    counts, noise_std = release_outside_counts(
        X,
        y,
        bounds=params.get("bounds"),
        y_bounds=params.get("y_bounds"),
        rho=rho,
        ledger=ledger,
        source=source,
        indicators=indicators,
    )
    zero = counts.pop(ZERO_RECORDS)
    # Post-processing of the noisy counts: a count below 0 is shown as 0.
    shown = ", ".join(f"{name} {max(0.0, value):.0f}" for name, value in counts.items())
    share = rho / (fit_rho + rho)
    note = (
        f"Bounds check: a private count of the records outside each column's public bounds "
        f"(clipped by the fit), noise std {noise_std:.3g}, rho = {rho:.3g} "
        f"({100 * share:.3g}% of the budget; noisy counts clamped at 0): {shown}; "
        f"zero records {max(0.0, zero):.0f}."
    )
    limit = clipped_limit(n, noise_std)
    if zero > limit:
        warnings.warn(
            f"about {zero:.0f} of n = {n} records are zero records (noise std "
            f"{noise_std:.3g}): a record whose row of the formula cannot be built counts as "
            f"all zeros; {zero_record_causes(params.get('zero_terms', ()), dask=is_dask(X))} "
            "(docs/user-guide.md)",
            SideConditionWarning,
            stacklevel=user_stacklevel(),
        )
    large = [name for name, value in counts.items() if value > limit]
    if large:
        warnings.warn(
            f"the public bounds of {large} clip many records (noisy counts "
            f"{', '.join(f'{counts[c]:.0f}' for c in large)} of n = {n}, noise std "
            f"{noise_std:.3g}): the fit and its intervals describe the clipped data, not the "
            "population coefficient; widen those bounds if public knowledge allows",
            SideConditionWarning,
            stacklevel=user_stacklevel(),
        )
    return note
