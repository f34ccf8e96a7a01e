"""A two-worker Dask LocalCluster (threads, so it starts in about a second) for these tests."""

import pytest


@pytest.fixture(scope="session")
def client():
    distributed = pytest.importorskip(
        "distributed", reason="dask[distributed] is not installed (optional extra: dpfit[dask])"
    )
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c
