"""The plan of a DP-FTRL run: everything fixed before a record is read.

:func:`plan_ftrl` turns the public inputs of :func:`dpfit.algorithms.dp_ftrl` (n, d, loss, clip,
epochs, batch size, step sizes, mechanism, budget) into a frozen :class:`FtrlPlan`: the number
of steps T = k x b, the participation pattern (k, b) the batch schedule guarantees, the
correlated-noise mechanism (with nu chosen from public (T, k, b) for nu-DP-FTRL), the noise
calibration of the one Gaussian release (Choquette-Choo et al. 2024, §2.4) and the step sizes.
None of it depends on the records, so a user can inspect it before spending the budget;
``dp_ftrl`` builds the same plan and then only runs its loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._arrays import readonly
from .._deprecation import renamed_keyword, warn_renamed
from .._validation import (
    check_delta,
    check_int,
    check_option,
    check_positive,
    check_real,
    check_vector,
)
from ..losses import Loss, check_loss
from ..noise import (
    CorrelatedMechanism,
    calibrate,
    dpsgd,
    fichtenberger,
    nu_dpftrl,
    select_nu,
    tree_aggregation,
)
from ..noise.calibration import Calibration
from ..noise.streams import MODES
from ..privacy import Relation, parse_relation

__all__ = ["MECHANISMS", "SCHEDULES", "FtrlPlan", "plan_ftrl"]

#: Mechanisms selectable by name (or pass a :class:`~dpfit.noise.CorrelatedMechanism`).
MECHANISMS = ("nu-dpftrl", "dp-sgd", "fichtenberger", "tree")

#: Batch schedules: shuffle once and cycle, or reshuffle every epoch. (The participation
#: pattern they give is :data:`dpfit.noise.sensitivity.ORDERS`: fixed-epoch or min-separation.)
SCHEDULES = ("fixed", "reshuffle")


@dataclass(frozen=True, kw_only=True)
class FtrlPlan:
    """The public, data-independent part of one DP-FTRL run (from :func:`plan_ftrl`).

    Attributes
    ----------
    n, d, p : int
        Records, features, parameters (``loss.n_params(d)``).
    loss : Loss
        The per-example loss.
    clip : float
        Per-example gradient L2 bound.
    epochs, batch_size, steps, steps_per_epoch : int
        k, B, T = k x b and b = floor(n / B).
    step_sizes : ndarray of shape (T,)
        The learning rate of every step (read-only).
    momentum : float
        Heavy-ball momentum.
    theta0 : ndarray of shape (p,)
        The public start (read-only).
    schedule, noise_mode : str
        The batch schedule and how the noise is streamed.
    participations, separation, pattern :
        The pattern (k, b) the sensitivity uses and its name (fixed-epoch or min-separation).
    mechanism : CorrelatedMechanism
        The requested noise correlation; ``nu`` its nu (None unless nu-DP-FTRL by name).
    calibration : Calibration
        noise std and the cost (rho, or mu and (epsilon, delta)) of the one Gaussian release.
    relation : Relation
        Replace-one.
    """

    n: int
    d: int
    p: int
    loss: Loss
    clip: float
    epochs: int
    batch_size: int
    steps: int
    steps_per_epoch: int
    step_sizes: np.ndarray
    momentum: float
    theta0: np.ndarray
    schedule: str
    noise_mode: str
    participations: int
    separation: int
    pattern: str
    mechanism: CorrelatedMechanism
    nu: float | None
    calibration: Calibration
    relation: Relation

    @property
    def rho(self) -> float:
        """The zCDP cost charged to the ledger."""
        return self.calibration.rho

    @property
    def order(self) -> str:
        """Deprecated name of :attr:`schedule`."""
        warn_renamed("FtrlPlan.order", "FtrlPlan.schedule")
        return self.schedule


def plan_ftrl(
    n: int,
    d: int,
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
    order: str | None = None,
) -> FtrlPlan:
    """The plan :func:`dpfit.algorithms.dp_ftrl` would run on n records of d features, from
    public inputs only (same parameters and errors); nothing is charged or drawn. ``order``
    is the deprecated name of ``schedule``.

    Examples
    --------
    >>> from dpfit.losses import SquaredLoss
    >>> plan = plan_ftrl(200, 3, loss=SquaredLoss(x_bound=3.0, y_bound=6.0, radius=2.0),
    ...                  clip=1.0, epochs=5, batch_size=20, step_size=0.5, epsilon=8.0,
    ...                  delta=1e-5)
    >>> plan.steps, plan.participations, plan.separation, round(plan.nu, 4)
    (50, 5, 10, 0.0631)
    """
    n = check_int(n, "n", low=1)
    d = check_int(d, "d", low=1)
    loss = check_loss(loss)
    relation = parse_relation(relation)
    if relation is not Relation.REPLACE_ONE:
        raise ValueError(
            "dp_ftrl supports relation='replace-one' only: under add/remove an added record "
            "would shift every later batch of the fixed schedule"
        )
    clip = check_positive(clip, "clip")
    epochs = check_int(epochs, "epochs", low=1)
    batch_size = check_int(batch_size, "batch_size", low=1, high=n)
    schedule = renamed_keyword(schedule, order, new="schedule", old="order")
    schedule = check_option("fixed" if schedule is None else schedule, "schedule", SCHEDULES)
    momentum = check_real(momentum, "momentum", low=0.0, high=1.0, low_open=False)
    noise_mode = check_option(noise_mode, "noise_mode", MODES)
    per_epoch = n // batch_size
    steps = epochs * per_epoch
    sizes = _step_sizes(step_size, steps)
    k, b, pattern = _participation(schedule, epochs, per_epoch, participations, separation)
    mech, nu = _mechanism(mechanism, nu, steps, k, b, pattern)
    p = loss.n_params(d)
    theta = np.zeros(p) if theta0 is None else check_vector(theta0, "theta0", size=p)
    if delta is not None:
        check_delta(delta, n=n)  # warns when delta > 1/n
    cal = calibrate(
        mech,
        clip=clip,
        batch_size=batch_size,
        rho=rho,
        epsilon=epsilon,
        delta=delta,
        participations=k,
        separation=b,
        order=pattern,
        relation=relation,
    )
    return FtrlPlan(
        n=n,
        d=d,
        p=p,
        loss=loss,
        clip=clip,
        epochs=epochs,
        batch_size=batch_size,
        steps=steps,
        steps_per_epoch=per_epoch,
        step_sizes=readonly(sizes),
        momentum=momentum,
        theta0=readonly(theta),
        schedule=schedule,
        noise_mode=noise_mode,
        participations=k,
        separation=b,
        pattern=pattern,
        mechanism=mech,
        nu=nu,
        calibration=cal,
        relation=relation,
    )


def _participation(
    schedule: str, epochs: int, per_epoch: int, participations: Any, separation: Any
) -> tuple[int, int, str]:
    """The pattern the schedule guarantees, checked against the declared one."""
    actual_sep = per_epoch if schedule == "fixed" else 1
    k = epochs if participations is None else check_int(participations, "participations", low=1)
    b = actual_sep if separation is None else check_int(separation, "separation", low=1)
    if k < epochs:
        raise ValueError(
            f"participations={k} is below the {epochs} steps every record joins ({epochs} epochs)"
        )
    if b > actual_sep:
        why = (
            "batches are reshuffled every epoch, so a record can join consecutive steps"
            if schedule == "reshuffle"
            else f"a record joins every {per_epoch} steps"
        )
        raise ValueError(f"separation={b} violates the schedule's min-separation: {why}")
    fixed_epoch = schedule == "fixed" and b == per_epoch and k == epochs
    return k, b, "fixed-epoch" if fixed_epoch else "min-separation"


def _mechanism(mechanism: Any, nu: Any, steps: int, k: int, b: int, pattern: str):
    if isinstance(mechanism, CorrelatedMechanism):
        if mechanism.steps != steps:
            raise ValueError(f"mechanism covers {mechanism.steps} steps, the run has {steps}")
        if nu is not None:
            raise TypeError("nu applies only to mechanism='nu-dpftrl'")
        return mechanism, None
    name = check_option(mechanism, "mechanism", MECHANISMS)
    if name != "nu-dpftrl":
        if nu is not None:
            raise TypeError("nu applies only to mechanism='nu-dpftrl'")
        factory = {"dp-sgd": dpsgd, "fichtenberger": fichtenberger, "tree": tree_aggregation}
        return factory[name](steps), None
    if nu is None:
        nu = select_nu(steps, participations=k, separation=b, order=pattern).nu
    nu = check_real(nu, "nu", low=0.0, high=1.0, low_open=False, high_open=False)
    return nu_dpftrl(nu, steps=steps), nu


def _step_sizes(step_size: Any, steps: int) -> np.ndarray:
    if np.ndim(step_size) == 0:
        return np.full(steps, check_positive(step_size, "step_size"))
    sizes = check_vector(step_size, "step_size", size=steps)
    if not (sizes > 0).all():
        raise ValueError("step_size must be > 0 at every step")
    return sizes
