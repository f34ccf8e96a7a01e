"""Datasets and adversarial neighbours for the neighbour layer.

Every entry point's data is one pandas DataFrame: numeric columns ``x0, x1, ...`` (features),
``y`` (response), ``z0, z1, ...`` (instruments) and optionally a string column ``g`` (a
category). A runner in :mod:`neighbour_registry` turns the frame into what its entry point takes.

A neighbour D' of D changes one record, in one of these ways (``KINDS``):

``extreme-cell``  one numeric value of one record becomes an extreme finite float
``extreme-row``   every numeric value of one record becomes +-(an extreme finite float)
``zero-row``      every numeric value of one record becomes 0
``nonfinite``     one numeric value becomes NaN or +-inf (entry points that accept them)
``new-level``     the category of one record becomes a level no other record has
``add``           (add/remove) an extreme record is appended
``remove``        (add/remove) one record is deleted
``unit-extreme``  (privacy unit) every numeric value of every row of one unit becomes
                  +-(an extreme finite float)
``unit-over-cap`` (privacy unit) one unit's rows replaced by more rows than the cap, extreme
``unit-add``      (privacy unit, add/remove) a new unit of extreme rows is appended
``unit-remove``   (privacy unit, add/remove) every row of one unit is deleted

:func:`worst_cases` lists a fixed set of them per kind; :func:`neighbours` is the Hypothesis
strategy that explores the rest.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from hypothesis import strategies as st

#: Extreme finite values: the largest floats, tiny and subnormal ones, squares that overflow.
EXTREMES = (1.7e308, -1.7e308, 1e308, -1e308, 1e154, -1e154, 1e-300, -1e-300, 5e-324, 0.0)
NONFINITE = (np.nan, np.inf, -np.inf)
NEW_LEVEL = "zz-unseen"
REPLACE_KINDS = ("extreme-cell", "extreme-row", "zero-row", "nonfinite", "new-level")
ADD_REMOVE_KINDS = ("add", "remove")
UNIT_KINDS = ("unit-extreme", "unit-over-cap")
UNIT_ADD_REMOVE_KINDS = ("unit-add", "unit-remove")
KINDS = REPLACE_KINDS + ADD_REMOVE_KINDS + UNIT_KINDS + UNIT_ADD_REMOVE_KINDS
#: The unit column of :func:`panel` and the rows an over-cap or added unit gets (the panel
#: entries cap units at :data:`UNIT_CAP` rows).
UNIT = "u"
UNIT_CAP = 4
UNIT_ROWS = 9
NEW_UNIT = "zz-new-unit"


# -- base datasets (functions of a seed) --------------------------------------------------------
def linear(seed: int, n: int = 40, p: int = 3) -> pd.DataFrame:
    """y = x . (1, ..., -1) + noise with standard normal features."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(p)])
    frame["y"] = X @ np.linspace(1.0, -1.0, p) + 0.5 * rng.standard_normal(n)
    return frame


def unit_ball(seed: int, n: int = 300, p: int = 3) -> pd.DataFrame:
    """Features on the unit sphere and |y| <= 1 (the KL benchmarks' bounded domain)."""
    frame = linear(seed, n, p)
    X = frame.iloc[:, :p].to_numpy()
    frame.iloc[:, :p] = X / np.linalg.norm(X, axis=1, keepdims=True)
    frame["y"] = np.clip(frame["y"], -1.0, 1.0)
    return frame


def instrumental(seed: int, n: int = 60) -> pd.DataFrame:
    """One endogenous regressor x0, two instruments z0, z1 (Liang et al.'s design)."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, 2))
    u = rng.standard_normal(n)
    x = z[:, 0] + z[:, 1] + u
    return pd.DataFrame(
        {"x0": x, "z0": z[:, 0], "z1": z[:, 1], "y": 0.5 * x + u + rng.standard_normal(n)}
    )


def binary(seed: int, n: int = 40) -> pd.DataFrame:
    """``linear`` with a 0/1 response (its sign): the logistic entry points' data."""
    frame = linear(seed, n)
    frame["y"] = (frame["y"] > 0).astype(float)
    return frame


def counts(seed: int, n: int = 40) -> pd.DataFrame:
    """Two features, a positive exposure ``t`` and a count ``y`` (the Poisson entry points)."""
    rng = np.random.default_rng(seed)
    frame = linear(seed, n, 2)
    frame["t"] = rng.uniform(0.5, 2.0, n)
    frame["y"] = rng.poisson(frame["t"] * np.exp(0.3 * frame["x0"] - 0.2 * frame["x1"]))
    frame["y"] = frame["y"].astype(float)
    return frame


def grouped(seed: int, n: int = 40) -> pd.DataFrame:
    """``linear`` plus a three-level category ``g`` that shifts y."""
    frame = linear(seed, n, 2)
    rng = np.random.default_rng(seed + 1)
    frame["g"] = rng.choice(["a", "b", "c"], n)
    frame["y"] += (frame["g"] == "b").to_numpy(float)
    return frame


def panel(seed: int, n_units: int = 600) -> pd.DataFrame:
    """``linear`` rows grouped into units of 1 to 6 rows (string labels in column ``u``),
    with a unit effect in y: the privacy-unit entry points' data."""
    rng = np.random.default_rng(seed + 2)
    sizes = rng.integers(1, 7, n_units)
    frame = linear(seed, int(sizes.sum()), 2)
    labels = np.repeat([f"p{u:02d}" for u in range(n_units)], sizes)
    frame["y"] += np.repeat(rng.standard_normal(n_units), sizes)
    frame[UNIT] = labels[rng.permutation(labels.size)]  # rows of a unit not adjacent
    return frame


def binary_panel(seed: int, n_units: int = 300) -> pd.DataFrame:
    """:func:`panel` with a 0/1 response (its sign): the unit-level logistic entry points."""
    frame = panel(seed, n_units)
    frame["y"] = (frame["y"] > 0).astype(float)
    return frame


def count_panel(seed: int, n_units: int = 300) -> pd.DataFrame:
    """:func:`panel` with a count response: the unit-level Poisson entry points."""
    frame = panel(seed, n_units)
    rng = np.random.default_rng(seed + 3)
    frame["t"] = rng.uniform(0.5, 2.0, len(frame))
    frame["y"] = rng.poisson(frame["t"] * np.exp(0.3 * frame["x0"] - 0.2 * frame["x1"]))
    frame["y"] = frame["y"].astype(float)
    return frame


def _extreme_rows(template: pd.DataFrame, count: int, value: float, signs, unit: str):
    numeric = [c for c in template.columns if pd.api.types.is_numeric_dtype(template[c])]
    rows = template.iloc[[0] * count].copy()
    for j, c in enumerate(numeric):
        rows[c] = (signs or (1,))[j % len(signs or (1,))] * value
    rows[UNIT] = unit
    return rows


# -- neighbours ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Neighbour:
    """A change of one record; ``apply(frame)`` returns D' (a new frame)."""

    kind: str
    row: int = -1  # the record (negative counts from the end)
    column: str | None = None  # extreme-cell / nonfinite: the column
    value: float = 0.0
    signs: tuple[int, ...] = ()  # extreme-row: sign per numeric column (cycled)

    def apply(self, frame: pd.DataFrame) -> pd.DataFrame:
        out = frame.copy()
        numeric = [c for c in out.columns if pd.api.types.is_numeric_dtype(out[c])]
        i = self.row % len(out)
        if self.kind in ("extreme-cell", "nonfinite"):
            out.loc[out.index[i], self.column or numeric[0]] = self.value
        elif self.kind == "extreme-row":
            signs = self.signs or (1,)
            for j, c in enumerate(numeric):
                out.loc[out.index[i], c] = signs[j % len(signs)] * self.value
        elif self.kind == "zero-row":
            out.loc[out.index[i], numeric] = 0.0
        elif self.kind == "new-level":
            out.loc[out.index[i], "g"] = NEW_LEVEL
        elif self.kind == "add":
            row = out.iloc[[i]].copy()
            signs = self.signs or (1,)
            for j, c in enumerate(numeric):
                row[c] = signs[j % len(signs)] * self.value
            out = pd.concat([out, row], ignore_index=True)
        elif self.kind == "remove":
            out = out.drop(index=out.index[i]).reset_index(drop=True)
        elif self.kind.startswith("unit-"):
            out = self._unit(out, out[UNIT].iloc[i], numeric)
        else:
            raise ValueError(f"unknown neighbour kind {self.kind!r}")
        return out

    def _unit(self, out: pd.DataFrame, unit: str, numeric: list[str]) -> pd.DataFrame:
        """The unit-level kinds: all rows of the unit of record ``row`` change."""
        mine = out[UNIT] == unit
        if self.kind == "unit-extreme":
            for j, c in enumerate(numeric):
                out.loc[mine, c] = (self.signs or (1,))[j % len(self.signs or (1,))] * self.value
            return out
        if self.kind == "unit-remove":
            return out[~mine].reset_index(drop=True)
        label = NEW_UNIT if self.kind == "unit-add" else unit
        rows = _extreme_rows(out, UNIT_ROWS, self.value, self.signs, label)
        kept = out if self.kind == "unit-add" else out[~mine]
        return pd.concat([kept, rows], ignore_index=True)

    def __str__(self) -> str:
        parts = [self.kind, f"row {self.row}"]
        if self.column:
            parts.append(f"column {self.column}")
        if self.kind in ("extreme-cell", "extreme-row", "nonfinite", "add", *_UNIT_VALUED):
            parts.append(f"value {self.value!r}")
        if self.signs:
            parts.append(f"signs {self.signs}")
        return ", ".join(parts)


_UNIT_VALUED = ("unit-extreme", "unit-over-cap", "unit-add")


def worst_cases(kinds: tuple[str, ...], columns: list[str]) -> list[Neighbour]:
    """A fixed list of neighbours per kind: the largest floats, alternating signs, the first
    and last records, and every column for single-value changes."""
    cases: list[Neighbour] = []
    for kind in kinds:
        if kind == "extreme-cell":  # the first feature, instrument and the response
            firsts = [next((c for c in columns if c.startswith(p)), None) for p in "xzy"]
            cases += [Neighbour(kind, -1, c, 1.7e308) for c in firsts if c is not None]
            cases.append(Neighbour(kind, 0, columns[-1], -1e154))
        elif kind == "extreme-row":
            cases += [
                Neighbour(kind, -1, value=1.7e308),
                Neighbour(kind, 0, value=1e308, signs=(1, -1)),
            ]
        elif kind == "zero-row":
            cases.append(Neighbour(kind, 0))
        elif kind == "nonfinite":
            cases += [Neighbour(kind, -1, columns[0], np.nan), Neighbour(kind, 0, "y", np.inf)]
        elif kind == "new-level":
            cases.append(Neighbour(kind, -1))
        elif kind == "add":
            cases += [Neighbour(kind, 0, value=1.7e308), Neighbour(kind, 0, value=0.0)]
        elif kind in ("remove", "unit-remove"):
            cases.append(Neighbour(kind, 0))
        elif kind in _UNIT_VALUED:
            cases += [
                Neighbour(kind, -1, value=1.7e308),
                Neighbour(kind, 0, value=1e154, signs=(1, -1)),
                Neighbour(kind, 1, value=0.0),
            ]
    return cases


@st.composite
def neighbours(draw, kinds: tuple[str, ...], columns: list[str], n: int) -> Neighbour:
    """Hypothesis strategy: any neighbour of the given kinds of a dataset with ``n`` rows."""
    kind = draw(st.sampled_from(kinds))
    row = draw(st.integers(0, n - 1))
    if kind in ("extreme-cell", "nonfinite"):
        values = EXTREMES if kind == "extreme-cell" else NONFINITE
        return Neighbour(kind, row, draw(st.sampled_from(columns)), draw(st.sampled_from(values)))
    if kind in ("extreme-row", "add", *_UNIT_VALUED):
        signs = tuple(draw(st.lists(st.sampled_from((1, -1)), min_size=1, max_size=4)))
        return Neighbour(kind, row, value=draw(st.sampled_from(EXTREMES)), signs=signs)
    return Neighbour(kind, row)
