"""Sweeps: a registered experiment (:func:`transfertheory.sim.experiments`) over a parameter grid, one Parquet file
per completed point, resumable, on local worker processes or a Dask cluster (docs/sweeps.md).

* :mod:`.spec` — sweep specifications (a named sweep or a user's TOML file), validated before anything runs;
* :mod:`.named` — the named sweeps behind the papers' figures and claims, with ``quick`` and ``paper`` profiles;
* :mod:`.store` — the Parquet store (atomic writes, point ids, failure records, only its own point files read:
  :func:`read_store`); :mod:`.claims` — which run is writing which point, for runs sharing a store;
* :mod:`.engine` — running the points the store lacks (:func:`run_sweep`);
* ``python -m transfertheory.sweep`` — the command line (``list``, ``run``, ``status``, ``table``).

Layering: this package uses the simulators (:mod:`transfertheory.sim`) and never imports a figure, a claim or a
command line; the figures and claims may build on it.

The names below are imported on first use: the engine and the store load pandas and pyarrow, the specs the
simulators' catalog, which ``python -m transfertheory.sweep --help`` (this package's ``__init__`` runs first)
does not need.
"""
#: the names imported on first use, and their modules
_LAZY = {"SweepSpec": ".spec", "parse_spec": ".spec", "load_toml": ".spec", "NAMED_SWEEPS": ".named",
         "named_sweep": ".named", "Store": ".store", "point_id": ".store", "run_sweep": ".engine",
         "compute_point": ".engine", "SweepReport": ".engine", "read_store": ".store"}
__all__ = list(_LAZY)


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
