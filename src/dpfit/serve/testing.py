"""Running a real ``dpfit serve`` process, for tests, benchmarks and a steward's smoke checks.

:func:`running_server` starts ``python -m dpfit.cli serve start DIR`` on a free loopback
port, waits until it answers, and stops it on exit; the :class:`Server` it yields holds the
process, so a test can also kill it (``server.process.kill()``) to check what survives.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Server", "free_port", "running_server", "wait_until_up"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class Server:
    """A running ``dpfit serve``: its base URL, process and log file."""

    url: str
    process: subprocess.Popen
    log: Path


def wait_until_up(url: str, process: subprocess.Popen, *, timeout: float = 120.0) -> None:
    """Poll ``url/login`` until it answers; raise if the process ends or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"dpfit serve exited with status {process.returncode}")
        try:
            with urllib.request.urlopen(url + "/login", timeout=5):
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.2)
    raise RuntimeError(f"dpfit serve did not answer within {timeout:g} s")


@contextlib.contextmanager
def running_server(
    site: str | Path, *, database: str | None = None, workers: int = 1, log: Path | None = None
) -> Iterator[Server]:
    """Run ``dpfit serve`` on ``site`` (stopped on exit; killed if it will not stop)."""
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "dpfit.cli",
        "serve",
        "start",
        str(site),
        "--port",
        str(port),
        "--workers",
        str(workers),
    ]
    if database is not None:
        command += ["--database", database]
    log = Path(site) / f"server-{port}.log" if log is None else log
    with open(log, "ab") as out:
        process = subprocess.Popen(  # its own process group: its workers stop with it
            command, stdout=out, stderr=subprocess.STDOUT, env=os.environ, start_new_session=True
        )
    server = Server(url=f"http://127.0.0.1:{port}", process=process, log=log)
    try:
        wait_until_up(server.url, process)
        yield server
    finally:
        _stop(process)


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM the server's process group, then SIGKILL whatever is left of it."""
    for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 20)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            process.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    with contextlib.suppress(ProcessLookupError):  # workers that outlived their parent
        os.killpg(process.pid, signal.SIGKILL)
