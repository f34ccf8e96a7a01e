"""AdaSSP (Wang 2018, Algorithm 2): SSP with a privately chosen ridge.

Notation: B_X = ``x_bound``, B_Y = ``y_bound``, varrho = ``failure_prob``, s_1, s_XX, s_Xy the
noise stds of the three releases. After clipping the records to the bounds:

    lmin_priv = max(0, lambda_min(X^T X) + s_1 Z_0 - shift)          (a private lower bound)
    ridge     = max(0, s_XX sqrt(p ln(2 p^2 / varrho)) - lmin_priv)
    theta     = solve(X^T X + W + ridge I, X^T y + w),   W ~ s_XX (symmetric), w ~ N(0, s_Xy^2 I)

Two calibrations share this code:

* :func:`adassp` (zCDP, private): rho split into thirds, s = Delta / sqrt(2 rho / 3) with the
  replace-one sensitivities B_X^2, sqrt(2) B_X^2 and 2 B_X B_Y (add/remove: B_X^2, B_X^2,
  B_X B_Y), each with its float rounding allowance (:mod:`._sufficient_statistics`), and
  shift = s_1 sqrt(2 ln(3 / varrho)) (a Gaussian tail bound at varrho / 3).
* :func:`adassp_paper` (**not private**): what Brown et al.'s figures compare against (Section 4;
  docs/brown2024.md, Departures): bounds read off the data (B_X = max ||x_i||, B_Y = max |y_i|) and
  Wang's (epsilon, delta) calibration, s_1 = s_XX = sqrt(L) B_X^2 / e3, s_Xy = sqrt(L) B_X B_Y / e3,
  shift = L B_X^2 / e3, with L = ln(6 / delta), e3 = epsilon / 3 and epsilon from rho by Claim A.6
  (epsilon = rho + 2 sqrt(rho ln(1 / delta))). Favourable to AdaSSP.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from .._floats import quiet_floats
from .._validation import check_delta, check_real, check_rho, check_X_y, user_stacklevel
from ..algorithms.trajectory import Trajectory
from ..exceptions import NonPrivateWarning
from ..mechanisms import NoiseSource, gaussian, make_noise_source
from ..privacy import (
    PrivacyLedger,
    Relation,
    bun_steinke_epsilon,
)
from ._sufficient_statistics import (
    check_bound,
    clip_to_bounds,
    prepare_statistics,
    release_gram,
    sensitivities,
    solve_ridge,
)

__all__ = ["adassp", "adassp_paper"]


def _check_failure_prob(value: Any) -> float:
    return check_real(value, "failure_prob", low=0.0, high=1.0)


def _adassp(
    X: np.ndarray,
    y: np.ndarray,
    *,
    x_bound: float,
    y_bound: float,
    stds: dict[str, float],
    shift: float,
    failure_prob: float,
    ledger: PrivacyLedger,
    source: NoiseSource,
    config: dict[str, Any],
    n: int,
) -> Trajectory:
    """The three releases and the ridge solve (module docstring); ``n`` is the public count."""
    p = X.shape[1]
    sens = sensitivities(x_bound, y_bound, ledger.relation, n=n, p=p)
    Xc, yc, counts = clip_to_bounds(X, y, x_bound, y_bound)
    gram = Xc.T @ Xc
    common = {"ledger": ledger, "rng": source}
    lmin = gaussian(
        np.array([np.linalg.eigvalsh(gram)[0]]),
        sensitivity=sens["lambda_min"],
        noise_std=stds["lambda_min"],
        label="adassp/lambda_min",
        **common,
    )
    lmin_priv = max(0.0, float(lmin[0]) - shift)
    ridge = max(0.0, stds["xtx"] * math.sqrt(p * math.log(2.0 * p**2 / failure_prob)) - lmin_priv)
    noisy_gram = release_gram(
        gram, sensitivity=sens["xtx"], noise_std=stds["xtx"], label="adassp/xtx", **common
    )
    xty = gaussian(
        Xc.T @ yc, sensitivity=sens["xty"], noise_std=stds["xty"], label="adassp/xty", **common
    )
    theta = solve_ridge(noisy_gram, xty, ridge)
    config = {
        **config,
        "x_bound": x_bound,
        "y_bound": y_bound,
        "failure_prob": failure_prob,
        "relation": ledger.relation.value,
        "n": n,
        "p": p,
        **{f"noise_std_{k}": v for k, v in stds.items()},
    }
    return Trajectory(
        algorithm="adassp",
        iterates=theta[None, :],
        estimate=theta,
        ledger=ledger,
        config=config,
        noise_backend=source.backend,
        seeded=source.seeded,
        releases={
            "lambda_min": lmin,
            "ridge": np.array([ridge]),
            "xtx": noisy_gram,
            "xty": xty,
        },
        diagnostics=counts,
    )


@quiet_floats()
def adassp(
    X: Any,
    y: Any,
    *,
    rho: float,
    x_bound: float,
    y_bound: float,
    failure_prob: float = 0.05,
    relation: Relation | str = "replace-one",
    n_public: int | None = None,
    ledger: PrivacyLedger | None = None,
    rng: Any = None,
) -> Trajectory:
    """Private linear regression by AdaSSP with **public** bounds, in zCDP.

    Parameters
    ----------
    X : array-like of shape (n, p)
        Design matrix (private); rows with norm above ``x_bound`` are rescaled to it.
    y : array-like of shape (n,)
        Response (private); clipped to [-y_bound, y_bound].
    rho : float
        zCDP cost of the three releases (rho / 3 each).
    x_bound, y_bound : float
        Public bounds B_X >= ||x_i|| and B_Y >= |y_i| (required; never derived from data).
    failure_prob : float, default=0.05
        varrho in (0, 1): the probability allowed for the ridge to be too small.
    relation : {"replace-one", "add-remove"}, default="replace-one"
    n_public : int, optional
        The public record count reported in ``config["n"]``: required under add/remove,
        where the actual count is private; under replace-one it must equal len(X)
        (:func:`dpfit.privacy.public_n`). The releases themselves are sums and need no n.
    ledger : PrivacyLedger, optional
        Defaults to a new ledger with a budget of ``rho``.
    rng : None, int, numpy.random.Generator or NoiseSource, optional

    Returns
    -------
    Trajectory
        ``estimate`` (the single row of ``iterates``); ``releases`` holds the noisy
        ``lambda_min``, ``xtx``, ``xty`` and the ``ridge`` computed from them.

    Notes
    -----
    Privacy: three Gaussian releases of rho / 3 each with the sensitivities in the module
    docstring; the ridge and the solve are post-processing. AdaSSP needs n = Omega(p^1.5)
    for a small error (Brown et al. 2024, Section 1.2), unlike DP-GD.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).standard_normal((5000, 2))
    >>> y = X @ np.array([0.5, -0.5])
    >>> fit = adassp(X, y, rho=1.0, x_bound=4.0, y_bound=3.0, rng=1)
    >>> fit.estimate.shape, round(fit.rho, 12)
    ((2,), 1.0)
    """
    rho = check_rho(rho)
    x_bound = check_bound(x_bound, "x_bound")
    y_bound = check_bound(y_bound, "y_bound")
    failure_prob = _check_failure_prob(failure_prob)
    run = prepare_statistics(
        X, y, rho=rho, x_bound=x_bound, y_bound=y_bound, relation=relation,
        n_public=n_public, ledger=ledger, rng=rng, name="adassp",
        releases=("xtx", "xty", "lambda_min"),
    )  # fmt: skip
    shift = run.stds["lambda_min"] * math.sqrt(2.0 * math.log(3.0 / failure_prob))
    return _adassp(
        run.X,
        run.y,
        x_bound=x_bound,
        y_bound=y_bound,
        stds=run.stds,
        shift=shift,
        failure_prob=failure_prob,
        ledger=run.ledger,
        source=run.source,
        config={"rho": rho, "calibration": "zcdp", "private": True},
        n=run.n,
    )


@quiet_floats()
def adassp_paper(
    X: Any,
    y: Any,
    *,
    rho: float,
    delta: float = 1e-6,
    failure_prob: float = 0.05,
    allow_nonprivate: bool = False,
    rng: Any = None,
) -> Trajectory:
    """AdaSSP as in Brown et al.'s figures: data-derived bounds, Wang's calibration. NOT private.

    Only for reproducing the paper (Section 4; docs/brown2024.md). The bounds B_X = max ||x_i|| and
    B_Y = max |y_i| are read off the data, so the output is **not** differentially private
    whatever the ledger says; the ledger records the zCDP the noise would give under
    replace-one if those bounds were public. epsilon comes from ``rho`` by Claim A.6.

    Parameters
    ----------
    X : array-like of shape (n, p)
    y : array-like of shape (n,)
    rho : float
        The DP-GD budget being matched; epsilon = rho + 2 sqrt(rho ln(1 / delta)).
    delta : float, default=1e-6
    failure_prob : float, default=0.05
    allow_nonprivate : bool, default=False
        Must be True: this function is opt-in because it is not private.
    rng : None, int, numpy.random.Generator or NoiseSource, optional

    Returns
    -------
    Trajectory
        As :func:`adassp`, with ``config["private"] = False``.

    Warns
    -----
    NonPrivateWarning
        Always (the bounds come from the data).
    """
    rho = check_rho(rho)
    delta = check_delta(delta)
    failure_prob = _check_failure_prob(failure_prob)
    if allow_nonprivate is not True:
        raise ValueError(
            "adassp_paper reads its bounds off the data and is not private; pass "
            "allow_nonprivate=True to run it (for reproducing Brown et al.'s figures only)"
        )
    warnings.warn(
        "adassp_paper derives its bounds from the data: the result is not private",
        NonPrivateWarning,
        stacklevel=user_stacklevel(),
    )
    source = make_noise_source(rng)
    X, y = check_X_y(X, y)
    x_bound = float(np.sqrt(np.einsum("ij,ij->i", X, X)).max()) or 1.0
    y_bound = float(np.abs(y).max()) or 1.0
    log_term = math.log(6.0 / delta)
    e3 = bun_steinke_epsilon(rho, delta) / 3.0
    scale = math.sqrt(log_term) / e3
    stds = {
        "lambda_min": scale * x_bound**2,
        "xtx": scale * x_bound**2,
        "xty": scale * x_bound * y_bound,
    }
    return _adassp(
        X,
        y,
        x_bound=x_bound,
        y_bound=y_bound,
        stds=stds,
        shift=log_term / e3 * x_bound**2,
        failure_prob=failure_prob,
        ledger=PrivacyLedger(relation=Relation.REPLACE_ONE),
        source=source,
        config={
            "rho": rho,
            "delta": delta,
            "calibration": "wang2018-data-bounds",
            "private": False,
        },
        n=X.shape[0],  # replace-one: n is public
    )
