"""``dpfit.minimize``: one entry point for the private optimisers of per-example losses.

Like :func:`scipy.optimize.minimize`, it dispatches on ``method`` to an implementation in
:mod:`dpfit.algorithms` and returns that method's :class:`~dpfit.algorithms.Trajectory`
(the one result type of every algorithm).
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable
from typing import Any

from ._floats import quiet_floats
from ._validation import check_option, user_stacklevel
from .algorithms._loss_queries import clip_keyword_message
from .algorithms._loss_units import unit_options
from .algorithms.adaptive_gd import adaptive_gd
from .algorithms.kl_spider import kl_spider
from .algorithms.noisy_gd import noisy_gd
from .algorithms.proximal import proximal_point
from .algorithms.trajectory import Trajectory
from .losses.base import Loss, check_loss, split_data

__all__ = ["METHODS", "minimize"]

#: Method name -> implementation (see each function for its options).
METHODS: dict[str, Callable[..., Trajectory]] = {
    "adaptive-gd": adaptive_gd,
    "kl-spider": kl_spider,
    "proximal-point": proximal_point,
    "noisy-gd": noisy_gd,
}


@quiet_floats()
def minimize(
    loss: Loss,
    data: Any,
    *,
    rho: float,
    method: str = "adaptive-gd",
    theta0: Any = None,
    random_state: Any = None,
    budget: Any = None,
    **options: Any,
) -> Trajectory:
    """Privately minimise the empirical loss (1/n) sum_i loss(theta; x_i, y_i).

    Parameters
    ----------
    loss : Loss
        A :class:`dpfit.losses.Loss` with public constants (e.g.
        ``dpfit.losses.LogisticLoss(l2=0.01)``).
    data : array-like or tuple
        ``(X, y)`` for losses with a response, else ``X``.
    rho : float
        zCDP budget of the whole run.
    method : {"adaptive-gd", "kl-spider", "proximal-point", "noisy-gd"}, default="adaptive-gd"
        * ``"adaptive-gd"`` (Menart et al. 2024, Alg. 3): needs no KL parameters; the default
          when (gamma, kappa) are unknown (docs/menart2024.md, Departures).
        * ``"kl-spider"`` (Alg. 1): kappa in [1, 2]; needs ``gamma``, ``kappa``,
          ``loss_bound``.
        * ``"proximal-point"`` (Algs. 2 and 4): kappa >= 2, weakly convex losses.
        * ``"noisy-gd"``: fixed ``steps`` (baseline).
    theta0 : array-like, optional
        Public starting point (zeros by default).
    random_state : None, int, Generator or NoiseSource, optional
        The noise source, spelt as everywhere in dpfit: None for real releases (fresh OS
        entropy), an int or Generator for reproducible runs. (``rng=`` is deprecated.)
    budget : Budget, optional
        A shared budget: every release of the run is charged to it, and a budget that
        cannot afford ``rho`` raises before anything is drawn. Give ``budget`` or a
        ``ledger`` option, not both.
    **options
        Keyword options of the chosen method (``relation``, ``ledger``, ``clipping``, ``gamma``,
        ``kappa``, ``loss_bound``, ``steps``, ...). A privacy unit (``"adaptive-gd"`` and
        ``"noisy-gd"``): ``groups`` (one unit label per row), ``max_rows_per_unit`` (the
        public cap K on a unit's rows) and optionally ``privacy_unit`` (the unit's name in
        the statement, e.g. ``"person_id"``). The objective is then the mean over units of
        each unit's summed loss, and every release protects all rows of one unit
        (:mod:`dpfit.algorithms._loss_units`, docs/privacy-units.md).

    Returns
    -------
    Trajectory
        ``estimate`` is the private minimiser; ``ledger`` holds every charged release.

    Raises
    ------
    TypeError
        An option the method does not accept, or a non-Loss ``loss``.
    BudgetExceededError
        ``budget`` cannot afford ``rho``; nothing was charged or drawn.

    Examples
    --------
    >>> import numpy as np, dpfit
    >>> from dpfit.losses import SquaredDistanceLoss
    >>> X = np.random.default_rng(0).uniform(-0.5, 0.5, size=(5000, 3))
    >>> res = dpfit.minimize(SquaredDistanceLoss(), X, rho=0.5, random_state=1)
    >>> round(res.rho, 9) <= 0.5, res.estimate.shape
    (True, (3,))
    """
    method = check_option(method, "method", METHODS)
    if "rng" in options:
        if random_state is not None:
            raise TypeError("give random_state only (rng is its deprecated spelling)")
        warnings.warn(
            "minimize(rng=...) is deprecated: use random_state=..., dpfit's one name for the "
            "noise source",
            DeprecationWarning,
            stacklevel=user_stacklevel(),
        )
        random_state = options.pop("rng")
    unit = unit_options(method, options)
    func = METHODS[method]
    if "clip" in options:
        raise TypeError(clip_keyword_message(f"minimize({method!r})", options["clip"]))
    accepted = {
        name
        for name, par in inspect.signature(func).parameters.items()
        if par.kind is inspect.Parameter.KEYWORD_ONLY
    }
    unknown = set(options) - accepted
    if unknown:
        raise TypeError(
            f"method {method!r} does not accept {sorted(unknown)}; options: {sorted(accepted)}"
        )
    if budget is not None:
        if "ledger" in options:
            raise TypeError("give budget or ledger, not both (a ledger may carry a budget)")
        from .privacy import Budget, PrivacyLedger

        if not isinstance(budget, Budget):
            raise TypeError(f"budget must be a dpfit.Budget, got {type(budget).__name__}")
        relation = options.get("relation", "replace-one")
        options["ledger"] = PrivacyLedger(relation=relation, budget=budget, unit=unit)
    X, y = split_data(check_loss(loss), data)
    return func(loss, X, y, rho=rho, theta0=theta0, rng=random_state, **options)
