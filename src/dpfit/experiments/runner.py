"""The runner: execute the missing trials of experiments, in parallel, into a :class:`ResultStore`.

For each experiment and scale the runner lists the tasks (params, replicate), derives every
trial's seed (:func:`~dpfit.experiments.seeds.trial_seed`), skips those already in the store
for the current code version, and runs the rest: in this process when ``jobs == 1``, otherwise
over a :class:`concurrent.futures.ProcessPoolExecutor` (``forkserver`` start method where
available, one BLAS thread per worker). The parent process is the only writer: each result is
committed the moment it arrives, so interrupting a run (Ctrl-C, a kill, a failing trial) loses
at most the trials in flight, and running the same command again completes only the rest.

Trials are seeded by design, so :class:`~dpfit.InsecureRandomnessWarning` is silenced inside
them (and only there).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from .._validation import check_int, check_option
from ..exceptions import InsecureRandomnessWarning
from .registry import SCALES, Experiment, get
from .seeds import trial_seed
from .store import ResultStore, canonical_params, code_version

__all__ = ["RunResult", "TrialError", "run"]


class TrialError(RuntimeError):
    """A trial raised; the trials finished before it are stored, so a rerun resumes."""


@dataclass(frozen=True, kw_only=True)
class RunResult:
    """What :func:`run` did and the results it leaves in the store.

    Attributes
    ----------
    scale : str
        The scale run.
    version : str
        The code version the trials are stored under (see :func:`~.store.code_version`).
    experiments : dict[str, Experiment]
        The experiments run, by name, in the order given.
    results : dict[str, pandas.DataFrame]
        Per experiment, one row per trial of this scale (params, ``replicate``, ``seed``,
        metrics), in task order (independent of completion order).
    ran, reused : dict[str, int]
        Per experiment, trials executed by this call and trials found already stored.
    trial_seconds : dict[str, float]
        Per experiment, the summed compute time of its trials (including reused ones).
    wall_seconds : float
        Wall-clock time of this call.
    jobs : int
        Worker processes used (1: in-process).
    """

    scale: str
    version: str
    experiments: dict[str, Experiment]
    results: dict[str, pd.DataFrame]
    ran: dict[str, int]
    reused: dict[str, int]
    trial_seconds: dict[str, float] = field(default_factory=dict)
    wall_seconds: float = 0.0
    jobs: int = 1


@dataclass(frozen=True, slots=True)
class _Task:
    experiment: str
    params: dict[str, Any]
    replicate: int
    seed: int


def _execute(trial: Callable, params: Mapping[str, Any], seed: int) -> tuple[Any, float]:
    """Run one trial with seeded-noise warnings silenced; returns (metrics, seconds)."""
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRandomnessWarning)
        metrics = trial(dict(params), seed)
    return metrics, time.perf_counter() - start


def _init_worker() -> None:
    """One BLAS/OpenMP thread per worker (parallelism is across trials); Ctrl-C is the parent's.

    Workers ignore SIGINT, so a Ctrl-C in the terminal (sent to the whole process group)
    reaches only the parent, which stops the workers itself.
    """
    from threadpoolctl import threadpool_limits

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threadpool_limits(1)


def _resolve(items: Iterable[str | Experiment]) -> dict[str, Experiment]:
    if isinstance(items, str | Experiment):
        items = [items]
    out: dict[str, Experiment] = {}
    for item in items:
        exp = item if isinstance(item, Experiment) else get(item)
        out[exp.name] = exp
    if not out:
        raise ValueError("names must list at least one experiment")
    return out


def _keys(exp: Experiment, scale: str) -> list[tuple[dict[str, Any], int, int]]:
    return [(p, r, trial_seed(exp.name, p, r)) for p, r in exp.tasks(scale)]


def _missing(exp: Experiment, scale: str, store: ResultStore, version: str) -> list[_Task]:
    done = store.completed(exp.name, version=version)
    return [
        _Task(exp.name, p, r, s)
        for p, r, s in _keys(exp, scale)
        if (canonical_params(p), r, s) not in done
    ]


def _progress(total: int, scale: str, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(
        total=total,
        desc=f"dpfit reproduce ({scale})",
        unit="trial",
        file=sys.stderr,
        disable=not enabled or total == 0,
        dynamic_ncols=True,
    )


def _fail(task: _Task, exc: BaseException) -> TrialError:
    return TrialError(
        f"trial of {task.experiment!r} failed (params {canonical_params(task.params)}, "
        f"replicate {task.replicate}, seed {task.seed}): {type(exc).__name__}: {exc}"
    )


def _run_serial(tasks, experiments, save) -> None:
    for task in tasks:
        try:
            metrics, seconds = _execute(experiments[task.experiment].trial, task.params, task.seed)
        except Exception as exc:
            raise _fail(task, exc) from exc
        save(task, metrics, seconds)


def _run_parallel(tasks, experiments, save, jobs: int) -> None:
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        # Import the trials' modules once in the server, not in every worker (no effect once
        # this process's fork server has started).
        modules = {experiments[t.experiment].trial.__module__ for t in tasks}
        context.set_forkserver_preload(sorted({"dpfit.experiments", *modules}))
    else:
        context = multiprocessing.get_context("spawn")
    error: TrialError | None = None
    before = set(multiprocessing.active_children())
    pool = ProcessPoolExecutor(jobs, mp_context=context, initializer=_init_worker)
    futures: dict[Future, _Task] = {}
    try:
        for t in tasks:
            futures[pool.submit(_execute, experiments[t.experiment].trial, t.params, t.seed)] = t
        for future in as_completed(futures):
            if future.cancelled():
                continue
            task = futures[future]
            exc = future.exception()
            if exc is not None:
                if error is None:  # stop scheduling; store what is still running
                    error = _fail(task, exc)
                    error.__cause__ = exc
                    for pending in futures:
                        pending.cancel()
                continue
            save(task, *future.result())
    except BaseException:  # Ctrl-C or a store error: stop now, losing only trials in flight
        pool.shutdown(wait=False, cancel_futures=True)
        for worker in set(multiprocessing.active_children()) - before:
            worker.terminate()
        raise
    pool.shutdown(wait=True)
    if error is not None:
        raise error


def run(
    names: str | Experiment | Sequence[str | Experiment],
    *,
    scale: str,
    store_path: str | Path,
    jobs: int | None = None,
    progress: bool = True,
    version: str | None = None,
) -> RunResult:
    """Run every trial of ``names`` at ``scale`` that ``store_path`` does not hold yet.

    Parameters
    ----------
    names : str, Experiment or sequence of them
        Registered experiment names (see :func:`~dpfit.experiments.names`) or
        :class:`Experiment` objects (e.g. one being developed, not registered yet).
    scale : {"smoke", "quick", "paper"}
        Which grid and replicate count to run.
    store_path : str or Path
        The SQLite store (created if missing); reusing it resumes an interrupted run.
    jobs : int, optional
        Worker processes; default: the CPUs available to this process. ``1`` runs the trials
        in this process (no pickling; handy for debugging).
    progress : bool, default=True
        Show a progress bar with ETA on stderr.
    version : str, optional
        The code version trials are stored under. Default: :func:`~.store.code_version`, a
        digest of dpfit's source, so any code change reruns everything. Pinning it reuses
        trials made by other code: only for changes known not to affect results.

    Returns
    -------
    RunResult
        The results of every trial of ``scale`` (stored earlier or now), per experiment.

    Raises
    ------
    TrialError
        A trial raised. Trials finished before it (and those already running) are stored.

    Notes
    -----
    Trials run in parallel must be picklable by reference (module-level functions). Seeds are
    derived from (experiment, params, replicate) only (:mod:`dpfit.experiments.seeds`), so
    results do not depend on ``jobs`` or on the order in which trials finish.
    """
    scale = check_option(scale, "scale", SCALES)
    experiments = _resolve(names)
    if jobs is None:
        jobs = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    jobs = check_int(jobs, "jobs", low=1)
    if version is None:
        version = code_version()
    elif not isinstance(version, str) or not version:
        raise TypeError("version must be a non-empty string or None")
    start = time.perf_counter()
    with ResultStore(store_path) as store:
        todo = {n: _missing(e, scale, store, version) for n, e in experiments.items()}
        tasks = [t for ts in todo.values() for t in ts]
        with _progress(len(tasks), scale, progress) as bar:

            def save(task: _Task, metrics: Any, seconds: float) -> None:
                store.add(
                    task.experiment,
                    task.params,
                    task.replicate,
                    task.seed,
                    metrics,
                    version=version,
                    seconds=seconds,
                )
                bar.update(1)

            workers = min(jobs, len(tasks))
            if workers <= 1:
                _run_serial(tasks, experiments, save)
            else:
                _run_parallel(tasks, experiments, save, workers)
        keys = {n: _keys(e, scale) for n, e in experiments.items()}
        results = {n: store.results(n, keys[n], version=version) for n in experiments}
        seconds = {n: store.seconds(n, keys[n], version=version) for n in experiments}
    return RunResult(
        scale=scale,
        version=version,
        experiments=experiments,
        results=results,
        ran={n: len(todo[n]) for n in experiments},
        reused={n: len(keys[n]) - len(todo[n]) for n in experiments},
        trial_seconds=seconds,
        wall_seconds=time.perf_counter() - start,
        jobs=jobs,
    )
