"""The runner: determinism, resume after an interruption or a kill, failures, validation."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import warnings

import pandas as pd
import pytest

from dpfit.exceptions import InsecureRandomnessWarning
from dpfit.experiments import TrialError, run, trial_seed


def _run(exp, store, **kw):
    return run(exp, scale="smoke", store_path=store, progress=False, **kw)


def test_same_seeds_same_results_serial_and_parallel(tmp_path):
    a = _run("mechanism-check", tmp_path / "a.sqlite", jobs=1)
    b = _run(["mechanism-check"], tmp_path / "b.sqlite", jobs=2)
    df = a.results["mechanism-check"]
    pd.testing.assert_frame_equal(df, b.results["mechanism-check"])
    assert a.ran == {"mechanism-check": 4} and b.jobs == 2
    expected = [
        trial_seed("mechanism-check", p, r)
        for p, r in a.experiments["mechanism-check"].tasks("smoke")
    ]
    assert df["seed"].tolist() == expected
    # different replicates of one grid point got different noise
    assert df.groupby("rho")["empirical_variance"].nunique().eq(2).all()


def test_interrupted_run_resumes_with_only_the_missing_trials(tmp_path, harness):
    store = tmp_path / "s.sqlite"
    total = len(harness.COUNTING.tasks("smoke"))  # 9
    harness.STOP_AFTER[0] = 4  # the 5th trial "gets Ctrl-C"
    with pytest.raises(KeyboardInterrupt):
        _run(harness.COUNTING, store, jobs=1)
    done_before = list(harness.CALLS)
    assert len(done_before) == 4
    harness.STOP_AFTER[0] = None
    harness.CALLS.clear()
    again = _run(harness.COUNTING, store, jobs=1)
    assert again.ran == {"harness-counting": total - 4}
    assert again.reused == {"harness-counting": 4}
    assert not set(harness.CALLS) & set(done_before)  # no stored trial ran twice
    df = again.results["harness-counting"]
    assert len(df) == total and df["seed"].is_unique
    # the full run from scratch gives the same table
    harness.CALLS.clear()
    fresh = _run(harness.COUNTING, tmp_path / "fresh.sqlite", jobs=1)
    pd.testing.assert_frame_equal(df, fresh.results["harness-counting"])
    assert _run(harness.COUNTING, store, jobs=1).ran == {"harness-counting": 0}


HOLD_ENV = "DPFIT_HARNESS_HOLD_FROM"  # harness_experiments.HOLD_ENV

_KILLED_RUN = """
import json, sys
from dpfit.experiments import run
from harness_experiments import SLOW
# The version is pinned: engineers editing the shared tree change the source digest.
res = run(SLOW, scale="smoke", store_path=sys.argv[1], jobs=2, progress=False, version="pin")
print(json.dumps({"ran": res.ran[SLOW.name], "reused": res.reused[SLOW.name]}))
"""


def _rows(store):
    if not store.exists():
        return []
    try:
        with sqlite3.connect(store) as db:
            return db.execute("SELECT params, replicate, finished_at FROM trials").fetchall()
    except sqlite3.OperationalError:  # the file exists but the table is not created yet
        return []


def test_killed_run_resumes_with_only_the_missing_trials(tmp_path, subprocess_env):
    store = tmp_path / "s.sqlite"
    cmd = [sys.executable, "-c", _KILLED_RUN, str(store)]
    held = {**subprocess_env, HOLD_ENV: "5"}  # trials with k >= 5 wait for the kill
    proc = subprocess.Popen(cmd, env=held, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while len(_rows(store)) < 4 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the run and its worker processes
        proc.wait()
    before = _rows(store)
    total = 20
    assert 4 <= len(before) <= total // 2, "the run should be killed part-way"
    out = subprocess.run(cmd, env=subprocess_env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    stats = json.loads(out.stdout.strip().splitlines()[-1])
    assert stats == {"ran": total - len(before), "reused": len(before)}
    after = _rows(store)
    assert len(after) == total
    assert set(before) <= set(after)  # stored trials untouched (same finish times)


def test_failing_trial_raises_trial_error_and_keeps_earlier_trials(tmp_path, harness):
    import dataclasses

    def trial(params, seed):
        if params["x"] == 2.0:
            raise ValueError("boom")
        return {"m": 1.0}

    exp = dataclasses.replace(harness.COUNTING, trial=trial)
    with pytest.raises(TrialError, match=r"harness-counting.*replicate 0.*ValueError: boom"):
        _run(exp, tmp_path / "s.sqlite", jobs=1)
    assert len(_rows(tmp_path / "s.sqlite")) == 3  # the x = 1.0 replicates


def test_failing_trial_in_parallel(tmp_path, harness, subprocess_env):
    # A parallel failure: run in a subprocess so that the worker can import the trial.
    script = (
        "import dataclasses, sys\n"
        "from dpfit.experiments import run, TrialError\n"
        "from harness_experiments import SLOW\n"
        "exp = dataclasses.replace(SLOW, grid={**SLOW.grid, 'smoke': [{'sleep': 'x'}]})\n"
        "try:\n"
        "    run(exp, scale='smoke', store_path=sys.argv[1], jobs=2, progress=False)\n"
        "except TrialError as e:\n"
        "    print('TrialError', e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "s.sqlite")],
        env=subprocess_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "TrialError" in out.stdout and "ValueError" in out.stdout, out.stderr


def test_seeded_noise_warning_is_silenced_inside_trials_only(tmp_path, harness):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _run(harness.COUNTING, tmp_path / "s.sqlite", jobs=1)
    assert not [w for w in caught if issubclass(w.category, InsecureRandomnessWarning)]
    with pytest.warns(InsecureRandomnessWarning):
        harness.COUNTING.trial({"x": 1.0}, 0)  # outside the runner it still warns


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"names": "no-such-experiment"}, ValueError, "unknown experiment"),
        ({"names": []}, ValueError, "at least one"),
        ({"scale": "huge"}, ValueError, "scale"),
        ({"jobs": 0}, ValueError, "jobs"),
        ({"jobs": 1.5}, TypeError, "jobs"),
    ],
)
def test_bad_arguments_fail_before_any_trial(tmp_path, kwargs, exc, match):
    args = {"names": "mechanism-check", "scale": "smoke", "store_path": tmp_path / "s.sqlite"}
    with pytest.raises(exc, match=match):
        run(**{**args, **kwargs}, progress=False)
    assert _rows(tmp_path / "s.sqlite") == []
