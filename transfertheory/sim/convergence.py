"""How training ended: the integrator's convergence record and the shared convergence columns built from it.

Every row of a simulation says how its training ended: ``converged`` (bool: stopped by a convergence
criterion), ``status`` (str: the integrator's status, ``exact`` for a closed-form solve), ``t_final`` (float:
gradient-flow time at the stop; NaN when there is no flow), ``steps`` (int: integrator steps, 0 without a flow)
and ``grad_norm`` (float: final ‖∇L‖; NaN when not computed). :class:`Convergence` holds them per instance as
typed host numpy arrays — the integrator's :class:`~.integrator.FlowResult` carries one, and so does every
simulator's record of a trained batch; :func:`convergence_columns` is the one helper that turns it into a
table's columns, and :func:`normalize_convergence` passes a simulator's table through the record, so that every
table of :func:`transfertheory.sim.experiments` has the same columns with the same dtypes.
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pandas is not imported here: the integrator imports this module
    import pandas as pd

__all__ = ["CONVERGENCE_COLUMNS", "Convergence", "ReportsConvergence", "convergence_columns",
           "normalize_convergence"]

CONVERGENCE_COLUMNS = ("converged", "status", "t_final", "steps", "grad_norm")
_DTYPES = (bool, str, float, np.int64, float)


@dataclass(frozen=True)
class Convergence:
    """How each instance's training ended (module docstring): five host numpy arrays of one length.

    Built from arrays or scalars: each is converted to its type (bool, str, float, int64, float) and the
    scalars are broadcast to the length of the longest argument (``Convergence(True, "exact", nan, 0, norms)``
    for a closed-form solve); :meth:`of_length` broadcasts to a given length.
    """

    converged: np.ndarray
    status: np.ndarray
    t_final: np.ndarray
    steps: np.ndarray
    grad_norm: np.ndarray

    def __post_init__(self):
        values = [np.asarray(getattr(self, name)) for name in CONVERGENCE_COLUMNS]
        self._set(values, max(v.size for v in values))

    def _set(self, values, rows):
        for name, value, dtype in zip(CONVERGENCE_COLUMNS, values, _DTYPES):
            typed = value.astype(dtype).reshape(-1) if value.ndim else value.astype(dtype)
            object.__setattr__(self, name, np.broadcast_to(typed, (rows,)).copy())

    @classmethod
    def of_length(cls, rows, converged, status, t_final, steps, grad_norm) -> "Convergence":
        """The record of ``rows`` instances, scalars broadcast (e.g. ``of_length(3, True, "exact", nan, 0,
        nan)``)."""
        record = cls(converged, status, t_final, steps, grad_norm)
        record._set([getattr(record, name) for name in CONVERGENCE_COLUMNS], int(rows))
        return record

    def __len__(self) -> int:
        return self.status.size

    def __getitem__(self, index) -> "Convergence":
        """The instances ``index`` (a slice, a host integer or boolean array)."""
        return Convergence(*(getattr(self, name)[index] for name in CONVERGENCE_COLUMNS))

    @classmethod
    def concatenate(cls, records) -> "Convergence":
        """One record of the instances of ``records``, in order."""
        return cls(*(np.concatenate([getattr(r, name) for r in records]) for name in CONVERGENCE_COLUMNS))

    def requiring(self, converged) -> "Convergence":
        """The record with ``converged`` and-ed in: a run counts as converged only if an earlier flow it starts
        from (pretraining) converged too."""
        return replace(self, converged=self.converged & np.asarray(converged, dtype=bool))

    def row(self, index: int) -> dict:
        """Instance ``index`` as Python scalars, by column name (a row of a table built row by row)."""
        return {name: getattr(self, name)[index].item() for name in CONVERGENCE_COLUMNS}


def _field(name: str, doc: str) -> property:
    """Read access to ``self.convergence.<name>``."""
    return property(lambda self: getattr(self.convergence, name), doc=doc)


class ReportsConvergence:
    """Read access to the five fields of a record's ``convergence`` (a :class:`Convergence`), for the records
    of trained batches that carry one in their field ``convergence`` (the integrator's result and every
    simulator's)."""

    converged = _field("converged", "Stopped by a convergence criterion (the integrator's: ‖∇L‖ ≤ gtol, or L ≤ "
                                    "loss_tol).")
    status = _field("status", "How each instance stopped (the integrator's status).")
    t_final = _field("t_final", "Flow time at the stop.")
    steps = _field("steps", "Accepted integrator steps.")
    grad_norm = _field("grad_norm", "Final ‖∇L‖.")

    def requiring(self, converged):
        """The record (a dataclass) with ``converged`` and-ed into its convergence (:meth:`Convergence.requiring`):
        a run from a pretrained network counts as converged only if its pretraining did."""
        return replace(self, convergence=self.convergence.requiring(converged))


def convergence_columns(convergence: Convergence) -> dict:
    """The five convergence columns of a table, by name, from the record (copies of its typed arrays)."""
    return {f.name: getattr(convergence, f.name).copy() for f in fields(convergence)}


def normalize_convergence(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its convergence columns rebuilt through :class:`Convergence` (ValueError naming the
    missing columns if it lacks any)."""
    missing = [c for c in CONVERGENCE_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"a simulator table must have the convergence columns {CONVERGENCE_COLUMNS}, lacks {missing}")
    out = frame.copy()
    record = Convergence.of_length(len(out), out["converged"].to_numpy(), out["status"].to_numpy(),
                                   out["t_final"].to_numpy(), out["steps"].fillna(0).to_numpy(),
                                   out["grad_norm"].to_numpy())
    for name, values in convergence_columns(record).items():
        out[name] = values
    return out
