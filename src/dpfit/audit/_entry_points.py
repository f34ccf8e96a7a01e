"""Calibrated black-box audit targets for every private entry point without an exact score.

Each target runs one public entry point on the canary pair of :mod:`dpfit.audit.canary`
with the canary at the public bounds (feature 1 on its own column, response beyond the
response bound, so the clipped record saturates every release it enters) and scores the
released estimate as :mod:`dpfit.audit._calibrated` describes. The configurations are
small (n = 100; 20,000 for the one-pass and KL-Spider fits, whose schedules need it) so that
an audit of 1000 runs per side takes seconds to minutes; the power depends on rho, not n.

=======================  ====================================================================
target                   entry point
=======================  ====================================================================
``adassp``, ``ssp``      :func:`dpfit.baselines.adassp`, :func:`~dpfit.baselines.ssp`
``DPLinearRegression``   the default fit (preconditioned DP-GD with population releases)
``linear-adassp``        ``DPLinearRegression(method="adassp")`` with its population releases
``linear-ambssgd``       ``DPLinearRegression(method="ambssgd")``
``ols``                  :func:`dpfit.ols` (a formula, bounds and the private bounds check)
``DPIVRegression``       the default noisy-moment 2SLS (standardisation, M~, Omega~)
``iv``                   :func:`dpfit.iv`
``adaptive_gd``,         :func:`dpfit.minimize` with these methods on least squares
``kl_spider``,
``proximal_point``
``dp_ssgd``              :func:`dpfit.algorithms.dp_ssgd`
``fixed_clip_sgd``       :func:`dpfit.baselines.fixed_clip_sgd` (charged without amplification)
``friendlycore_2sls``    :func:`dpfit.baselines.friendlycore.friendlycore_2sls`
``private_grid_search``  :func:`dpfit.baselines.private_grid_search`
``make_private``         :func:`dpfit.torch.make_private` (needs PyTorch)
=======================  ====================================================================
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ._calibrated import register_calibrated
from .canary import CanaryData, canary_data, canary_iv_data

__all__: list[str] = []

#: The canary's response: far beyond every response bound below (1), so it is clipped.
_RESPONSE = 1e3


def _linear_pair(config: Mapping[str, Any], rng: np.random.Generator) -> CanaryData:
    """d features in [-1, 1] (D0 ~ N(0, 0.3^2), clipped by the bounds) and the canary."""
    return canary_data(config["n"], config["d"], response=_RESPONSE, feature_scale=0.3, rng=rng)


def _iv_pair(config: Mapping[str, Any], rng: np.random.Generator) -> CanaryData:
    return canary_iv_data(config["n"], response=_RESPONSE, regressor=1.0, rng=rng)


def _bounds(d: int) -> list[tuple[float, float]]:
    return [(-1.0, 1.0)] * (d + 1)  # the d features and the canary column


_BASE = {"n": 100, "d": 2, "rho": 0.5}


def _model(estimator, side, source, **fit) -> tuple[np.ndarray, float]:
    model = estimator.set_params(random_state=source).fit(*side, **fit)
    return np.append(model.coef_, model.intercept_), float(model.privacy_.rho)


def _traj(traj) -> tuple[np.ndarray, float]:
    return traj.estimate, float(traj.ledger.rho)


# -- sufficient statistics -----------------------------------------------------------------
def _adassp(side, config, source):
    from ..baselines import adassp

    return _traj(adassp(*side, rho=config["rho"], x_bound=1.0, y_bound=1.0, rng=source))


def _ssp(side, config, source):
    from ..baselines import ssp

    return _traj(ssp(*side, rho=config["rho"], x_bound=1.0, y_bound=1.0, rng=source))


# -- the estimators and the formula API ----------------------------------------------------
def _linear(method: str | None, **params):
    def fit(side, config, source):
        from ..models import DPLinearRegression

        extra = {} if method is None else {"method": method}
        estimator = DPLinearRegression(
            rho=config["rho"],
            bounds=_bounds(config["d"]),
            y_bounds=(-1.0, 1.0),
            **extra,
            **params,
        )
        return _model(estimator, side, source)

    return fit


def _ols(side, config, source):
    import pandas as pd

    from ..models import ols

    X, y = side
    names = [f"x{j}" for j in range(X.shape[1])]
    frame = pd.DataFrame(X, columns=names).assign(y=y)
    res = ols(
        "y ~ " + " + ".join(names), frame, rho=config["rho"],
        bounds={name: (-1.0, 1.0) for name in names}, y_bounds=(-1.0, 1.0), random_state=source,
    )  # fmt: skip
    return res.params.to_numpy(), float(res.ledger.rho)


_IV_BOUNDS = {"x0": (-6.0, 6.0), "x1": (-1.0, 1.0), "z0": (-4.0, 4.0), "z1": (-1.0, 1.0)}


def _dpiv(side, config, source):
    from ..models import DPIVRegression

    X, y, Z = side
    estimator = DPIVRegression(rho=config["rho"], bounds=_IV_BOUNDS, y_bounds=(-8.0, 8.0))
    model = estimator.set_params(random_state=source).fit(X, y, Z=Z)
    return np.append(model.coef_, model.intercept_), float(model.privacy_.rho)


def _iv(side, config, source):
    import pandas as pd

    from ..models import iv

    X, y, Z = side
    frame = pd.DataFrame({"y": y, "x0": X[:, 0], "x1": X[:, 1], "z0": Z[:, 0], "z1": Z[:, 1]})
    res = iv(
        "y ~ 1 + [x0 + x1 ~ z0 + z1]", frame, rho=config["rho"], bounds=_IV_BOUNDS,
        y_bounds=(-8.0, 8.0), random_state=source,
    )  # fmt: skip
    return res.params.to_numpy(), float(res.ledger.rho)


# -- dpfit.minimize and the baselines --------------------------------------------------------
def _least_squares_gradients(w: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    return X * (X @ w - y)[:, None]


def _least_squares_values(w: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    return 0.5 * (X @ w - y) ** 2


def _loss(lipschitz: float = 1.0):
    from ..losses import FunctionLoss

    return FunctionLoss(
        grads=_least_squares_gradients,
        values=_least_squares_values,
        lipschitz=lipschitz,
        smoothness=1.0,
    )


def _minimize(method: str, **options):
    def fit(side, config, source):
        from ..optimize import minimize

        return _traj(
            minimize(
                _loss(), side, rho=config["rho"], method=method, random_state=source, **options
            )
        )

    return fit


_KL = {"gamma": 1.0, "kappa": 2.0, "loss_bound": 1.0}


def _ssgd(side, config, source):
    from ..algorithms.ssgd import dp_ssgd

    return _traj(dp_ssgd(*side, clip=1.0, step_size=0.1, rho=config["rho"], rng=source))


def _fixed_clip(side, config, source):
    from ..baselines.fixed_clip_sgd import fixed_clip_sgd

    return _traj(
        fixed_clip_sgd(
            *side,
            rho=config["rho"],
            clip=1.0,
            steps=5,
            step_size=0.5,
            sampling_rate=0.5,
            rng=source,
        )
    )


def _friendlycore(side, config, source):
    from ..baselines.friendlycore import friendlycore_2sls

    return _traj(friendlycore_2sls(*side, rho=config["rho"], radius=2.0, bound=4.0, rng=source))


def _grid_search(side, config, source):
    from ..baselines.private_grid_search import private_grid_search

    result = private_grid_search(
        _loss(), *side, rho=config["rho"], value_bound=2.0, method="noisy-gd", rng=source,
        candidates=[{"steps": 2, "step_size": 0.1}, {"steps": 4, "step_size": 0.2}],
    )  # fmt: skip
    return np.append(result.estimate, result.noisy_losses), float(result.ledger.rho)


def _torch(side, config, source):
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    from ..torch import make_private

    X, y = (torch.from_numpy(np.ascontiguousarray(a)) for a in side)
    model = torch.nn.Linear(X.shape[1], 1, dtype=torch.float64)
    torch.nn.init.zeros_(model.weight)
    torch.nn.init.zeros_(model.bias)
    loader = DataLoader(TensorDataset(X, y[:, None]), batch_size=config["n"] // 2)
    run = make_private(
        model, torch.optim.SGD(model.parameters(), lr=0.5), loader,
        loss_fn=torch.nn.functional.mse_loss, clip=1.0, epochs=2, rho=config["rho"],
        noise="dp-sgd", random_state=source,
    )  # fmt: skip
    for _ in range(2):
        for _ in run.data_loader:
            run.optimizer.step()
    weights = np.concatenate([p.detach().numpy().ravel() for p in model.parameters()])
    return weights, float(run.ledger.rho)


_TARGETS = [
    ("adassp", "dpfit.baselines.adassp (Wang 2018), x_bound = y_bound = 1", _linear_pair, _adassp),
    ("ssp", "dpfit.baselines.ssp, x_bound = y_bound = 1", _linear_pair, _ssp),
    ("DPLinearRegression", "DPLinearRegression's default fit, bounds [-1, 1]", _linear_pair,
     _linear(None, steps=60, burn_in=10)),
    ("linear-adassp", "DPLinearRegression(method='adassp') with its population releases",
     _linear_pair, _linear("adassp")),
    ("linear-ambssgd", "DPLinearRegression(method='ambssgd')", _linear_pair,
     _linear("ambssgd", interval=None), {"n": 20_000}),
    ("ols", "dpfit.ols with bounds and its private bounds check", _linear_pair, _ols),
    ("DPIVRegression", "DPIVRegression's default noisy-moment 2SLS, with bounds", _iv_pair, _dpiv),
    ("iv", "dpfit.iv with bounds and its private bounds check", _iv_pair, _iv),
    ("adaptive_gd", "dpfit.minimize(method='adaptive-gd') on least squares", _linear_pair,
     _minimize("adaptive-gd")),
    ("kl_spider", "dpfit.minimize(method='kl-spider') on least squares", _linear_pair,
     _minimize("kl-spider", **_KL), {"n": 20_000}),
    ("proximal_point", "dpfit.minimize(method='proximal-point') on least squares",
     _linear_pair, _minimize("proximal-point", inner_cap=4, **_KL)),
    ("dp_ssgd", "dpfit.algorithms.dp_ssgd, clip 1", _linear_pair, _ssgd),
    ("fixed_clip_sgd", "dpfit.baselines.fixed_clip_sgd, clip 1, sampling rate 0.5",
     _linear_pair, _fixed_clip),
    ("friendlycore_2sls", "dpfit.baselines.friendlycore.friendlycore_2sls", _iv_pair,
     _friendlycore),
    ("private_grid_search", "dpfit.baselines.private_grid_search over two noisy-GD runs",
     _linear_pair, _grid_search),
    ("make_private", "dpfit.torch.make_private (DP-SGD noise, 2 epochs of 2 batches)",
     _linear_pair, _torch),
]  # fmt: skip

for _name, _description, _data, _fit, *_defaults in _TARGETS:
    register_calibrated(_name, _description, {**_BASE, **dict(*_defaults)}, _data, _fit)
