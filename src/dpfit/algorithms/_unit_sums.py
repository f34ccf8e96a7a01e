"""Per-unit sums: the step every unit-level release starts from (:mod:`dpfit.privacy.unit_level`).

A unit-level fit first bounds each unit's rows (:func:`cap_rows`: at most K, sampled
uniformly by a child of the noise source), then sums each unit's rows (:func:`unit_sums`),
so that a release can clip one unit's *summed* contribution, or bound it by K times the
row bound. Each unit's sum depends on that unit's rows only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from .._validation import check_int
from ..mechanisms import NoiseSource
from ..privacy.unit_level import UnitRows, unit_codes

__all__ = ["cap_rows", "unit_means", "unit_sums"]


def cap_rows(groups: Any, n_rows: int, max_rows: int, source: NoiseSource) -> UnitRows:
    """Keep at most ``max_rows`` rows per unit, chosen uniformly at random.

    Every row gets an independent uniform key from a child of ``source``, spawned whatever
    the data (so the fit's own noise stream never depends on them); each unit keeps its rows
    with the ``max_rows`` smallest keys: a uniformly random subset, whatever the rows'
    positions or order. Returns the kept rows grouped by unit.
    """
    max_rows = check_int(max_rows, "max_rows_per_unit", low=1)
    codes, n_units = unit_codes(groups, n_rows)
    keys = source.spawn(1)[0].generator.random(n_rows)
    order = np.lexsort((keys, codes))  # by unit, then by the random key
    sorted_codes = codes[order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
    rank = np.arange(n_rows) - np.repeat(starts, np.diff(np.r_[starts, n_rows]))
    kept = order[rank < max_rows]
    return UnitRows(rows=kept, codes=codes[kept], n_units=n_units)


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
