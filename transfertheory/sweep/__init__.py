"""Sweeps: a registered experiment (:func:`transfertheory.sim.experiments`) over a parameter grid, one Parquet file
per completed point, resumable, on local worker processes or a Dask cluster (docs/sweeps.md).

* :mod:`.spec` — sweep specifications (a named sweep or a user's TOML file), validated before anything runs;
* :mod:`.named` — the named sweeps behind the papers' figures and claims, with ``quick`` and ``paper`` profiles;
* :mod:`.store` — the Parquet store (atomic writes, point ids, failure records);
* :mod:`.engine` — running the points the store lacks (:func:`run_sweep`);
* ``python -m transfertheory.sweep`` — the command line (``list``, ``run``, ``status``, ``table``).

Layering: this package uses the simulators (:mod:`transfertheory.sim`) and never imports a figure, a claim or a
command line; the figures and claims may build on it.
"""
from .engine import SweepReport, compute_point, run_sweep
from .named import NAMED_SWEEPS, named_sweep
from .spec import SweepSpec, load_toml, parse_spec
from .store import Store, point_id

__all__ = ["SweepSpec", "parse_spec", "load_toml", "NAMED_SWEEPS", "named_sweep", "Store", "point_id", "run_sweep",
           "compute_point", "SweepReport"]
