"""``dpfit privacy``: convert between rho-zCDP and (epsilon, delta), and calibrate noise."""

from __future__ import annotations

import argparse
import math

from ._args import add_command, examples

EXAMPLES = examples(
    "dpfit privacy --rho 0.5                  # epsilon at delta = 1e-5 (three curves)",
    "dpfit privacy --epsilon 1 --delta 1e-6   # the largest rho that meets (1, 1e-6)",
    "dpfit privacy --rho 0.25 --sensitivity 2 # noise std for a query of sensitivity 2",
)


def add_parser(sub: argparse._SubParsersAction, name: str) -> argparse.ArgumentParser:
    p = add_command(
        sub,
        name,
        help="convert rho <-> (epsilon, delta) and print the Gaussian noise calibration",
        description=(
            "Give --rho to see the (epsilon, delta) it implies, or --epsilon to see the largest "
            "rho (and Gaussian mu) that meets it. The noise std for a query of the given L2 "
            "sensitivity is printed for each."
        ),
        epilog=EXAMPLES,
    )
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--rho", type=float, help="zCDP parameter rho > 0")
    what.add_argument("--epsilon", type=float, help="target epsilon > 0")
    p.add_argument("--delta", type=float, default=1e-5, help="delta in (0, 1) (default 1e-5)")
    p.add_argument(
        "--sensitivity", type=float, default=1.0, help="L2 sensitivity of one release (default 1)"
    )
    return p


def _rows_from_rho(rho: float, delta: float, sens: float) -> list[tuple[str, str]]:
    from .._validation import check_delta, check_rho
    from ..mechanisms.gaussian import noise_std_for_rho
    from ..privacy.conversions import gaussian_epsilon, zcdp_to_approx_dp

    rho, delta = check_rho(rho), check_delta(delta)
    mu = math.sqrt(2.0 * rho)
    return [
        ("rho (zCDP)", f"{rho:.6g}"),
        ("delta", f"{delta:.3g}"),
        ("epsilon, CKS (optimal zCDP conversion)", f"{zcdp_to_approx_dp(rho, delta):.6g}"),
        ("epsilon, Bun-Steinke bound", f"{zcdp_to_approx_dp(rho, delta, 'bun-steinke'):.6g}"),
        (
            "epsilon, exact Gaussian (one Gaussian / pure Gaussian composition)",
            f"{gaussian_epsilon(mu, delta):.6g}",
        ),
        ("mu (Gaussian DP)", f"{mu:.6g}"),
        (
            f"noise std for one release of sensitivity {sens:g}",
            f"{noise_std_for_rho(sens, rho):.6g}",
        ),
        ("noise multiplier (std / sensitivity)", f"{1.0 / mu:.6g}"),
    ]


def _rows_from_epsilon(eps: float, delta: float, sens: float) -> list[tuple[str, str]]:
    from .._validation import check_delta, check_epsilon
    from ..mechanisms.gaussian import noise_std_for_rho
    from ..privacy.conversions import approx_dp_to_zcdp, gaussian_mu

    eps, delta = check_epsilon(eps), check_delta(delta)
    rho_cks = approx_dp_to_zcdp(eps, delta)
    rho_bs = approx_dp_to_zcdp(eps, delta, method="bun-steinke")
    mu = gaussian_mu(eps, delta)
    return [
        ("target (epsilon, delta)", f"({eps:g}, {delta:.3g})"),
        ("largest rho, CKS", f"{rho_cks:.6g}"),
        ("largest rho, Bun-Steinke", f"{rho_bs:.6g}"),
        ("largest mu, exact Gaussian (pure Gaussian releases only)", f"{mu:.6g}"),
        (
            f"noise std for sensitivity {sens:g} at rho (CKS)",
            f"{noise_std_for_rho(sens, rho_cks):.6g}",
        ),
        (f"noise std for sensitivity {sens:g}, exact Gaussian", f"{sens / mu:.6g}"),
    ]


def run(args: argparse.Namespace) -> int:
    if args.rho is not None:
        rows = _rows_from_rho(args.rho, args.delta, args.sensitivity)
    else:
        rows = _rows_from_epsilon(args.epsilon, args.delta, args.sensitivity)
    width = max(len(k) for k, _ in rows)
    for key, val in rows:
        print(f"{key:<{width}}  {val}")
    return 0
