"""Running a figure's or a claim's simulations through the sweep engine: resumable, parallel, on a cluster.

:class:`SweepRunner` holds where and how to run (store, local workers or a Dask scheduler, backend);
:meth:`SweepRunner.rows` runs a spec mapping (:mod:`.spec`) and returns the rows of exactly its points, so a
paper-size figure killed half-way resumes from its store and can be drawn from it; :meth:`SweepRunner.results`
runs an explicit list of points (the claims audit's) and returns, per point, its rows or its failure. The default
store is :func:`default_store` (under the user's cache directory).
"""
from __future__ import annotations

import contextvars
import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .engine import plan, plan_points, run_sweep, run_tasks
from .spec import parse_spec
from .store import Store

__all__ = ["SweepRunner", "StoredPoint", "default_store", "LEDGER"]

#: a list to which :meth:`SweepRunner.rows` appends, per call, the points it returned and their compute seconds as
#: stored (whenever and wherever they were computed): how a build drawn from a store says what its data cost
LEDGER = contextvars.ContextVar("sweep_ledger", default=None)


def default_store() -> Path:
    """``$XDG_CACHE_HOME/transfertheory/sweeps`` (``~/.cache/transfertheory/sweeps`` without the variable)."""
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "transfertheory" / "sweeps"


@dataclass(frozen=True)
class StoredPoint:
    """One point after a run: its stored ``rows`` and compute ``seconds``, or (not stored) the ``error`` line of
    its failure record."""

    rows: pd.DataFrame | None
    seconds: float
    error: str | None = None


@dataclass(frozen=True)
class SweepRunner:
    """Where and how simulations run: the store, ``workers`` local processes or the Dask ``scheduler``, the
    ``backend`` and the ``progress`` bar (:func:`~.engine.run_sweep`'s)."""

    store: str
    workers: int | None = None
    scheduler: str | None = None
    backend: str | None = None
    progress: bool | None = None

    def __post_init__(self):
        """A :class:`~.store.NotAStoreError` (one line) now, before any work, for a ``store`` that cannot be a
        sweep store (a folder holding other files, a folder inside a store, a store of a newer version)."""
        Store(self.store).check_usable()

    def rows(self, raw, name) -> pd.DataFrame:
        """The stored rows of every point of the spec mapping ``raw``, computing the missing ones first;
        a RuntimeError naming the store when some point failed."""
        spec = parse_spec(raw, name)
        report = run_sweep(spec, self.store, workers=self.workers, scheduler=self.scheduler, backend=self.backend,
                           progress=self.progress)
        if report.failed:
            raise RuntimeError(f"{report.failed} point(s) of {name} failed (records in {self.store}/_sweep/failed; "
                               f"python -m transfertheory.sweep status {self.store})")
        store = Store(self.store)
        pids = [t.pid for t in plan(spec, store)]
        ledger = LEDGER.get()
        if ledger is not None:
            ledger.append({"points": len(pids), "compute_s": sum(store.metadata(pid).get("seconds", 0.0)
                                                                 for pid in pids)})
        return store.table(pids)

    def results(self, name, experiment, points, seed=0) -> list:
        """A :class:`StoredPoint` for each of ``points`` (parameter dicts of ``experiment``), in their order,
        computing first every point the store lacks (points that failed before are tried again); ``name`` labels
        the run."""
        store = Store(self.store)
        tasks = plan_points(experiment, points, seed, store)
        run_tasks(name, tasks, store, workers=self.workers, scheduler=self.scheduler, backend=self.backend,
                  retry_failed=None, progress=self.progress)
        failures, done = store.failures(), store.done()
        return [StoredPoint(store.table([t.pid]), store.metadata(t.pid).get("seconds", float("nan")))
                if t.pid in done else
                StoredPoint(None, 0.0, failures.get(t.pid, {}).get("error", "not computed")) for t in tasks]
