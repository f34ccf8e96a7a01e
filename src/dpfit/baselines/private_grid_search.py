"""Private grid search over a private optimiser's hyperparameters (e.g. KL parameters).

Menart et al. (2024)'s Algorithms 1 and 2 need the KL parameters (gamma, kappa), which are
rarely known; their Algorithm 3 (:func:`~dpfit.algorithms.adaptive_gd`) needs none. The
alternative it removes is the usual private tuning: run the algorithm once per candidate
on a share of the budget and pick a candidate privately (docs/menart2024.md). This module is
that baseline, with the whole search charged to one ledger:

* each of the k candidate runs gets (1 - s) rho / k (zCDP composes additively);
* the selection releases the vector of the k empirical losses, each per-example loss
  clipped to [0, ``value_bound``], through one Gaussian release costing s rho. One record
  moves each mean by at most value_bound / n (replace-one, or add/remove with the public
  n as the denominator), so the vector's L2 sensitivity is sqrt(k) value_bound / n, plus
  the float rounding allowance of the k computed means
  (:func:`dpfit.privacy.query_sensitivity`, ``"bounded-mean"``); the argmin of the noisy
  losses ("report noisy min" with Gaussian noise) is post-processing.

The total is rho-zCDP on every path, whatever the data, the candidates or the runs' own
spending (each run is budgeted by its own share).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._validation import check_real, check_rho
from ..algorithms.trajectory import Trajectory
from ..losses.base import Loss, check_loss
from ..mechanisms import (
    check_public_scale,
    gaussian,
    make_noise_source,
    noise_std_for_rho,
    release_peaks,
    rho_within,
)
from ..optimize import minimize
from ..privacy import (
    PrivacyLedger,
    Query,
    Relation,
    parse_relation,
    public_n,
    query_sensitivity,
    split,
)
from ..privacy.ledger import prepare_ledger

__all__ = ["GridSearchResult", "private_grid_search"]


@dataclass(frozen=True)
class GridSearchResult:
    """The chosen candidate's run and the search's releases."""

    #: The chosen run's estimate.
    estimate: np.ndarray
    #: Index of the chosen candidate in ``candidates``.
    chosen: int
    #: The chosen candidate's options.
    candidate: dict[str, Any]
    #: The released noisy clipped empirical losses, one per candidate.
    noisy_losses: np.ndarray
    #: Every release of the search (k runs and the selection).
    ledger: PrivacyLedger
    #: The chosen candidate's trajectory.
    trajectory: Trajectory = field(repr=False)

    @property
    def rho(self) -> float:
        """zCDP total of ``ledger``: the search's charges (plus any made before the search on
        a ledger passed in)."""
        return float(self.ledger.rho)


def _clipped_mean(loss: Loss, theta, X, y, bound: float, n: int) -> float:
    """Sum of the per-example losses clipped to [0, bound], over the public n.

    A NaN loss (e.g. inf - inf in one record's loss) counts as ``bound``, so one record can
    never make the release fail or move it by more than bound / n.
    """
    with np.errstate(all="ignore"):
        values = np.asarray(loss.per_example_values(theta, X, y), dtype=np.float64)
    values = np.nan_to_num(values, nan=bound, posinf=bound, neginf=0.0)
    return float(np.clip(values, 0.0, bound).sum() / n)


def private_grid_search(
    loss: Loss,
    X: Any,
    y: Any = None,
    *,
    rho: float,
    candidates: Sequence[Mapping[str, Any]],
    value_bound: float,
    method: str = "kl-spider",
    selection_share: float = 0.1,
    relation: Relation | str = "replace-one",
    n_public: int | None = None,
    ledger: PrivacyLedger | None = None,
    rng: Any = None,
) -> GridSearchResult:
    """Run ``method`` once per candidate and pick one privately; rho-zCDP in total.

    Parameters
    ----------
    loss : Loss
        Per-example loss with public constants.
    X, y : array-like
        Private data (``y`` omitted for losses without a response).
    rho : float
        zCDP budget of the whole search.
    candidates : sequence of mappings
        Options of :func:`~dpfit.minimize` per candidate, e.g. ``{"gamma": 1.0, "kappa":
        2.0, "loss_bound": 0.5}``; public (fixed before seeing the data).
    value_bound : float
        Public bound B_f: per-example losses are clipped to [0, B_f] for the selection
        (a loose bound only costs selection accuracy, never privacy).
    method : str, default="kl-spider"
        The :func:`~dpfit.minimize` method run for every candidate.
    selection_share : float, default=0.1
        Share s of rho spent on the selection; each run gets (1 - s) rho / k.
    relation, n_public, ledger, rng
        As in :func:`~dpfit.minimize` (``rng`` is its ``random_state``).

    Returns
    -------
    GridSearchResult
    """
    loss = check_loss(loss)
    rho = check_rho(rho)
    candidates = [dict(c) for c in candidates]
    if not candidates:
        raise ValueError("candidates must not be empty")
    value_bound = check_real(value_bound, "value_bound", low=0.0)
    share = check_real(selection_share, "selection_share", low=0.0, high=1.0)
    relation = parse_relation(relation)
    ledger = prepare_ledger(ledger, relation, rho, name="private_grid_search")
    Xa = np.asarray(X, dtype=np.float64)
    ya = None if y is None else np.asarray(y, dtype=np.float64)
    n = public_n(Xa.shape[0], n_public, relation)
    k = len(candidates)
    rho_runs, rho_select = split(rho, [1.0 - share, share])  # exact shares of rho
    check_public_scale(  # before any run charges: the selection's sums and noise stay finite
        "value_bound",
        value_bound,
        lambda b: release_peaks(
            Query.BOUNDED_MEAN, bound=b, n=n, rho=rho_select, relation=relation, columns=k
        ),
        what=f"the {k} clipped mean losses of n = {n} records and their noise",
    )
    source = make_noise_source(rng)
    rho_run = split(rho_runs, k)[0]
    runs = []
    for options in candidates:
        data = Xa if ya is None else (Xa, ya)
        runs.append(
            minimize(
                loss,
                data,
                rho=rho_run,
                method=method,
                random_state=source,
                ledger=ledger,
                relation=relation,
                n_public=n_public,
                **options,
            )
        )
    clipped = [_clipped_mean(loss, t.estimate, Xa, ya, value_bound, n) for t in runs]
    sensitivity = query_sensitivity(
        Query.BOUNDED_MEAN, bound=value_bound, n=n, relation=relation, columns=k
    )
    noisy = gaussian(
        np.array(clipped),
        sensitivity=sensitivity,
        noise_std=noise_std_for_rho(sensitivity, rho_within(sensitivity, rho_select)),
        ledger=ledger,
        rng=source,
        label="grid_search/losses",
    )
    chosen = int(np.argmin(noisy))
    return GridSearchResult(
        estimate=runs[chosen].estimate,
        chosen=chosen,
        candidate=candidates[chosen],
        noisy_losses=noisy,
        ledger=ledger,
        trajectory=runs[chosen],
    )
