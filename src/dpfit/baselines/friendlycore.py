"""FriendlyCore-style DP-2SLS: the comparison of Liang et al. (2025, App. F.2), in pure zCDP.

Liang et al. sketch a private 2SLS built from FriendlyCore (Tsfadia, Cohen, Kaplan, Mansour
and Stemmer, ICML 2022): stack each record's sufficient statistics

    v_i = vec(z_i z_i^T, z_i x_i^T, z_i y_i)  in R^d,   d = q^2 + p q + q,

estimate their mean s = vec(Z^T Z / n, Z^T X / n, Z^T y / n) with FriendlyCore's averaging
(FC_Avg: 0.1 rho to find the "core" of records within an effective radius r of each other,
0.9 rho for a Gaussian average of the core), and apply the 2SLS formula to the noisy moments.

What is implemented here, and why it differs from the published filter
-----------------------------------------------------------------------
FriendlyCore keeps each record at random with a probability driven by how many other
records lie within r of it; its guarantee for the released core, composed with an average,
is an *approximate* one ((epsilon, delta)-DP or delta-approximate zCDP). That delta cannot
be removed: no pure rho-zCDP mechanism can locate the mean of records that may lie anywhere
(group privacy bounds the Renyi divergence between any two datasets of size n by rho n^2, so
a packing argument over far-apart locations rules out any accuracy without a range). dpfit's
ledger certifies pure rho-zCDP only, with every noise draw a Gaussian release, so the two
steps of FC_Avg are realised here with the same budget split and the same roles, but with a
public outer bound B on ||v_i|| (:func:`statistic_bound`) that removes the need for delta:

1. *Find the core* (0.1 rho). Release the coarse centre
   c = (1/n) sum_i clip_B(v_i) + N(0, sigma_1^2 I_d), with clip_B the L2 clip to norm B.
   Replace-one moves this mean by at most 2B/n (plus the float64 rounding allowance of
   :func:`dpfit.privacy.mean_sensitivity`), and sigma_1 = Delta_1 / sqrt(2 * 0.1 rho) makes
   it 0.1 rho-zCDP (Gaussian mechanism, Bun & Steinke 2016, Prop. 1.6).
2. *Average the core* (0.9 rho). With c public (released), the core is the ball of radius r
   around c; every record is moved into it by clipping, v_i -> c + clip_r(v_i - c), so no
   record's inclusion depends on another's. Release
   s = c + (1/n) sum_i clip_r(v_i - c) + N(0, sigma_2^2 I_d), sensitivity 2r/n (same
   allowance), sigma_2 = Delta_2 / sqrt(2 * 0.9 rho): 0.9 rho-zCDP given c.

Total rho = 0.1 rho + 0.9 rho by adaptive composition (Bun & Steinke 2016, Lemma 2.3). The
random keep/drop of the published filter is replaced by the clip into the core, so there is
no randomness outside the two Gaussian releases. The noise of the released moments scales
with the core radius r, as in FC_Avg's error O((r/n) sqrt(d/rho)) (Liang et al., App. F.2),
and the outer bound B enters only the coarse centre (0.1 rho), whose error matters only
when it is not small against r. It is the one-refinement form of CoinPress (Biswas et al.
2020) with FriendlyCore's budget split; it is not the published FriendlyCore filter.

3. *2SLS* (post-processing). Unstack s into Sigma_zz (symmetrised), Sigma_zx, Sigma_zy;
   floor the eigenvalues of Sigma_zz at a public ``eig_floor`` (default
   2 sigma_2 sqrt(q), about the spectral norm of the noise on Sigma_zz) so it is positive
   definite; then G = Sigma_zx^T Sigma_zz^{-1} Sigma_zx, h = Sigma_zx^T Sigma_zz^{-1} Sigma_zy
   and beta = G^{-1} h (Liang et al., App. F.2 and Lemma F.2).

Neighbouring relation: replace-one, n public (the record count divides both sums).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._floats import quiet_floats
from .._validation import check_iv_data, check_positive, check_rho
from ..algorithms.trajectory import Trajectory
from ..mechanisms import (
    check_public_scale,
    clip_rows,
    gaussian,
    make_noise_source,
    noise_std_for_rho,
    release_peaks,
    rho_within,
)
from ..privacy import PrivacyLedger, Query, Relation, mean_sensitivity, public_n, split
from ..privacy.ledger import prepare_ledger, require_replace_one

__all__ = ["FILTER_SHARE", "friendlycore_2sls", "statistic_bound", "sufficient_statistics"]

#: Share of rho spent finding the core (FC_Avg's split, Liang et al. App. F.2).
FILTER_SHARE = 0.1


def statistic_bound(z_bound: float, x_bound: float, y_bound: float) -> float:
    """Public bound on ||v_i|| from public bounds ||z_i|| <= B_z, ||x_i|| <= B_x, |y_i| <= B_y.

    ||v_i||^2 = ||z z^T||_F^2 + ||z x^T||_F^2 + ||z y||^2 = ||z||^2 (||z||^2 + ||x||^2 + y^2),
    so B = B_z sqrt(B_z^2 + B_x^2 + B_y^2). Used as ``bound``; with ``radius = bound`` the
    core step clips nothing that the outer bound did not already clip.
    """
    z_bound = check_positive(z_bound, "z_bound")
    x_bound = check_positive(x_bound, "x_bound")
    y_bound = check_positive(y_bound, "y_bound")
    return z_bound * math.sqrt(z_bound**2 + x_bound**2 + y_bound**2)


@quiet_floats()
def sufficient_statistics(X: np.ndarray, y: np.ndarray, Z: np.ndarray) -> np.ndarray:
    """Rows v_i = vec(z_i z_i^T, z_i x_i^T, z_i y_i), shape (n, q^2 + p q + q).

    Row-major vec: the first q^2 entries are z_i z_i^T, the next q p are z_i x_i^T (row j
    of the q x p block is z_ij x_i), the last q are z_i y_i. Overflowing products become
    non-finite and are zeroed by the clip (a data-independent rule of
    :func:`dpfit.mechanisms.clip_rows`).
    """
    n = Z.shape[0]
    zz = (Z[:, :, None] * Z[:, None, :]).reshape(n, -1)
    zx = (Z[:, :, None] * X[:, None, :]).reshape(n, -1)
    return np.hstack([zz, zx, Z * y[:, None]])


def _unstack(s: np.ndarray, q: int, p: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    zz = s[: q * q].reshape(q, q)
    zx = s[q * q : q * q + q * p].reshape(q, p)
    return (zz + zz.T) / 2.0, zx, s[q * q + q * p :]


def _two_sls_from_moments(
    zz: np.ndarray, zx: np.ndarray, zy: np.ndarray, eig_floor: float
) -> np.ndarray:
    """beta = G^{-1} h from floored moments (post-processing of released values only)."""
    vals, vecs = np.linalg.eigh(zz)
    inv_zz = (vecs / np.maximum(vals, eig_floor)) @ vecs.T
    G = zx.T @ inv_zz @ zx
    h = zx.T @ inv_zz @ zy
    try:
        return np.linalg.solve(G, h)
    except np.linalg.LinAlgError:
        return np.linalg.lstsq(G, h, rcond=None)[0]


@quiet_floats()
def friendlycore_2sls(
    X: Any,
    y: Any,
    Z: Any,
    *,
    rho: float,
    radius: float,
    bound: float,
    eig_floor: float | None = None,
    relation: Relation | str = "replace-one",
    n_public: int | None = None,
    ledger: PrivacyLedger | None = None,
    rng: Any = None,
) -> Trajectory:
    """Private 2SLS from FriendlyCore-style averaged moments (rho-zCDP, replace-one).

    Parameters
    ----------
    X : array-like of shape (n, p)
        Regressors (private).
    y : array-like of shape (n,)
        Response (private).
    Z : array-like of shape (n, q), q >= p
        Instruments (private).
    rho : float
        zCDP cost; 0.1 rho finds the core, 0.9 rho averages it (module docstring).
    radius : float
        Public core radius r: records' statistic vectors v_i farther than r from the
        (privately located) centre are pulled onto the sphere of radius r. Choose it from
        public knowledge of the spread of v_i, e.g. a high quantile of ||v - E v|| under a
        public design; never from the private data. The noise of the moments is
        proportional to it.
    bound : float
        Public outer bound B on ||v_i|| (see :func:`statistic_bound`); only the coarse
        centre's noise depends on it. Must be >= ``radius``.
    eig_floor : float, optional
        Public floor on the eigenvalues of the noisy Sigma_zz; default 2 sigma_2 sqrt(q).
    relation : {"replace-one"}, default="replace-one"
        Only replace-one: the record count divides both sums.
    n_public : int, optional
        The public number of records; if given, it must equal the number of rows (n is
        public under replace-one, :func:`dpfit.privacy.public_n`).
    ledger : PrivacyLedger, optional
        Replace-one ledger to charge; defaults to a new one with budget ``rho``.
    rng : None, int, numpy.random.Generator or NoiseSource, optional

    Returns
    -------
    Trajectory
        ``estimate`` = beta (p,); ``releases`` holds the noisy ``center`` and ``moments``
        (each of length q^2 + p q + q); ``diagnostics`` the non-private fractions of
        records clipped by each step.

    Notes
    -----
    Privacy and calibration: module docstring (two Gaussian releases of sensitivities
    2B/n and 2r/n, charged 0.1 rho and 0.9 rho before drawing). Everything after the
    releases, the eigenvalue floor and the 2SLS solve, is post-processing.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> Z = rng.standard_normal((4000, 2)); u = rng.standard_normal(4000)
    >>> X = (Z @ np.array([[2.0], [1.0]]))[:, 0] + u
    >>> y = 1.5 * X + u + rng.standard_normal(4000)
    >>> fit = friendlycore_2sls(X[:, None], y, Z, rho=4.0, radius=40.0, bound=400.0, rng=1)
    >>> bool(abs(fit.estimate[0] - 1.5) < 0.3), round(fit.rho, 12)
    (True, 4.0)
    """
    rho = check_rho(rho)
    radius = check_positive(radius, "radius")
    bound = check_positive(bound, "bound")
    if radius > bound:
        raise ValueError(f"radius ({radius:g}) must not exceed bound ({bound:g})")
    if eig_floor is not None:
        eig_floor = check_positive(eig_floor, "eig_floor")
    relation = require_replace_one(
        relation,
        "friendlycore_2sls supports relation='replace-one' only: the record count "
        "divides both sums",
    )
    ledger = prepare_ledger(ledger, relation, rho, name="friendlycore_2sls")
    source = make_noise_source(rng)
    X, y, Z = check_iv_data(X, y, Z)
    n, p = public_n(X.shape[0], n_public, relation), X.shape[1]
    q = Z.shape[1]

    rho_filter, rho_moments = split(rho, [FILTER_SHARE, 1.0 - FILTER_SHARE])  # exact shares
    check_public_scale(  # before any charge; radius <= bound, so the moments follow
        "bound",
        bound,
        lambda b: release_peaks(Query.MEAN, bound=b, n=n, rho=min(rho_filter, rho_moments)),
        what=f"the clipped means of n = {n} records and their noise",
    )
    sens = {"center": mean_sensitivity(bound, n), "moments": mean_sensitivity(radius, n)}
    shares = {
        "center": rho_within(sens["center"], rho_filter),
        "moments": rho_within(sens["moments"], rho_moments),
    }
    stds = {key: noise_std_for_rho(sens[key], shares[key]) for key in sens}
    floor = 2.0 * stds["moments"] * math.sqrt(q) if eig_floor is None else eig_floor

    V = sufficient_statistics(X, y, Z)
    outer = clip_rows(V, bound)
    common = {"ledger": ledger, "rng": source}
    center = gaussian(
        outer.mean(axis=0),
        sensitivity=sens["center"],
        noise_std=stds["center"],
        label="friendlycore/center",
        **common,
    )
    core = clip_rows(V - center, radius)
    moments = center + gaussian(
        core.mean(axis=0),
        sensitivity=sens["moments"],
        noise_std=stds["moments"],
        label="friendlycore/moments",
        **common,
    )
    beta = _two_sls_from_moments(*_unstack(moments, q, p), floor)
    return Trajectory(
        algorithm="friendlycore_2sls",
        iterates=beta[None, :],
        estimate=beta,
        ledger=ledger,
        config={
            "rho": rho,
            "radius": radius,
            "bound": bound,
            "eig_floor": floor,
            "filter_share": FILTER_SHARE,
            "relation": Relation.REPLACE_ONE.value,
            "n": n,
            "p": p,
            "q": q,
            "noise_std_center": stds["center"],
            "noise_std_moments": stds["moments"],
        },
        noise_backend=source.backend,
        seeded=source.seeded,
        releases={"center": center, "moments": moments},
        diagnostics={
            "fraction_outer_clipped": float(np.mean(np.any(outer != V, axis=1))),
            "fraction_core_clipped": float(np.mean(np.any(core != V - center, axis=1))),
        },
    )
