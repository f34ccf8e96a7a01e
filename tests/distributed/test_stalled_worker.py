"""A worker that stops answering mid-fit ends the fit with a clear error, not a hang.

One worker of a LocalCluster (processes) is stopped with SIGSTOP part-way through DP-GD on
persisted rows, where each step calls the row-block holder on every worker directly (a Dask
actor). The call to the stopped worker was awaited with no deadline: the fit hung for good
with its budget charged. Now the worker, silent past ``dpfit.unresponsive-worker-timeout``,
is treated as lost: the fit raises ``WorkersUnresponsiveError`` and the budget keeps exactly
the releases drawn. Marked slow (starting worker processes takes seconds); about 20-40 s.
"""

import os
import signal
import threading
import time

import numpy as np
import pytest

distributed = pytest.importorskip("distributed", reason="dask[distributed] is not installed")

import dask  # noqa: E402
import dask.array as da  # noqa: E402

from dpfit import Budget  # noqa: E402
from dpfit.algorithms import dp_gd  # noqa: E402
from dpfit.distributed import (  # noqa: E402
    UNRESPONSIVE_WORKER_TIMEOUT,
    WorkersLostError,
    WorkersUnresponsiveError,
)
from dpfit.mechanisms import recording  # noqa: E402
from dpfit.privacy import PrivacyLedger  # noqa: E402

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="needs POSIX signals")

#: Seconds of silence before a worker counts as lost (the default is 120). Idle workers of a
#: small cluster are heard from about every second (gaps up to 1.0 s at load average 10 on
#: the 2-core development machine); the workers import dpfit before the fit, since a worker
#: importing on its first task can go unheard for seconds.
TIMEOUT = 6.0
STEPS = 100_000  # far more steps than run before the stop: the fit is mid-way when it stops
RHO = 1.0


@pytest.fixture
def cluster():
    """Two single-threaded worker processes; every stopped worker is continued in teardown."""
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        stopped: list[int] = []
        yield client, stopped
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)


@pytest.mark.slow
def test_a_stopped_worker_ends_the_fit_with_a_clear_error_and_keeps_only_the_drawn(cluster):
    client, stopped = cluster
    rng = np.random.default_rng(0)
    X = da.from_array(rng.standard_normal((4000, 3)), chunks=(1000, 3))
    y = da.from_array(rng.standard_normal(4000), chunks=1000)
    pids = client.run(os.getpid)  # worker address -> process id
    client.run(lambda: __import__("dpfit.distributed.reduce"))  # warm: imports off the clock
    budget = Budget(rho=2.0)
    outcome: dict = {}

    def stop_when_running(rec):
        while len(rec) < 5 and "error" not in outcome:  # some steps drawn: mid-fit
            time.sleep(0.01)
        pid = pids[sorted(pids)[0]]
        os.kill(pid, signal.SIGSTOP)
        stopped.append(pid)

    settings = {UNRESPONSIVE_WORKER_TIMEOUT: TIMEOUT, "dpfit.persist": True}
    with dask.config.set(settings), recording() as rec:
        stopper = threading.Thread(target=stop_when_running, args=(rec,), daemon=True)
        stopper.start()
        start = time.monotonic()
        try:
            dp_gd(X, y, rho=RHO, clip=1.0, steps=STEPS, n_public=4000,
                  ledger=PrivacyLedger(budget=budget), rng=0)  # fmt: skip
        except Exception as exc:
            outcome["error"] = exc
        elapsed = time.monotonic() - start
        drawn = len(rec)
    stopper.join(timeout=5)
    assert stopped, "the worker was never stopped: the fit ended first"
    error = outcome.get("error")
    assert isinstance(error, WorkersUnresponsiveError), repr(error)
    assert isinstance(error, WorkersLostError)  # the documented family of cluster failures
    assert UNRESPONSIVE_WORKER_TIMEOUT in str(error) and "stay spent" in str(error)
    assert elapsed < TIMEOUT + 40, elapsed  # the deadline, plus polls and the steps before
    assert 5 <= drawn < STEPS
    # exactly the drawn releases stay spent (each step costs RHO / STEPS), the rest came back
    assert budget.spent == pytest.approx(RHO * drawn / STEPS, rel=1e-9)


@pytest.mark.parametrize("value", [0, -1.0, float("nan"), float("inf"), "soon"])
def test_the_timeout_is_checked_before_anything_is_charged(client, value):
    """A bad ``dpfit.unresponsive-worker-timeout`` is refused at the first wait on the cluster,
    the read pass before the first charge."""
    X = da.from_array(np.ones((100, 2)), chunks=(50, 2))
    y = da.from_array(np.ones(100), chunks=50)
    budget = Budget(rho=1.0)
    with (
        dask.config.set({UNRESPONSIVE_WORKER_TIMEOUT: value}),
        recording() as rec,
        pytest.raises(ValueError, match=UNRESPONSIVE_WORKER_TIMEOUT),
    ):
        dp_gd(X, y, rho=0.5, clip=1.0, steps=3, n_public=100,
              ledger=PrivacyLedger(budget=budget), rng=0)  # fmt: skip
    assert len(rec) == 0 and budget.spent == 0.0
