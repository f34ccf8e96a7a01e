"""Per-unit sums: the step every unit-level release starts from (:mod:`dpfit.privacy.unit_level`).

A unit-level fit first bounds each unit's rows (:func:`cap_rows`: at most K, sampled
uniformly by a child of the noise source), then sums each unit's rows (:func:`unit_sums`),
so that a release can clip one unit's *summed* contribution, or bound it by K times the
row bound. Each unit's sum depends on that unit's rows only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .._validation import check_int
from ..mechanisms import NoiseSource
from ..privacy.unit_level import UnitRows, unit_codes

__all__ = ["cap_rows", "unit_means", "unit_sums"]


def cap_rows(groups: Any, n_rows: int, max_rows: int, source: NoiseSource) -> UnitRows:
    """Keep at most ``max_rows`` rows per unit, chosen uniformly at random.

    The j-th row of a unit (in the unit's own row order) gets the key
    h(s, label, j), with s one draw from a child of ``source`` (spawned whatever the data,
    so the fit's own noise stream never depends on them) and h the SplitMix64 finaliser
    (Steele, Lea & Flood 2014): pseudo-random, independent across (label, j). Each unit
    keeps its rows with the ``max_rows`` smallest keys, a uniformly random subset whatever
    the rows' positions; and since a unit's keys depend on its own label and rows only,
    changing one unit (or its number of rows) never changes which rows another keeps.
    Returns the kept rows grouped by unit.
    """
    max_rows = check_int(max_rows, "max_rows_per_unit", low=1)
    codes, n_units = unit_codes(groups, n_rows)
    seed = source.spawn(1)[0].generator.integers(2**63, dtype=np.uint64)
    order = np.argsort(codes, kind="stable")  # by unit, each unit's rows in their order
    rank = np.empty(n_rows, dtype=np.uint64)
    rank[order] = _ranks(codes[order])
    labels = np.asarray(groups.to_numpy() if hasattr(groups, "to_numpy") else groups)
    keys = _mix(_mix(seed ^ pd.util.hash_array(labels)) ^ _mix(rank + np.uint64(1)))
    by_key = np.lexsort((keys, codes))  # by unit, then by the key
    kept = by_key[_ranks(codes[by_key]) < max_rows]
    return UnitRows(rows=kept, codes=codes[kept], n_units=n_units)


def _ranks(sorted_codes: np.ndarray) -> np.ndarray:
    """Each entry's position within its run of equal codes (the codes sorted by unit)."""
    n = sorted_codes.shape[0]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
    return np.arange(n) - np.repeat(starts, np.diff(np.r_[starts, n]))


def _mix(x: np.ndarray) -> np.ndarray:
    """The SplitMix64 finaliser on uint64 (wrapping arithmetic)."""
    x = np.asarray(x, dtype=np.uint64)
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _indicator(codes: np.ndarray, n_units: int) -> sp.csr_matrix:
    """The n_units x rows 0/1 matrix whose row u marks the rows of unit u."""
    rows = codes.shape[0]
    return sp.csr_matrix(
        (np.ones(rows), (codes, np.arange(rows))), shape=(n_units, rows), dtype=np.float64
    )


def unit_sums(values: np.ndarray, codes: np.ndarray, n_units: int) -> np.ndarray:
    """sum_{i in u} values_i for every unit u (shape (n_units, ...) as ``values``' rows)."""
    values = np.asarray(values, dtype=np.float64)
    flat = values.reshape(values.shape[0], -1)
    with np.errstate(all="ignore"):
        out = np.asarray(_indicator(codes, n_units) @ flat)
    return out.reshape((n_units, *values.shape[1:]))


def unit_means(values: np.ndarray, codes: np.ndarray, n_units: int) -> np.ndarray:
    """Each unit's mean row, repeated on every row of the unit (the within transform's
    centre; a per-unit map: each row's value depends on its own unit's rows only)."""
    counts = np.bincount(codes, minlength=n_units).astype(np.float64)
    sums = unit_sums(values, codes, n_units)
    shape = (n_units,) + (1,) * (sums.ndim - 1)
    with np.errstate(all="ignore"):
        means = sums / np.maximum(counts, 1.0).reshape(shape)
    return means[codes]
