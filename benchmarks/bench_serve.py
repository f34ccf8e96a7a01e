"""Load test of ``dpfit serve`` on loopback, and its overhead against a local library call.

Two measurements, written as JSON with the machine, the load average and the command:

``load``      ``--analysts`` concurrent analysts (threads) submit fits to a real server for
              ``--seconds``; half have shares for thousands of fits, half for exactly
              ``--small-fits`` (so their later requests race against an exhausted share).
              Afterwards every answer is checked against the database: **0 overspends**
              (no share or dataset spent more than granted; a small share bought exactly the
              fits it affords), **0 lost charges** (every charge in the database is a release
              a client was answered, and the budgets equal the sum of the charges), **every
              result retrievable** (fetched again, its SHA-256 matching the one recorded).
              Reports p50/p95 latency of the fits and the throughput.
``overhead``  the same fit through the server (``dpfit.remote.Client``, one at a time) and
              as a local ``dpfit.ols`` call on the same frame, ``--repeats`` times each,
              interleaved: the server's overhead as a share of the local fit, from wall-clock
              medians and minima and from CPU time (:func:`overhead`). Target: below 20%
              for a fit of 10^5 rows.

Run (from the repository root, with the ``serve`` extra installed):
    python benchmarks/bench_serve.py load --database sqlite --analysts 50 --seconds 60
    python benchmarks/bench_serve.py load --database postgresql --analysts 50 --seconds 60
    python benchmarks/bench_serve.py overhead --rows 100000 --repeats 7

``--database postgresql`` starts a throwaway cluster with ``.ci/postgres`` (Debian's
``postgresql`` package) unless ``$DPFIT_TEST_POSTGRES_URL`` names a server.
"""

from __future__ import annotations

import os

# One BLAS thread in this process and in the servers it starts (they inherit the
# environment): the comparison is like for like, and no idle BLAS thread spins on a core.
for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402 - after the thread settings
import contextlib  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import urllib.error  # noqa: E402
import urllib.request  # noqa: E402
import uuid  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import sqlalchemy as sa  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

SCHEMA = """\
[columns.x1]
type = "numeric"
bounds = [0, 10]
[columns.x2]
type = "numeric"
bounds = [0, 1]
[columns.g]
type = "categorical"
levels = ["a", "b", "c"]
[columns.y]
type = "numeric"
bounds = [-5, 10]
"""
FORMULA = "y ~ x1 + x2 + g"
#: rho of every fit of the load test, and the share of a "large" analyst (many fits).
FIT_RHO = 0.001
LARGE_SHARE = 100.0


def write_data(folder: Path, rows: int) -> tuple[Path, Path]:
    """A synthetic survey (y = 1 + 0.5 x1 - 2 x2 + noise) and its public schema."""
    rng = np.random.default_rng(0)
    x1, x2 = rng.uniform(0, 10, rows), rng.uniform(0, 1, rows)
    y = np.clip(1 + 0.5 * x1 - 2 * x2 + rng.normal(0, 1, rows), -5, 10)
    frame = pd.DataFrame({"x1": x1, "x2": x2, "g": rng.choice(["a", "b", "c"], rows), "y": y})
    frame.to_csv(folder / "survey.csv", index=False)
    (folder / "schema.toml").write_text(SCHEMA)
    return folder / "survey.csv", folder / "schema.toml"


@contextlib.contextmanager
def database(kind: str) -> Iterator[str | None]:
    """None (the site's SQLite file) or the URL of a fresh PostgreSQL database."""
    if kind == "sqlite":
        yield None
        return
    import psycopg

    server = os.environ.get("DPFIT_TEST_POSTGRES_URL")
    folder = None
    if not server:
        folder = tempfile.mkdtemp(prefix="dpfit-postgres-")
        started = subprocess.run(
            [str(ROOT / ".ci" / "postgres"), "start", folder],
            capture_output=True,
            text=True,
            check=True,
        )
        server = started.stdout.strip().partition("=")[2]
    name = f"dpfit_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield server.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        if folder is not None:
            subprocess.run([str(ROOT / ".ci" / "postgres"), "stop", folder], check=False)


def _call(url: str, token: str, method: str, path: str, payload=None) -> tuple[int, dict]:
    data = None if payload is None else json.dumps(payload).encode()
    request = urllib.request.Request(
        url + path,
        data=data,
        method=method,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=600) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def _analyst(url: str, token: str, deadline: float, out: list) -> None:
    payload = {"dataset": "survey", "formula": FORMULA, "rho": FIT_RHO}
    while time.monotonic() < deadline:
        started = time.perf_counter()
        status, body = _call(url, token, "POST", "/api/v1/releases", payload)
        out.append((status, time.perf_counter() - started, body.get("id"), body.get("sha256")))


def _percentile(values: list[float], q: float) -> float | None:
    return float(np.percentile(values, q)) if values else None


def check_consistency(site, url: str, tokens: dict, answers: dict, small: set) -> dict:
    """The module docstring's three checks; returns the counts (and raises on a failure)."""
    from dpfit.remote.codec import result_sha256
    from dpfit.serve import db
    from dpfit.serve.units import charge_units

    with site.engine.begin() as conn:
        rows = conn.execute(sa.select(db.releases)).all()
        shares = {r.analyst_id: r for r in conn.execute(sa.select(db.shares)).all()}
        names = dict(conn.execute(sa.select(db.analysts.c.id, db.analysts.c.name)).all())
        dataset = conn.execute(sa.select(db.datasets)).one()
    overspends = sum(s.spent_units > s.total_units for s in shares.values())
    overspends += dataset.spent_units > dataset.total_units
    answered = {a[2] for seen in answers.values() for a in seen if a[0] == 201}
    charged = [r for r in rows if r.charged_units > 0]
    lost = sum(r.id not in answered for r in charged)  # charged, but no client was told
    lost += sum(
        s.spent_units != sum(r.charged_units for r in charged if r.analyst_id == a)
        for a, s in shares.items()
    )
    lost += dataset.spent_units != sum(r.charged_units for r in charged)
    # an analyst's requests are sequential: a small share releases exactly as many fits as
    # it affords (or as were asked for), and refuses the rest
    exact = all(
        sum(r.analyst_id == a for r in charged)
        == min(len(answers[names[a]]), s.total_units // charge_units(FIT_RHO))
        for a, s in shares.items()
        if names[a] in small
    )
    missing = 0
    for name, seen in answers.items():
        for status, _, release_id, sha256 in seen:
            if status == 201:
                code, view = _call(url, tokens[name], "GET", f"/api/v1/releases/{release_id}")
                ok = code == 200 and view["sha256"] == sha256 == result_sha256(view["result"])
                missing += not ok
    return {
        "overspends": int(overspends),
        "lost_charges": int(lost),
        "failed": sum(r.status != "released" for r in charged),
        "small_shares_spent_exactly": bool(exact),
        "not_retrievable": missing,
        "releases": len(charged),
        "refused": sum(r.status == "refused" for r in rows),
    }


def load(
    kind: str, *, analysts: int, seconds: float, rows: int, workers: int, small_fits: int
) -> dict:
    """Run the load test (module docstring) and return its measurements."""
    from dpfit.serve import create_analyst, grant_share, init_site, register_dataset
    from dpfit.serve.testing import running_server

    with tempfile.TemporaryDirectory(prefix="dpfit-serve-load-") as tmp, database(kind) as url:
        folder = Path(tmp)
        data, schema = write_data(folder, rows)
        site, _ = init_site(folder / "site", database=url)
        small = {f"analyst{k:02d}" for k in range(analysts) if k % 2}
        total = sum(
            FIT_RHO * small_fits if f"analyst{k:02d}" in small else LARGE_SHARE
            for k in range(analysts)
        )
        register_dataset(site, "survey", data=data, schema=schema, rho=total, delta=1e-7)
        tokens = {}
        for k in range(analysts):
            name = f"analyst{k:02d}"
            tokens[name] = create_analyst(site, name)
            grant_share(
                site, name, "survey", FIT_RHO * small_fits if name in small else LARGE_SHARE
            )
        answers: dict[str, list] = {name: [] for name in tokens}
        with running_server(folder / "site", database=url, workers=workers) as server:
            _call(server.url, tokens["analyst00"], "GET", "/api/v1/datasets")  # warm up
            deadline = time.monotonic() + seconds
            threads = [
                threading.Thread(
                    target=_analyst, args=(server.url, tokens[n], deadline, answers[n])
                )
                for n in tokens
            ]
            started = time.perf_counter()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            elapsed = time.perf_counter() - started
            checks = check_consistency(site, server.url, tokens, answers, small)
        fits = [a[1] for seen in answers.values() for a in seen if a[0] == 201]
        every = [a[1] for seen in answers.values() for a in seen]
        statuses: dict[str, int] = {}
        for seen in answers.values():
            for a in seen:
                statuses[str(a[0])] = statuses.get(str(a[0]), 0) + 1
        return {
            "database": "sqlite" if url is None else "postgresql",
            "analysts": analysts,
            "seconds": seconds,
            "rows": rows,
            "workers": workers,
            "wall_seconds": elapsed,
            "requests": len(every),
            "statuses": statuses,
            "fits_per_second": len(fits) / elapsed,
            "fit_latency_p50_s": _percentile(fits, 50),
            "fit_latency_p95_s": _percentile(fits, 95),
            "request_latency_p50_s": _percentile(every, 50),
            "request_latency_p95_s": _percentile(every, 95),
            **checks,
        }


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far (Linux ``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def overhead(*, rows: int, repeats: int) -> dict:
    """The same fit through the server and as a local call, interleaved (module docstring).

    Wall-clock times on a shared machine swing with other jobs, so the overhead is given three
    ways: from the medians and from the minima of the wall-clock times (the minimum is the run
    least disturbed, as :mod:`timeit` recommends), and from CPU time, which waiting for a core
    does not inflate: the server process's CPU time (``/proc``) plus the client's, against
    the local call's.
    """
    import dpfit
    from dpfit.remote import Client
    from dpfit.serve import create_analyst, grant_share, init_site, register_dataset
    from dpfit.serve.data import read_dataset
    from dpfit.serve.schema import read_schema_file
    from dpfit.serve.testing import running_server

    with tempfile.TemporaryDirectory(prefix="dpfit-serve-overhead-") as tmp:
        folder = Path(tmp)
        data, schema = write_data(folder, rows)
        site, _ = init_site(folder / "site")
        register_dataset(site, "survey", data=data, schema=schema, rho=10.0, delta=1e-7)
        token = create_analyst(site, "a")
        grant_share(site, "a", "survey", 10.0)
        frame = read_dataset(data, read_schema_file(schema)[0])  # what the server fits
        bounds = {"x1": (0.0, 10.0), "x2": (0.0, 1.0)}
        wall: dict[str, list[float]] = {"local": [], "remote": []}
        cpu: dict[str, list[float]] = {"local": [], "remote": []}
        with running_server(folder / "site") as server, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            client = Client(server.url, token)
            client.submit(FORMULA, dataset="survey", rho=0.01)  # warm up: loads the data
            for _ in range(repeats):
                started, cpu_started = time.perf_counter(), time.process_time()
                dpfit.ols(
                    FORMULA,
                    frame,
                    rho=0.01,
                    budget=dpfit.Budget(rho=0.01),
                    bounds=bounds,
                    y_bounds=(-5.0, 10.0),
                )
                wall["local"].append(time.perf_counter() - started)
                cpu["local"].append(time.process_time() - cpu_started)
                server_cpu = _cpu_seconds(server.process.pid)
                started, cpu_started = time.perf_counter(), time.process_time()
                done = client.submit(FORMULA, dataset="survey", rho=0.01)
                wall["remote"].append(time.perf_counter() - started)
                cpu["remote"].append(
                    time.process_time()
                    - cpu_started
                    + _cpu_seconds(server.process.pid)
                    - server_cpu
                )
                assert done.status == "released"
    found: dict = {"rows": rows, "repeats": repeats, "wall_s": wall, "cpu_s": cpu}
    for name, pick in (("median", statistics.median), ("min", min)):
        local, remote = pick(wall["local"]), pick(wall["remote"])
        found[f"wall_{name}_local_s"], found[f"wall_{name}_remote_s"] = local, remote
        found[f"overhead_share_wall_{name}"] = (remote - local) / local
    local, remote = statistics.median(cpu["local"]), statistics.median(cpu["remote"])
    found["cpu_median_local_s"], found["cpu_median_remote_s"] = local, remote
    found["overhead_share_cpu_median"] = (remote - local) / local
    return found


def build_parser() -> argparse.ArgumentParser:
    """The command line of this script (the module docstring's commands)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("load", "overhead"))
    parser.add_argument("--database", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--analysts", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--rows", type=int, default=None, help="10^4 (load), 10^5 (overhead)")
    parser.add_argument("--workers", type=int, default=2, help="server processes (load)")
    parser.add_argument("--small-fits", type=int, default=5, help="fits a small share buys")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", type=Path, help="write the results here")
    return parser


def main(argv: list[str] | None = None) -> dict:
    from _machine import command, machine

    parser = build_parser()
    args = parser.parse_args(argv)
    before = machine()  # the load average before the run
    if args.what == "load":
        found = load(
            args.database,
            analysts=args.analysts,
            seconds=args.seconds,
            rows=args.rows or 10_000,
            workers=args.workers,
            small_fits=args.small_fits,
        )
    else:
        found = overhead(rows=args.rows or 100_000, repeats=args.repeats)
    found = {
        "what": args.what,
        **found,
        "machine": before,
        "command": command(),
        "load_average_at_end": os.getloadavg(),
    }
    text = json.dumps(found, indent=1)
    print(text)
    if args.json is not None:
        args.json.write_text(text + "\n")
    return found


if __name__ == "__main__":
    main()
