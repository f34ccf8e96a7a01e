"""The layer can fail: each fix of issue 13, reverted in-process, makes the layer's check fail.

Every mutation monkeypatches one name back to the leaky behaviour (nothing in ``src`` is
touched) and runs the registry's own check on one worst-case neighbour; the check must
raise, naming the component that shows the leak. ``README.md`` describes the same check
against a real revert of a fix commit.
"""

from __future__ import annotations

import importlib
import warnings

import numpy as np
import pytest
from neighbour_data import Neighbour
from neighbour_registry import ENTRY_POINTS, SEED

import dpfit
from dpfit.algorithms import Trajectory
from dpfit.models import Result
from dpfit.testing import check_neighbours, mask_numbers

DP_GD = importlib.import_module("dpfit.algorithms.dp_gd")


def _layer(name: str, neighbour: Neighbour) -> None:
    entry = ENTRY_POINTS[name]
    frame = entry.data(SEED % 1000)
    check_neighbours(
        entry.run,
        (frame,),
        (neighbour.apply(frame),),
        encoders=entry.encoders,
        skip=entry.skip,
        views=entry.views,
        ignore=("repr",),  # the open Trajectory repr leak is not what these mutations test
    )


def _pickles_diagnostics(monkeypatch):  # finding 8: Result.__getstate__ kept diagnostics
    real = Result.__getstate__

    def getstate(self):
        return {**real(self), "diagnostics": dict(self.diagnostics)}

    monkeypatch.setattr(Result, "__getstate__", getstate)


def _private_n(monkeypatch):  # finding 4: the sums are divided by the actual count
    monkeypatch.setattr(DP_GD, "public_n", lambda rows, n_public, relation: rows)


def _realised_spend(monkeypatch):  # finding 6: Trajectory.rho reports the odometer
    monkeypatch.setattr(Trajectory, "rho", property(lambda self: self.rho_spent))


def _understated(monkeypatch):  # a sensitivity 10x too small: a query moves by more
    real = DP_GD.mean_sensitivity
    monkeypatch.setattr(DP_GD, "mean_sensitivity", lambda *args: real(*args) / 10)


def _overflow_warning(monkeypatch):  # finding 8: numpy warnings left on
    real = DP_GD.dp_gd

    def dp_gd(X, y, **kw):
        with np.errstate(over="warn"):
            np.asarray(X, dtype=np.float64) * 2.0  # overflows for a record near 1.7e308
        return real(X, y, **kw)

    monkeypatch.setattr(dpfit.algorithms, "dp_gd", dp_gd)
    monkeypatch.setitem(
        ENTRY_POINTS,
        "dp_gd",
        ENTRY_POINTS["dp_gd"].__class__(
            lambda f: dp_gd(
                f[["x0", "x1", "x2"]].to_numpy(), f["y"].to_numpy(), rho=0.5, clip=1.0,
                steps=10, rng=SEED,
            )
        ),
    )  # fmt: skip


MUTATIONS = [
    (_pickles_diagnostics, "DPLinearRegression gd", Neighbour("extreme-row", -1, value=1.7e308),
     "pickled state"),
    (_private_n, "dp_gd add-remove", Neighbour("add", 0, value=1.7e308), "pickled state"),
    (_realised_spend, "adaptive_gd", Neighbour("extreme-cell", -1, "x0", 1.7e308),
     "privacy claim"),
    (_understated, "dp_gd", Neighbour("extreme-cell", -1, "y", 1e3), "declared sensitivity"),
    (_overflow_warning, "dp_gd", Neighbour("extreme-cell", -1, "x0", 1.7e308), "warnings"),
]  # fmt: skip


@pytest.mark.parametrize(
    "mutate, name, neighbour, shows", MUTATIONS, ids=[m[0].__name__.strip("_") for m in MUTATIONS]
)
def test_the_layer_catches_a_reverted_fix(mutate, name, neighbour, shows, monkeypatch):
    _layer(name, neighbour)  # the fixed library passes
    mutate(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(AssertionError, match=shows):
            _layer(name, neighbour)


def test_masking_keeps_what_is_not_a_number():
    # term names, levels and non-finite values survive the mask; noised numbers do not
    assert mask_numbers("x0  -1.5e+03 C(g)[T.b] nan inf 7") == "x0 # C(g)[T.b] nan inf #"
    assert mask_numbers("No. observations: 40 (public)") == "No. observations: # (public)"
