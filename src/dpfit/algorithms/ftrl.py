"""Correlated-noise private training of NumPy models: DP-FTRL / nu-DP-FTRL (Choquette-Choo et al.).

Each step sums the per-example gradients of one minibatch, each clipped to L2 norm ``clip``,
adds the step's correlated noise from a :class:`~dpfit.noise.NoiseStream` (one Gaussian release
charged once for the whole run), divides by the public batch size and hands the result to a
first-order update (SGD with optional heavy-ball momentum and any learning-rate schedule), which
is post-processing (Choquette-Choo et al. 2024, §2.2). B = I gives DP-SGD without amplification.

Batches follow a public, data-independent schedule drawn from the noise source's generator:
``schedule="fixed"`` shuffles once and cycles (a record participates at steps i, i+b, i+2b, ...:
fixed-epoch (k = epochs, b = steps per epoch)); ``schedule="reshuffle"`` reshuffles every
epoch, so
a record can appear in consecutive steps and the sensitivity uses min-separation 1.

=================  ======  ===============================================================
API name           symbol  meaning
=================  ======  ===============================================================
``batch_size``     B       examples per step (public)
``epochs``         k       passes over the data = participations per record
(steps per epoch)  b       floor(n / B); the last n - bB records of the order are skipped
``steps``          T       k x b
=================  ======  ===============================================================
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._floats import quiet_floats
from .._validation import check_int, check_positive, check_real
from .._validation import check_X_y as _check_X_y
from ..losses import Loss, per_example_gradients
from ..mechanisms import (
    check_noisy_sum_scale,
    clip_factors,
    make_noise_source,
    row_norms,
    scale_rows,
)
from ..noise import CorrelatedMechanism, correlated_noise
from ..privacy import PrivacyLedger, Relation, public_n
from ..privacy.ledger import prepare_ledger
from ._ftrl_plan import MECHANISMS, FtrlPlan, plan_ftrl
from .trajectory import Trajectory

__all__ = ["MECHANISMS", "FtrlPlan", "dp_ftrl", "linear_cooldown", "plan_ftrl", "run_ftrl_plan"]

#: Ledger label of the correlated-noise gradient release.
LABEL = "ftrl/gradients"


def linear_cooldown(
    step_size: float, steps: int, *, cooldown: int, final_factor: float = 0.05
) -> np.ndarray:
    """Constant ``step_size``, then linear decay to ``final_factor`` x over the last ``cooldown``.

    The paper's CIFAR-10 schedule is ``linear_cooldown(lr, 2000, cooldown=500)`` (Appendix G).
    """
    step_size = check_positive(step_size, "step_size")
    steps = check_int(steps, "steps", low=1)
    cooldown = check_int(cooldown, "cooldown", low=0, high=steps)
    final = check_real(final_factor, "final_factor", low=0.0, high=1.0, high_open=False)
    factors = np.ones(steps)
    if cooldown:
        factors[steps - cooldown :] = np.linspace(1.0, final, cooldown)
    return step_size * factors


@quiet_floats()
def dp_ftrl(
    X: ArrayLike,
    y: ArrayLike,
    *,
    loss: Loss,
    clip: float,
    epochs: int,
    batch_size: int,
    step_size: float | ArrayLike,
    rho: float | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    mechanism: str | CorrelatedMechanism = "nu-dpftrl",
    nu: float | None = None,
    momentum: float = 0.0,
    theta0: ArrayLike | None = None,
    schedule: str | None = None,
    participations: int | None = None,
    separation: int | None = None,
    noise_mode: str = "auto",
    relation: Relation | str = "replace-one",
    n_public: int | None = None,
    ledger: PrivacyLedger | None = None,
    rng: Any = None,
    order: str | None = None,
) -> Trajectory:
    """Train with correlated-noise DP-FTRL (nu-DP-FTRL by default) and release every iterate.

    Parameters
    ----------
    X : array-like of shape (n, d)
        Features (private). n is public under replace-one.
    y : array-like of shape (n,)
        Responses (private).
    loss : dpfit.losses.Loss
        Per-example loss with p = ``loss.n_params(d)`` parameters (e.g. a
        :class:`~dpfit.losses.FunctionLoss` for softmax regression).
    clip : float
        Per-example gradient L2 bound (public).
    epochs : int
        Passes over the data k >= 1.
    batch_size : int
        Examples per step B, 1 <= B <= n; T = epochs x floor(n / B) steps.
    step_size : float or array-like of shape (T,)
        Learning rate, constant or a schedule (e.g. :func:`linear_cooldown`).
    rho : float, optional
        zCDP budget of the whole run. Give ``rho`` or (``epsilon``, ``delta``).
    epsilon, delta : float, optional
        Target (epsilon, delta)-DP, met exactly through the Gaussian-DP curve.
    mechanism : {"nu-dpftrl", "dp-sgd", "fichtenberger", "tree"} or CorrelatedMechanism
        The noise correlation; a mechanism object must cover exactly T steps.
    nu : float, optional
        nu of nu-DP-FTRL; by default :func:`dpfit.noise.select_nu` for (T, k, b) (data-free).
    momentum : float, default=0
        Heavy-ball momentum in [0, 1): v <- momentum v + g; theta <- theta - step_size v.
    theta0 : array-like of shape (p,), optional
        Public start; zeros by default.
    schedule : {"fixed", "reshuffle"}, default="fixed"
        Shuffle once and cycle, or reshuffle every epoch (the participation pattern this
        gives, fixed-epoch or min-separation, is ``plan.pattern``).
    participations, separation : int, optional
        A declared participation pattern (k, b); it must hold for the schedule
        (``ValueError`` otherwise). Defaults: what the schedule guarantees.
    noise_mode : {"auto", "blt", "regenerate", "buffered", "fft"}, default="auto"
        How the noise is streamed (:func:`dpfit.noise.correlated_noise`). The exact modes add
        the requested mechanism's noise (cost growing with t for nu-DP-FTRL); ``"auto"``
        never does: it streams nu-DP-FTRL's replacement, the optimal BLT for (T, k, b), at the
        same rho when its error is within 2 % (``config["noise_choice"]`` says what it did).
    relation : {"replace-one"}, default="replace-one"
        Only replace-one: under add/remove an added record would shift the fixed schedule.
    n_public : int, optional
        The public number of records; if given, it must equal the number of rows (n is
        public under replace-one, :func:`dpfit.privacy.public_n`).
    ledger : PrivacyLedger, optional
        Where the release is charged; by default a new ledger with a budget of the run's rho.
    rng : None, int, numpy.random.Generator or NoiseSource, optional
        Source of the schedule's permutation and of the noise.
    order : str, optional
        Deprecated name of ``schedule`` (DeprecationWarning).

    Returns
    -------
    Trajectory
        ``iterates`` (T, p); ``estimate`` the last iterate; ``releases["noisy_gradients"]`` the
        (T, p) privatised mean gradients; ``config`` the public inputs incl. ``nu``,
        ``noise_std`` and ``sensitivity``; ``diagnostics`` the **non-private**
        ``fraction_clipped``.

    Raises
    ------
    TypeError, ValueError
        Invalid inputs, or a declared pattern the schedule violates; before any charge or draw.
    BudgetExceededError
        ``ledger`` cannot afford the run; nothing was charged or drawn.

    Notes
    -----
    Privacy: the T noisy sums are one Gaussian release C G + Z with sensitivity
    (2 clip + rounding) sens_{k,b}(C) under replace-one (Choquette-Choo et al. 2024, §2.4;
    exact for the paper's mechanisms and BLTs, the |C^T C| bound otherwise) and noise std
    sigma calibrated so that it costs exactly ``rho`` (rho = Delta^2 / (2 sigma^2)) or meets
    (epsilon, delta) exactly (mu = Delta / sigma). The schedule, nu, clip and step sizes are
    public; the update is post-processing. No amplification by sampling is claimed.

    The run is a plan, then a loop: :func:`plan_ftrl` (same parameters, with n and d for the
    data) returns the frozen :class:`FtrlPlan` -- steps, participation pattern, mechanism, nu,
    noise calibration, step sizes -- from public inputs alone, and :func:`run_ftrl_plan` runs it
    (the same run for the same seed). Inspect the plan before spending the budget.

    Examples
    --------
    >>> import numpy as np
    >>> from dpfit.losses import SquaredLoss
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-2, 2, size=(200, 3)); y = X @ np.ones(3)
    >>> traj = dp_ftrl(X, y, loss=SquaredLoss(x_bound=3.0, y_bound=6.0, radius=2.0), clip=1.0,
    ...                epochs=5, batch_size=20, step_size=0.5, epsilon=8.0, delta=1e-5, rng=1)
    >>> traj.iterates.shape, traj.config["steps"], round(traj.config["nu"], 4)
    ((50, 3), 50, 0.0631)
    """
    X, y = _check_X_y(X, y)
    plan = plan_ftrl(
        X.shape[0],
        X.shape[1],
        loss=loss,
        clip=clip,
        epochs=epochs,
        batch_size=batch_size,
        step_size=step_size,
        rho=rho,
        epsilon=epsilon,
        delta=delta,
        mechanism=mechanism,
        nu=nu,
        momentum=momentum,
        theta0=theta0,
        schedule=schedule,
        order=order,
        participations=participations,
        separation=separation,
        noise_mode=noise_mode,
        relation=relation,
    )
    public_n(X.shape[0], n_public, plan.relation)  # n is public: a given n_public must match
    return _run(plan, X, y, ledger=ledger, rng=rng)


def run_ftrl_plan(
    plan: FtrlPlan,
    X: ArrayLike,
    y: ArrayLike,
    *,
    ledger: PrivacyLedger | None = None,
    rng: Any = None,
) -> Trajectory:
    """Run a plan from :func:`plan_ftrl` on data of exactly ``plan.n`` rows and ``plan.d``
    features: the same run as :func:`dp_ftrl` with the plan's parameters and seed."""
    if not isinstance(plan, FtrlPlan):
        raise TypeError(f"plan must be an FtrlPlan, got {type(plan).__name__}")
    X, y = _check_X_y(X, y)
    if X.shape != (plan.n, plan.d):
        raise ValueError(f"the plan is for data of shape {(plan.n, plan.d)}, got {X.shape}")
    return _run(plan, X, y, ledger=ledger, rng=rng)


@quiet_floats()
def _run(plan: FtrlPlan, X: np.ndarray, y: np.ndarray, *, ledger: Any, rng: Any) -> Trajectory:
    """The loop: T clipped minibatch sums, each privatised by the correlated-noise stream."""
    n, p, batch_size, steps = plan.n, plan.p, plan.batch_size, plan.steps
    theta = plan.theta0
    per_example_gradients(plan.loss, theta, X[:1], y[:1])  # shape check before any charge
    cal = plan.calibration
    check_noisy_sum_scale(  # before the charge: no step's noisy sum can overflow
        plan.clip,
        summands=batch_size,
        noise_std=cal.noise_std,
        noise_gain=plan.mechanism.max_decoder_row_norm(),
        divisor=batch_size,
    )
    ledger = prepare_ledger(ledger, plan.relation, cal.rho, name="dp_ftrl")
    source = make_noise_source(rng)
    perms = [source.generator.permutation(n)]  # public schedule, independent of the data
    stream = correlated_noise(
        plan.mechanism,
        dim=p,
        clip=plan.clip,
        batch_size=batch_size,
        noise_std=cal.noise_std,
        ledger=ledger,
        rng=source,
        participations=plan.participations,
        separation=plan.separation,
        order=plan.pattern,
        mode=plan.noise_mode,
        label=LABEL,
    )
    iterates, noisy = np.empty((steps, p)), np.empty((steps, p))
    clipped = np.zeros(steps, dtype=np.int64)
    velocity = np.zeros(p)
    for t in range(steps):
        epoch, slot = divmod(t, plan.steps_per_epoch)
        if plan.schedule == "reshuffle" and epoch >= len(perms):
            perms.append(source.generator.permutation(n))
        idx = perms[-1][slot * batch_size : (slot + 1) * batch_size]
        G = per_example_gradients(plan.loss, theta, X[idx], y[idx])
        factors = clip_factors(row_norms(G), plan.clip)
        clipped[t] = np.count_nonzero(factors < 1.0)
        noisy[t] = stream.privatize(scale_rows(G, factors).sum(axis=0)) / batch_size
        velocity = plan.momentum * velocity + noisy[t]
        theta = theta - plan.step_sizes[t] * velocity
        iterates[t] = theta
    config = {
        "n": n,
        "clip": plan.clip,
        "epochs": plan.epochs,
        "batch_size": batch_size,
        "steps": steps,
        "steps_per_epoch": plan.steps_per_epoch,
        "mechanism": stream.mechanism.name,
        "requested_mechanism": plan.mechanism.name,
        "nu": plan.nu,
        "momentum": plan.momentum,
        "schedule": plan.schedule,
        "participations": plan.participations,
        "separation": plan.separation,
        "pattern": plan.pattern,
        "noise_mode": stream.mode,
        "noise_choice": str(stream.choice),
        "error_ratio": stream.choice.error_ratio,
        "noise_std": stream.noise_std,
        "sensitivity": stream.entry.sensitivity,
        "rho": cal.rho,
        "mu": cal.mu,
        "epsilon": cal.epsilon,
        "delta": cal.delta,
        "relation": plan.relation.value,
    }
    return Trajectory(
        algorithm="dp_ftrl",
        iterates=iterates,
        estimate=theta,
        ledger=ledger,
        config=config,
        noise_backend=source.backend,
        seeded=source.seeded,
        releases={"noisy_gradients": noisy},
        diagnostics={"fraction_clipped": float(clipped.sum() / (steps * batch_size))},
    )
