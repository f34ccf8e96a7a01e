"""``dpfit reproduce --budget-store``: charge the trials that read a bundled dataset first.

Some experiments run private algorithms on dpfit's bundled real datasets (Card, and the
labsup stand-in for Angrist-Evans), which an analyst may treat as private data with one
persistent total per dataset (``dpfit budget``). Each such experiment declares, from public
parameters only, the rho one trial spends on each dataset (``Experiment.data_rho``). Before
any trial runs, this module sums that rho over the trials the run will execute (those not yet
in the trial store, so a resumed run does not pay twice for finished trials), checks that
every dataset's stored budget can afford its sum, and charges each dataset once (one
transaction of :mod:`dpfit.privacy.store` each). A dataset the store does not hold, or a sum
above what is left, is refused before anything is charged or run. A run stopped part-way keeps its
whole charge (conservative: the trials it did not finish drew nothing, but no one can prove
that to the store).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

__all__ = ["charge_reproduction", "dataset_rho"]


def dataset_rho(
    names: Sequence[str], *, scale: str, store_path: Path, version: str | None
) -> dict[str, tuple[float, int]]:
    """Dataset -> (summed rho, number of trials) over the trials of ``names`` at ``scale``
    that ``store_path`` does not hold yet for ``version`` (default: the source digest)."""
    from ..experiments import get
    from ..experiments.seeds import trial_seed
    from ..experiments.store import ResultStore, canonical_params, code_version

    version = code_version() if version is None else version
    experiments = [get(name) for name in names]
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    with ResultStore(store_path) as store:
        for exp in experiments:
            if exp.data_rho is None:
                continue
            done = store.completed(exp.name, version=version)
            for params, replicate in exp.tasks(scale):
                key = (canonical_params(params), replicate, trial_seed(exp.name, params, replicate))
                if key in done:
                    continue
                for dataset, rho in exp.data_rho(params).items():
                    totals[dataset][0] += rho
                    totals[dataset][1] += 1
    return {dataset: (rho, int(count)) for dataset, (rho, count) in totals.items()}


def charge_reproduction(
    budget_store: str, charges: dict[str, tuple[float, int]], *, label: str
) -> list[str]:
    """Charge each dataset's summed rho to ``budget_store``; returns one line per charge.

    Every dataset is opened and checked first, so a dataset missing from the store or a
    budget too small for its sum is refused before any dataset is charged.
    """
    from ..exceptions import BudgetExceededError
    from ..privacy.store import open_budget

    budgets = {dataset: open_budget(budget_store, dataset=dataset) for dataset in charges}
    for dataset, (rho, count) in charges.items():
        budget = budgets[dataset]
        if not budget.can_afford(rho):
            raise BudgetExceededError(
                f"--budget-store: the {count} trials to run spend rho = {rho:.6g} on dataset "
                f"{dataset!r}, more than the {budget.remaining:.6g} left of its total "
                f"{budget.total:.6g} in {budget_store}; nothing was charged or run (run fewer "
                "experiments or a smaller --scale)"
            )
    lines = []
    for dataset, (rho, count) in charges.items():
        budget = budgets[dataset]
        with budget.reserve(rho, mechanism=f"{label} ({count} trials)"):
            budget.spend(rho)  # the trials draw in their own processes: all of it is spent
        lines.append(
            f"charged rho = {rho:.6g} to dataset {dataset!r} in {budget_store} for {count} "
            f"trials ({budget.remaining:.6g} left)"
        )
    return lines
