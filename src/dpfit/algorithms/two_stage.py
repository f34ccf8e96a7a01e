"""Two-stage gradient descent for linear IV regression, private and not (Liang et al. 2025).

Notation (the paper's symbols, spelled out in the public API):

================  =====================  ================================================
paper             API                    meaning
================  =====================  ================================================
Z (n x q)         ``Z``                  instruments (exogenous regressors included)
X (n x p)         ``X``                  regressors; q >= p
Y (n)             ``y``                  response
Theta (q x p)     ``releases["theta"]``  first stage, x = Theta^T z + eps2
beta (p)          ``iterates``           structural parameter, y = beta^T x + eps1
eta, alpha        ``step_size_theta``,   step sizes of the two stages
                  ``step_size_beta``
gamma1, gamma2    ``clip_theta``,        per-example L2 (Frobenius) clipping thresholds
                  ``clip_beta``
lambda1, lambda2  ``noise_std_*``        noise std added to each mean clipped gradient
rho1, rho2        ``rho_theta``,         zCDP budgets of the Theta and beta releases
                  ``rho_beta``
T                 ``steps``              iterations; each updates both stages once
================  =====================  ================================================

Gradients are those of *half* the squared losses (no factor 2; the step-size rules eq. 3 and
eq. 8 assume it). Per example (Alg. 1):

* first stage  G1_i = z_i (Theta^T z_i - x_i)^T, a rank-1 q x p matrix with
  ||G1_i||_F = ||z_i|| ||Theta^T z_i - x_i||;
* second stage G2_i = w_i (w_i^T beta - y_i) with w_i = Theta^T z_i, ||G2_i|| = ||w_i|| |s_i|.

Both stages use Theta^(t) (Jacobi order, Alg. 1/2), so beta lags Theta by one step and the
first beta gradient is exactly 0 (Theta^(0) = 0). No n x q x p tensor is ever built.
"""

from __future__ import annotations

from typing import Any

from .._floats import quiet_floats
from .._validation import check_int, check_iv_data, check_option, check_positive, check_rho
from ..mechanisms import make_noise_source
from ..privacy import PrivacyLedger, Relation
from ..privacy.ledger import check_affordable, ledger_for, require_replace_one
from . import _two_stage_core as core
from ._kernels import check_iv
from .trajectory import Trajectory

__all__ = ["NOISE_CALIBRATIONS", "dp_second_stage_gd", "dp_two_stage_gd", "two_stage_gd"]

#: ``"exact"``: lambda_k = (gamma_k / n) sqrt(2T / rho_k), which spends exactly rho_k.
#: ``"paper"``: Prop. 3.1's lambda_k = (2 gamma_k / n) sqrt(T / rho_k), which spends rho_k / 2.
NOISE_CALIBRATIONS = ("exact", "paper")


@quiet_floats()
def dp_two_stage_gd(
    X: Any,
    y: Any,
    Z: Any,
    *,
    rho: float | None = None,
    rho_theta: float | None = None,
    rho_beta: float | None = None,
    clip_theta: float,
    clip_beta: float,
    steps: int,
    step_size_theta: float,
    step_size_beta: float,
    noise_calibration: str = "exact",
    runs: int = 1,
    relation: str | Relation = "replace-one",
    n_public: int | None = None,
    ledger: PrivacyLedger | None = None,
    rng: Any = None,
    warn_large_rho: bool = True,
) -> Trajectory:
    """DP two-stage gradient descent for IV regression (DP-2S-GD, Liang et al. 2025, Alg. 1).

    At each of ``steps`` iterations, the mean of the per-example first-stage gradients, each
    clipped to Frobenius norm ``clip_theta``, is released with Gaussian noise and Theta takes
    a step; then the mean of the clipped second-stage gradients at Theta^(t) is released and
    beta takes a step. Theta^(0) = 0 and beta^(0) = 0.

    Parameters
    ----------
    X : array-like or dask.array.Array of shape (n, p)
        Regressors (endogenous and exogenous). Centre and scale with public constants first:
        the gradients, hence the clipping and the noise, grow with the data scale. With Dask
        arrays for X, y and Z each iteration's two clipped sums are one distributed
        reduction (``docs/dask.md``) and ``n_public`` is required.
    y : array-like of shape (n,)
        Response.
    Z : array-like of shape (n, q)
        Instruments, q >= p; ideally standardised (eta near 1 needs lambda_max(Z^T Z / n) < 2).
    rho : float, optional
        Total zCDP budget, split in two exact halves; or give ``rho_theta`` and ``rho_beta``.
    rho_theta, rho_beta : float, optional
        zCDP budgets of the T first-stage and the T second-stage releases (rho1, rho2).
    clip_theta, clip_beta : float
        Per-example gradient norm bounds gamma1, gamma2. Public: never set from the data.
    steps : int
        Iterations T >= 1; the noise is calibrated to all of them.
    step_size_theta, step_size_beta : float
        eta and alpha (see :mod:`dpfit.theory.two_stage` for eq. 3 / eq. 8 rules).
    noise_calibration : {"exact", "paper"}, default="exact"
        ``"exact"`` spends exactly rho_theta + rho_beta. ``"paper"`` uses Prop. 3.1's lambda,
        which is sqrt(2) times larger and spends (rho_theta + rho_beta) / 2; the ledger always
        records the true spend. Use ``"paper"`` only to reproduce the paper's figures.
    runs : int, default=1
        Independent runs m >= 1 from Theta = 0, beta = 0 with fresh noise; the noise of each
        stage is calibrated to its ``runs * steps`` releases (for independent-runs intervals,
        :func:`dpfit.inference.confidence_interval`).
    relation : {"replace-one"}, default="replace-one"
        Neighbouring relation (n is public); add/remove is refused.
    n_public : int, optional
        The public number of records dividing the sums: required for Dask inputs (checked
        against their row count when it is known without computing), else it must be
        omitted or equal ``len(X)``.
    ledger : PrivacyLedger, optional
        Where the 2T releases are charged (default: a new ledger with budget
        rho_theta + rho_beta).
    rng : None, int, numpy.random.Generator or NoiseSource
        Noise source; an int or Generator gives reproducible (insecure) noise.
    warn_large_rho : bool, default=True
        Emit :class:`~dpfit.LargeBudgetWarning` when rho_theta + rho_beta is large. An
        estimator that has already checked (and warned about) its whole budget passes False.

    Returns
    -------
    Trajectory
        ``iterates`` = beta^(1..T) of each run in run order ((runs * T) x p); ``estimate`` =
        beta^(T) (the mean of the runs' final iterates when ``runs > 1``);
        ``releases["theta"]`` = Theta^(1..T) of each run ((runs * T) x q x p); ``config``
        holds the public inputs, ``runs`` and the noise stds; ``diagnostics`` (non-private):
        fraction clipped per step and stage.

    Raises
    ------
    BudgetExceededError
        The ledger's budget cannot afford the run; nothing was charged or drawn.
    ValueError
        Under-identified input (q < p), mismatched lengths, non-finite values or bad
        hyperparameters; raised before any computation on the data.

    Notes
    -----
    Privacy (Prop. 3.1 with the corrected constant; docs/liang2025.md): under replace-one
    with public n, replacing one record moves each mean clipped gradient by at most
    2 gamma_k / n in L2, so
    each release of stage k is Delta_k^2 / (2 lambda_k^2)-zCDP. The beta release at step t is
    computed at the already released Theta^(t) and beta^(t), so adaptive composition over the
    2T releases gives (2T / n^2)(gamma1^2 / lambda1^2 + gamma2^2 / lambda2^2) =
    rho_theta + rho_beta with lambda_k = (gamma_k / n) sqrt(2T / rho_k). Releasing only beta
    costs the same (post-processing). The guarantee holds for every dataset; clipping only
    affects accuracy (bias when gradients exceed the clip).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> Z = rng.normal(size=(2000, 1)); u = rng.normal(size=2000)
    >>> X = Z + (u + rng.normal(size=2000))[:, None]
    >>> y = 0.5 * X[:, 0] + u + rng.normal(size=2000)
    >>> fit = dp_two_stage_gd(X, y, Z, rho_theta=1.0, rho_beta=1.0, clip_theta=5.0,
    ...     clip_beta=5.0, steps=20, step_size_theta=1.0, step_size_beta=0.5, rng=1)
    >>> fit.iterates.shape, round(fit.rho, 12)
    ((20, 1), 2.0)
    """
    rho_theta, rho_beta = core.stage_budgets(rho, rho_theta, rho_beta)
    check_rho(rho_theta + rho_beta, "rho_theta + rho_beta", warn=warn_large_rho)
    clip_theta = check_positive(clip_theta, "clip_theta")
    clip_beta = check_positive(clip_beta, "clip_beta")
    steps = check_int(steps, "steps", low=1)
    step_size_theta = check_positive(step_size_theta, "step_size_theta")
    step_size_beta = check_positive(step_size_beta, "step_size_beta")
    calibration = check_option(noise_calibration, "noise_calibration", NOISE_CALIBRATIONS)
    runs = check_int(runs, "runs", low=1)
    X, y, Z, n = check_iv(X, y, Z, n_public=n_public)
    relation = require_replace_one(relation, core.REPLACE_ONE_ONLY)
    ledger = ledger_for(ledger, relation, rho_theta + rho_beta)
    source = make_noise_source(rng)
    common = {"n": n, "releases": runs * steps, "calibration": calibration, "ledger": ledger}
    rel_theta, std_theta, all_theta = core.gaussian_release(
        clip=clip_theta, rho=rho_theta, source=source, label="two_stage/theta-gradient",
        step_size=step_size_theta, steps=steps, name="clip_theta", **common,
    )  # fmt: skip
    rel_beta, std_beta, all_beta = core.gaussian_release(
        clip=clip_beta, rho=rho_beta, source=source, label="two_stage/beta-gradient",
        step_size=step_size_beta, steps=steps, name="clip_beta", **common,
    )  # fmt: skip
    check_affordable(ledger, all_theta.rho + all_beta.rho, name="dp_two_stage_gd")
    out = core.concatenate_runs(
        [
            core.iterate(
                X,
                y,
                Z,
                steps=steps,
                step_size_theta=step_size_theta,
                step_size_beta=step_size_beta,
                clip_theta=clip_theta,
                clip_beta=clip_beta,
                release_theta=rel_theta,
                release_beta=rel_beta,
                n=n,
            )
            for _ in range(runs)
        ],
        steps,
    )
    config = {
        "algorithm": "dp_two_stage_gd",
        "private": True,
        "runs": runs,
        "n": n,
        "p": X.shape[1],
        "q": Z.shape[1],
        "steps": steps,
        "step_size_theta": step_size_theta,
        "step_size_beta": step_size_beta,
        "clip_theta": clip_theta,
        "clip_beta": clip_beta,
        "rho_theta": rho_theta,
        "rho_beta": rho_beta,
        "noise_calibration": calibration,
        "noise_std_theta": std_theta,
        "noise_std_beta": std_beta,
        "relation": str(ledger.relation),
        "rho_spent": all_theta.rho + all_beta.rho,
    }
    return core.trajectory(out, ledger, config, source)


def two_stage_gd(
    X: Any,
    y: Any,
    Z: Any,
    *,
    steps: int,
    step_size_theta: float,
    step_size_beta: float,
    clip_theta: float | None = None,
    clip_beta: float | None = None,
) -> Trajectory:
    """Non-private two-stage gradient descent (2S-GD, Liang et al. 2025, Alg. 2).

    The same iteration as :func:`dp_two_stage_gd` without noise; with the default
    ``clip_theta = clip_beta = None`` nothing is clipped and the unique fixed point is the
    2SLS solution (Theta_hat, beta_hat) (Alg. 2, App. A): it converges to 2SLS when
    0 < eta < 2 / lambda_max(Z^T Z / n) and 0 < alpha < 2 / lambda_max(H_hat).

    Parameters
    ----------
    X, y, Z, steps, step_size_theta, step_size_beta
        As in :func:`dp_two_stage_gd`.
    clip_theta, clip_beta : float, optional
        Clip the per-example gradients anyway (the rho = inf limit of Alg. 1 with finite
        gamma); None (default) clips nothing.

    Returns
    -------
    Trajectory
        As for :func:`dp_two_stage_gd`, with an empty ledger and ``config["private"] = False``.

    Notes
    -----
    Privacy: none; every iterate is a deterministic function of the data.
    """
    clip_theta = None if clip_theta is None else check_positive(clip_theta, "clip_theta")
    clip_beta = None if clip_beta is None else check_positive(clip_beta, "clip_beta")
    steps = check_int(steps, "steps", low=1)
    step_size_theta = check_positive(step_size_theta, "step_size_theta")
    step_size_beta = check_positive(step_size_beta, "step_size_beta")
    X, y, Z = check_iv_data(X, y, Z)
    out = core.iterate(
        X,
        y,
        Z,
        steps=steps,
        step_size_theta=step_size_theta,
        step_size_beta=step_size_beta,
        clip_theta=clip_theta,
        clip_beta=clip_beta,
        release_theta=core.identity,
        release_beta=core.identity,
    )
    config = {
        "algorithm": "two_stage_gd",
        "private": False,
        "n": X.shape[0],
        "p": X.shape[1],
        "q": Z.shape[1],
        "steps": steps,
        "step_size_theta": step_size_theta,
        "step_size_beta": step_size_beta,
        "clip_theta": clip_theta,
        "clip_beta": clip_beta,
    }
    return core.trajectory(out, PrivacyLedger(), config, None)


@quiet_floats()
def dp_second_stage_gd(
    X: Any,
    y: Any,
    Z: Any,
    *,
    first_stage: Any,
    rho: float,
    clip: float,
    steps: int,
    step_size: float,
    noise_calibration: str = "exact",
    relation: str | Relation = "replace-one",
    n_public: int | None = None,
    ledger: PrivacyLedger | None = None,
    rng: Any = None,
) -> Trajectory:
    """DP second stage given a **public** first stage (DP-2S-GD-beta, Liang et al. 2025, Alg. 3).

    Parameters
    ----------
    X, y, Z, steps, noise_calibration, relation, n_public, ledger, rng
        As in :func:`dp_two_stage_gd`.
    first_stage : array-like of shape (q, p) or (steps, q, p)
        Theta, or the Theta^(t) used at steps t = 0..T-1. It must not depend on the private
        data (X, y, Z): fit it on public or independent data, or take it from a user's prior.
    rho : float
        zCDP budget of the T beta releases.
    clip, step_size : float
        gamma2 and alpha.

    Returns
    -------
    Trajectory
        ``iterates`` = beta^(1..T); ``releases["theta"]`` = the first stage used at each step.

    Notes
    -----
    Privacy: with Theta^(t) independent of the data, one record moves the mean clipped beta
    gradient by at most 2 gamma2 / n, so the T releases are rho-zCDP (Thm F.1's setting).
    **Lemma F.1 / Remark 3.9 are not valid when Theta is fit on the same private data**
    (docs/liang2025.md, Departures and choices): then every per-example beta gradient depends on
    every record and the sensitivity is 2 gamma2, not 2 gamma2 / n. Passing such a Theta voids the
    guarantee.
    """
    rho = check_positive(rho, "rho")
    check_rho(rho)
    clip = check_positive(clip, "clip")
    steps = check_int(steps, "steps", low=1)
    step_size = check_positive(step_size, "step_size")
    calibration = check_option(noise_calibration, "noise_calibration", NOISE_CALIBRATIONS)
    X, y, Z, n = check_iv(X, y, Z, n_public=n_public)
    first_stage = core.check_first_stage(first_stage, steps, Z.shape[1], X.shape[1])
    ledger = ledger_for(ledger, require_replace_one(relation, core.REPLACE_ONE_ONLY), rho)
    source = make_noise_source(rng)
    release, noise_std, entry = core.gaussian_release(
        clip=clip,
        n=n,
        rho=rho,
        calibration=calibration,
        ledger=ledger,
        source=source,
        label="two_stage/beta-gradient",
        releases=steps,
        step_size=step_size,
        steps=steps,
    )
    check_affordable(ledger, entry.rho, name="dp_second_stage_gd")
    out = core.iterate(
        X,
        y,
        Z,
        steps=steps,
        step_size_theta=1.0,
        step_size_beta=step_size,
        clip_theta=None,
        clip_beta=clip,
        release_theta=core.identity,
        release_beta=release,
        first_stage=first_stage,
        n=n,
    )
    config = {
        "algorithm": "dp_second_stage_gd",
        "private": True,
        "n": n,
        "p": X.shape[1],
        "q": Z.shape[1],
        "steps": steps,
        "step_size_beta": step_size,
        "clip_beta": clip,
        "rho_beta": rho,
        "noise_calibration": calibration,
        "noise_std_beta": noise_std,
        "relation": str(ledger.relation),
        "rho_spent": entry.rho,
        "first_stage": "public",
    }
    return core.trajectory(out, ledger, config, source)
