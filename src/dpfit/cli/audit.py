"""``dpfit audit``: audit a private algorithm of dpfit with a Dirac canary.

Prints, for each delta', the empirical lower bound on epsilon next to the claimed epsilon
(CKS conversion of the claimed rho) and the exact Gaussian epsilon, then the parametric and
null-calibration checks and the verdict.

Exit status: 0 when no violation was found, 1 when a check refuted the claim, 2 on bad input.
"""

from __future__ import annotations

import argparse

from ._args import add_command, examples

EXAMPLES = examples(
    "dpfit audit --list                          # the targets and their defaults",
    "dpfit audit dp_gd --runs 2000 --rho 0.5     # empirical epsilon lower bounds",
    "dpfit audit dp_two_stage_gd --set rho_beta=0.2 --seed 0 --progress",
)

__all__ = ["add_parser", "releases_per_run", "run"]

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
    p = add_command(
        sub,
        name,
        help="empirical lower bounds on epsilon for a private algorithm (canary audit)",
        description=(
            "Run TARGET many times on two neighbouring datasets built around a canary record "
            "and print Clopper-Pearson lower bounds on epsilon at several delta next to the "
            "claimed epsilon. An audit can refute a privacy claim, never prove it. "
            "Options not given keep the target's defaults (see --list)."
        ),
        epilog=EXAMPLES,
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


def releases_per_run(target: str, options: dict) -> int:
    """The releases one run of ``target`` makes, counted on a pilot of two runs per side.

    The pilot draws its own synthetic canary data and fresh noise (an audit's data are
    synthetic, so nothing private is read) and leaves the audit's seeded streams untouched.
    A correlated-noise stream counts once, when it is charged (its rows are drawn later).
    """
    import warnings

    import numpy as np

    from ..audit.registry import get_target
    from ..mechanisms import make_noise_source
    from ..mechanisms.recorder import observing

    spec = get_target(target)
    config = spec.config(options)
    counted = [0]
    with warnings.catch_warnings(), observing(lambda entry: counted.append(entry.count)):
        warnings.simplefilter("ignore")  # the audit itself shows its warnings
        spec.run(config, 2, make_noise_source(None), np.random.default_rng())
    return sum(counted) // 4


def run(args: argparse.Namespace) -> int:
    from .._validation import check_int
    from ..audit import DEFAULT_DELTAS, audit
    from ._console import progress_wanted, release_progress

    if args.list:
        _list_targets()
        return 0
    if args.target is None:
        raise ValueError("TARGET is required (see dpfit audit --list)")
    runs = check_int(args.runs, "runs", low=2)
    options = _options(args)
    total = None
    if show := progress_wanted(args.progress):
        total = 2 * runs * releases_per_run(args.target, options) or None
    with release_progress(show, total=total, desc="dpfit audit", unit="release"):
        result = audit(
            args.target,
            runs=runs,
            seed=args.seed,
            secure=args.secure,
            alpha=args.alpha,
            deltas=tuple(args.deltas) if args.deltas else DEFAULT_DELTAS,
            **options,
        )
    config = " ".join(
        f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}" for k, v in result.config.items()
    )
    print(f"configuration: {config}")
    print(result.table())
    return 0 if result.passed else 1
