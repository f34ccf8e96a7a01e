"""Sufficient-statistics perturbation (SSP): noisy X^T X and X^T y, then a (ridge) solve.

theta = solve(X^T X + W + ridge I, X^T y + w), with W a symmetric Gaussian matrix and w a
Gaussian vector, after clipping the records to public bounds (see
:mod:`dpfit.baselines._sufficient_statistics`). The classical "SSP" baseline of Wang (2018)
and Brown et al. (2024, Section 1.2), in zCDP.
"""

from __future__ import annotations

from typing import Any

from .._floats import quiet_floats
from .._validation import check_real, check_rho
from ..algorithms.trajectory import Trajectory
from ..mechanisms import gaussian
from ..privacy import PrivacyLedger, Relation
from ._sufficient_statistics import (
    check_bound,
    clip_to_bounds,
    prepare_statistics,
    release_gram,
    solve_ridge,
)

__all__ = ["ssp"]


@quiet_floats()
def ssp(
    X: Any,
    y: Any,
    *,
    rho: float,
    x_bound: float,
    y_bound: float,
    ridge: float = 0.0,
    relation: Relation | str = "replace-one",
    n_public: int | None = None,
    ledger: PrivacyLedger | None = None,
    rng: Any = None,
) -> Trajectory:
    """Private least squares by perturbing the sufficient statistics X^T X and X^T y.

    Parameters
    ----------
    X : array-like of shape (n, p)
        Design matrix (private); rows with norm above ``x_bound`` are rescaled to it.
    y : array-like of shape (n,)
        Response (private); clipped to [-y_bound, y_bound].
    rho : float
        zCDP cost, split equally between the two releases.
    x_bound, y_bound : float
        Public bounds on ||x_i|| and |y_i| (required; never derived from the data).
    ridge : float, default=0.0
        Public ridge added to the noisy X^T X before solving (>= 0).
    relation : {"replace-one", "add-remove"}, default="replace-one"
    n_public : int, optional
        The public record count reported in ``config["n"]``; required under add/remove (see
        :func:`~dpfit.baselines.adassp`).
    ledger : PrivacyLedger, optional
        Defaults to a new ledger with a budget of ``rho``.
    rng : None, int, numpy.random.Generator or NoiseSource, optional

    Returns
    -------
    Trajectory
        ``estimate`` (also the single row of ``iterates``); ``releases`` holds the noisy
        ``xtx`` and ``xty``; ``diagnostics`` the non-private fractions of clipped records.

    Notes
    -----
    Privacy: two Gaussian releases, each rho/2-zCDP, with the sensitivities of
    :mod:`dpfit.baselines._sufficient_statistics` (replace-one: sqrt(2) B_X^2 and
    2 B_X B_Y, plus their float rounding allowance). The solve is post-processing.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).standard_normal((5000, 2))
    >>> y = X @ np.array([0.5, -0.5])
    >>> fit = ssp(X, y, rho=1.0, x_bound=4.0, y_bound=3.0, rng=1)
    >>> fit.estimate.shape, round(fit.rho, 12)
    ((2,), 1.0)
    """
    rho = check_rho(rho)
    x_bound = check_bound(x_bound, "x_bound")
    y_bound = check_bound(y_bound, "y_bound")
    ridge = check_real(ridge, "ridge", low=0.0, low_open=False)
    run = prepare_statistics(
        X, y, rho=rho, x_bound=x_bound, y_bound=y_bound, relation=relation,
        n_public=n_public, ledger=ledger, rng=rng, name="ssp", releases=("xtx", "xty"),
    )  # fmt: skip
    X, relation, ledger, source, n = run.X, run.relation, run.ledger, run.source, run.n
    sens, stds = run.sens, run.stds

    Xc, yc, counts = clip_to_bounds(X, run.y, x_bound, y_bound)
    common = {"ledger": ledger, "rng": source}
    gram = release_gram(
        Xc.T @ Xc, sensitivity=sens["xtx"], noise_std=stds["xtx"], label="ssp/xtx", **common
    )
    xty = gaussian(
        Xc.T @ yc, sensitivity=sens["xty"], noise_std=stds["xty"], label="ssp/xty", **common
    )
    theta = solve_ridge(gram, xty, ridge)
    return Trajectory(
        algorithm="ssp",
        iterates=theta[None, :],
        estimate=theta,
        ledger=ledger,
        config={
            "rho": rho,
            "x_bound": x_bound,
            "y_bound": y_bound,
            "ridge": ridge,
            "relation": relation.value,
            "n": n,
            "p": X.shape[1],
            "noise_std_xtx": stds["xtx"],
            "noise_std_xty": stds["xty"],
        },
        noise_backend=source.backend,
        seeded=source.seeded,
        releases={"xtx": gram, "xty": xty},
        diagnostics=counts,
    )
