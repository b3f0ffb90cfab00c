"""Running a figure's or a claim's simulations through the sweep engine: resumable, parallel, on a cluster.

:class:`SweepRunner` holds where and how to run (store, local workers or a Dask scheduler, backend);
:meth:`SweepRunner.rows` runs a spec mapping (:mod:`.spec`) and returns the rows of exactly its points, so a
paper-size figure killed half-way resumes from its store and can be drawn from it. The default store is
:func:`default_store` (under the user's cache directory).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .engine import plan, run_sweep
from .spec import parse_spec
from .store import Store

__all__ = ["SweepRunner", "default_store"]


def default_store() -> Path:
    """``$XDG_CACHE_HOME/transfertheory/sweeps`` (``~/.cache/transfertheory/sweeps`` without the variable)."""
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "transfertheory" / "sweeps"


@dataclass(frozen=True)
class SweepRunner:
    """Where and how simulations run: the store, ``workers`` local processes or the Dask ``scheduler``."""

    store: str
    workers: int | None = None
    scheduler: str | None = None
    backend: str | None = None
    progress: bool | None = None

    def rows(self, raw, name) -> pd.DataFrame:
        """The stored rows of every point of the spec mapping ``raw``, computing the missing ones first;
        a RuntimeError naming the store when some point failed."""
        spec = parse_spec(raw, name)
        report = run_sweep(spec, self.store, workers=self.workers, scheduler=self.scheduler, backend=self.backend,
                           progress=self.progress)
        if report.failed:
            raise RuntimeError(f"{report.failed} point(s) of {name} failed (records in {self.store}/_sweep/failed; "
                               f"python -m transfertheory.sweep status {self.store})")
        return Store(self.store).table(t.pid for t in plan(spec, Store(self.store)))
