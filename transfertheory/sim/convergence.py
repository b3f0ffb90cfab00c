"""The shared convergence columns of every simulator's table, built by one helper.

Every row of a simulation says how its training ended: ``converged`` (bool: stopped by a convergence
criterion), ``status`` (str: the integrator's status, ``exact`` for a closed-form solve), ``t_final`` (float:
gradient-flow time at the stop; NaN when there is no flow), ``steps`` (int: integrator steps, 0 without a flow)
and ``grad_norm`` (float: final ‖∇L‖; NaN when not computed). :func:`convergence_columns` builds them with those
types; :func:`normalize_convergence` passes a simulator's table through it, so that every table of
:func:`transfertheory.sim.experiments` has the same columns with the same dtypes.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["CONVERGENCE_COLUMNS", "convergence_columns", "normalize_convergence"]

CONVERGENCE_COLUMNS = ("converged", "status", "t_final", "steps", "grad_norm")


def convergence_columns(converged, status, t_final, steps, grad_norm, rows=None) -> dict:
    """The five convergence columns as typed numpy arrays of length ``rows`` (scalars are broadcast; ``rows``
    defaults to the length of the longest argument)."""
    values = [np.asarray(v) for v in (converged, status, t_final, steps, grad_norm)]
    rows = max((v.size for v in values), default=1) if rows is None else int(rows)
    dtypes = (bool, str, float, np.int64, float)
    return {name: np.broadcast_to(value.astype(dtype).reshape(-1) if value.ndim else value.astype(dtype), (rows,))
            .copy() for name, value, dtype in zip(CONVERGENCE_COLUMNS, values, dtypes)}


def normalize_convergence(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its convergence columns rebuilt by :func:`convergence_columns` (ValueError naming the
    missing columns if it lacks any)."""
    missing = [c for c in CONVERGENCE_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"a simulator table must have the convergence columns {CONVERGENCE_COLUMNS}, lacks {missing}")
    out = frame.copy()
    steps = out["steps"].fillna(0).to_numpy()
    columns = convergence_columns(out["converged"].to_numpy(), out["status"].to_numpy(), out["t_final"].to_numpy(),
                                  steps, out["grad_norm"].to_numpy(), rows=len(out))
    for name, values in columns.items():
        out[name] = values
    return out
