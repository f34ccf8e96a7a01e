"""Brown et al. (2024), "Private gradient descent for linear regression": Figures 1-11.

Settings follow the paper's Section 4 and, where it is silent, dpfit's choices (listed in
docs/brown2024.md, "Reproducing Figures 1-11"): eta = 0.2; n = 1000 for Figs. 4/7 and n = 10,000 for
the interval figures; rho = 0.1 for Fig. 2; clip = 5 sqrt(p); xi ~ N(0, 1); noise calibrated to
every noisy step of a procedure; the experimental interval estimates (Section 3.1) with burn-in 20
and m = 10 (and the formal ones of Thm 3.1); alpha = 0.05; a fixed dataset per interval figure and
100 algorithm runs; error bars at the 2.5/97.5 percentiles across coordinates; errors against theta*
in Figs. 1/9; AdaSSP as the paper ran it, with data-derived bounds (not private) and also with
public bounds. Figures 5 and 6 (10 and 11) come from the same runs and are one experiment each.
Trials: :mod:`._brown2024_trials`; claims: :mod:`._brown2024_claims` and
:mod:`._brown2024_clipping`.
"""

from __future__ import annotations

import functools
import math

from . import _brown2024_claims as claims
from . import _brown2024_clipping as clipping
from . import _brown2024_plots as plots
from . import _brown2024_trials as trials
from .registry import Claim, Experiment, docstring_claim, register

__all__ = ["EXPERIMENTS"]

PAPER = (
    "Brown, Dvijotham, Evans, Liu, Smith, Thakurta (2024), "
    "Private gradient descent for linear regression"
)
_PRIVACY_DEFAULT = (
    "DP-GD: rho = {rho}-zCDP per run under replace-one (n public), noise calibrated to all "
    "noisy steps; seeded noise. Errors, coverage and fraction clipped are non-private "
    "evaluation diagnostics."
)


#: What the paper says for each claim (Section 4 and App. B), shown beside ours in the report.
_PAPER_SAYS = {
    "flat-in-p": "Figs. 1/9 (n = 100 p, T = 10): both DP-GD and OLS have constant error.",
    "adassp-grows": (
        "Figs. 1/9: AdaSSP's error depends on p^(3/2)/n, so in this plot it grows as sqrt(p)."
    ),
    "rates": (
        "Fig. 2: the privacy error ||theta_T - theta_hat|| falls off with 1/n, the sampling "
        "error ||theta_hat - theta*|| with 1/sqrt(n)."
    ),
    "sampling-error-dominates": "Fig. 2: at larger sample sizes, the non-private error dominates.",
    "ratio-falls-without-crossing": (
        "Fig. 8: the sampling error dominates the noise from privacy at reasonable sample sizes."
    ),
    "boundary-sqrt-p": "Fig. 3: low clipping with gamma = Omega(sqrt(p)), as the theory predicts.",
    "low-clipping": "Fig. 3: no clipping occurs when gamma >~ sqrt(p).",
    "u-shape": (
        "Figs. 4/7: low thresholds cause high clipping and bias, high thresholds little "
        "clipping but high variance."
    ),
    "bias-left-variance-right": "Fig. 4: the lowest error may occur under significant clipping.",
    "tolerates-clipping": (
        "Fig. 7: substantial clipping (about 50%) is tolerable, more so with more iterations."
    ),
    "coverage": "Figs. 5/10: all three constructions produce valid confidence intervals.",
    "short-batches-undercover": (
        "Figs. 5/10: running longer induces autocorrelation, so batched means needs a larger "
        "batch size to be valid."
    ),
    "widths": (
        "Figs. 6/11: multiple runs give wider intervals with few iterations; checkpoints have a "
        "poor dependence on the number of iterations."
    ),
    "widths-match-theory": "Figs. 6/11 with Section 3.2: the interval widths the theory predicts.",
}


def _claim(name: str, evaluate, **options) -> Claim:
    """A claim whose statement is the first paragraph of its evaluator's docstring."""
    return docstring_claim(name, evaluate, paper=_PAPER_SAYS.get(name, ""), **options)


def _grid(base: dict, key: str, values, extra: dict | None = None) -> list[dict]:
    return [{**base, key: v, **(extra or {})} for v in values]


def _dimension(name: str, figure: str, design: str) -> Experiment:
    base = {"design": design, "n_per_p": 100, "rho": 0.05, "steps": 10, "clip_mult": 5.0}
    return Experiment(
        name=name,
        paper=PAPER,
        figure=figure,
        description=(
            f"Error against theta* vs p at n = 100 p ({design} design): DP-GD (final iterate of "
            "T = 10 steps, eta = 0.2, clip = 5 sqrt(p), rho = 0.05), OLS, and AdaSSP matched at "
            "(epsilon, delta) = (1.712, 1e-6) with data-derived bounds as in the paper "
            "(non-private) and with public bounds."
        ),
        grid={
            "smoke": _grid(base, "p", [5, 10]),
            "quick": _grid(base, "p", [10, 20, 50, 100, 200]),
            "paper": _grid(base, "p", [10, 20, 50, 100, 200, 500]),
        },
        replicates={"smoke": 2, "quick": 30, "paper": 50},
        trial=trials.error_vs_dimension,
        claims=[
            _claim("flat-in-p", claims.flat_in_p),
            _claim("adassp-grows", claims.adassp_grows, deviation=True),
        ],
        plot=plots.error_vs_dimension,
        privacy=_PRIVACY_DEFAULT.format(rho=0.05)
        + " The paper's AdaSSP reads its bounds off the data and is not private.",
    )


def _cost_grid(p: int, rho: float, ns) -> list[dict]:
    """The paper text's clip 5 sqrt(p) and its code's 3 sqrt(p) at every n."""
    return [
        {"p": p, "rho": rho, "steps": 20, "clip_mult": c, "n": n}
        for c in (claims.TEXT_CLIP, claims.CODE_CLIP)
        for n in ns
    ]


def _cost_claims(dominance) -> list[Claim]:
    if dominance is claims.sampling_error_dominates:  # Fig. 2: p = 10, rho = 0.1
        return [
            _claim("rates", claims.privacy_and_sampling_rates),
            Claim(
                name="sampling-error-dominates",
                statement=(
                    "At p = 10 with the paper code's clip 3 sqrt(p) the privacy / sampling "
                    "ratio (fitted line through the per-n ratios of means) is above 1 at the "
                    "smallest n and below 1 at the largest, each by 3 s.e."
                ),
                evaluate=functools.partial(dominance, clips=(claims.CODE_CLIP,)),
                paper=_PAPER_SAYS["sampling-error-dominates"],
            ),
            Claim(
                name="no-crossing-at-text-clip",
                statement=(
                    "Deviation at the clip the paper's text states, 5 sqrt(p): the privacy / "
                    "sampling ratio stays above 1 at the largest n (n = 5000) by 3 s.e.; the "
                    "larger clip means 5/3 times the noise (the paper's code uses 3 sqrt(p))."
                ),
                evaluate=functools.partial(dominance, clips=(claims.TEXT_CLIP,)),
                paper=_PAPER_SAYS["sampling-error-dominates"] + " Section 4: gamma = 5 sqrt(p).",
                deviation=True,
            ),
        ]
    return [  # Fig. 8: rho = 0.015, p = 10 and 100
        Claim(
            name="rates",
            statement=(
                "The sampling error's log-log slope in n agrees with -1/2 at every p and clip, "
                "and at p = 100 the privacy error's with -1, each within 3 Monte Carlo s.e."
            ),
            evaluate=functools.partial(claims.privacy_and_sampling_rates, privacy_ps=(100,)),
            paper="Fig. 8 (as Fig. 2): privacy error ~ 1/n, sampling error ~ 1/sqrt(n).",
        ),
        Claim(
            name="rates-flattened-by-bias",
            statement=(
                "Deviation at p = 10 (rho = 0.015, T = 20, eta = 0.2): the privacy error's "
                "slope is above the paper's -1 by 3 s.e. at one clip at least and agrees at "
                "every clip with its exact prediction, 1/n flattened by the (1 - eta)^T bias "
                "floor (0.8^20 ||theta_hat|| = 0.0115), within 3 s.e."
            ),
            evaluate=functools.partial(claims.rates_flattened_by_bias, p=10),
            paper="Fig. 8(a), p = 10: privacy error ~ 1/n.",
            deviation=True,
        ),
        _claim("ratio-falls-without-crossing", dominance, deviation=True),
    ]


def _cost(
    name: str, figure: str, grid: dict, replicates: dict, rho_text: str, dominance
) -> Experiment:
    return Experiment(
        name=name,
        paper=PAPER,
        figure=figure,
        description=(
            "Cost of privacy as n grows at fixed p: privacy error ||theta_T - theta_hat|| and "
            "sampling error ||theta_hat - theta*|| (T = 20, eta = 0.2), with fitted a/n + b and "
            "a/sqrt(n) + b, at the paper text's clip 5 sqrt(p) and its code's 3 sqrt(p)."
        ),
        grid=grid,
        replicates=replicates,
        trial=trials.cost_of_privacy,
        claims=_cost_claims(dominance),
        plot=plots.cost_of_privacy,
        privacy=_PRIVACY_DEFAULT.format(rho=rho_text),
    )


def _fixed_base(**kwargs) -> dict:
    return {"n": 1000, "p": 10, "design": "isotropic", "data_seed": 0, "rho": 0.015, **kwargs}


_FIG4_CLIPS = [0.5, 1.0, 2.0, 3.0, 5.0, 8.0, 12.0, 5 * math.sqrt(10), 25.0, 40.0]
_FIG7_CLIPS = [0.1, 0.2, 0.3, *_FIG4_CLIPS]
_FIG3_CLIPS = [
    float(c)
    for c in (math.sqrt(5) + k * (3 * math.sqrt(200) - math.sqrt(5)) / 19 for k in range(20))
]


def _clip_grid(ps, clips) -> list[dict]:
    """Figure 3's cells: every (p, clip) pair, n = 100 p, T = 20, rho = 0.015."""
    return [
        {"p": p, "clip": c, "n_per_p": 100, "rho": 0.015, "steps": 20} for p in ps for c in clips
    ]


def _intervals(name: str, figure: str, design: str) -> Experiment:
    base = {"n": 10_000, "p": 10, "design": design, "data_seed": 0, "rho": 0.015}
    base["clip_mult"] = 5.0
    return Experiment(
        name=name,
        paper=PAPER,
        figure=figure,
        description=(
            f"Confidence intervals for theta_hat ({design} design, n = 10,000, p = 10, fixed "
            "dataset): coverage and mean length of batched means, checkpoints and independent "
            "runs (m = 10, burn-in 20; experimental and formal variants) vs the total number "
            "of noisy steps, each run calibrated to rho = 0.015 for all its steps; theory "
            "predictions from Lemma 2.3 and the non-private OLS interval width for comparison."
        ),
        grid={
            "smoke": _grid(base, "total", [100, 500]),
            "quick": _grid(base, "total", [100, 200, 500, 1000, 2000]),
            "paper": _grid(base, "total", [100, 200, 500, 1000, 2000, 5000]),
        },
        replicates={"smoke": 2, "quick": 100, "paper": 100},
        trial=trials.intervals,
        claims=[
            _claim("coverage", claims.coverage_valid),
            _claim("short-batches-undercover", claims.short_batches_undercover),
            _claim("widths", claims.width_behaviour),
            _claim("widths-match-theory", claims.widths_match_theory),
        ],
        plot=plots.intervals,
        privacy=_PRIVACY_DEFAULT.format(rho=0.015) + " Intervals are post-processing.",
    )


EXPERIMENTS = [
    register(_dimension("brown2024-fig1", "Figure 1", "isotropic")),
    register(_dimension("brown2024-fig9", "Figure 9", "anisotropic")),
    register(
        _cost(
            "brown2024-fig2",
            "Figure 2",
            grid={
                "smoke": _cost_grid(10, 0.1, [1000, 2000]),
                "quick": _cost_grid(10, 0.1, range(1000, 5001, 500)),
                "paper": _cost_grid(10, 0.1, range(1000, 5001, 100)),
            },
            # 200 runs at 9 n: the fitted ratio at n = 5000 (0.95) is then below 1 by 3 s.e.
            replicates={"smoke": 2, "quick": 200, "paper": 100},
            rho_text="0.1",
            dominance=claims.sampling_error_dominates,
        )
    ),
    register(
        _cost(
            "brown2024-fig8",
            "Figure 8 (a: p = 10, b: p = 100)",
            grid={
                "smoke": _cost_grid(10, 0.015, [2000, 4000]),
                "quick": _cost_grid(10, 0.015, range(10_000, 35_001, 5000))
                + _cost_grid(100, 0.015, [10_000, 20_000, 50_000]),
                "paper": _cost_grid(10, 0.015, range(10_000, 35_001, 1000))
                + _cost_grid(100, 0.015, range(10_000, 100_001, 10_000)),
            },
            replicates={"smoke": 2, "quick": 30, "paper": 100},
            rho_text="0.015",
            dominance=claims.ratio_falls_without_crossing,
        )
    ),
    register(
        Experiment(
            name="brown2024-fig3",
            paper=PAPER,
            figure="Figure 3",
            description=(
                "Fraction of per-example gradients clipped over a (p, clip) grid, n = 100 p, "
                "T = 20, eta = 0.2, rho = 0.015, clip on 20 points of [sqrt(5), 3 sqrt(200)]."
            ),
            grid={
                "smoke": _clip_grid((5, 10), _FIG3_CLIPS[::6]),
                "quick": _clip_grid((5, 10, 20, 50, 100, 200), _FIG3_CLIPS),
                "paper": _clip_grid(range(5, 201, 5), _FIG3_CLIPS),
            },
            # 3 runs per cell: the claims' s.e. are bootstraps over them
            replicates={"smoke": 1, "quick": 3, "paper": 3},
            trial=trials.clipping_fraction,
            claims=[
                _claim("boundary-sqrt-p", clipping.clipping_boundary_sqrt_p),
                _claim("low-clipping", clipping.low_clipping_above_3_sqrt_p),
            ],
            plot=plots.clipping_heatmap,
            privacy=_PRIVACY_DEFAULT.format(rho=0.015),
        )
    ),
    register(
        Experiment(
            name="brown2024-fig4",
            paper=PAPER,
            figure="Figure 4",
            description=(
                "Error, squared bias and variance of the final iterate against theta_hat vs "
                "the clip (n = 1000, p = 10, T = 20, eta = 0.2, rho = 0.015, fixed dataset), "
                "labelled with the percentage of gradients clipped."
            ),
            grid={
                "smoke": _grid(_fixed_base(steps=20), "clip", [1.0, 5.0, 40.0]),
                "quick": _grid(_fixed_base(steps=20), "clip", _FIG4_CLIPS),
                "paper": _grid(_fixed_base(steps=20), "clip", _FIG4_CLIPS),
            },
            replicates={"smoke": 2, "quick": 50, "paper": 100},
            trial=trials.bias_variance,
            claims=[
                _claim("u-shape", clipping.u_shape_in_clip),
                _claim("bias-left-variance-right", clipping.bias_left_variance_right),
            ],
            plot=plots.bias_variance,
            privacy=_PRIVACY_DEFAULT.format(rho=0.015),
        )
    ),
    register(
        Experiment(
            name="brown2024-fig7",
            paper=PAPER,
            figure="Figure 7",
            description=(
                "Mean error ||theta_T - theta_hat|| vs the fraction of gradients clipped, one "
                "curve per T in {10, 20, 50, 100} (n = 1000, p = 10, eta = 0.2, rho = 0.015, "
                "fixed dataset; the clip swept over [0.1, 40])."
            ),
            grid={
                "smoke": [_fixed_base(steps=t, clip=c) for t in (10, 50) for c in (0.5, 5.0)],
                "quick": [
                    _fixed_base(steps=t, clip=c) for t in (10, 20, 50, 100) for c in _FIG7_CLIPS
                ],
                "paper": [
                    _fixed_base(steps=t, clip=c) for t in (10, 20, 50, 100) for c in _FIG7_CLIPS
                ],
            },
            replicates={"smoke": 2, "quick": 30, "paper": 50},
            trial=trials.bias_variance,
            claims=[
                _claim("u-shape", clipping.u_shape_in_clip),
                _claim("tolerates-clipping", clipping.tolerates_clipping),
            ],
            plot=plots.error_vs_clipped,
            privacy=_PRIVACY_DEFAULT.format(rho=0.015),
        )
    ),
    register(_intervals("brown2024-fig5-6", "Figures 5 and 6", "isotropic")),
    register(_intervals("brown2024-fig10-11", "Figures 10 and 11", "anisotropic")),
]
