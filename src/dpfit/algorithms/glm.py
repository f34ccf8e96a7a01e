"""Private generalised linear models: preconditioned DP-GD on the negative log-likelihood.

The fit makes the releases of its plan (:func:`~dpfit.algorithms._glm_plan.plan_glm`), in
order, each through :mod:`dpfit.mechanisms` with the declared sensitivity of
:func:`dpfit.privacy.query_sensitivity` and charged before its noise is drawn:

1. **X'X/n** and the second moment of the rows it whitens: the two-stage whitener P of the
   linear default (:func:`dpfit.inference.preconditioner.release_whitener`), so that
   z = P'd has E[z z'] close to I whatever the features' conditioning.
2. **The mean response** y~ (a bounded mean): the descent starts at the intercept-only fit
   g(y~) and is preconditioned by M = P P' / w0, w0 the Fisher weight at y~, so that M is
   the inverse Fisher information of the intercept-only model at the start.
3. **DP-GD** (Brown et al. 2024, Alg. 1, on the GLM loss): each step releases the mean
   gradient of the negative log-likelihood, each record's gradient -r_i d_i clipped at the
   family's score bound times the row bound (:mod:`dpfit.algorithms.glm_family`; for the
   logit link nothing is ever clipped), and steps theta <- theta - eta M (g + noise), eta
   at most ``step_size`` and lowered from released quantities so that the iterates' spread
   on the linear predictor's scale stays small (:mod:`dpfit.algorithms._glm_spread`). The
   gradient is released in the design's coordinates, where the clip is exact; the
   preconditioner is post-processing and changes the descent's geometry, not its fixed
   point.
4. At the estimate (the mean of the batch means of the iterates after a burn-in), **the
   bread** (1/n) sum w_i c_i c_i' (the Fisher information, observed, with whitened rows
   c_i = clip(P'd_i)) and **the meat** (1/n) sum s_i s_i' (the whitened scores
   s_i = clip(r_i P'd_i)) of the sandwich H^-1 Omega H^-1 / n (Avella-Medina, Bradshaw &
   Loh 2023; :mod:`dpfit.inference.population_glm` builds the interval from them).
5. With ``margins``: the mean of dmu/deta, of its square and of d^2mu/deta^2 d_i, for
   average marginal effects with delta-method intervals.

Every sum is a per-record block function of :mod:`dpfit.algorithms._glm_sums`, evaluated in
memory or as one distributed reduction on Dask arrays; with a privacy unit, in memory, as
:mod:`dpfit.algorithms._glm_units` says.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._floats import quiet_floats
from .._validation import check_array
from ..distributed import is_dask, map_rows, zero_nonfinite_records
from ..inference.intervals import DEFAULT_BURN_IN, DEFAULT_M, batch_means
from ..inference.population import release_moment_sum
from ..inference.population_glm import sandwich_and_privacy
from ..inference.preconditioner import record_sum, release_whitener, triangle
from ..inference.whitened import release_mean
from ..mechanisms import NoiseSource, clip_rows, gaussian, gaussian_releases, make_noise_source
from ..mechanisms.clipping import clip_factors, row_norms
from ..mechanisms.plan import PlannedCheck, charge_plan
from ..privacy import PrivacyLedger, Relation, parse_relation, public_n
from ..privacy.ledger import prepare_ledger
from ._glm_clipping import glm_clips, mean_level, release_gap, release_scale
from ._glm_plan import GLM_STEP_SIZE, GLM_STEPS, GLMPlan, plan_glm, run_config
from ._glm_sandwich import release_sandwich
from ._glm_spread import iterate_spread, spread_step
from ._glm_sums import gradient_sum, gram_sum, margin_sums, response_sum
from ._glm_units import UnitCodes, cap_units, per_row, unit_data
from ._kernels import check_data
from .glm_family import get_family
from .trajectory import Trajectory

__all__ = ["dp_glm", "plan_glm", "run_glm_plan"]

#: Iterates are kept within +-ITERATE_CAP per coordinate (on the rescaled design, where a
#: coefficient of 1e4 moves the linear predictor by 1e4 across a feature's bounds): a
#: public clamp, post-processing of the releases, so that noise large against the data (a
#: handful of records, a tiny rho) can never drive an iterate to inf and a query to NaN
#: after the fit was charged.
ITERATE_CAP = 1e4
#: Noise drawn ahead for data in memory: at most this many floats (as dp_gd does).
_NOISE_BLOCK_FLOATS = 4096


@quiet_floats()
def dp_glm(
    X: ArrayLike,
    y: ArrayLike,
    *,
    rho: float,
    family: str = "binomial",
    link: str | None = None,
    count_bound: float | None = None,
    offset: ArrayLike | None = None,
    intercept: bool = True,
    steps: int = GLM_STEPS,
    step_size: float = GLM_STEP_SIZE,
    m: int = DEFAULT_M,
    burn_in: int = DEFAULT_BURN_IN,
    margins: bool = False,
    relation: Relation | str = "replace-one",
    n_public: int | None = None,
    ledger: PrivacyLedger | None = None,
    rng: Any = None,
    warn_large_rho: bool = True,
    groups: ArrayLike | None = None,
    max_rows_per_unit: int | None = None,
    check: PlannedCheck | None = None,
) -> Trajectory:
    """Fit a GLM privately and release what its population interval needs.

    Parameters
    ----------
    X : array-like or dask.array.Array of shape (n, k)
        The design the algorithm sees (private): rows of norm at most sqrt(k) (e.g. features
        rescaled into [-1, 1] from public bounds, plus a ones column); larger rows are
        clipped to sqrt(k).
    y : array-like of shape (n,)
        Response (private): 0/1 (binomial; values are clipped into [0, 1]) or counts
        (Poisson; clipped into [0, ``count_bound``]).
    rho : float
        zCDP cost of the whole fit.
    family : {"binomial", "poisson"}, default="binomial"
    link : str, optional
        ``"logit"`` (default) or ``"probit"`` for binomial, ``"log"`` for Poisson.
    count_bound : float, optional
        The public K of the Poisson counts (required for Poisson).
    offset : array-like of shape (n,), optional
        Per-record offsets o_i in eta_i = d_i'theta + o_i (e.g. log exposure); private, need
        no bounds (every released quantity is clipped after it). Non-finite offsets make
        their record the zero record.
    intercept : bool, default=True
        Whether column 0 of ``X`` is the ones column (the descent starts at the
        intercept-only fit).
    steps, step_size : int, float, default=200, 0.5
        Noisy steps and step size of the preconditioned descent.
    m, burn_in : int, default=10, 20
        Batch means of the iterates after the burn-in: the estimate is their mean and the
        privacy part of the interval their covariance (Brown et al. 2024, eq. 12).
    margins : bool, default=False
        Also release what average marginal effects need (binomial only).
    relation, n_public, ledger, rng, warn_large_rho
        As for :func:`dpfit.algorithms.dp_gd`.
    groups, max_rows_per_unit : array-like of shape (n,), int, optional
        A privacy unit (in memory; no margins): one label per row and the public cap K on a
        unit's rows (more are sampled away). Every release then protects one unit, n counts
        units and the meat is clustered by unit (:mod:`dpfit.algorithms._glm_units`).
    check : PlannedCheck, optional
        A release made after the fit as the last of its plan (the formula calls' bounds
        check): the fit and the check are then charged as one entry of ``check.rho``, and
        ``rho`` is the fit's share of it.

    Returns
    -------
    Trajectory
        ``iterates`` (steps, k) in the design's coordinates; ``estimate`` the mean of the
        batch means; ``releases``: ``whitener`` (P), ``mean`` (y~), ``batch_means`` (m, k),
        ``bread`` and ``meat`` (k x k, whitened), ``margins`` (with ``margins``); ``config``:
        the public inputs, the clips and every release's noise std.

    Raises
    ------
    TypeError, ValueError
        Invalid inputs; raised before any charge or draw.
    BudgetExceededError
        ``ledger``'s budget cannot afford ``rho``; nothing was charged or drawn.

    Notes
    -----
    Privacy: the fit is the sequence of releases of its plan, each a Gaussian mechanism whose
    sensitivity bounds the change of its query when one record is replaced (its per-record
    term is clipped to the declared bound); their shares of rho sum to at most rho exactly,
    and zCDP composes adaptively (Bun & Steinke 2016), so the fit is rho-zCDP for every
    dataset. The clips and caps that follow from the released mean (Poisson) are
    post-processing of that release. Intervals, marginal effects and warnings built from
    the releases cost nothing more.
    """
    fam = get_family(family, link)
    relation = parse_relation(relation)
    if groups is None:
        if max_rows_per_unit is not None:
            raise ValueError("max_rows_per_unit needs a privacy unit: pass groups=unit_labels")
        X, y, rows = check_data(X, y, n_public=n_public, relation=relation)
        n = public_n(rows, n_public, relation)  # for Dask, rows is the checked n_public
    else:
        X, y, n = unit_data(X, y, offset, groups, max_rows=max_rows_per_unit, margins=margins,
                            n_public=n_public, relation=relation)  # fmt: skip
    plan = plan_glm(
        fam, n=n, k=X.shape[1], rho=rho, count_bound=count_bound, steps=steps,
        step_size=step_size, m=m, burn_in=burn_in, margins=margins, relation=relation,
        warn_large_rho=warn_large_rho,
        rows_per_unit=None if groups is None else max_rows_per_unit,
    )  # fmt: skip
    o = _offset(offset, X, y)
    return run_glm_plan(plan, X, y, o, intercept=bool(intercept), ledger=ledger, rng=rng,
                        groups=groups, check=check)  # fmt: skip


def _offset(offset: ArrayLike | None, X: Any, y: Any) -> Any:
    """The offsets as a column aligned with ``y`` (zeros when None)."""
    if offset is None:
        return y * 0.0 if is_dask(y) else np.zeros(y.shape[0])
    if is_dask(offset):
        return offset
    o = check_array(offset, "offset", ndim=1, finite=False)
    if o.shape[0] != y.shape[0]:
        raise ValueError(f"offset must have one value per record ({y.shape[0]}), got {o.shape[0]}")
    return o


def run_glm_plan(
    plan: GLMPlan,
    X: Any,
    y: Any,
    offset: Any,
    *,
    intercept: bool,
    ledger: PrivacyLedger | None = None,
    rng: Any = None,
    groups: Any = None,
    check: PlannedCheck | None = None,
) -> Trajectory:
    """Run ``plan`` on checked data (module docstring), charged to ``ledger`` (by default a
    new one with a budget of the plan's rho) as one entry at its first release
    (:func:`~dpfit.mechanisms.plan.charge_plan`).

    ``offset`` is aligned with ``y``; on Dask the arrays are row-aligned and persisted.
    ``groups`` (unit labels, in memory) goes with a plan with a privacy unit only. A
    ``check`` is made after the fit, inside the plan, as its last release: the entry is then
    ``check.plan(plan)`` and the trajectory the one ``check.after`` returns.
    """
    whole = plan if check is None else check.plan(plan)
    ledger = prepare_ledger(ledger, plan.relation, whole.rho, name="dp_glm")
    source = make_noise_source(rng)
    X, y, offset, units = cap_units(plan, groups, X, y, offset, source)
    with charge_plan(whole, ledger) as charge:
        trajectory = _run(plan, X, y, offset, intercept=intercept, ledger=ledger,
                          source=source, units=units)  # fmt: skip
        return trajectory if check is None else check.after(trajectory, ledger, charge)


def _run(
    plan: GLMPlan, X: Any, y: Any, offset: Any, *, intercept: bool, ledger: PrivacyLedger,
    source: Any, units: UnitCodes | None,
) -> Trajectory:  # fmt: skip
    family, n, k = plan.family, plan.n, plan.k
    D, y, o = _records(plan, X, y, offset)
    moment = {"n": n, "ledger": ledger, "rng": source, "rows_per_unit": plan.rows_per_unit}
    rows = [D, y, o]
    H = release_moment_sum(
        record_sum(gram_sum, rows, (plan.row_bound,), width=triangle(k)),
        bound=plan.row_bound, rho=plan.share("xtx"), label="glm/xtx", **moment,
    )  # fmt: skip
    P = release_whitener(
        D, y, H, row_clip=plan.row_clip, rho=plan.share("whiten"), label="glm/whiten",
        **moment,
    )  # fmt: skip
    cap = family.response_bound(plan.count_bound)
    mean, mean_std = release_mean(
        record_sum(response_sum, rows, (cap,), width=1),
        cap=cap, rho=plan.share("mean"), label="glm/mean", **moment,
    )  # fmt: skip
    per_unit = 1.0
    if units is not None:  # the means per row, not per unit
        mean, mean_std, per_unit = per_row(plan, units, mean, mean_std, moment)
    level = mean_level(family, mean, mean_std, cap, n)
    theta0 = np.zeros(k)
    if intercept:
        theta0[0] = family.link_of(level)
    scale = release_scale(plan, rows, theta0, level, moment, per_unit)  # Poisson only
    clips = glm_clips(plan, level, scale, H)
    weight = family.fisher_weight(level)
    M = P @ P.T / weight
    step = spread_step(
        plan.step_size, noise_std=plan.bound("gradient", clips["gradient"]).noise_std, P=P,
        weight=weight, steps=plan.steps, burn_in=plan.burn_in, m=plan.m, per_unit=per_unit,
    )  # fmt: skip
    iterates = _descend(plan, rows, theta0, step * M, clips["gradient"], ledger, source)
    estimates = batch_means(iterates, plan.m, plan.burn_in)
    curvature = iterate_spread(iterates, P, plan.burn_in) / per_unit  # per row
    shift = np.zeros(k)
    if family.name == "poisson" and intercept:
        shift[0] = curvature / 2.0  # H^-1 (1/n) sum mu_i d_i = e_1 (iterate_spread)
    estimate = estimates.mean(axis=0) + shift
    bread, meat = release_sandwich(plan, rows, units, P, estimate, clips, moment)
    gap = None
    if "gap" in plan.names:  # a clipped family: what clipping still moves, released
        to_theta = P @ np.linalg.inv(bread.shrunk()) @ P.T
        descent = {"steps": plan.steps, "burn_in": plan.burn_in, "step": step}
        cov = sandwich_and_privacy(bread, meat, P, n, estimates, descent)
        se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
        gap = release_gap(plan, rows, estimate, clips["gradient"], to_theta, se, moment)
    releases = {
        "xtx": H.matrix, "whitener": P, "mean": np.array([mean]), "batch_means": estimates,
        "bread": bread.matrix, "meat": meat.matrix,
    }  # fmt: skip
    config = run_config(plan, intercept, theta0, level, clips, H, bread, meat)
    config["mean_noise_std"] = mean_std
    config["step"], config["spread"] = step, curvature
    config["scale"] = scale
    if units is not None:  # n counts units: the interval is clustered by them
        config.update(clustered=True, rows_per_unit=plan.rows_per_unit, unit_rows=per_unit)
    if gap is not None:
        releases["gap_excess"], releases["far"] = gap["excess"], np.array([gap["far"]])
        config.update(
            gap_noise_std=gap["excess_noise_std"], gap_window=gap["window"],
            far_noise_std=gap["far_noise_std"],
        )  # fmt: skip
    if "margins" in plan.names:
        releases["margins"], config["margins_noise_std"] = _release_margins(
            plan, rows, estimate, moment
        )
        if family.link == "logit":  # the same shift, H^-1 (1/n) sum mu''_i d_i released
            to_theta = P @ np.linalg.inv(bread.shrunk()) @ P.T
            shift = curvature / 2.0 * (to_theta @ releases["margins"][2:])
            estimate = estimate + shift
    releases["shift"] = shift
    return Trajectory(
        algorithm="dp_glm",
        iterates=iterates,
        estimate=estimate,
        ledger=ledger,
        config=config,
        noise_backend=source.backend,
        seeded=source.seeded,
        releases=releases,
    )


def _records(plan: GLMPlan, X: Any, y: Any, offset: Any) -> tuple[Any, Any, Any]:
    """The records through public maps: rows clipped to the row bound, responses into
    [0, cap]; in memory a record with a non-finite value anywhere becomes the zero record
    (on Dask every reduction applies the same rule block by block)."""
    cap = plan.family.response_bound(plan.count_bound)
    if is_dask(X):
        D = map_rows(lambda b: clip_rows(b, plan.row_bound), X, columns=plan.k)
        return D, y.clip(0.0, cap), offset
    D, y, o = zero_nonfinite_records(X, y, offset)
    with np.errstate(all="ignore"):
        return clip_rows(D, plan.row_bound), np.clip(y, 0.0, cap), o


def _gradients(plan: GLMPlan, rows: list[Any], clip: float) -> Any:
    """theta -> sum_i clip(-r_i d_i): one reduction per step on Dask; in memory the row norms
    are computed once (the same clip factors as :func:`_glm_sums.gradient_sum`)."""
    family = plan.family
    if is_dask(rows[0]):
        return lambda theta: record_sum(gradient_sum, rows, (theta, family, clip), width=plan.k)
    D, y, o = rows
    norms = row_norms(D)

    def total(theta: np.ndarray) -> np.ndarray:
        r = family.score(D @ theta + o, y)
        return -(D.T @ (r * clip_factors(np.abs(r) * norms, clip)))

    return total


def _descend(
    plan: GLMPlan,
    rows: list[Any],
    theta0: np.ndarray,
    M: np.ndarray,
    clip: float,
    ledger: PrivacyLedger,
    source: NoiseSource,
) -> np.ndarray:
    """The preconditioned noisy descent: ``plan.steps`` releases charged at once (before the
    first draw), theta <- theta - M (mean of the gradients clipped at ``clip`` + noise), M
    the preconditioner times the step,
    each coordinate kept within +-ITERATE_CAP (post-processing of the releases)."""
    planned = plan.bound("gradient", clip)
    total = _gradients(plan, rows, clip)
    iterates = np.empty((plan.steps, plan.k))
    theta = theta0
    block = 1 if is_dask(rows[0]) else max(1, min(plan.steps, _NOISE_BLOCK_FLOATS // plan.k))
    with gaussian_releases(
        count=plan.steps, sensitivity=planned.sensitivity, noise_std=planned.noise_std,
        ledger=ledger, rng=source, label=planned.label, block=block,
    ) as releases:  # fmt: skip
        for t in range(plan.steps):
            noisy = releases.release(total(theta) / plan.n)
            theta = np.clip(theta - M @ noisy, -ITERATE_CAP, ITERATE_CAP)
            iterates[t] = theta
    return iterates


def _release_margins(
    plan: GLMPlan, rows: list[Any], estimate: np.ndarray, moment: dict[str, Any]
) -> tuple[np.ndarray, float]:
    """The mean of margin_sums' terms at the estimate (one Gaussian release)."""
    planned = plan.release("margins")
    first, second = plan.family.margin_bounds()
    total = record_sum(
        margin_sums, rows, (estimate, plan.family, first, second * plan.row_bound),
        width=plan.k + 2,
    )  # fmt: skip
    with np.errstate(all="ignore"):
        value = total / plan.n
    noisy = gaussian(
        value, sensitivity=planned.sensitivity, noise_std=planned.noise_std,
        ledger=moment["ledger"], rng=moment["rng"], label=planned.label,
    )  # fmt: skip
    return noisy, planned.noise_std
