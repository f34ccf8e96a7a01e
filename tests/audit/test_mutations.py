"""Mutation tests: deliberately broken DP-GD variants that the canary audit must catch.

Each mutation is applied to the library's own :func:`dpfit.algorithms.dp_gd` by
monkeypatching one name in its module, so the broken code path is the real one; none of them
changes what the ledger claims (the same entries, the same total rho), which is why only an
audit of the *outputs* can see them. The broken variants live here, never in ``src``.

Sizes: M = 2000 runs per side of a T = 10, n = 50 run (about 1.5 CPU-s per scenario).
"""

import importlib
import weakref

import numpy as np
import pytest

from dpfit.audit import audit
from dpfit.mechanisms import clip_factors as real_clip_factors
from dpfit.mechanisms import gaussian as real_gaussian
from dpfit.privacy import mean_sensitivity as real_mean_sensitivity

DP_GD = importlib.import_module("dpfit.algorithms.dp_gd")
RUNS, SEED = 2000, 20240901


def noise_halved(monkeypatch):
    def gaussian(value, **kw):
        out = real_gaussian(value, **kw)  # charged as declared ...
        return value + 0.5 * (out - value)  # ... but only half the noise is released

    monkeypatch.setattr(DP_GD, "gaussian", gaussian)


def clip_skipped_for_the_canary(monkeypatch):
    def clip_factors(norms, clip):  # off-by-one: the last record is never clipped
        f = real_clip_factors(norms, clip)
        f[-1] = 1.0
        return f

    monkeypatch.setattr(DP_GD, "clip_factors", clip_factors)


def _noise_once(monkeypatch, *, reuse):
    first = weakref.WeakKeyDictionary()  # one ledger per run: its first noise draw

    def gaussian(value, **kw):
        out = real_gaussian(value, **kw)
        ledger = kw["ledger"]
        if ledger not in first:
            first[ledger] = out - value
            return out
        return value + first[ledger] if reuse else np.asarray(value, dtype=float)

    monkeypatch.setattr(DP_GD, "gaussian", gaussian)


def noise_drawn_once_and_reused(monkeypatch):
    _noise_once(monkeypatch, reuse=True)  # the draw hoisted out of the loop


def noise_drawn_once_at_the_first_step(monkeypatch):
    _noise_once(monkeypatch, reuse=False)  # reliability 3.4's "noise added once"


def add_remove_calibration_claimed_as_replace_one(monkeypatch):
    def mean_sensitivity(clip, n, relation="replace-one"):
        return real_mean_sensitivity(clip, n, "add-remove")  # clip / n, half the truth

    monkeypatch.setattr(DP_GD, "mean_sensitivity", mean_sensitivity)


def test_correct_dp_gd_passes_every_check():
    res = audit("dp_gd", runs=RUNS, seed=SEED)
    assert res.passed, res.table()
    # reliability 3.4 prototype: eps_lb(1e-5) about 1.0-1.4 for a correct rho = 0.5 run
    assert 0.5 < res.bounds[0].epsilon < res.claimed[1e-5]


def test_correct_dp_gd_under_add_remove_passes():
    res = audit("dp_gd", runs=RUNS, seed=SEED + 1, relation="add-remove")
    assert res.passed, res.table()


@pytest.mark.parametrize(
    "mutate, caught_by",
    [
        (noise_halved, {"mu", "null-calibration"}),
        (clip_skipped_for_the_canary, {"nonparametric", "mu"}),
        (noise_drawn_once_and_reused, {"null-calibration"}),
        (noise_drawn_once_at_the_first_step, {"nonparametric", "mu", "null-calibration"}),
        (add_remove_calibration_claimed_as_replace_one, {"mu"}),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_mutation_is_caught(mutate, caught_by, monkeypatch):
    mutate(monkeypatch)
    res = audit("dp_gd", runs=RUNS, seed=SEED)
    assert not res.passed, res.table()
    assert caught_by <= set(res.failures), res.table()
