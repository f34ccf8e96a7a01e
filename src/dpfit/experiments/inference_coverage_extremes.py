"""The smallest and largest n of the linear coverage grid (docs/inference.md): n = 300 and n = 2e5.

The same trial, designs and table as :mod:`dpfit.experiments.inference_coverage` (fresh data
per replicate, the default :class:`~dpfit.DPLinearRegression` / :func:`dpfit.ols` with public
bounds), at rho = 0.5 and the two ends of the n grid, which the ``inference-coverage`` study
runs only at its paper scale (400 replicates of n = 2e5 take hours on two cores). n = 300 is
outside the valid regime (the library should warn in most fits); n = 2e5 is where the width
target (1.3 x the non-private robust interval) applies. Run it with ``dpfit reproduce
inference-coverage-extremes --out DIR`` (docs/inference.md). ``inference-coverage-rho-ends``
runs the same two n at the other two rho of the grid, 0.05 and 5, so that with the quick
scale of ``inference-coverage`` every (n, rho) cell of the grid is measured
(docs/inference.md, "The ends of the n grid").
"""

from __future__ import annotations

from .inference_coverage import DESIGNS, _grid, coverage_experiment

__all__ = ["EXPERIMENT", "RHO_ENDS"]


EXPERIMENT = coverage_experiment(
    "inference-coverage-extremes",
    figure="coverage table, n = 300 and 2e5 rows (docs/inference.md)",
    description=(
        "The inference-coverage trial at rho = 0.5 and n = 300 (outside the valid "
        "regime: the library should warn) and n = 2e5 (the large-n width target)."
    ),
    grid={
        "smoke": _grid([300], [0.5], ("isotropic",)),
        "quick": _grid([300, 200000], [0.5], DESIGNS),
        "paper": _grid([300, 200000], [0.5], DESIGNS),
    },
    claim="population-coverage-extremes",
)

RHO_ENDS = coverage_experiment(
    "inference-coverage-rho-ends",
    figure="coverage table, n = 300 and 2e5 at rho = 0.05 and 5 (docs/inference.md)",
    description=(
        "The inference-coverage trial at n = 300 and 2e5 with rho = 0.05 and 5: the "
        "cells of the (n, rho) grid that neither the quick scale of inference-coverage "
        "nor inference-coverage-extremes runs."
    ),
    grid={
        "smoke": _grid([300], [5.0], ("isotropic",)),
        "quick": _grid([300, 200000], [0.05, 5.0], DESIGNS),
        "paper": _grid([300, 200000], [0.05, 5.0], DESIGNS),
    },
    claim="population-coverage-rho-ends",
)
