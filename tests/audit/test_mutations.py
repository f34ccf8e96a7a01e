"""Mutation tests: deliberately broken variants that the canary audits must catch.

Each mutation is applied to the library's own algorithm by monkeypatching one name in the
module that uses it, so the broken code path is the real one; none of them changes what
the ledger claims (the same entries and total rho), which is why only an audit of the
*outputs* can see them. The broken variants live here, never in ``src``.

Sizes: M = 2000 runs per side for DP-GD (T = 10, n = 50; about 1.5 CPU-s per scenario),
M = 400 for DP-AMBSSGD (about 6 CPU-s), M = 1000 for the other targets (1-3 CPU-s each).
"""

import importlib
import weakref

import numpy as np
import pytest

from dpfit.audit import audit
from dpfit.mechanisms import GaussianReleases
from dpfit.mechanisms import clip_factors as real_clip_factors
from dpfit.mechanisms import clip_residuals as real_clip_residuals
from dpfit.mechanisms import gaussian as real_gaussian
from dpfit.privacy import mean_sensitivity as real_mean_sensitivity

DP_GD = importlib.import_module("dpfit.algorithms.dp_gd")
KERNELS = importlib.import_module("dpfit.algorithms._kernels")  # DP-GD's clipped sums
LOSS_QUERIES = importlib.import_module("dpfit.algorithms._loss_queries")
TWO_STAGE = importlib.import_module("dpfit.algorithms._two_stage_core")
FTRL = importlib.import_module("dpfit.algorithms._ftrl_plan")  # where the run is planned
AMBSSGD = importlib.import_module("dpfit.algorithms.ambssgd")
STREAM_RELEASE = importlib.import_module("dpfit.mechanisms.stream")
SEED = 20240901


def noise_halved(module):
    def patch(monkeypatch):
        def gaussian(value, **kw):
            out = real_gaussian(value, **kw)  # charged as declared ...
            return value + 0.5 * (out - value)  # ... but only half the noise is released

        monkeypatch.setattr(module, "gaussian", gaussian)

    patch.__name__ = "noise_halved"
    return patch


def releases_noise_halved(monkeypatch):
    # DP-GD's steps (charged once as declared) each add only half of their noise
    real = GaussianReleases.release
    monkeypatch.setattr(
        GaussianReleases, "release", lambda self, value: value + 0.5 * (real(self, value) - value)
    )


def clip_skipped_for_the_canary(monkeypatch):
    def clip_factors(norms, clip):  # off-by-one: the last record is never clipped
        f = real_clip_factors(norms, clip)
        f[-1] = 1.0
        return f

    def clip_residuals(residuals, x_norms, clip, **buffers):  # DP-GD's buffered kernel
        last = residuals[-1]
        clipped = real_clip_residuals(residuals, x_norms, clip, **buffers)
        residuals[-1] = last
        return clipped

    monkeypatch.setattr(KERNELS, "clip_factors", clip_factors)
    monkeypatch.setattr(KERNELS, "clip_residuals", clip_residuals)


def _noise_once(monkeypatch, *, reuse):
    first = weakref.WeakKeyDictionary()  # one set of charged releases per run: its first draw
    real = GaussianReleases.release

    def release(self, value):
        out = real(self, value)
        if self not in first:
            first[self] = out - value
            return out
        return value + first[self] if reuse else np.asarray(value, dtype=float)

    monkeypatch.setattr(GaussianReleases, "release", release)


def noise_drawn_once_and_reused(monkeypatch):
    _noise_once(monkeypatch, reuse=True)  # the draw hoisted out of the loop


def noise_drawn_once_at_the_first_step(monkeypatch):
    _noise_once(monkeypatch, reuse=False)  # reliability 3.4's "noise added once"


def add_remove_calibration_claimed_as_replace_one(*modules):
    def patch(monkeypatch):
        def mean_sensitivity(clip, n, relation="replace-one", rows_per_unit=1):
            return real_mean_sensitivity(clip, n, "add-remove", rows_per_unit)  # half the truth

        for module in modules:  # every place the sensitivity is computed
            monkeypatch.setattr(module, "mean_sensitivity", mean_sensitivity)

    patch.__name__ = "add_remove_calibration_claimed_as_replace_one"
    return patch


def correlated_noise_halved(monkeypatch):
    # the stream's release (charged once as declared) adds only half of each step's noise
    real = STREAM_RELEASE.GaussianRows.release
    monkeypatch.setattr(
        STREAM_RELEASE.GaussianRows,
        "release",
        lambda self, value, noise, **kw: real(self, value, 0.5 * np.asarray(noise), **kw),
    )


def multi_participation_sensitivity_counted_once(monkeypatch):
    # Reliability P8: k participations calibrated as if each record joined one step.
    real = FTRL._participation
    monkeypatch.setattr(FTRL, "_participation", lambda *a: (1, *real(*a)[1:]))


@pytest.mark.parametrize(
    "target, options", [("dp_gd", {}), ("dp_gd", {"relation": "add-remove"})], ids=str
)
def test_correct_dp_gd_passes_every_check(target, options):
    res = audit(target, runs=2000, seed=SEED, **options)
    assert res.passed, res.table()
    # reliability 3.4 prototype: eps_lb(1e-5) about 1.0-1.4 for a correct rho = 0.5 run
    assert 0.5 < res.bounds[0].epsilon < res.claimed[1e-5]


CASES = [
    ("dp_gd", {}, releases_noise_halved, {"mu", "null-calibration"}),
    ("dp_gd", {}, clip_skipped_for_the_canary, {"nonparametric", "mu"}),
    ("dp_gd", {}, noise_drawn_once_and_reused, {"null-calibration"}),
    ("dp_gd", {}, noise_drawn_once_at_the_first_step, {"nonparametric", "mu", "null-calibration"}),
    ("dp_gd", {}, add_remove_calibration_claimed_as_replace_one(DP_GD), {"mu"}),
    ("noisy_gd", {}, noise_halved(LOSS_QUERIES), {"mu", "null-calibration"}),
    ("noisy_gd", {}, add_remove_calibration_claimed_as_replace_one(LOSS_QUERIES), {"mu"}),
    ("dp_two_stage_gd", {}, noise_halved(TWO_STAGE), {"mu", "null-calibration"}),
    (
        "dp_two_stage_gd",
        {},
        add_remove_calibration_claimed_as_replace_one(TWO_STAGE),
        {"mu"},
    ),
    ("dp_second_stage_gd", {}, noise_halved(TWO_STAGE), {"mu", "null-calibration"}),
    ("dp_ftrl", {"steps_per_epoch": 1}, correlated_noise_halved, {"mu", "null-calibration"}),
    ("dp_ftrl", {"steps_per_epoch": 1}, multi_participation_sensitivity_counted_once, {"mu"}),
    ("dp_ftrl", {}, correlated_noise_halved, {"nonparametric"}),
    ("dp_ftrl", {}, multi_participation_sensitivity_counted_once, {"nonparametric"}),
    ("dp_sgd", {"steps_per_epoch": 1}, correlated_noise_halved, {"mu", "null-calibration"}),
    ("dp_sgd", {"steps_per_epoch": 1}, multi_participation_sensitivity_counted_once, {"mu"}),
    ("dp_ambssgd", {}, noise_halved(AMBSSGD), {"mu", "null-calibration"}),
    ("dp_ambssgd", {}, add_remove_calibration_claimed_as_replace_one(AMBSSGD), {"mu"}),
]
#: Runs per side: DP-AMBSSGD costs about 7 ms a run, the others 0.3-2 ms.
RUNS = {"dp_gd": 2000, "dp_ambssgd": 400}


@pytest.mark.parametrize(
    "target, options, mutate, caught_by",
    CASES,
    ids=[f"{c[0]}-{c[2].__name__}-{len(c[1])}" for c in CASES],
)
def test_mutation_is_caught(target, options, mutate, caught_by, monkeypatch):
    mutate(monkeypatch)
    res = audit(target, runs=RUNS.get(target, 1000), seed=SEED, **options)
    assert not res.passed, res.table()
    assert caught_by <= set(res.failures), res.table()
