"""``dpfit budget create|show|history|verify|migrate``: a persistent privacy budget per
dataset (SQLite).

The store (:mod:`dpfit.privacy.store`) keeps one total rho per dataset; ``dpfit fit`` and
``dpfit iv`` charge it with ``--budget-store PATH`` before any noise is drawn, from any number
of processes, and refuse a fit the remaining budget cannot afford. ``verify`` checks the
store's hash chain and running totals, and that the store is not behind its witness (a
rollback; exit status 1 and one line on a failure; ``--accept-rollback`` accepts one made on
purpose); ``migrate`` rewrites a store of the previous format version.
"""

from __future__ import annotations

import argparse
import sys

from ._args import add_command, examples

__all__ = ["add_parser", "run"]

EXAMPLES = examples(
    "dpfit budget create budget.sqlite --dataset card --rho 1",
    "dpfit fit card --formula 'lwage ~ educ' --rho 0.25 --bound educ=0,18 \\",
    "    --y-bounds 4.6,8 --budget-store budget.sqlite      # charged to dataset 'card'",
    "dpfit budget show budget.sqlite",
    "dpfit budget history budget.sqlite --dataset card",
    "dpfit budget verify budget.sqlite",
)


def add_parser(sub: argparse._SubParsersAction, name: str) -> argparse.ArgumentParser:
    p = add_command(
        sub,
        name,
        help="create, show and list a persistent per-dataset privacy budget (SQLite)",
        description=(
            "A budget store is an SQLite file holding one total rho per dataset and every "
            "charge made against it. Charges are transactions taken before any noise is "
            "drawn, so processes sharing the file can never overspend."
        ),
        epilog=EXAMPLES,
    )
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    create = _store_action(
        actions,
        "create",
        "set a dataset's total rho (creates the file if needed)",
        "dpfit budget create budget.sqlite --dataset card --rho 1",
    )
    create.add_argument("--dataset", required=True, help="the dataset's name")
    create.add_argument("--rho", type=float, required=True, help="its total zCDP budget")
    show = _store_action(
        actions,
        "show",
        "total, spent and remaining rho of each dataset",
        "dpfit budget show budget.sqlite --delta 1e-6",
    )
    show.add_argument("--dataset", help="only this dataset")
    show.add_argument("--delta", type=float, default=1e-5, help="delta for epsilon (1e-5)")
    history = _store_action(
        actions,
        "history",
        "every charge of a dataset with its releases (mechanism, count, rho)",
        "dpfit budget history budget.sqlite --dataset card",
    )
    history.add_argument("--dataset", required=True, help="the dataset's name")
    verify = _store_action(
        actions,
        "verify",
        "check the hash chain, running totals, refunds and the witness (exit 1 on a failure)",
        "dpfit budget verify budget.sqlite",
        "dpfit budget verify budget.sqlite --accept-rollback   # a backup restored on purpose",
    )
    verify.add_argument(
        "--accept-rollback",
        action="store_true",
        help="accept a consistent store that is behind its witness (an older copy restored "
        "deliberately): the witness is rewritten to it, and what was spent since that copy is "
        "given back",
    )
    _store_action(
        actions,
        "migrate",
        "rewrite a format version 1 store as version 2 (keeps PATH.v1.bak)",
        "dpfit budget migrate budget.sqlite",
    )
    return p


def _store_action(
    actions: argparse._SubParsersAction, name: str, help: str, *example_lines: str
) -> argparse.ArgumentParser:
    """A ``dpfit budget`` action's parser, with the store path every action takes first."""
    action = add_command(actions, name, help=help, epilog=examples(*example_lines))
    action.add_argument("store", metavar="PATH", help="the SQLite budget store")
    return action


def _epsilon(rho: float, delta: float) -> str:
    from ..privacy.conversions import zcdp_to_approx_dp

    return f"{zcdp_to_approx_dp(rho, delta):.4g}" if rho > 0 else "0"


def _verify(path: str, accept_rollback: bool) -> int:
    from pathlib import Path

    from ..exceptions import BudgetStoreError
    from ..privacy._store_chain import verify_hint
    from ..privacy.store import verify_store

    try:
        report = verify_store(path, accept_rollback=accept_rollback)
    except (ValueError, BudgetStoreError) as exc:
        why = " ".join(str(exc).split()).removesuffix(verify_hint(Path(path)))  # this command
        print(f"dpfit budget verify: FAILED: {why}", file=sys.stderr)
        return 1
    accepted = "; the witness now records this state (rollback accepted)" if accept_rollback else ""
    print(
        f"{path}: ok, {report.rows} charges over {report.datasets} dataset(s), hash chain head "
        f"{report.head}{accepted}"
    )
    return 0


def run(args: argparse.Namespace) -> int:
    from ..privacy._units import format_left, format_rho
    from ..privacy.store import create_budget, open_budget, stored_datasets

    if args.action == "verify":
        return _verify(args.store, args.accept_rollback)
    if args.action == "migrate":
        from ..privacy._store_migrate import migrate_store

        rows, backup = migrate_store(args.store)
        print(
            f"{args.store}: {rows} charges migrated to format version 2; the old file is {backup}"
        )
        return 0

    if args.action == "create":
        from .._validation import check_rho

        budget = create_budget(args.store, dataset=args.dataset, rho=check_rho(args.rho))
        print(f"dataset {budget.dataset!r}: total rho = {budget.total:g} in {budget.path}")
        return 0
    if args.action == "show":
        from .._validation import check_delta

        delta = check_delta(args.delta)
        datasets = stored_datasets(args.store)
        if args.dataset is not None:
            open_budget(args.store, dataset=args.dataset)  # refuses an unknown dataset
            datasets = {args.dataset: datasets[args.dataset]}
        print(f"{'dataset':<20} {'total rho':>10} {'spent':>10} {'remaining':>10}  epsilon spent")
        for name, (total, spent) in datasets.items():
            left = max(0.0, total - spent)
            print(
                f"{name:<20} {format_rho(total, 4):>10} {format_rho(spent, 4):>10} "
                f"{format_left(left, total, 4):>10}  {_epsilon(spent, delta)} at delta = "
                f"{delta:g} (CKS)"
            )
        return 0
    budget = open_budget(args.store, dataset=args.dataset)
    print(f"charges of dataset {budget.dataset!r} (total rho = {budget.total:g}):")
    for charge in budget.history():
        rho = ("-" if charge.rho < 0 else "+") + format_rho(abs(charge.rho), 4)
        print(f"#{charge.id:<4} {charge.created}  rho {rho:>10}  {charge.mechanism}")
        for mechanism, count, rho in charge.releases:
            print(f"{'':6}release {mechanism} x {count}: rho {rho:.4g}")
    left = format_left(budget.remaining, budget.total)
    print(f"spent {format_rho(budget.spent)}, remaining {left}")
    return 0
