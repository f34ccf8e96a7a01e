"""The method table of :class:`~dpfit.DPLinearRegression`: one entry per private algorithm.

Each entry is a :class:`LinearMethod` with two steps, so that every check runs before any
data is read:

``resolve(config, scaling, n, p)``
    Public only: validates the method's hyperparameters against each other and fills the
    defaults that follow from public inputs (shape, bounds). Returns the public settings.
``run(X, y, settings, ledger, source)``
    Runs the algorithm on the design the method sees (public rescaling and ones column
    already applied) and returns a :class:`LinearFit` in those units.
``plan(settings, k, label=...)``
    Public only: the :class:`~dpfit.mechanisms.plan.ReleasePlan` of ``run`` (every release,
    its share of rho and noise), charged as one ledger entry before ``run`` draws anything.

A new method is one new entry in :data:`LINEAR_METHODS`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..algorithms import dp_gd
from ..algorithms._preconditioned_plan import (
    DEFAULT_MOMENT_SHARE,
    PRECONDITIONED_STEP_SIZE,
    PRECONDITIONED_STEPS,
    check_preconditioned_scales,
)
from ..algorithms.dp_gd import check_dp_gd_scales
from ..algorithms.preconditioned_gd import preconditioned_gd
from ..inference import interval_estimates
from ..inference.intervals import DEFAULT_BURN_IN
from ..inference.population import CovarianceEstimate
from ..mechanisms import NoiseSource
from ..mechanisms.plan import ReleasePlan
from ..privacy import PrivacyLedger, Relation
from ._adassp_population import ADASSP_LABEL, adassp_plan, resolve_adassp, run_adassp
from ._ambssgd_method import ambssgd_plan, resolve_ambssgd, run_ambssgd
from ._fit_checks import warn_few_records
from ._linear_plan import linear_plan
from ._scaling import PublicScaling

__all__ = ["LINEAR_METHODS", "LinearConfig", "LinearFit", "LinearMethod"]


@dataclass(frozen=True, kw_only=True)
class LinearConfig:
    """The validated public parameters of one :class:`~dpfit.DPLinearRegression` fit."""

    rho: float
    method: str
    clip: float | None
    steps: int
    step_size: float | None
    fit_intercept: bool
    interval: str | None
    m: int
    burn_in: int | None
    interval_variant: str
    relation: Relation
    n_public: int | None
    secure: bool
    precondition: bool | None = None
    moment_share: float | None = None
    target: str = "least-squares"
    max_rows_per_unit: int | None = None
    entity_effects: bool = False


@dataclass(frozen=True, kw_only=True)
class LinearFit:
    """A method's output in the units of the design it ran on (before mapping back)."""

    estimate: np.ndarray
    interval_estimates: np.ndarray | None
    interval_method: str
    settings: Mapping[str, Any]
    noise_backend: str
    seeded: bool
    notes: tuple[str, ...] = ()
    experimental: bool = False
    diagnostics: Mapping[str, Any] = field(default_factory=dict)
    population: CovarianceEstimate | None = None
    label: str | None = None


@dataclass(frozen=True)
class LinearMethod:
    """One private linear-regression algorithm: its label, its resolve/run steps, and its
    release plan from the public settings (None: it charges release by release)."""

    label: str
    resolve: Callable[[LinearConfig, PublicScaling, int, int], dict[str, Any]]
    run: Callable[
        [np.ndarray, np.ndarray, Mapping[str, Any], PrivacyLedger, NoiseSource], LinearFit
    ]
    plan: Callable[..., ReleasePlan] | None = None


def _warned(resolve: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """``resolve`` preceded by the public warning every method shares: too few records per
    coefficient (``_fit_checks.warn_few_records``), said only when n is public."""

    def settings(config: LinearConfig, scaling: PublicScaling, n: int, p: int) -> dict[str, Any]:
        public_n = config.n_public
        if public_n is None and config.relation is Relation.REPLACE_ONE:
            public_n = n  # replace-one neighbours have the same n
        warn_few_records(n=public_n, p=p + int(config.fit_intercept))
        return resolve(config, scaling, n, p)

    return settings


# -- DP-GD (Brown et al. 2024) ----------------------------------------------------------------
_TARGET = (
    "They cover the least-squares fit to this dataset (a Huber-type fit where gradients are "
    "clipped), not a population parameter: sampling error is not included."
)
_INTERVAL_TEXT = {
    "batched-means": (
        "Student-t intervals (df = m - 1) over the means of m = {m} consecutive batches of "
        "the released DP-GD iterates{burn} (Brown et al. 2024, eq. 12). Batched means have no "
        "coverage theorem; they cover well in simulation when batches are much longer than "
        "the iterates' autocorrelation time."
    ),
    "checkpoints": (
        "Student-t intervals (df = m - 1) over m = {m} checkpoints, the last iterate of each "
        "of m consecutive blocks of one DP-GD run{burn} (Brown et al. 2024, eq. 12, Thm 3.1)."
    ),
    "independent-runs": (
        "Student-t intervals (df = m - 1) over m = {m} independent DP-GD runs of {per_run} "
        "steps each ({estimate}) (Brown et al. 2024, eq. 12, Thm 3.1)."
    ),
}


def _shown(settings: Mapping[str, Any], traj: Any, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    """The public settings of a DP-GD fit for the summary, with the released noise std."""
    keys = ("clip", "steps", "step_size", "interval", "m", "burn_in", "interval_variant", *extra)
    public = {key: settings[key] for key in keys if settings[key] is not None}
    public["noise_std"] = traj.config["noise_std"]
    return public


def _interval_text(settings: Mapping[str, Any]) -> str:
    """How the m estimates behind the Student-t interval were built (_INTERVAL_TEXT)."""
    burn_in = settings["burn_in"]
    return _INTERVAL_TEXT[settings["interval"]].format(
        m=settings["m"],
        burn=f", after a burn-in of {burn_in} iterates" if burn_in else "",
        per_run=settings["steps"] // settings["runs"],
        estimate="each run's final iterate"
        if settings["interval_variant"] == "formal"
        else f"each run's mean after a burn-in of {burn_in}",
    )


def _resolve_gd(config: LinearConfig, scaling: PublicScaling, n: int, p: int) -> dict[str, Any]:
    """Public defaults and cross-checks of DP-GD; nothing here reads the data."""
    clip = config.clip
    row_bound = scaling.max_row_norm
    precondition = config.precondition
    if precondition is None:
        precondition = row_bound is not None
    if precondition and row_bound is None:
        raise ValueError(
            "precondition=True needs public bounds of every feature (bounds=...): the "
            "preconditioner is a private X'X / n, whose noise is calibrated to them"
        )
    if not precondition and config.moment_share is not None:
        raise ValueError("moment_share applies to the preconditioned fit only (precondition)")
    if not precondition and config.target != "least-squares":
        raise ValueError(
            f"target={config.target!r} applies to the preconditioned fit's population interval "
            "only (bounds given, precondition not False)"
        )
    share = DEFAULT_MOMENT_SHARE if config.moment_share is None else config.moment_share
    if clip is None:
        if row_bound is None or scaling.y_bounds is None:
            raise TypeError(
                "clip is required for method='gd' (a public bound on the per-example gradient "
                "norm |y_i - x_i.theta| * ||x_i||), unless both bounds and y_bounds are given"
            )
        # preconditioned: None = from a private residual scale (preconditioned_gd);
        # otherwise |r'| <= 1 at theta = 0 and ||x'|| <= sqrt(p): no clipping at start
        clip = None if precondition else row_bound
    step_size = config.step_size
    if step_size is None:
        if precondition:
            step_size = PRECONDITIONED_STEP_SIZE
        else:
            step_size = 0.25 if row_bound is None else 1.0 / row_bound**2
    interval, m = config.interval, config.m
    steps = config.steps
    if steps is None:
        steps = PRECONDITIONED_STEPS if precondition else 1000
    if precondition and interval is None:
        raise ValueError(
            "the preconditioned fit (the default with bounds) needs an interval construction "
            "for its privacy part; use interval='batched-means' or precondition=False"
        )
    burn_in = config.burn_in
    if burn_in is None:
        burn_in = DEFAULT_BURN_IN if config.interval_variant == "experimental" else 0
    if config.interval_variant == "formal" and burn_in:
        raise ValueError("burn_in applies to interval_variant='experimental' only; use 0")
    runs = 1
    if interval == "independent-runs":
        if steps % m:
            raise ValueError(
                f"total_steps (all runs' steps together) must be a multiple of m={m} for "
                f"interval='independent-runs', got {steps}"
            )
        runs = m
        if config.interval_variant == "experimental" and steps // m <= burn_in:
            raise ValueError(
                f"independent runs of steps/m = {steps // m} steps cannot drop burn_in={burn_in}"
            )
    elif interval is not None and (steps - burn_in) // m < 1:
        raise ValueError(
            f"steps={steps} is too few for m={m} blocks after burn_in={burn_in}; "
            "increase steps or lower m"
        )
    settings = {
        "clip": clip,
        "steps": steps,
        "step_size": step_size,
        "interval": interval,  # None: no interval, as in the API
        "m": m if interval else None,
        "burn_in": burn_in if interval else None,
        "interval_variant": config.interval_variant if interval else None,
        "runs": runs,
        "rho": config.rho,
        "relation": config.relation,
        "n_public": config.n_public,
        "precondition": precondition,
        "moment_share": share if precondition else None,
        "target": config.target,
        "row_bound": row_bound,
        "n": n if config.n_public is None else config.n_public,
    }
    _check_gd_scales(settings, p + int(config.fit_intercept))
    return settings


#: The public settings the preconditioned fit's scale check and run share by name.
_SCALE_KEYS = ("rho", "moment_share", "clip", "step_size", "steps", "n", "relation")


def _check_gd_scales(settings: Mapping[str, Any], k: int) -> None:
    """Every release's scale checked before the fit charges anything (a fit run through the
    formula API or with a shared budget may have charged something before DP-GD's own check)."""
    if settings["precondition"]:
        check_preconditioned_scales(
            k, **{key: settings[key] for key in _SCALE_KEYS}, target=settings["target"]
        )
    else:
        check_dp_gd_scales(
            settings["clip"],
            settings["step_size"],
            rho=settings["rho"],
            n=settings["n"],
            relation=settings["relation"],
            total=settings["steps"] // settings["runs"] * settings["runs"],
        )


def _run_gd(
    X: np.ndarray,
    y: np.ndarray,
    settings: Mapping[str, Any],
    ledger: PrivacyLedger,
    source: NoiseSource,
) -> LinearFit:
    if settings["precondition"]:
        return _run_preconditioned(X, y, settings, ledger, source)
    runs = settings["runs"]
    traj = dp_gd(
        X,
        y,
        rho=settings["rho"],
        clip=settings["clip"],
        steps=settings["steps"] // runs,
        step_size=settings["step_size"],
        runs=runs,
        relation=settings["relation"],
        n_public=settings["n_public"],
        ledger=ledger,
        rng=source,
    )
    interval = settings["interval"]
    public = _shown(settings, traj)
    diagnostics = {"fraction_clipped": traj.diagnostics["fraction_clipped"]}
    if interval is None:
        return LinearFit(
            estimate=traj.estimate,
            interval_estimates=None,
            interval_method="No interval was requested (interval=None); the estimate is the "
            "final DP-GD iterate.",
            settings=public,
            noise_backend=traj.noise_backend,
            seeded=traj.seeded,
            diagnostics=diagnostics,
        )
    m, burn_in, variant = settings["m"], settings["burn_in"], settings["interval_variant"]
    estimates = interval_estimates(traj, interval, m=m, burn_in=burn_in, variant=variant)
    return LinearFit(
        estimate=estimates.mean(axis=0),
        interval_estimates=estimates,
        interval_method=f"{_interval_text(settings)} {_TARGET} The point estimate is the "
        "intervals' centre.",
        settings=public,
        noise_backend=traj.noise_backend,
        seeded=traj.seeded,
        diagnostics=diagnostics,
    )


def _run_preconditioned(
    X: np.ndarray,
    y: np.ndarray,
    settings: Mapping[str, Any],
    ledger: PrivacyLedger,
    source: NoiseSource,
) -> LinearFit:
    keys = ("runs", "interval", "m", "burn_in", "interval_variant")
    traj = preconditioned_gd(  # NumPy or Dask
        X,
        y,
        **{key: settings[key] for key in keys + _SCALE_KEYS if key != "n"},
        row_bound=settings["row_bound"],
        target=settings["target"],
        terms=settings.get("terms"),
        n_public=settings["n_public"],
        ledger=ledger,
        rng=source,
    )
    public = _shown(settings, traj, extra=("moment_share", "target"))
    public["clip"] = f"{traj.clip:.6g} (on whitened gradients |r_i| * ||P x_i||" + (
        ")" if settings["clip"] is not None else
        "; 3 sqrt(k) x a private residual scale)" if settings["target"] == "huber" else
        "; 3 sqrt(k) x a private residual scale, grown with n so that clipping moves the "
        "estimate little: docs/inference.md)"
    )  # fmt: skip
    return LinearFit(
        estimate=traj.estimate,
        interval_estimates=traj.estimates,
        interval_method=f"{_interval_text(settings)} {_TARGET}",
        settings=public,
        noise_backend=traj.noise_backend,
        seeded=traj.seeded,
        notes=traj.checks,
        diagnostics={"fraction_clipped": traj.diagnostics["fraction_clipped"]},
        population=traj.population,
        label="DP-GD (Brown et al. 2024, Alg. 1), preconditioned by a private X'X/n",
    )


# -- AdaSSP (Wang 2018, Alg. 2) with public bounds: _adassp_population ----------------------
def _run_adassp(
    X: np.ndarray,
    y: np.ndarray,
    settings: Mapping[str, Any],
    ledger: PrivacyLedger,
    source: NoiseSource,
) -> LinearFit:
    out = run_adassp(np.asarray(X), np.asarray(y), settings, ledger, source)
    traj = out["trajectory"]
    return LinearFit(
        estimate=traj.estimate,
        interval_estimates=None,
        interval_method=out["text"],
        settings=out["shown"],
        noise_backend=traj.noise_backend,
        seeded=traj.seeded,
        notes=tuple(out["checks"]),
        population=out["population"],
        label=out["label"],
    )


#: Method name -> implementation. One entry per algorithm; add new methods here.
LINEAR_METHODS: dict[str, LinearMethod] = {
    "gd": LinearMethod(
        "DP-GD (Brown et al. 2024, Alg. 1)", _warned(_resolve_gd), _run_gd, linear_plan
    ),
    "adassp": LinearMethod(ADASSP_LABEL, _warned(resolve_adassp), _run_adassp, adassp_plan),
    "ambssgd": LinearMethod(
        "DP-AMBSSGD (Varshney et al. 2022, Alg. 2), one pass",
        _warned(resolve_ambssgd),
        run_ambssgd,
        ambssgd_plan,
    ),
}
