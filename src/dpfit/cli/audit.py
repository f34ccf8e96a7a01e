"""``dpfit audit``: audit a private algorithm of dpfit with a Dirac canary.

Prints, for each delta', the empirical lower bound on epsilon next to the claimed epsilon
(CKS conversion of the claimed rho) and the exact Gaussian epsilon, then the parametric and
null-calibration checks and the verdict.

Exit status: 0 when no violation was found, 1 when a check refuted the claim, 2 on bad input.
"""

from __future__ import annotations

import argparse

from ._args import examples

EXAMPLES = examples(
    "dpfit audit --list                          # the targets and their defaults",
    "dpfit audit dp_gd --runs 2000 --rho 0.5     # empirical epsilon lower bounds",
    "dpfit audit dp_two_stage_gd --set rho_beta=0.2 --seed 0 --progress",
)

__all__ = ["add_parser", "run"]

#: Shortcut flags -> target option names (any other option goes through --set).
_SHORTCUTS = {
    "n": int,
    "d": int,
    "rho": float,
    "clip": float,
    "steps": int,
    "step_size": float,
    "relation": str,
}


def add_parser(sub: argparse._SubParsersAction, name: str) -> argparse.ArgumentParser:
    p = sub.add_parser(
        name,
        help="empirical lower bounds on epsilon for a private algorithm (canary audit)",
        description=(
            "Run TARGET many times on two neighbouring datasets built around a canary record "
            "and print Clopper-Pearson lower bounds on epsilon at several delta next to the "
            "claimed epsilon. An audit can refute a privacy claim, never prove it. "
            "Options not given keep the target's defaults (see --list)."
        ),
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("target", nargs="?", metavar="TARGET", help="what to audit, e.g. dp_gd")
    p.add_argument("--list", action="store_true", help="list the targets and their defaults")
    p.add_argument("--runs", type=int, default=2000, help="runs per side (default 2000)")
    p.add_argument("--seed", type=int, help="seed for a reproducible audit (default: fresh)")
    p.add_argument("--secure", action="store_true", help="draw noise with the OpenDP backend")
    p.add_argument("--alpha", type=float, default=1e-3, help="false-alarm level per check")
    p.add_argument(
        "--progress",
        action="store_true",
        help="show a progress bar (default: only when standard error is a terminal)",
    )
    p.add_argument(
        "--delta",
        type=float,
        action="append",
        dest="deltas",
        metavar="DELTA",
        help="a delta' to bound epsilon at (repeatable; default 1e-5 0.01 0.05 0.1)",
    )
    for key, kind in _SHORTCUTS.items():
        p.add_argument(f"--{key.replace('_', '-')}", dest=key, type=kind, help=f"target {key}")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="any other target option, e.g. --set rho_beta=0.2 (repeatable)",
    )
    return p


def _parse_value(text: str) -> int | float | str:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _options(args: argparse.Namespace) -> dict:
    options = {k: getattr(args, k) for k in _SHORTCUTS if getattr(args, k) is not None}
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--set expects KEY=VALUE, got {item!r}")
        options[key.strip().replace("-", "_")] = _parse_value(value.strip())
    return options


def _list_targets() -> None:
    from ..audit import TARGETS

    for name in sorted(TARGETS):
        t = TARGETS[name]
        defaults = " ".join(f"{k}={v}" for k, v in t.defaults.items())
        print(f"{name} ({t.kind}): {t.description}\n    defaults: {defaults}")


def run(args: argparse.Namespace) -> int:
    from ..audit import DEFAULT_DELTAS, audit
    from ._console import progress_wanted, release_progress

    if args.list:
        _list_targets()
        return 0
    if args.target is None:
        raise ValueError("TARGET is required (see dpfit audit --list)")
    with release_progress(
        progress_wanted(args.progress), total=None, desc="dpfit audit", unit="release"
    ):
        result = audit(
            args.target,
            runs=args.runs,
            seed=args.seed,
            secure=args.secure,
            alpha=args.alpha,
            deltas=tuple(args.deltas) if args.deltas else DEFAULT_DELTAS,
            **_options(args),
        )
    config = " ".join(
        f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}" for k, v in result.config.items()
    )
    print(f"configuration: {config}")
    print(result.table())
    return 0 if result.passed else 1
