"""``dpfit fit DATA --family binomial|poisson ...``: the private GLM from the shell.

The same DATA, ``--formula``, ``--bound``, ``--bounds-check``, budget and output options as
the linear fit; ``--y-bounds 0,K`` is the Poisson count's public bound, ``--exposure`` and
``--offset`` name columns; ``--privacy-unit COLUMN --max-rows-per-unit K`` (and
``--n-units`` under add/remove) protect all rows of one unit, as for the linear fit
(``--time``/``--time-levels`` are the linear panel's only). Options of the linear fit only
(``--method``, ``--clip``, ``--interval``, ``--no-precondition``) are refused, before
anything is charged.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from ._args import budget_from_store, read_inputs

__all__ = ["run_glm"]

#: The linear fit's options that mean nothing for a GLM, with their defaults.
_LINEAR_ONLY = {
    "method": "gd",
    "clip": None,
    "interval": None,
    "no_precondition": False,
}


def run_glm(args: argparse.Namespace, show: Callable[[Any, argparse.Namespace], int]) -> int:
    """Fit ``args.formula`` with :func:`dpfit.glm` and print it with ``show``."""
    from .fit import _check_bounds_cover, _unit_options, bounds_mapping

    for option, default in _LINEAR_ONLY.items():
        if getattr(args, option) != default:
            flag = "--" + option.replace("_", "-")
            raise ValueError(f"{flag} applies to --family gaussian only (least squares)")
    if args.link is not None and args.family != "binomial":
        raise ValueError("--link applies to --family binomial only (logit or probit)")
    if args.exposure is not None and args.family != "poisson":
        raise ValueError("--exposure applies to --family poisson only")
    unit = _unit_options(args)  # the unit's options, or the bounds check without a unit
    if "time" in unit or "time_levels" in unit:
        raise ValueError("--time and --time-levels (TimeEffects) apply to --family gaussian only")
    bounds = bounds_mapping(args.bound, args.formula)
    if bounds is None:
        raise ValueError("--bound TERM=LOW,HIGH is required for every design column of a GLM")
    budget = budget_from_store(args)
    data, codebook = read_inputs(args)
    if codebook is None:
        _check_bounds_cover(bounds, args.formula, data)

    from ..models import glm

    params = {"steps": args.total_steps, "step_size": args.step_size, "burn_in": args.burn_in}
    result = glm(
        args.formula,
        data,
        family=args.family,
        link=args.link,
        rho=args.rho,
        budget=budget,
        bounds=bounds,
        y_bounds=args.y_bounds,
        exposure=args.exposure,
        offset=args.offset,
        random_state=args.seed,
        m=args.m,
        relation=args.relation,
        secure=args.secure,
        dry_run=args.dry_run,
        **{k: v for k, v in params.items() if v is not None},
        **({} if codebook is None else {"codebook": codebook}),
        **unit,
    )
    return show(result, args)
