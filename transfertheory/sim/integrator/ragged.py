"""Batches of instances of different sizes: :class:`RaggedBatch` and the per-block stage kernel.

A sweep over model sizes (TDR §6: two-layer networks of widths 10² … 10⁵) integrates instances whose states
have different lengths P_g. Padding them to the largest P would multiply the small instances' work by P_max/P_g;
instead a :class:`RaggedBatch` keeps one dense (b_g, P_g) array per *block* of equally sized instances, the
instances numbered block after block. :func:`~transfertheory.sim.integrator.integrate_gradient_flow` accepts
one as its states; the per-instance step control is unchanged (each instance has its own t, h, ρ, status), and
everything that touches the states goes through the functions here — :func:`take`, :func:`put`,
:func:`row_norms`, :func:`subtract_scaled`, :func:`array_module` — which treat a plain (b, P) array as a
single block. The model computes each block with its own dense stage kernel; :class:`BlockwiseStages` joins
them into the one :class:`~transfertheory.sim.integrator.kernels.StageKernel` of the batch. An instance's
arithmetic is that of its block alone, so its result is the one a separate integration of its block gives.

The state of an integration, plain or ragged, is held here too: :class:`FlowState` holds, for the instances still
integrating (the *working set*), every per-instance quantity the step control needs; :meth:`FlowState.compact`
compacts it when instances finish. :class:`FlowRecord` collects each finished instance's final values in batch
order. Device arrays stay on the backend of the states; the few host arrays are marked.
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from functools import cached_property

import numpy as np

from ...backend import get_backend, to_host
from .kernels import StepOutcome, StepRequest
from .kernels import row_norms as dense_row_norms

__all__ = ["RaggedBatch", "BlockwiseStages", "array_module", "batch_size", "take", "put", "row_norms",
           "subtract_scaled", "FlowState", "FlowRecord"]


@dataclass(frozen=True, eq=False)
class RaggedBatch:
    """Instances of different sizes: ``blocks`` is a tuple of 2-D backend arrays (b_g, P_g), one row per
    instance, instances numbered block after block. Blocks may be empty (b_g = 0): a working set keeps the
    block structure of its batch, so block g always holds instances of the batch's block g."""

    blocks: tuple

    def __post_init__(self):
        if not self.blocks or any(getattr(b, "ndim", None) != 2 for b in self.blocks):
            raise ValueError("blocks must be a non-empty tuple of 2-D arrays (instances, state size)")

    @cached_property
    def module(self):
        """The array module of the blocks (one backend: TypeError otherwise)."""
        return get_backend(*self.blocks)

    @cached_property
    def counts(self) -> np.ndarray:
        """Instances per block (host)."""
        return np.array([b.shape[0] for b in self.blocks], dtype=np.int64)

    @cached_property
    def offsets(self) -> np.ndarray:
        """Index of each block's first instance, and the batch size last (host, length blocks + 1)."""
        return np.concatenate([[0], np.cumsum(self.counts)])

    @property
    def dtype(self):
        return self.blocks[0].dtype

    def __len__(self) -> int:
        return int(self.offsets[-1])

    def copy(self) -> "RaggedBatch":
        return RaggedBatch(tuple(b.copy() for b in self.blocks))

    def split(self, idx: np.ndarray):
        """Per block: (block, the rows within it of the instances ``idx`` (host indices, ascending))."""
        offsets = self.offsets
        bounds = np.searchsorted(idx, offsets)
        for g, block in enumerate(self.blocks):
            yield block, idx[bounds[g]:bounds[g + 1]] - offsets[g]


def array_module(y):
    """The array module of plain or ragged states."""
    return y.module if isinstance(y, RaggedBatch) else get_backend(y)


def batch_size(y) -> int:
    """Number of instances of plain or ragged states."""
    return len(y) if isinstance(y, RaggedBatch) else int(y.shape[0])


def take(y, idx: np.ndarray):
    """The instances ``idx`` (host indices, ascending) of plain or ragged states, as a new batch of that kind."""
    xp = array_module(y)
    if not isinstance(y, RaggedBatch):
        return y[xp.asarray(idx)]
    return RaggedBatch(tuple(block[xp.asarray(local)] for block, local in y.split(np.asarray(idx))))


def put(y, idx: np.ndarray, values) -> None:
    """y[idx] = values in place; for ragged states ``values`` has y's blocks restricted to ``idx`` (ascending)."""
    xp = array_module(y)
    if not isinstance(y, RaggedBatch):
        y[xp.asarray(idx)] = values
        return
    for (block, local), part in zip(y.split(np.asarray(idx)), values.blocks, strict=True):
        if local.size:
            block[xp.asarray(local)] = part


def _joined_rows(parts, xp):
    """Per-instance arrays of consecutive blocks as one (no copy for a single block)."""
    return parts[0] if len(parts) == 1 else xp.concatenate(parts)


def row_norms(y, norms=dense_row_norms):
    """Euclidean norm of every instance's state (b,), computed by ``norms`` on each (b_g, P_g) block."""
    if not isinstance(y, RaggedBatch):
        return norms(y)
    return _joined_rows([norms(b) for b in y.blocks], y.module)


def subtract_scaled(y, h, g):
    """y −= h·g in place, h (b,) one factor per instance; returns y."""
    if not isinstance(y, RaggedBatch):
        y -= h[:, None] * g
        return y
    offsets = y.offsets
    for k, (block, grad) in enumerate(zip(y.blocks, g.blocks)):
        block -= h[offsets[k]:offsets[k + 1], None] * grad
    return y


def _joined_blocks(y: RaggedBatch, parts):
    """The per-block results ``parts`` of the non-empty blocks of ``y`` as one ragged value (empty blocks keep
    y's empty block), or None when a non-empty block's result is None (nothing to carry)."""
    if any(part is None for part, block in zip(parts, y.blocks) if block.shape[0]):
        return None
    return RaggedBatch(tuple(block if part is None else part for part, block in zip(parts, y.blocks)))


def _blocks_of(value, count):
    """A ragged value's blocks, or ``count`` Nones for None."""
    return (None,) * count if value is None else value.blocks


class BlockwiseStages:
    """The stage kernel of a :class:`RaggedBatch` whose block g is computed by ``kernels[g]``.

    Each block kernel is a stage kernel for dense (b_g, P_g) states with a ``gradient(y, rows)`` attribute
    (e.g. :class:`~transfertheory.sim.integrator.DenseStages`), its ``rows`` local to its block of the *whole*
    batch. Pass :attr:`gradient` and the kernel itself to ``integrate_gradient_flow``. Steps, gradients and
    spectral radii are computed block by block and joined; warm starts and carried gradients are ragged.
    """

    def __init__(self, kernels, counts):
        self.kernels, self.counts = tuple(kernels), np.asarray(counts, dtype=np.int64)
        self.start = np.concatenate([[0], np.cumsum(self.counts)])[:-1]
        if len(self.kernels) != len(self.counts):
            raise ValueError(f"one kernel per block: {len(self.kernels)} kernels for {len(self.counts)} blocks")

    def _local(self, y: RaggedBatch, rows: np.ndarray):
        """(g, block, the rows of ``rows`` in block g local to it, positions) for the non-empty blocks; the
        batch must have the kernels' blocks and its rows must lie in them (else ValueError)."""
        if len(y.blocks) != len(self.kernels):
            raise ValueError(f"states of {len(y.blocks)} blocks for a kernel of {len(self.kernels)} blocks")
        offsets = y.offsets
        for g, block in enumerate(y.blocks):
            if block.shape[0]:
                positions = slice(offsets[g], offsets[g + 1])
                local = rows[positions] - self.start[g]
                if local[0] < 0 or local[-1] >= self.counts[g]:  # rows ascend within a block
                    raise ValueError(f"rows {rows[positions]} do not lie in block {g} (instances "
                                     f"{self.start[g]}..{self.start[g] + self.counts[g] - 1}): counts do not match "
                                     "the states")
                yield g, block, local, positions

    def gradient(self, y: RaggedBatch, rows: np.ndarray):
        """(∇L ragged like ``y``, L (b,)) from each block kernel's gradient."""
        xp, grads, losses = array_module(y), list(y.blocks), []
        for g, block, local, _ in self._local(y, rows):
            grads[g], loss = self.kernels[g].gradient(block, local)
            losses.append(loss)
        return RaggedBatch(tuple(grads)), _joined_rows(losses, xp)

    def spectral_radius(self, y, carried, rows, state, iterations):
        """Each block kernel's estimate for its instances, joined; warm starts ragged (None if any is None)."""
        xp, count = array_module(y), len(y.blocks)
        rhos, warm, evaluations = [], [None] * count, 0
        carried_blocks, state_blocks = _blocks_of(carried, count), _blocks_of(state, count)
        for g, block, local, _ in self._local(y, rows):
            rho, warm[g], n = self.kernels[g].spectral_radius(block, carried_blocks[g], local, state_blocks[g],
                                                             iterations)
            rhos.append(rho)
            evaluations += n
        return _joined_rows(rhos, xp), _joined_blocks(y, warm), evaluations

    def __call__(self, step: StepRequest) -> StepOutcome:
        y, xp, count = step.y, array_module(step.y), len(step.y.blocks)
        new_y, grads, parts, evaluations = list(y.blocks), [None] * count, [], 0
        carried_blocks = _blocks_of(step.carried, count)
        for g, block, local, positions in self._local(y, step.rows):
            stages = step.stages[positions]
            out = self.kernels[g](StepRequest(
                y=block, carried=carried_blocks[g], order=np.argsort(-stages, kind="stable"), h=step.h[positions],
                stages=stages, rows=local, coefficients=step.coefficients, rtol=step.rtol, atol=step.atol[positions]))
            if out.order is not None:  # a block kernel that answers in its own order: back to the block's
                inverse = xp.asarray(np.argsort(out.order))
                out = out._replace(**{name: None if value is None else value[inverse] for name, value in
                                      zip(("y", "grad", "error", "loss", "grad_norm"), (out.y, out.grad, out.error,
                                                                                        out.loss, out.grad_norm))})
            new_y[g], grads[g] = out.y, out.grad
            evaluations += out.evaluations
            parts.append((out.error, out.loss, out.grad_norm))
        error, loss, grad_norm = (_joined_rows(p, xp) for p in zip(*parts))
        return StepOutcome(RaggedBatch(tuple(new_y)), _joined_blocks(y, grads), evaluations, error, loss, grad_norm)


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
