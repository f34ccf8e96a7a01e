"""What every benchmark records beside its numbers: the machine, its load and the command.

Imported by the scripts of this folder (run as ``python benchmarks/bench_*.py``, so this
folder is on ``sys.path``). It imports nothing heavy: ``bench_ambssgd.py`` sets the BLAS
thread count before numpy is first imported.
"""

from __future__ import annotations

import os
import platform
import sys
from importlib import metadata
from pathlib import Path


def machine() -> dict:
    """CPU model, cores, memory, OS, Python and numpy versions, and the load average now."""
    cpuinfo = Path("/proc/cpuinfo")
    lines = cpuinfo.read_text().splitlines() if cpuinfo.exists() else []
    cpu = next(
        (line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")),
        platform.processor() or platform.machine(),
    )
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": metadata.version("numpy"),
        "load_average_at_start": os.getloadavg(),
    }


def command() -> str:
    """The command line that ran this benchmark (interpreter name and arguments)."""
    return " ".join([Path(sys.executable).name, *sys.argv])
