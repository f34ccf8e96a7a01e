"""Row blocks of the in-memory kernels are sized from the machine's L2 cache and p."""

import numpy as np
import pytest

from dpfit.algorithms import _kernel_runs
from dpfit.algorithms._kernel_runs import _parse_size, cache_block_rows
from dpfit.algorithms._kernels import LeastSquaresSums, least_squares_block


@pytest.mark.parametrize("l2", [2**18, 2**19, 2**21])
@pytest.mark.parametrize("p", [10, 100, 1000, 4000])
def test_a_block_is_a_few_l2_caches_whatever_p(monkeypatch, l2, p):
    monkeypatch.setattr(_kernel_runs, "l2_bytes", lambda: l2)
    rows = cache_block_rows(p)
    low, high = _kernel_runs._BLOCK_ROWS
    assert low <= rows <= high
    # within the row bounds, a block is _BLOCK_L2_MULTIPLE x L2, to one row
    if low < rows < high:
        target = _kernel_runs._BLOCK_L2_MULTIPLE * l2
        assert target - 8 * p < rows * 8 * p <= target


def test_p_1000_no_longer_gets_16_mib_blocks(monkeypatch):
    # the old rule's floor of 2048 rows made every block 16 MiB at p = 1000
    monkeypatch.setattr(_kernel_runs, "l2_bytes", lambda: 2**19)
    assert cache_block_rows(1000) * 8 * 1000 <= 2**21


@pytest.mark.parametrize(
    "text, size", [("512K", 2**19), ("32768K\n", 2**25), ("1M", 2**20), ("4096", 4096), ("", None)]
)
def test_sysfs_sizes_parse(text, size):
    assert _parse_size(text) == size


def test_l2_read_from_sysfs_or_the_default(monkeypatch, tmp_path):
    for name, level, kind, size in [
        ("index0", "1", "Data", "32K"),
        ("index1", "1", "Instruction", "32K"),
        ("index2", "2", "Unified", "1024K"),
    ]:
        (tmp_path / name).mkdir()
        (tmp_path / name / "level").write_text(level)
        (tmp_path / name / "type").write_text(kind)
        (tmp_path / name / "size").write_text(size)
    monkeypatch.setattr(_kernel_runs, "_SYSFS_CACHE", tmp_path)
    assert _kernel_runs.l2_bytes.__wrapped__() == 2**20
    monkeypatch.setattr(_kernel_runs, "_SYSFS_CACHE", tmp_path / "missing")
    assert _kernel_runs.l2_bytes.__wrapped__() == _kernel_runs._DEFAULT_L2_BYTES


def test_a_wide_x_is_cut_into_cache_sized_blocks_with_the_same_sum():
    gen = np.random.default_rng(3)
    X = gen.standard_normal((1100, 1000))  # 8.8 MB: above the one-block limit
    y, theta = gen.standard_normal(1100), gen.standard_normal(1000) / 30
    sums = LeastSquaresSums(X, y, 40.0)
    assert len(sums._blocks) == -(-1100 // cache_block_rows(1000))
    total, clipped = sums(theta)
    ref = least_squares_block(X, y, theta, 40.0)
    scale = np.abs(X).T @ np.abs(X @ theta - y)
    np.testing.assert_array_less(np.abs(total - ref[:-1]), 1e-13 * scale)
    assert clipped == ref[-1] > 0


@pytest.mark.parametrize(
    "platform, answers, expected",
    [
        # Apple silicon: the cluster's L2 shared by its cores, each core's share
        ("darwin", {"hw.perflevel0.l2cachesize": 2**24, "hw.perflevel0.cpusperl2": 4}, 2**22),
        # Intel Mac: only the per-core L2
        ("darwin", {"hw.l2cachesize": 2**18}, 2**18),
        ("freebsd14", {"hw.l2cachesize": 2**20}, 2**20),
        ("darwin", {}, _kernel_runs._DEFAULT_L2_BYTES),  # sysctl says nothing
        ("win32", {"hw.l2cachesize": 2**20}, _kernel_runs._DEFAULT_L2_BYTES),  # not asked
    ],
)
def test_l2_read_from_sysctl_elsewhere_or_the_default(monkeypatch, platform, answers, expected):
    monkeypatch.setattr(_kernel_runs.sys, "platform", platform)
    monkeypatch.setattr(_kernel_runs, "_sysctl", answers.get)
    assert _kernel_runs.l2_bytes.__wrapped__() == expected


def test_sysctl_without_sysctlbyname_is_none():
    # glibc has no sysctlbyname: the lookup answers None instead of raising
    if _kernel_runs.sys.platform.startswith("linux"):
        assert _kernel_runs._sysctl("hw.l2cachesize") is None
    else:
        value = _kernel_runs._sysctl("hw.l2cachesize")
        assert value is None or value > 0
