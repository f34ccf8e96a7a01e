"""``dpfit iv DATA --formula "y ~ exog + [endog ~ instruments]" --rho ...``: private IV.

DATA is a CSV or parquet file, or a bundled dataset (``card``, ``labsup``, ``mroz``). The
fit is :func:`dpfit.iv`: by default 2SLS from privately released moments with a population
interval, or DP-2S-GD (Liang et al. 2025) with ``--method 2s-gd``. ``--bound`` gives the
public bounds of every design column and ``--y-bounds`` those of the response (the same
convention as ``dpfit fit``); they buy a private standardisation and are required unless
``--unscaled`` says the data are already scaled with public constants. As in ``dpfit fit``,
a declared share of rho (``--bounds-check``, 2%) buys a private count of the records outside
the bounds, with a warning when it is large. With ``--compare-2sls`` the non-private 2SLS fit
is printed beside it, labelled as such.
"""

from __future__ import annotations

import argparse

from ._args import (
    add_bounds_options,
    add_fit_parser,
    add_release_options,
    check_release_options,
    examples,
)
from .fit import bounds_mapping

__all__ = ["add_parser", "nonprivate_2sls_text", "run"]

EXAMPLES = examples(
    "dpfit iv card --sample liang2025 --rho 1 \\",
    "    --formula 'lwage ~ 1 + [educ ~ nearc2 + nearc4 + fatheduc + motheduc]' \\",
    "    --bound educ=0,18 --bound nearc2=0,1 --bound nearc4=0,1 \\",
    "    --bound fatheduc=0,18 --bound motheduc=0,18 --y-bounds 4.6,8 --compare-2sls",
    "dpfit iv scaled.csv --formula 'y ~ [x ~ z]' --rho 0.5 --unscaled",
)


def add_parser(sub: argparse._SubParsersAction, name: str) -> argparse.ArgumentParser:
    p = add_fit_parser(
        sub,
        name,
        help="fit a private instrumental-variable regression (private 2SLS)",
        description=(
            "Fit FORMULA ('y ~ exog + [endog ~ instruments]') on DATA under rho-zCDP (noisy-"
            "moment 2SLS by default, DP-2S-GD with --method 2s-gd) and print the summary. "
            "Bounds and hyperparameters are public: choose them without looking at the data."
        ),
        epilog=EXAMPLES,
        formula_help="e.g. 'lwage ~ exper + [educ ~ nearc4]'",
    )
    add_bounds_options(
        p,
        metavar="COLUMN=LOW,HIGH",
        bound_help="public bounds of a regressor or instrument column (repeat; all or none)",
        y_help="public bounds of the response, e.g. --y-bounds 4.6,8 (with --bound)",
    )
    p.add_argument(
        "--unscaled",
        action="store_true",
        help="no bounds: the data are already centred and scaled with public constants",
    )
    p.add_argument(
        "--method",
        default="moments",
        help="moments (default: 2SLS from private moments, population interval) or 2s-gd",
    )
    p.add_argument("--rho-split", type=float, help="2s-gd: first-stage share (0.75)")
    p.add_argument("--clip", type=float, nargs=2, metavar=("THETA", "BETA"), help="2s-gd: clips")
    p.add_argument("--steps", type=int, help="2s-gd: steps per run (default 20)")
    p.add_argument(
        "--step-size", type=float, nargs=2, metavar=("ETA", "ALPHA"), help="2s-gd: step sizes"
    )
    p.add_argument("--interval", help="2s-gd: independent-runs (default), batched-means or none")
    p.add_argument("--m", type=int, help="2s-gd: runs or batches (default 10)")
    p.add_argument("--noise-calibration", help="2s-gd: exact (default) or paper (Prop. 3.1)")
    p.add_argument(
        "--compare-2sls", action="store_true", help="also print the NON-PRIVATE 2SLS fit"
    )
    add_release_options(p)
    return p


def run(args: argparse.Namespace) -> int:
    from .._validation import check_real
    from ._args import budget_from_store, read_inputs
    from ._console import progress_wanted, release_progress

    check_release_options(args)
    if args.bound is None and args.y_bounds is None and not (args.unscaled or args.codebook):
        raise ValueError(
            "give --bound COLUMN=LOW,HIGH for every regressor and instrument and --y-bounds "
            "for the response: public bounds buy the private standardisation DP-2S-GD needs "
            "to converge; use --unscaled only for data already centred and scaled with public "
            "constants"
        )
    if args.unscaled and (args.bound is not None or args.y_bounds is not None):
        raise ValueError("--unscaled means no bounds: drop --bound and --y-bounds, or --unscaled")
    check_real(args.bounds_check, "bounds_check", low=0.0, high=1.0, low_open=False)
    bounds = bounds_mapping(args.bound, args.formula)
    budget = budget_from_store(args)
    data, codebook = read_inputs(args)

    params = _iv_parameters(args, bounds)
    _check_iv_parameters(args.rho, params)  # every public parameter, before any charge
    if args.method == "2s-gd":
        runs = (args.m or 10) if (args.interval or "independent-runs") == "independent-runs" else 1
        total = 2 * (args.steps or 20) * runs
    else:
        total = 3  # standardisation, moments, Omega
    checked = not args.unscaled and args.bounds_check > 0
    progress = release_progress(
        progress_wanted(args.progress), total=total + checked, desc="dpfit iv"
    )
    with progress:
        result = _checked_iv(args, data, params, budget, codebook)
    summary = result.summary(args.alpha, delta=args.delta)
    print(
        {"text": summary.as_text, "html": summary.as_html, "latex": summary.as_latex}[args.format]()
    )
    if args.compare_2sls:
        print()
        print(nonprivate_2sls_text(args.formula, data, list(result.names), args.alpha))
    return 0


def _checked_iv(args: argparse.Namespace, data, params: dict, budget, codebook=None):
    """:func:`dpfit.iv` with its private count of records outside the bounds
    (``models/_fit_checks.checked_iv_fit``), as ``dpfit fit`` has through :func:`dpfit.ols`."""
    from ..models import iv

    return iv(
        args.formula,
        data,
        rho=args.rho,
        budget=budget,
        random_state=args.seed,
        bounds_check=args.bounds_check,
        **params,
        **({} if codebook is None else {"codebook": codebook}),
    )


def _iv_parameters(args: argparse.Namespace, bounds: dict | None) -> dict:
    """The fit's parameters; DP-2S-GD settings only when given (the library refuses them
    with method='moments', naming them)."""
    given = {
        "rho_split": args.rho_split,
        "clip": None if args.clip is None else tuple(args.clip),
        "steps": args.steps,
        "step_size": None if args.step_size is None else tuple(args.step_size),
        "m": args.m,
        "noise_calibration": args.noise_calibration,
    }
    params = {k: v for k, v in given.items() if v is not None}
    if args.interval is not None:
        params["interval"] = None if args.interval == "none" else args.interval
    return {
        "bounds": bounds,
        "y_bounds": args.y_bounds,
        "method": args.method,
        **params,
        "secure": args.secure,
    }


def _check_iv_parameters(rho: float, params: dict) -> None:
    from ..models import DPIVRegression

    # the fit itself warns about a large rho: a flag, not warnings.catch_warnings() (which
    # changes the filters of every thread)
    DPIVRegression(rho=rho, **params)._config(warn_large_rho=False)


def nonprivate_2sls_text(formula: str, data, names: list[str], alpha: float = 0.05) -> str:
    """The non-private 2SLS fit of ``formula`` as a small table (for comparison only)."""
    import numpy as np

    from ..baselines import two_sls
    from ..models.formula import iv_matrices

    mats = iv_matrices(formula, data)
    exog = mats.exog.drop(columns=["Intercept"], errors="ignore")
    one = [np.ones((len(exog), 1))] if "Intercept" in mats.exog.columns else []
    X = np.column_stack([*one, exog, mats.endog])
    Z = np.column_stack([*one, exog, mats.instruments])
    fit = two_sls(X, mats.y.to_numpy(float), Z, cov_type="robust")
    ci = fit.conf_int(alpha)
    level = f"{100 * (1 - alpha):g}%"
    lines = [
        "NON-PRIVATE 2SLS (reads the raw data; for comparison only, not a release; "
        f"robust SEs, {level} Wald intervals):",
        f"{'term':<24} {'coef':>10} {'lower':>10} {'upper':>10}",
    ]
    for j, name in enumerate(names):
        lines.append(f"{name:<24} {fit.params[j]:>10.4f} {ci[j, 0]:>10.4f} {ci[j, 1]:>10.4f}")
    return "\n".join(lines)
