"""``dpfit audit --progress``: the bar has a total (releases of all runs, from a pilot of
two runs per side) and ends exactly at it."""

import contextlib

import pytest

from dpfit.cli import _console, main
from dpfit.cli.audit import releases_per_run


@pytest.fixture
def bars(monkeypatch):
    """Every progress bar the command opens, with the total it was given."""
    opened = []
    real = _console.release_progress

    @contextlib.contextmanager
    def spy(enabled, *, total, desc, unit="step"):
        with real(enabled, total=total, desc=desc, unit=unit) as bar:
            opened.append((total, bar))
            yield bar

    monkeypatch.setattr(_console, "release_progress", spy)
    return opened


@pytest.mark.parametrize(
    ("argv", "per_run"),
    [
        (["dp_gd", "--steps", "7", "--runs", "30"], 7),  # one release per step
        (["dp_two_stage_gd", "--steps", "5", "--runs", "20"], 10),  # two stages per step
    ],
)
def test_the_bar_has_a_total_and_reaches_it(bars, argv, per_run):
    runs = int(argv[-1])
    assert main(["audit", *argv, "--seed", "0", "--progress"]) in (0, 1)
    ((total, bar),) = bars
    assert total == 2 * runs * per_run
    assert bar.n == total


def test_no_pilot_without_a_bar(bars, monkeypatch):
    monkeypatch.setattr("dpfit.cli.audit.releases_per_run", lambda *a: pytest.fail("pilot ran"))
    monkeypatch.setattr("sys.stderr.isatty", lambda: False, raising=False)
    assert main(["audit", "dp_gd", "--runs", "20", "--seed", "0"]) in (0, 1)
    assert bars == [(None, None)]


def test_a_streamed_target_counts_its_one_matrix_release():
    """A correlated-noise run is one matrix release, seen by the bar when it is charged."""
    assert releases_per_run("dp_ftrl", {}) == 1
