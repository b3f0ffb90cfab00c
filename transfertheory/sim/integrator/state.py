"""The batched state of a gradient-flow integration and the record of finished instances.

:class:`FlowState` holds, for the instances still integrating (the *working
set*), every per-instance quantity the step control needs; :meth:`FlowState.compact`
compacts it when instances finish. :class:`FlowRecord` collects each finished
instance's final values in batch order. Device arrays stay on the backend of
the states; the few host arrays are marked.
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np

from ...backend import to_host
from .ragged import RaggedBatch, array_module, batch_size, put, take

__all__ = ["FlowState", "FlowRecord"]

_HOST = ("rows", "since_rho", "evaluations", "rejected")  # the host arrays of a FlowState


@dataclass(frozen=True)
class FlowState:
    """Per-instance arrays of the working set (first axis: instance), device unless marked *host*.

    ``rows`` (host) each instance's index in the whole batch; ``since_rho``
    (host) accepted steps since its last spectral-radius estimate; ``evaluations``, ``rejected`` (host) its
    gradient evaluations and rejected steps so far; ``y``
    states (b, P); ``carried`` the stage kernel's gradient representation at
    ``y`` (None when nothing is carried); ``grad_norm``, ``loss`` at ``y``;
    ``loss_limit`` the loss above which it counts as diverged; ``t``,
    ``steps``, ``h`` time, accepted steps, next step size; ``rho``, ``eigvec``
    the spectral-radius estimate and its warm start; ``atol`` its absolute
    tolerance.
    """

    rows: np.ndarray
    since_rho: np.ndarray
    evaluations: np.ndarray
    rejected: np.ndarray
    y: object
    carried: object
    grad_norm: object
    loss: object
    loss_limit: object
    t: object
    steps: object
    h: object
    rho: object
    eigvec: object
    atol: object

    @property
    def size(self) -> int:
        return int(self.rows.size)

    def compact(self, keep: np.ndarray) -> "FlowState":
        """The working set restricted to the host boolean mask ``keep``."""
        return self._gathered(np.flatnonzero(keep))

    def reordered(self, order: np.ndarray, y) -> "FlowState":
        """The working set in the order of the host permutation ``order`` (plain states), its states replaced
        by ``y``, already in that order (a step's result, :attr:`~.kernels.StepOutcome.order`)."""
        return self._gathered(order, y=y)

    def _gathered(self, idx: np.ndarray, **given) -> "FlowState":
        """Every per-instance array at the host indices ``idx`` (ascending for ragged states), but ``given``."""
        dev_idx = array_module(self.y).asarray(idx)
        parts = dict(given)
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in given:
                continue
            if f.name in _HOST:
                parts[f.name] = value[idx]
            elif isinstance(value, RaggedBatch):
                parts[f.name] = take(value, idx)
            else:
                parts[f.name] = None if value is None else value[dev_idx]
        return FlowState(**parts)

    def with_(self, **changes) -> "FlowState":
        """A copy with some fields replaced."""
        return replace(self, **changes)


class FlowRecord:
    """Final values of every instance in batch order: states on the backend, the rest on the host."""

    def __init__(self, y0):
        B = batch_size(y0)
        self.y = y0.copy()
        self.t = np.zeros(B)
        self.steps, self.evaluations, self.rejected = np.zeros((3, B), dtype=np.int64)
        self.grad_norm, self.loss, self.residual = np.full(B, np.nan), np.full(B, np.nan), np.full(B, np.nan)
        self.status = np.full(B, "", dtype=object)

    def finish(self, state: FlowState, mask: np.ndarray, label: str, residual=None) -> FlowState:
        """Record the instances of the host mask ``mask`` with status ``label``; returns the rest."""
        idx = np.flatnonzero(mask)
        if idx.size == 0:
            return state
        xp = array_module(state.y)
        out_rows = state.rows[idx]
        dev_idx = xp.asarray(idx)
        finished = take(state.y, idx)
        put(self.y, out_rows, finished)
        self.t[out_rows] = to_host(state.t[dev_idx])
        self.steps[out_rows] = to_host(state.steps[dev_idx])
        self.evaluations[out_rows], self.rejected[out_rows] = state.evaluations[idx], state.rejected[idx]
        self.grad_norm[out_rows] = to_host(state.grad_norm[dev_idx])
        self.loss[out_rows] = to_host(state.loss[dev_idx])
        if residual is not None:
            self.residual[out_rows] = to_host(residual(finished, out_rows))
        self.status[out_rows] = label
        return state.compact(~mask)
