"""The command line starts fast: ``--version``, ``--help`` and ``privacy`` import no heavy library.

Timing tests would be flaky on shared machines, so this checks the cause instead: which
modules ``python -X importtime`` reports (benchmarks/bench_cli_startup.py measures the time).
"""

import importlib.metadata
import subprocess
import sys

import pytest

import dpfit
from dpfit.cli.fit import BUNDLED

HEAVY = ("pandas", "sklearn", "scipy", "matplotlib", "formulaic", "tqdm")


def _imported(*argv: str) -> set[str]:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", *argv], capture_output=True, text=True, check=True
    )
    lines = [line for line in result.stderr.splitlines() if line.startswith("import time:")]
    return {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in lines}


@pytest.mark.parametrize(
    "args",
    [
        ["--version"],
        ["--help"],
        ["fit", "--help"],
        ["iv", "--help"],
        ["budget", "--help"],
        ["privacy", "--rho", "0.5"],
    ],
    ids=" ".join,
)
def test_cli_imports_no_heavy_library(args):
    imported = _imported("-m", "dpfit", *args)
    assert "dpfit" in imported
    assert not imported & set(HEAVY), sorted(imported & set(HEAVY))


def test_version_and_help_import_no_numpy():
    assert "numpy" not in _imported("-m", "dpfit", "--version")
    assert "numpy" not in _imported("-m", "dpfit", "--help")


def test_import_dpfit_is_lazy_and_complete():
    assert not _imported("-c", "import dpfit") & set(HEAVY)
    for name in dpfit.__all__:
        assert getattr(dpfit, name) is not None
    assert dpfit.algorithms.dp_gd is not None  # subpackages load on first use
    assert set(dpfit.__all__) <= set(dir(dpfit))
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        dpfit.nonexistent  # noqa: B018


def test_version_matches_the_installed_metadata():
    assert dpfit.__version__ == importlib.metadata.version("dpfit")


def test_bundled_names_match_the_datasets():
    from dpfit.datasets.real import DATASETS

    assert tuple(sorted(DATASETS)) == BUNDLED
