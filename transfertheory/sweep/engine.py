"""Running a sweep: the points not yet in the store, on local worker processes or a Dask cluster.

Each point is a :class:`Task`; :func:`compute_point` runs it wherever it is sent — in this process, in a local
worker process, or on a Dask worker — and writes its rows (or its failure) to the store itself, so the store
must be a path every worker can write (a shared filesystem for a cluster); the client only collects statuses.
A point's seed is :func:`transfertheory.sim.seeding.derive_seed` of the base seed and the point's hash: its rows
are the same whichever worker computes it and in whatever order, so a resumed sweep equals an uninterrupted one.
A point already stored is skipped (also when a rescheduled Dask task reaches it a second time); a point that
raises is recorded with its traceback and the sweep goes on; a point the memory guard refuses is recorded the
same way, marked ``refused`` (:data:`REFUSED`). The local worker processes are the package's one executor
(:func:`transfertheory.processes.completed_in_workers`, in fresh interpreters), which also stops them on Ctrl-C,
SIGTERM or SIGHUP. An error writing the store itself (a full disk) stops the sweep with the store's path: it is no
point's failure.
"""
from __future__ import annotations

import contextlib
import dataclasses
import importlib
import os
import statistics
import time
import traceback
from dataclasses import dataclass

import pandas as pd

from .. import __version__
from .._memory import MemoryLimitError
from ..backend import backend_name, resolve_backend
from ..sim import get_experiment
from ..sim.seeding import derive_seed
from ..processes import completed_in_workers, worker_count
from ..threads import blas_threads, threads_per_worker
from .store import Store, point_id

__all__ = ["Task", "SweepReport", "REFUSED", "plan", "plan_points", "compute_point", "run_sweep", "point_seed",
           "format_seconds"]

#: the status (and the failure record's ``status``) of a point refused by the memory guard
REFUSED = "refused"


@dataclass(frozen=True)
class Task:
    """One point to compute: where to store it, what to run, with which seed, backend and BLAS threads;
    ``module``: the module that registers the experiment (imported by the worker first, so that an experiment
    registered outside :mod:`transfertheory.sim` — e.g. the claims' — is known in a fresh worker process);
    ``wait``: see :func:`compute_point`."""

    store: str
    experiment: str
    point: dict
    base_seed: int
    pid: str
    backend: str | None = None
    threads: int | None = None
    module: str | None = None
    wait: float | None = None  # set (the run's start, epoch seconds): wait for another run holding the point


@dataclass(frozen=True)
class SweepReport:
    """How a run ended: points of the sweep, completed (stored), failed (recorded; ``refused`` of them by the
    memory guard), computed in this run (``computed``: attempted here, whether stored or failed)."""

    total: int
    done: int
    failed: int
    computed: int
    refused: int = 0


def point_seed(base_seed, pid) -> int:
    """The seed of point ``pid``: derived from the base seed and the point's hash (two 32-bit key words)."""
    return derive_seed(base_seed, int(pid[:8], 16), int(pid[8:16], 16))


def plan(spec, store: Store) -> list:
    """A :class:`Task` per point of ``spec`` (backend and threads left unset)."""
    return plan_points(spec.experiment, spec.points(), spec.seed, store, checked=True)


def plan_points(experiment, points, seed, store: Store, checked=False) -> list:
    """A :class:`Task` per point of the list ``points`` of ``experiment`` (each validated: its full parameters;
    ``checked``: they are full validated points already, as :meth:`SweepSpec.points` gives them)."""
    record = get_experiment(experiment)
    full = points if checked else [record.point(**point) for point in points]
    return [Task(str(store.root), record.name, point, seed,
                 point_id(record.name, record.version, record.identity(point), seed), module=record.simulate.__module__)
            for point in full]


def compute_point(task: Task) -> tuple:
    """Run one point under its claim and store its rows (or its failure); (point_id, status, seconds, error line),
    status "done", "failed" or :data:`REFUSED` (computed here), "stored" (already in the store) or "busy" (another
    live run is computing it; with ``task.wait``: waited for, then "stored", "failed elsewhere" if that run recorded
    a failure since ``task.wait``, or computed here)."""
    store = Store(task.store)
    if store.has(task.pid):
        return task.pid, "stored", 0.0, None
    with store.claim(task.pid, wait=task.wait is not None) as held:
        if held is False:
            return task.pid, "busy", 0.0, None
        if store.has(task.pid):
            return task.pid, "stored", 0.0, None
        if task.wait is not None and (store.failure_time(task.pid) or 0.0) >= task.wait:
            return task.pid, "failed elsewhere", 0.0, store.failures().get(task.pid, {}).get("error")
        store.quarantine_point(task.pid)  # a damaged or foreign file under its name: kept aside, recomputed
        return _compute(task, store)


def _compute(task: Task, store: Store) -> tuple:
    if task.module is not None:
        importlib.import_module(task.module)  # registers the experiment in a fresh worker process
    record, seed = get_experiment(task.experiment), point_seed(task.base_seed, task.pid)
    start = time.perf_counter()
    try:
        with blas_threads(task.threads):
            table = record.run(seed=seed, backend=task.backend, **task.point)
            backend = backend_name(resolve_backend(task.backend))
    except Exception as error:  # recorded, reported at the end; the sweep goes on
        status = REFUSED if isinstance(error, MemoryLimitError) else "failed"
        line = f"{type(error).__name__}: {error}".splitlines()[0]
        store.write_failure(task.pid, dict(experiment=task.experiment, point=task.point, seed=seed, error=line,
                                           status=status), traceback.format_exc())
        return task.pid, status, time.perf_counter() - start, line
    seconds = time.perf_counter() - start
    front = pd.DataFrame({"point_id": task.pid, "experiment": record.name, "version": record.version, "seed": seed,
                          "backend": backend, "package_version": __version__}, index=range(len(table)))
    store.write_point(task.pid, pd.concat([front, table], axis=1),
                      dict(experiment=record.name, version=record.version, seconds=seconds, pid=os.getpid(),
                           threads=task.threads))
    return task.pid, "done", seconds, None


#: how :func:`format_seconds` writes a duration below each bound (the first that applies; the last row without
#: one): the value ``seconds · times / per``, its format and unit
_DURATIONS = ((1e-3, 1e3, 1, ".2f", "ms"), (0.0995, 1e3, 1, ".2g", "ms"), (1, 1e3, 1, ".0f", "ms"),
              (9.95, 1, 1, ".1f", "s"), (90, 1, 1, ".0f", "s"), (5400, 1, 60, ".1f", "min"),
              (None, 1, 3600, ".1f", "h"))


def format_seconds(seconds) -> str:
    """``0.42 ms``, ``35 ms``, ``4.2 s``, ``42 s``, ``3.5 min``, ``2.1 h`` (two significant digits below 10 s)."""
    times, per, form, unit = next((row[1:] for row in _DURATIONS[:-1] if seconds < row[0]), _DURATIONS[-1][1:])
    return f"{seconds * times / per:{form}} {unit}"


def _local(tasks, workers):
    """Statuses of ``tasks`` computed by ``workers`` local processes (in this process for one worker or task;
    fresh interpreters, which a GPU backend needs)."""
    if workers == 1 or len(tasks) <= 1:
        yield from map(compute_point, tasks)
        return
    with contextlib.closing(completed_in_workers(compute_point, tasks, workers, fresh=True)) as completed:
        for index, future in completed:
            yield _outcome(future, tasks[index])


def _dask(tasks, scheduler):
    """Statuses of ``tasks`` computed on the Dask cluster at ``scheduler`` (dask.distributed)."""
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise ValueError("--scheduler needs dask.distributed: pip install 'transfertheory[dist]'") from None
    try:
        client = Client(scheduler, set_as_default=False)
    except OSError as error:  # no scheduler there (distributed: "Timed out trying to connect …")
        raise ConnectionError(f"--scheduler {scheduler}: cannot connect to the Dask scheduler ({error})") from None
    with client:
        futures = {client.submit(compute_point, t, key=f"sweep-point-{t.pid}", pure=False): t for t in tasks}
        for future in as_completed(futures, loop=client.loop):
            yield _outcome(future, futures[future])


def _outcome(future, task):
    """A finished future's status; a worker that died (killed, out of memory) makes the point a failure; an
    OSError (the store could not be written: a full disk) stops the sweep, naming the store."""
    try:
        return future.result()
    except OSError as error:  # not the point's fault: every other point would fail the same way
        raise OSError(error.errno, f"cannot store point {task.pid}: {error.strerror or error}",
                      error.filename or task.store) from None
    except Exception as error:  # the worker died: BrokenProcessPool, Dask's KilledWorker
        line = f"worker lost: {type(error).__name__}: {error}".splitlines()[0]
        Store(task.store).record_lost(task.pid, dict(experiment=task.experiment, point=task.point, error=line),
                                      traceback.format_exc())
        return task.pid, "failed", 0.0, line


def _estimate(tasks, store, record_name):
    """(estimated seconds per point or None, basis): the median compute time of the stored points of
    ``record_name``; None in a store without one (the progress bar's ETA then serves)."""
    seconds = store.seconds(record_name)
    if seconds:
        return statistics.median(seconds), f"median of {len(seconds)} stored points"
    return (0.0, "nothing to run") if not tasks else (None, "no timed point in the store yet: see the progress "
                                                            "bar's ETA")


def _estimate_line(per_point, basis, count, workers):
    """"estimated 3.5 min on 2 worker(s) for 12 points (35 s per point, …)"; ``workers`` None for a cluster."""
    if per_point is None:
        return f"estimated time: unknown ({basis})"
    total = per_point * count
    wall = (f"{format_seconds(total)} of compute, divided among the cluster's workers" if workers is None
            else f"{format_seconds(total / max(1, min(workers, count)))} on {workers} worker(s)")
    return f"estimated {wall} for {count} points ({format_seconds(per_point)} per point, {basis})"


def run_sweep(spec, store_dir, *, workers=None, scheduler=None, backend=None, retry_failed=False, progress=None,
              echo=print) -> SweepReport:
    """Compute every point of ``spec`` the store ``store_dir`` lacks (module docstring) and report.

    Prints, before starting, the number of points, how many the store already has and an estimated time (the
    median compute time of stored points of the same experiment; none in a store without one);
    ``retry_failed`` reruns only the points whose last attempt failed. ``workers`` (default: the cores) local
    processes with ⌊cores/workers⌋ BLAS threads each, or the Dask cluster at ``scheduler`` (one BLAS thread per
    task). ``progress``: a progress bar on stderr — None (default) only when stderr is a terminal, True always,
    False never. KeyboardInterrupt propagates (the completed points stay stored).
    """
    store = Store(store_dir)
    return run_tasks(spec.name, plan(spec, store), store, workers=workers, scheduler=scheduler, backend=backend,
                     retry_failed=retry_failed, progress=progress, echo=echo)


def run_tasks(name, tasks, store: Store, *, workers=None, scheduler=None, backend=None, retry_failed=False,
              progress=None, echo=print) -> SweepReport:
    """Run the planned ``tasks`` the store lacks (:func:`run_sweep`; ``retry_failed`` None: every task not stored,
    failed before or not). Points another live run is computing are skipped, then waited for at the end (and
    computed here if that run died without storing them)."""
    started = time.time()
    for line in store.prepare():
        echo(line)
    store.add_to_manifest({t.pid: dict(experiment=t.experiment, point=t.point, seed=t.base_seed) for t in tasks})
    ids, stored, failed_ids = {t.pid for t in tasks}, store.done(), set(store.failures())
    already, failed_before = len(ids & stored), len(ids & failed_ids)
    # to run: not stored, and not failed before (retry_failed True: only those that failed; None: failed or not)
    skip = stored if retry_failed is None else stored | (ids - failed_ids if retry_failed else failed_ids)
    pending = [t for t in tasks if t.pid not in skip]
    workers = worker_count(workers, len(pending))  # no more processes than points
    threads = 1 if scheduler else threads_per_worker(workers)
    pending = [dataclasses.replace(t, backend=backend, threads=threads) for t in pending]
    where = f"Dask scheduler {scheduler}" if scheduler else f"{workers} worker(s) × {threads} BLAS thread(s)"
    echo(f"{name}: {len(tasks)} points, {already} in the store, {failed_before} failed before; "
         f"{len(pending)} to run on {where}")
    experiment = tasks[0].experiment if tasks else None
    per_point, basis = _estimate(pending, store, experiment)
    echo(_estimate_line(per_point, basis, len(pending), None if scheduler else workers))
    results = []
    from tqdm.auto import tqdm

    bar = tqdm(total=len(pending), unit="point", desc=name,
               disable=None if progress is None else not progress, dynamic_ncols=True)

    def run_round(round_tasks) -> list:
        """Run ``round_tasks`` into ``results``; the tasks another live run held (to wait for)."""
        held, by_pid = [], {t.pid: t for t in round_tasks}
        for result in (_dask(round_tasks, scheduler) if scheduler else _local(round_tasks, workers)):
            if result[1] == "busy":
                held.append(by_pid[result[0]])
                continue
            results.append(result)
            bar.set_postfix(failed=sum(r[1] not in ("done", "stored") for r in results), refresh=False)
            bar.update(1)
        return held

    try:
        busy = run_round(pending)
        if busy:  # wait for each, then count it (stored or failed there) or compute it (that run died)
            echo(f"{len(busy)} point(s) held by another run: waiting for them")
            run_round([dataclasses.replace(t, wait=started) for t in busy])
    finally:
        bar.close()
    failed = {pid: record for pid, record in store.failures().items() if pid in ids}
    return SweepReport(total=len(tasks), done=len(ids & store.done()), failed=len(failed),
                       computed=sum(r[1] in ("done", "failed", REFUSED) for r in results),
                       refused=sum(record.get("status") == REFUSED for record in failed.values()))
