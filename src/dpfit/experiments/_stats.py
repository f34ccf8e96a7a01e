"""Monte Carlo statistics of the claims: a point statistic or a log-log slope with its s.e.

Every tolerance of a reproduction claim is derived from the Monte Carlo standard error of
the run that is judged (docs/reproducing.md, "How claims are judged"): a statistic agrees
with a prediction when it lies within ``Z`` standard errors of it, and one is larger than
another when it is larger by more than ``Z`` standard errors.

Standard errors come from a nonparametric bootstrap of the replicates **within each grid
point** (a fixed generator, so a verdict is reproducible): replicates are the independent
draws of a run, grid points are fixed by design. This covers means, medians and ratios of
means alike, and a slope's s.e. is that of the fitted line through the per-point statistics,
so misfit of the line (curvature) is *not* counted as noise. Where a grid point has a
single replicate the bootstrap cannot see its noise; the residual s.e. of the fitted line is
used instead (and flagged in ``Estimate.method``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = [
    "Estimate",
    "Z",
    "bootstrap",
    "loglog_fitted",
    "loglog_slope",
    "point",
    "series_slope",
    "statistic",
]

#: Tolerance in Monte Carlo standard errors (two-sided false-alarm rate 0.27% per check).
Z = 3.0
#: Bootstrap resamples per estimate.
DRAWS = 500

#: A statistic maps an array (..., replicates, columns) to (...), reducing the replicate axis.
Statistic = Callable[[np.ndarray], np.ndarray]

_STATISTICS: dict[str, Statistic] = {
    "mean": lambda a: a[..., 0].mean(axis=-1),
    "median": lambda a: np.median(a[..., 0], axis=-1),
    "ratio-of-means": lambda a: a[..., 0].mean(axis=-1) / a[..., 1].mean(axis=-1),
    "mean-difference": lambda a: (a[..., 0] - a[..., 1]).mean(axis=-1),
}


def statistic(name: str | Statistic) -> Statistic:
    """The statistic called ``name`` ("mean", "median", "ratio-of-means", "mean-difference")."""
    if callable(name):
        return name
    if name not in _STATISTICS:
        raise ValueError(f"statistic must be one of {sorted(_STATISTICS)}, got {name!r}")
    return _STATISTICS[name]


@dataclass(frozen=True, slots=True)
class Estimate:
    """A Monte Carlo estimate and its standard error, with the tests every claim uses."""

    value: float
    se: float
    points: int = 1
    method: str = "bootstrap"

    def agrees(self, target: float, z: float = Z) -> bool:
        """|value - target| <= z se: the run cannot tell the estimate from ``target``."""
        return bool(abs(self.value - target) <= z * self.se)

    def above(self, bound: float, z: float = Z) -> bool:
        """value - z se > bound: significantly above ``bound``."""
        return bool(self.value - z * self.se > bound)

    def below(self, bound: float, z: float = Z) -> bool:
        """value + z se < bound: significantly below ``bound``."""
        return bool(self.value + z * self.se < bound)

    def within(self, low: float, high: float, z: float = Z) -> bool:
        """[value - z se, value + z se] meets [low, high]: not significantly outside it."""
        return bool(self.value + z * self.se >= low and self.value - z * self.se <= high)

    def numbers(self, label: str) -> dict[str, float]:
        """``{label: value, label + " se": se}`` for a ClaimResult."""
        return {label: self.value, f"{label} se": self.se}


def _groups(rows: pd.DataFrame, x: str | None, columns: Sequence[str]):
    if x is None:
        return [(np.nan, rows[list(columns)].to_numpy(float))]
    return [(float(v), g[list(columns)].to_numpy(float)) for v, g in rows.groupby(x, sort=True)]


def _resample(values: np.ndarray, stat: Statistic, rng: np.random.Generator) -> np.ndarray:
    k = len(values)
    return stat(values[rng.integers(0, k, size=(DRAWS, k))])


def point(
    rows: pd.DataFrame,
    columns: str | Sequence[str],
    stat: str | Statistic = "mean",
) -> Estimate:
    """``stat`` of ``columns`` over the replicates in ``rows``, with its bootstrap s.e."""
    columns = [columns] if isinstance(columns, str) else list(columns)
    fn = statistic(stat)
    values = rows[columns].to_numpy(float)
    if len(values) == 0:
        return Estimate(float("nan"), float("nan"), 0, "empty")
    value = float(fn(values))
    if len(values) < 2:
        return Estimate(value, float("nan"), 1, "single replicate")
    boot = _resample(values, fn, np.random.default_rng(0))
    return Estimate(value, float(np.std(boot, ddof=1)), 1)


def _line(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """Least-squares slopes of the rows of y (..., k) on x (k,), and the residual s.e."""
    xc = x - x.mean()
    slopes = (y - y.mean(axis=-1, keepdims=True)) @ xc / (xc @ xc)
    if y.ndim > 1 or len(x) < 3:
        return slopes, float("nan")
    resid = y - y.mean() - slopes * xc
    return slopes, float(np.sqrt(resid @ resid / (len(x) - 2) / (xc @ xc)))


def _lines(rows, x, columns, stat):
    """log x and log stat per grid point, and bootstrap log stats (None without replicates)."""
    columns = [columns] if isinstance(columns, str) else list(columns)
    fn = statistic(stat)
    groups = _groups(rows, x, columns)
    xs = np.log(np.array([v for v, _ in groups]))
    ys = np.log(np.array([float(fn(g)) for _, g in groups]))
    boot = None
    if len(groups) >= 2 and min(len(g) for _, g in groups) >= 2:
        rng = np.random.default_rng(0)
        boot = np.log(np.stack([_resample(g, fn, rng) for _, g in groups], axis=-1))
    return xs, ys, boot


def loglog_slope(
    rows: pd.DataFrame,
    x: str,
    columns: str | Sequence[str],
    stat: str | Statistic = "mean",
) -> Estimate:
    """Slope of log(``stat`` of ``columns``) on log(``x``) across grid points, with its s.e.

    The line is fitted by least squares through one point per distinct ``x`` (the paper's
    curves are lines through per-point means or medians); the s.e. is the bootstrap s.e. of
    that slope, resampling replicates within each point (see the module docstring).
    """
    xs, ys, boot = _lines(rows, x, columns, stat)
    if len(xs) < 2:
        return Estimate(float("nan"), float("nan"), len(xs), "fewer than 2 points")
    slope, resid_se = _line(xs, ys)
    if boot is None:
        return Estimate(float(slope), resid_se, len(xs), "residual (single replicates)")
    slopes, _ = _line(xs, boot)
    return Estimate(float(slope), float(np.std(slopes, ddof=1)), len(xs))


def loglog_fitted(
    rows: pd.DataFrame,
    x: str,
    columns: str | Sequence[str],
    at: Sequence[float],
    stat: str | Statistic = "mean",
) -> list[Estimate]:
    """log(``stat``) at each x in ``at`` on the line of :func:`loglog_slope`, with its s.e.

    Pooling every grid point through the fitted line estimates the curve's value at an end
    of the range far more precisely than that point's replicates alone.
    """
    xs, ys, boot = _lines(rows, x, columns, stat)
    if len(xs) < 2 or boot is None:
        return [Estimate(float("nan"), float("nan"), len(xs), "not enough replicates")] * len(at)

    def fit(y: np.ndarray, lx: float) -> np.ndarray:
        slope, _ = _line(xs, y)
        return y.mean(axis=-1) + slope * (lx - xs.mean())

    out = []
    for value in at:
        lx = float(np.log(float(value)))
        out.append(Estimate(float(fit(ys, lx)), float(np.std(fit(boot, lx), ddof=1)), len(xs)))
    return out


def bootstrap(
    rows: pd.DataFrame,
    cells: Sequence[str],
    fn: Callable[[pd.DataFrame], Sequence[float]],
    draws: int = 100,
) -> list[Estimate]:
    """Each value of ``fn(rows)`` and its bootstrap s.e., resampling replicates within cells.

    For statistics that combine many grid points (a pooled regression over several sweeps,
    a threshold crossing), where :func:`loglog_slope` does not apply. A value that some
    resample cannot compute (NaN) gets an infinite s.e.
    """
    value = np.asarray(fn(rows), dtype=float)
    groups = list(rows.groupby(list(cells), sort=False).indices.values())
    if min(len(g) for g in groups) < 2:
        return [Estimate(float(v), float("nan"), len(groups), "single replicates") for v in value]
    rng = np.random.default_rng(0)
    boot = np.array(
        [
            np.asarray(
                fn(rows.iloc[np.concatenate([g[rng.integers(0, len(g), len(g))] for g in groups])]),
                dtype=float,
            )
            for _ in range(draws)
        ]
    )
    out = []
    for k, v in enumerate(value):
        column = boot[:, k]
        se = float(np.std(column, ddof=1)) if np.isfinite(column).all() else float("inf")
        out.append(Estimate(float(v), se, len(groups)))
    return out


def series_slope(series: pd.Series) -> Estimate:
    """Log-log slope of a series (index = x) with one value per x: the residual s.e."""
    frame = pd.DataFrame({"x": series.index.to_numpy(float), "y": series.to_numpy(float)})
    return loglog_slope(frame, "x", "y")
