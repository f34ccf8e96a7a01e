"""The registry of dpfit's public entry points for the neighbour layer: one line each.

An :class:`EntryPoint` says how to run one public entry point on a data frame (see
:mod:`neighbour_data` for the columns) with a fixed seed and return what it releases; the layer
(:mod:`test_entry_points`) runs it on D and on adversarial neighbours D' and checks with
:func:`dpfit.testing.check_neighbours` that only the noised releases differ, each within its
declared sensitivity. Add an entry point by adding one line to its group below.

Entry points are grouped by what they return (a Trajectory, a fitted estimator, a Result,
a command's output, other); tracked leaks are listed in :mod:`neighbour_known`, not here.
"""

from __future__ import annotations

import contextlib
import io
import shlex
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from neighbour_data import (
    ADD_REMOVE_KINDS,
    UNIT,
    UNIT_ADD_REMOVE_KINDS,
    UNIT_CAP,
    UNIT_KINDS,
    binary,
    binary_panel,
    count_panel,
    counts,
    grouped,
    instrumental,
    linear,
    panel,
    unit_ball,
)

import dpfit
from dpfit import algorithms as alg
from dpfit import baselines, paper_only
from dpfit.algorithms.glm import dp_glm
from dpfit.algorithms.preconditioned_gd import preconditioned_gd
from dpfit.baselines.adassp_population import adassp_population
from dpfit.losses import LogisticLoss, SquaredLoss
from dpfit.noise import dpsgd, nu_dpftrl, select_nu, tree_aggregation
from dpfit.testing import default_views

SEED = 20240601  # the same seed on D and D': public randomness (shuffles) is then the same
RHO = 0.5
BASIC = ("extreme-cell", "extreme-row", "zero-row")
WITH_LEVELS = (*BASIC, "new-level")
WITH_NONFINITE = (*BASIC, "nonfinite")


@dataclass(frozen=True)
class EntryPoint:
    """How to run one public entry point on a frame with a fixed seed, and what it outputs."""

    run: Callable[[pd.DataFrame], Any]
    data: Callable[[int], pd.DataFrame] = linear
    kinds: tuple[str, ...] = BASIC
    encoders: tuple[np.ndarray, ...] = ()
    views: Callable[[Any], Mapping[str, str]] = default_views
    #: attributes left out of the pickled state: a Trajectory's documented NON-PRIVATE field
    skip: tuple[str, ...] = ("Trajectory.diagnostics",)
    examples: int = 2  # Hypothesis examples beyond the fixed worst cases
    needs: str | None = None  # an optional dependency ("torch", "dask")
    releases: bool = True  # False: every run raises a public-input error (nothing released)
    ignore: tuple[str, ...] = ()  # components outside the guarantee by design (say why)
    slow: bool = False  # run only with -m slow (e.g. PLD calibration on every run)
    #: components compared under replay only: their shape follows released values
    replay_only: tuple[str, ...] = ()


# -- how frames become each entry point's inputs ------------------------------------------------
def _columns(frame: pd.DataFrame, prefix: str) -> np.ndarray:
    # fresh writable float64 copies: the same inputs on every run
    return np.array(frame[[c for c in frame.columns if c.startswith(prefix)]], dtype=np.float64)


def xy(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    return _columns(frame, "x"), np.array(frame["y"], dtype=np.float64)


def xyz(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return (*xy(frame), _columns(frame, "z"))


def algorithm(func: Callable[..., Any], **params: Any) -> Callable[[pd.DataFrame], Any]:
    """``func(X, y, **params, rng=SEED)``."""
    return lambda frame: func(*xy(frame), rng=SEED, **params)


def iv_algorithm(func: Callable[..., Any], **params: Any) -> Callable[[pd.DataFrame], Any]:
    """``func(X, y, Z, **params, rng=SEED)`` with a ones column in X and Z."""

    def run(frame: pd.DataFrame) -> Any:
        X, y, Z = xyz(frame)
        ones = np.ones((len(y), 1))
        return func(np.hstack([X, ones]), y, np.hstack([Z, ones]), rng=SEED, **params)

    return run


def loss_method(func: Callable[..., Any], loss: Any, **params: Any) -> Callable[..., Any]:
    """A per-example-loss optimiser: ``func(loss, X, y, **params, rng=SEED)``."""
    return lambda frame: func(loss, *xy(frame), rng=SEED, **params)


def minimize(loss: Any, response: Callable = np.asarray, **options: Any) -> Callable[..., Any]:
    """``dpfit.minimize(loss, (X, response(y)), rho=RHO, random_state=SEED, **options)``."""

    def run(frame: pd.DataFrame) -> Any:
        X, y = xy(frame)
        return dpfit.minimize(loss, (X, response(y)), rho=RHO, random_state=SEED, **options)

    return run


def estimator(**params: Any) -> Callable[[pd.DataFrame], Any]:
    """``DPLinearRegression(**params).fit(X, y)``: the fitted estimator is the release."""
    return lambda frame: dpfit.DPLinearRegression(rho=RHO, random_state=SEED, **params).fit(
        *xy(frame)
    )


def iv_estimator(**params: Any) -> Callable[[pd.DataFrame], Any]:
    def run(frame: pd.DataFrame) -> Any:
        X, y, Z = xyz(frame)
        model = dpfit.DPIVRegression(rho=RHO, random_state=SEED, **params)
        return model.fit(X, y, Z=Z)

    return run


def formula(api: Callable[..., Any], text: str, **params: Any) -> Callable[[pd.DataFrame], Any]:
    """``dpfit.ols`` / ``dpfit.iv`` on the frame itself."""
    return lambda frame: api(text, frame, rho=RHO, random_state=SEED, **params)


@dataclass(frozen=True)
class CommandLine:
    """What a ``dpfit`` command showed: exit status, standard output and error."""

    status: int
    stdout: str
    stderr: str


_CLI_DIR = Path(tempfile.mkdtemp(prefix="dpfit-neighbours-"))


def cli(command: str) -> Callable[[pd.DataFrame], CommandLine]:
    """``dpfit COMMAND DATA.csv OPTIONS`` in-process; D and D' are written to the same path."""
    from dpfit.cli import main

    name, *options = shlex.split(command)

    def run(frame: pd.DataFrame) -> CommandLine:
        path = _CLI_DIR / "data.csv"
        frame.to_csv(path, index=False, float_format="%.17g")
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main([name, str(path), *options])
        return CommandLine(status, out.getvalue(), err.getvalue())

    return run


def positive(frame: pd.DataFrame) -> pd.DataFrame:
    """The exposure ``t`` as |t| + 1e-300: every neighbour keeps a valid (positive) exposure,
    since a zero, negative or missing one is refused (as a missing cell of any column is);
    a record-wise map, so D and D' stay neighbours."""
    return frame.assign(t=np.abs(frame["t"]) + 1e-300)


def no_views(obj: Any) -> dict[str, str]:
    return {}


# -- optional integrations ----------------------------------------------------------------------
@dataclass(frozen=True)
class TorchRun:
    """What a private PyTorch run shows: the trained parameters, its accounting, the optimizer."""

    parameters: list[np.ndarray]
    ledger: Any
    epsilon: float
    statement: str
    optimizer: dict[str, Any]  # the optimizer's public attributes (it is not picklable)


def private_linear_training(X: np.ndarray, y: np.ndarray, **options: Any) -> Any:
    """``dpfit.torch.make_private`` on a float64 linear model: SGD (lr 0.1), mean squared
    error, clip 1, batches of 10, ``random_state=SEED`` unless ``options`` say otherwise."""
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    from dpfit.torch import make_private

    model = torch.nn.Linear(X.shape[1], 1, dtype=torch.float64)
    data = TensorDataset(torch.from_numpy(X), torch.from_numpy(y)[:, None])
    return make_private(
        model,
        torch.optim.SGD(model.parameters(), lr=0.1),
        DataLoader(data, batch_size=10),
        loss_fn=torch.nn.functional.mse_loss,
        clip=1.0,
        **{"random_state": SEED, **options},
    )


def torch_training(**options: Any) -> Callable[[pd.DataFrame], TorchRun]:
    """``dpfit.torch.make_private`` on a linear model, batches of 10, two epochs of training."""

    def run(frame: pd.DataFrame) -> TorchRun:
        import torch

        torch.manual_seed(0)
        training = private_linear_training(*xy(frame), epochs=2, **options)
        for _ in range(2):
            for _batch in training.data_loader:
                training.optimizer.zero_grad()
                training.optimizer.step()
        return TorchRun(
            parameters=[p.detach().numpy().copy() for p in training.model.parameters()],
            ledger=training.ledger,
            epsilon=training.epsilon(1e-5),
            statement=training.statement(),
            optimizer={k: v for k, v in vars(training.optimizer).items() if not k.startswith("_")},
        )

    return run


def dask_frame(frame: pd.DataFrame) -> Any:
    import dask.dataframe as dd

    return dd.from_pandas(frame, npartitions=1)  # each step rebuilds the design per partition


def dask_arrays(frame: pd.DataFrame) -> tuple[Any, Any]:
    import dask.array as da

    X, y = xy(frame)
    return da.from_array(X, chunks=(20, -1)), da.from_array(y, chunks=20)


def declared(frame: pd.DataFrame, column: str, levels: list[str]) -> pd.DataFrame:
    """``column`` as a categorical with declared ``levels`` (others become missing)."""
    values = frame[column].where(frame[column].isin(levels))
    return frame.assign(**{column: values.astype(pd.CategoricalDtype(levels))})


def on_dask(run: Callable[[pd.DataFrame], Any]) -> Callable[[pd.DataFrame], Any]:
    """``run`` under Dask's synchronous scheduler (no threads: deterministic and fast)."""

    def wrapped(frame: pd.DataFrame) -> Any:
        import dask

        with dask.config.set(scheduler="synchronous"):
            return run(frame)

    return wrapped


# -- the registry -------------------------------------------------------------------------------
KL_LOSS = SquaredLoss(y_bound=1.0, radius=2.0)
FTRL_LOSS = SquaredLoss(x_bound=1.0, y_bound=1.0, radius=2.0)
FTRL = {"nu-dpftrl": nu_dpftrl(0.1, steps=8), "dp-sgd": dpsgd(8), "tree": tree_aggregation(8)}
TORCH_MECHANISM = nu_dpftrl(0.1, steps=8)  # 2 epochs x 4 batches of 10
N = 40  # rows of the default data (``linear``): the public n of add/remove entry points
ADD_REMOVE = {"relation": "add-remove", "n_public": N}
IV_BOUNDS = {"bounds": {"x0": (-5, 5), "z0": (-4, 4), "z1": (-4, 4)}, "y_bounds": (-8, 8)}
GD = {"clip": 5.0, "steps": 40, "m": 4, "burn_in": 0}
DASK_GD = {"clip": 5.0, "steps": 2, "m": 2, "burn_in": 0}  # one Dask reduction per step
DASK_KINDS = ("extreme-cell", "nonfinite")
BOUNDED = {"bounds": [(-3, 3)] * 3, "y_bounds": (-6, 6)}
GLM = {"steps": 20, "m": 4, "burn_in": 0}  # a short descent: 20 gradient releases
POISSON = {"family": "poisson", "count_bound": 5.0}
SSP = {"rho": RHO, "x_bound": 2.0, "y_bound": 3.0}
TWO_STAGE = {"clip_theta": 2.0, "clip_beta": 2.0, "step_size_theta": 0.5, "step_size_beta": 0.5}
FTRL_RUN = {"loss": FTRL_LOSS, "clip": 1.0, "epochs": 4, "batch_size": 20, "step_size": 0.5}
KL = {"gamma": 1.0, "kappa": 2.0, "loss_bound": 1.0}
#: KL-Spider stops early on a noisy release: with the same seed, D and D' may release different
#: numbers of iterates (post-processing); the pickled iterates and the repr are compared under
#: replay, where the releases and so the stop coincide.
EARLY_STOP = ("pickled state", "repr")
#: The population interval's checks compare released quantities with thresholds (e.g. the
#: meat's degrees of freedom with 4): with the same seed, D' releases numbers a sensitivity
#: away from D's, and one near its threshold can flip the one CoverageWarning's list of
#: reasons (post-processing). The warnings and the texts that repeat them are compared under
#: replay, where the releases, and so the reasons, coincide.
CHECKED = ("warnings", "pickled state", "summary", "summary (html, latex)")
#: dp_ftrl with (epsilon, delta) picks nu itself (select_nu for T = 8, k = 4, b = 2: 4 epochs of
#: 2 batches); its encoder is that mechanism's, not the nu = 0.1 of the other entries.
FTRL_AUTO = nu_dpftrl(select_nu(8, participations=4, separation=2).nu, steps=8)


def _kl_data(seed: int) -> pd.DataFrame:
    return unit_ball(seed, n=5000)  # smaller n makes KL-Spider's schedule trivial


def _one_pass_data(seed: int) -> pd.DataFrame:
    return linear(seed, n=300)


#: The documented non-private field of the preconditioned fit's Trajectory (a subclass).
PRECONDITIONED_SKIP = ("PreconditionedTrajectory.diagnostics",)

#: Functional API (algorithms, baselines, dpfit.minimize): each returns a Trajectory.
TRAJECTORIES: dict[str, EntryPoint] = {
    "dp_gd": EntryPoint(algorithm(alg.dp_gd, rho=RHO, clip=1.0, steps=10, runs=2)),
    "dp_gd add-remove": EntryPoint(
        algorithm(alg.dp_gd, rho=RHO, clip=1.0, steps=10, **ADD_REMOVE), kinds=ADD_REMOVE_KINDS
    ),
    "preconditioned_gd": EntryPoint(
        algorithm(
            preconditioned_gd, rho=RHO, row_bound=2.0, steps=20, m=4, interval_variant="formal"
        ),
        skip=PRECONDITIONED_SKIP,
    ),
    "preconditioned_gd add-remove": EntryPoint(
        algorithm(preconditioned_gd, rho=RHO, row_bound=2.0, clip=1.0, steps=20, m=4, **ADD_REMOVE),
        kinds=ADD_REMOVE_KINDS,
        skip=PRECONDITIONED_SKIP,
    ),
    "dp_ambssgd": EntryPoint(
        algorithm(alg.dp_ambssgd, rho=RHO, feature_scale=2.0, residual_bound=10.0, steps=4),
        data=_one_pass_data,
    ),
    "dp_ambssgd parallel": EntryPoint(
        algorithm(
            alg.dp_ambssgd,
            rho=RHO,
            feature_scale=2.0,
            residual_bound=10.0,
            steps=4,
            accounting="parallel",
        ),
        data=_one_pass_data,
    ),
    "dp_ssgd rho": EntryPoint(algorithm(alg.dp_ssgd, rho=RHO, clip=1.0, step_size=0.05)),
    "dp_ssgd epsilon-delta": EntryPoint(
        algorithm(alg.dp_ssgd, epsilon=1.0, delta=1e-3, clip=1.0, step_size=0.05),
        data=_one_pass_data,
    ),
    "dp_two_stage_gd": EntryPoint(
        iv_algorithm(
            alg.dp_two_stage_gd, rho_theta=0.25, rho_beta=0.25, steps=6, runs=2, **TWO_STAGE
        ),
        data=instrumental,
    ),
    "dp_second_stage_gd": EntryPoint(
        iv_algorithm(
            alg.dp_second_stage_gd,
            first_stage=np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]),
            rho=RHO,
            clip=2.0,
            steps=6,
            step_size=0.5,
        ),
        data=instrumental,
    ),
    "friendlycore_2sls": EntryPoint(
        iv_algorithm(baselines.friendlycore_2sls, rho=RHO, radius=5.0, bound=50.0),
        data=instrumental,
    ),
    "adaptive_gd": EntryPoint(loss_method(alg.adaptive_gd, KL_LOSS, rho=RHO), data=_kl_data),
    "kl_spider": EntryPoint(
        loss_method(alg.kl_spider, KL_LOSS, rho=RHO, **KL), data=_kl_data, replay_only=EARLY_STOP
    ),
    "proximal_point": EntryPoint(
        loss_method(alg.proximal_point, KL_LOSS, rho=RHO, **{**KL, "kappa": 3.0}, inner_cap=4),
        data=lambda s: unit_ball(s, n=200),
    ),
    "noisy_gd": EntryPoint(loss_method(alg.noisy_gd, KL_LOSS, rho=RHO, steps=8)),
    "noisy_gd add-remove": EntryPoint(
        loss_method(alg.noisy_gd, KL_LOSS, rho=RHO, steps=8, **ADD_REMOVE), kinds=ADD_REMOVE_KINDS
    ),
    **{
        f"dp_ftrl {name}": EntryPoint(
            algorithm(alg.dp_ftrl, rho=RHO, mechanism=mech, **FTRL_RUN),
            encoders=(mech.encoder_matrix(),),
        )
        for name, mech in FTRL.items()
    },
    "dp_ftrl epsilon-delta": EntryPoint(
        algorithm(alg.dp_ftrl, epsilon=2.0, delta=1e-3, **FTRL_RUN),
        encoders=(FTRL_AUTO.encoder_matrix(),),
    ),
    "minimize adaptive-gd": EntryPoint(minimize(KL_LOSS), data=_kl_data),
    "minimize kl-spider": EntryPoint(
        minimize(KL_LOSS, method="kl-spider", **KL), data=_kl_data, replay_only=EARLY_STOP
    ),
    "minimize noisy-gd logistic": EntryPoint(
        minimize(LogisticLoss(l2=0.01), response=np.sign, method="noisy-gd", steps=8)
    ),
    "ssp": EntryPoint(algorithm(baselines.ssp, **SSP)),
    "ssp add-remove": EntryPoint(
        algorithm(baselines.ssp, **SSP, **ADD_REMOVE), kinds=ADD_REMOVE_KINDS
    ),
    "adassp": EntryPoint(algorithm(baselines.adassp, **SSP)),
    "adassp add-remove": EntryPoint(
        algorithm(baselines.adassp, **SSP, **ADD_REMOVE), kinds=ADD_REMOVE_KINDS
    ),
    "adassp_population": EntryPoint(
        algorithm(adassp_population, rho=RHO, x_bound=2.0),
        skip=("AdasspTrajectory.diagnostics",),
    ),
    "adassp_population add-remove": EntryPoint(
        algorithm(adassp_population, rho=RHO, x_bound=2.0, **ADD_REMOVE),
        kinds=ADD_REMOVE_KINDS,
        skip=("AdasspTrajectory.diagnostics",),
    ),
    "adassp_paper (refused: data-derived bounds)": EntryPoint(
        algorithm(paper_only.adassp_paper, rho=RHO), releases=False
    ),
    "fixed_clip_sgd": EntryPoint(
        algorithm(
            baselines.fixed_clip_sgd, rho=RHO, clip=1.0, steps=8, step_size=0.1, sampling_rate=0.5
        )
    ),
    # the NON-PRIVATE twin of DP-AMBSSGD: only what it says besides its estimate is checked
    "onepass_sgd (non-private)": EntryPoint(
        algorithm(baselines.onepass_sgd, feature_scale=2.0, steps=4),
        data=_one_pass_data,
        skip=("Trajectory.diagnostics", "Trajectory.iterates", "Trajectory.estimate"),
        views=no_views,
        releases=False,
        ignore=("warnings",),  # plain SGD may overflow: it claims no privacy
    ),
    "dp_glm logit margins": EntryPoint(
        algorithm(dp_glm, rho=RHO, margins=True, **GLM), data=binary
    ),
    "dp_glm probit": EntryPoint(algorithm(dp_glm, rho=RHO, link="probit", **GLM), data=binary),
    # the Poisson clips follow the released mean count and scale: the gradient's, bread's and
    # meat's sensitivities (and so the ledger's rho in floats) are compared under replay
    "dp_glm poisson offset": EntryPoint(
        lambda frame: dp_glm(
            _columns(frame, "x"),
            np.array(frame["y"]),
            offset=np.log1p(np.abs(frame["t"])),
            rng=SEED,
            rho=RHO,
            **POISSON,
            **GLM,
        ),
        data=counts,
        replay_only=("privacy claim",),
    ),
    "dp_glm add-remove": EntryPoint(
        algorithm(dp_glm, rho=RHO, **GLM, **ADD_REMOVE), data=binary, kinds=ADD_REMOVE_KINDS
    ),
    "dask dp_gd": EntryPoint(
        on_dask(
            lambda f: alg.dp_gd(*dask_arrays(f), rho=RHO, clip=1.0, steps=4, n_public=N, rng=SEED)
        ),
        kinds=WITH_NONFINITE,
        needs="dask",
    ),
}

#: Estimators (scikit-learn contract): each returns the fitted estimator.
ESTIMATORS: dict[str, EntryPoint] = {
    "DPLinearRegression gd": EntryPoint(estimator(**GD)),
    "DPLinearRegression gd checkpoints formal": EntryPoint(
        estimator(**GD, interval="checkpoints", interval_variant="formal")
    ),
    "DPLinearRegression gd independent-runs bounds": EntryPoint(
        estimator(
            total_steps=40, m=4, interval="independent-runs", interval_variant="formal", **BOUNDED
        ),
        replay_only=CHECKED,
    ),
    "DPLinearRegression default bounds": EntryPoint(
        estimator(steps=40, **BOUNDED), replay_only=CHECKED
    ),
    "DPLinearRegression gd add-remove": EntryPoint(
        estimator(**GD, **ADD_REMOVE), kinds=ADD_REMOVE_KINDS
    ),
    "DPLinearRegression adassp": EntryPoint(estimator(method="adassp", interval=None, **BOUNDED)),
    # Omega's sensitivity is its clip, set from a released residual scale: the ledger's rho
    # (sensitivity^2 / 2 std^2 in floats) moves by an ulp with that release, so the privacy
    # claim is compared under replay, where the released values are the same on D and D'.
    "DPLinearRegression adassp population": EntryPoint(
        estimator(method="adassp", **BOUNDED), replay_only=("privacy claim",)
    ),
    "DPLinearRegression adassp add-remove": EntryPoint(
        estimator(method="adassp", interval=None, **ADD_REMOVE, **BOUNDED),
        kinds=ADD_REMOVE_KINDS,
        replay_only=CHECKED,  # the collinear terms named from the released X'X
    ),
    "DPLinearRegression ambssgd": EntryPoint(
        lambda frame: dpfit.DPLinearRegression(
            rho=1.0, method="ambssgd", interval=None, steps=2, random_state=SEED, **BOUNDED
        ).fit(*xy(frame)),
        data=lambda s: linear(s, n=1500),  # DP-STAT needs about 100 records per block
    ),
    # the CoverageWarning's checks read released values (as for the linear default)
    "DPLogisticRegression": EntryPoint(
        lambda frame: dpfit.DPLogisticRegression(
            rho=RHO, bounds=(-3, 3), random_state=SEED, **GLM
        ).fit(*xy(frame)),
        data=binary,
        replay_only=CHECKED,
    ),
    "DPPoissonRegressor exposure": EntryPoint(
        lambda frame: dpfit.DPPoissonRegressor(
            rho=RHO, bounds=(-3, 3), y_bounds=(0, 5), random_state=SEED, **GLM
        ).fit(_columns(frame, "x"), np.array(frame["y"]), exposure=np.array(positive(frame)["t"])),
        data=counts,
        replay_only=(*CHECKED, "privacy claim"),
    ),
    "DPIVRegression bounds": EntryPoint(
        iv_estimator(**IV_BOUNDS, method="2s-gd", steps=6, m=3), data=instrumental
    ),
    "DPIVRegression moments": EntryPoint(iv_estimator(**IV_BOUNDS), data=instrumental),
    "DPIVRegression unscaled moments": EntryPoint(
        iv_estimator(), data=instrumental, replay_only=CHECKED
    ),
    "DPIVRegression unscaled batched-means": EntryPoint(
        iv_estimator(method="2s-gd", steps=12, interval="batched-means", m=3, burn_in=0),
        data=instrumental,
    ),
    "dask DPLinearRegression": EntryPoint(
        on_dask(
            lambda f: dpfit.DPLinearRegression(
                rho=RHO, random_state=SEED, n_public=N, **DASK_GD
            ).fit(*dask_arrays(f))
        ),
        kinds=DASK_KINDS,
        examples=0,
        needs="dask",
    ),
}

#: Privacy units (all rows of one person): the panel frame, its unit column ``u``, a cap of
#: UNIT_CAP rows; row-level neighbours are unit-level ones too (a row is part of a unit).
UNIT_FIT = {
    "privacy_unit": UNIT,
    "max_rows_per_unit": UNIT_CAP,
    "bounds": {"x0": (-3, 3), "x1": (-3, 3)},
    "y_bounds": (-6, 6),
}
UNIT_ADD_REMOVE = {**UNIT_FIT, "relation": "add-remove", "n_public": 600}
#: Post-processing of the GLM's releases (doubts, the clipped families' gap) is compared under
#: replay, as for the row-level GLM entries.
CLIPPED = (*CHECKED, "privacy claim")
UNIT_GLM = {
    "privacy_unit": UNIT,
    "max_rows_per_unit": UNIT_CAP,
    "bounds": {"x0": (-3, 3), "x1": (-3, 3)},
    "margins": False,
    **GLM,
}
UNIT_REPLACE = (*BASIC, *UNIT_KINDS)


def grouped_estimator(**params: Any) -> Callable[[pd.DataFrame], Any]:
    """``DPLinearRegression(**params).fit(X, y, groups=frame.u)``."""

    def run(frame: pd.DataFrame) -> Any:
        model = dpfit.DPLinearRegression(rho=RHO, random_state=SEED, **params)
        return model.fit(*xy(frame), groups=frame[UNIT])

    return run


def unit_minimize(**options: Any) -> Callable[[pd.DataFrame], Any]:
    """``dpfit.minimize(KL_LOSS, (X, y), groups=frame.u, max_rows_per_unit=UNIT_CAP, ...)``."""

    def run(frame: pd.DataFrame) -> Any:
        return dpfit.minimize(
            KL_LOSS, xy(frame), rho=RHO, random_state=SEED, groups=frame[UNIT].to_numpy(),
            max_rows_per_unit=UNIT_CAP, privacy_unit=UNIT, **options,
        )  # fmt: skip

    return run


UNITS: dict[str, EntryPoint] = {
    # the filter's step count follows the released norms (as KL-Spider's early stop)
    "minimize adaptive-gd privacy_unit": EntryPoint(
        unit_minimize(), data=panel, kinds=UNIT_REPLACE, replay_only=(*EARLY_STOP, "ledger")
    ),
    "minimize noisy-gd privacy_unit add-remove": EntryPoint(
        unit_minimize(method="noisy-gd", steps=8, relation="add-remove", n_public=600),
        data=panel,
        kinds=UNIT_ADD_REMOVE_KINDS,
    ),
    "ols privacy_unit": EntryPoint(
        formula(dpfit.ols, "y ~ x0 + x1", **UNIT_FIT), data=panel, kinds=UNIT_REPLACE
    ),
    "ols privacy_unit entity effects": EntryPoint(
        formula(dpfit.ols, "y ~ x0 + x1 + EntityEffects", **UNIT_FIT),
        data=panel,
        kinds=UNIT_REPLACE,
    ),
    "ols privacy_unit add-remove": EntryPoint(
        formula(dpfit.ols, "y ~ x0 + x1", **UNIT_ADD_REMOVE),
        data=panel,
        kinds=UNIT_ADD_REMOVE_KINDS,
    ),
    "DPLinearRegression groups": EntryPoint(
        grouped_estimator(max_rows_per_unit=UNIT_CAP, bounds=[(-3, 3), (-3, 3)], y_bounds=(-6, 6)),
        data=panel,
        kinds=UNIT_REPLACE,
    ),
    "DPLinearRegression groups add-remove entity effects": EntryPoint(
        grouped_estimator(
            max_rows_per_unit=UNIT_CAP,
            bounds=[(-3, 3), (-3, 3)],
            y_bounds=(-6, 6),
            entity_effects=True,
            relation="add-remove",
            n_public=600,
        ),
        data=panel,
        kinds=UNIT_ADD_REMOVE_KINDS,
    ),
    "logit privacy_unit": EntryPoint(
        formula(dpfit.logit, "y ~ x0 + x1", **UNIT_GLM),
        data=binary_panel,
        kinds=UNIT_REPLACE,
        replay_only=CHECKED,
    ),
    "probit privacy_unit add-remove": EntryPoint(
        formula(dpfit.probit, "y ~ x0 + x1", **UNIT_GLM, relation="add-remove", n_public=300),
        data=binary_panel,
        kinds=UNIT_ADD_REMOVE_KINDS,
        replay_only=CLIPPED,
    ),
    "poisson privacy_unit": EntryPoint(
        formula(dpfit.poisson, "y ~ x0 + x1", **UNIT_GLM, y_bounds=(0, 5)),
        data=count_panel,
        kinds=UNIT_REPLACE,
        replay_only=CLIPPED,
    ),
    # an extreme exposure overflows a row's mean count: its unit's summed score is not finite
    "poisson privacy_unit exposure": EntryPoint(
        lambda frame: formula(
            dpfit.poisson, "y ~ x0 + x1", **UNIT_GLM, y_bounds=(0, 5), exposure="t"
        )(positive(frame)),
        data=count_panel,
        kinds=UNIT_REPLACE,
        replay_only=CLIPPED,
    ),
    "DPLogisticRegression groups": EntryPoint(
        lambda frame: dpfit.DPLogisticRegression(
            rho=RHO,
            random_state=SEED,
            max_rows_per_unit=UNIT_CAP,
            bounds=(-3, 3),
            margins=False,
            **GLM,
        ).fit(*xy(frame), groups=frame[UNIT]),
        data=binary_panel,
        kinds=UNIT_REPLACE,
        replay_only=CLIPPED,
    ),
    "DPPoissonRegressor groups add-remove": EntryPoint(
        lambda frame: dpfit.DPPoissonRegressor(
            rho=RHO,
            random_state=SEED,
            max_rows_per_unit=UNIT_CAP,
            bounds=(-3, 3),
            y_bounds=(0, 5),
            relation="add-remove",
            n_public=300,
            **GLM,
        ).fit(*xy(frame), groups=frame[UNIT]),
        data=count_panel,
        kinds=UNIT_ADD_REMOVE_KINDS,
        replay_only=CLIPPED,
    ),
    "dp_glm groups": EntryPoint(
        lambda frame: dp_glm(
            *xy(frame),
            rho=RHO,
            rng=SEED,
            intercept=False,
            groups=frame[UNIT].to_numpy(),
            max_rows_per_unit=UNIT_CAP,
            **GLM,
        ),
        data=binary_panel,
        kinds=UNIT_REPLACE,
        replay_only=CLIPPED,
    ),
}

#: Formula API: each returns a Result.
RESULTS: dict[str, EntryPoint] = {
    "ols": EntryPoint(formula(dpfit.ols, "y ~ x0 + x1 + x2", **GD)),
    "ols transforms": EntryPoint(
        formula(dpfit.ols, "y ~ x0 + I(x1 * 2) + np.log(np.abs(x2) + 1) - 1", **GD)
    ),
    "ols declared levels": EntryPoint(
        formula(dpfit.ols, "y ~ x0 + C(g, levels=['a', 'b', 'c'])", **GD),
        data=grouped,
        kinds=WITH_LEVELS,
    ),
    # refused whatever the data (levels read off the data; stateful transforms)
    "ols undeclared levels": EntryPoint(
        formula(dpfit.ols, "y ~ x0 + x1 + C(g)", **GD),
        data=grouped,
        kinds=WITH_LEVELS,
        releases=False,
    ),
    "ols stateful transform": EntryPoint(
        formula(dpfit.ols, "y ~ scale(x0) + x1", **GD), releases=False
    ),
    "iv": EntryPoint(
        formula(dpfit.iv, "y ~ 1 + [x0 ~ z0 + z1]", **IV_BOUNDS, method="2s-gd", steps=6, m=3),
        data=instrumental,
    ),
    "iv moments": EntryPoint(
        formula(dpfit.iv, "y ~ 1 + [x0 ~ z0 + z1]", **IV_BOUNDS), data=instrumental
    ),
    "iv declared levels": EntryPoint(
        formula(dpfit.iv, "y ~ 1 + C(g, levels=['a', 'b', 'c']) + [x0 ~ x1]"),
        data=grouped,
        kinds=WITH_LEVELS,
        replay_only=CHECKED,
    ),
    "iv stateful transform": EntryPoint(
        formula(dpfit.iv, "y ~ 1 + [x0 ~ center(z0) + z1]", method="2s-gd", steps=6, m=3),
        data=instrumental,
        releases=False,
    ),
    "logit": EntryPoint(
        formula(
            dpfit.logit, "y ~ x0 + x1 + x2", bounds={f"x{j}": (-3, 3) for j in range(3)}, **GLM
        ),
        data=binary,
        replay_only=CHECKED,
    ),
    "probit": EntryPoint(
        formula(dpfit.probit, "y ~ x0 + x1", bounds={"x0": (-3, 3), "x1": (-3, 3)}, **GLM),
        data=binary,
        replay_only=(*CHECKED, "privacy claim"),  # the clipped family's gap: as for Poisson
    ),
    # a yes/no outcome held as text, its labels declared in the formula (a record with
    # another label is the zero record)
    "logit declared text outcome": EntryPoint(
        formula(dpfit.logit, "C(g, levels=['no', 'yes']) ~ x0", bounds={"x0": (-3, 3)}, **GLM),
        data=lambda seed: binary(seed).assign(g=lambda f: np.where(f["y"] > 0, "yes", "no")),
        kinds=WITH_LEVELS,
        replay_only=CHECKED,
    ),
    "poisson exposure declared levels": EntryPoint(
        lambda frame: formula(
            dpfit.poisson,
            "y ~ x0 + C(g, levels=['a', 'b', 'c'])",
            exposure="t",
            bounds={"x0": (-3, 3)},
            y_bounds=(0, 5),
            **GLM,
        )(positive(frame)),
        data=lambda seed: counts(seed).assign(g=grouped(seed)["g"]),
        kinds=WITH_LEVELS,
        replay_only=(*CHECKED, "privacy claim"),
    ),
    "dask logit": EntryPoint(
        on_dask(
            lambda f: dpfit.logit(
                "y ~ x0 + x1",
                dask_frame(f),
                rho=RHO,
                random_state=SEED,
                n_public=N,
                bounds={"x0": (-3, 3), "x1": (-3, 3)},
                **GLM,
            )
        ),
        data=binary,
        kinds=DASK_KINDS,
        examples=0,
        needs="dask",
        replay_only=CHECKED,
    ),
    "dask DPPoissonRegressor": EntryPoint(
        on_dask(
            lambda f: dpfit.DPPoissonRegressor(
                rho=RHO, bounds=(-3, 3), y_bounds=(0, 5), n_public=N, random_state=SEED, **GLM
            ).fit(*dask_arrays(f))
        ),
        data=counts,
        kinds=DASK_KINDS,
        examples=0,
        needs="dask",
        replay_only=(*CHECKED, "privacy claim"),
    ),
    "dask ols": EntryPoint(
        on_dask(
            lambda f: dpfit.ols(
                "y ~ x0 + C(g)",
                dask_frame(declared(f, "g", ["a", "b", "c"])),
                rho=RHO,
                random_state=SEED,
                n_public=N,
                **DASK_GD,
            )
        ),
        data=grouped,
        kinds=("nonfinite", "new-level"),
        examples=0,
        needs="dask",
    ),
}

_FIT = f"--rho 0.5 --seed {SEED}"
#: Command line (``dpfit.cli.main`` in-process): each returns a CommandLine.
COMMANDS: dict[str, EntryPoint] = {
    "cli fit": EntryPoint(
        cli(f"fit --formula 'y ~ x0 + x1 + x2' --clip 5 --steps 40 --m 4 --burn-in 0 {_FIT}"),
        views=no_views,
        examples=1,
    ),
    "cli fit privacy-unit": EntryPoint(
        cli(
            f"fit --formula 'y ~ x0 + x1 + EntityEffects' --privacy-unit {UNIT} "
            f"--max-rows-per-unit {UNIT_CAP} --bound x0=-3,3 --bound x1=-3,3 --y-bounds=-6,6 "
            f"{_FIT}"
        ),
        data=panel,
        kinds=UNIT_REPLACE,
        views=no_views,
        examples=1,
    ),
    "cli fit logit privacy-unit": EntryPoint(
        cli(
            f"fit --family binomial --formula 'y ~ x0 + x1' --privacy-unit {UNIT} "
            f"--max-rows-per-unit {UNIT_CAP} --bound x0=-3,3 --bound x1=-3,3 --steps 20 "
            f"--burn-in 0 {_FIT}"
        ),
        data=binary_panel,
        kinds=UNIT_REPLACE,
        views=no_views,
        examples=1,
        replay_only=CHECKED,
    ),
    "cli fit adassp": EntryPoint(
        cli(
            "fit --formula 'y ~ x0 + x1' --method adassp --bound x0=-3,3 --bound x1=-3,3 "
            f"--y-bounds=-6,6 {_FIT}"
        ),
        views=no_views,
        examples=1,
        # the population interval's notes print the released clip inside wrapped text, so
        # the line breaks follow that release: compared under replay only
        replay_only=("pickled state", "privacy claim"),
    ),
    "cli fit binomial": EntryPoint(
        cli(
            "fit --family binomial --formula 'y ~ x0 + x1' --bound x0=-3,3 --bound x1=-3,3 "
            f"--steps 20 --m 4 --burn-in 0 {_FIT}"
        ),
        data=binary,
        views=no_views,
        examples=1,
        replay_only=("pickled state", "privacy claim"),
    ),
    "cli fit poisson": EntryPoint(
        lambda frame: cli(
            "fit --family poisson --formula 'y ~ x0 + x1' --bound x0=-3,3 --bound x1=-3,3 "
            f"--y-bounds 0,5 --exposure t --steps 20 --m 4 --burn-in 0 {_FIT}"
        )(positive(frame)),
        data=counts,
        views=no_views,
        examples=1,
        replay_only=("pickled state", "privacy claim"),
    ),
    "cli iv": EntryPoint(
        cli(
            "iv --formula 'y ~ 1 + [x0 ~ z0 + z1]' --method 2s-gd --steps 6 --m 3 "
            "--bound x0=-5,5 "
            f"--bound z0=-4,4 --bound z1=-4,4 --y-bounds=-8,8 {_FIT}"
        ),
        data=instrumental,
        views=no_views,
        examples=1,
    ),
}

#: Optional integrations.
INTEGRATIONS: dict[str, EntryPoint] = {
    "torch make_private fixed-epoch": EntryPoint(
        torch_training(rho=RHO, noise=TORCH_MECHANISM),
        encoders=(TORCH_MECHANISM.encoder_matrix(),),
        kinds=("extreme-cell", "extreme-row"),
        examples=1,
        needs="torch",
    ),
    "torch make_private poisson add-remove": EntryPoint(
        torch_training(sampling="poisson", n_public=N, epsilon=2.0, delta=1e-5),
        kinds=ADD_REMOVE_KINDS,
        examples=1,
        needs="torch",
        slow=True,  # each run calibrates the noise by PLD (seconds)
    ),
}

ENTRY_POINTS: dict[str, EntryPoint] = {
    **TRAJECTORIES,
    **ESTIMATORS,
    **RESULTS,
    **UNITS,
    **COMMANDS,
    **INTEGRATIONS,
}
