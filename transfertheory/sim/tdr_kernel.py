r"""TDR §6's two-layer ReLU network as a stage kernel of the integrator: the gradient, a fused gradient-descent
step and the spectral radius of the empirical tangent kernel.

Model (TDR §6.1, "Towards understanding the transferability of deep representations"):
f(x) = (1/√m) aᵀσ(Wᵀx), σ = ReLU, a_r ∈ {±1} fixed, L(W) = ½‖y − f(X)‖², with the analytic gradient

    ∂L/∂w_r = (1/√m) a_r Σ_i (u_i − y_i) 1{w_rᵀx_i > 0} x_i,   u_i = f(x_i)          (TDR Eq. 3)

With D = 1{WᵀX > 0} (m × n) and r = u − y: u = aᵀ(D ∘ WᵀX)/√m and ∇_W L = diag(a)·D·(r ∘ X)/√m, a product of
the activation pattern with the residual-weighted inputs (n × d), never an (m, n) broadcast; 1/√m is folded
into a precomputed (X/√m)ᵀ. O(n·m·d) per evaluation.

Cost. At the widths of the TDR experiments a step is a dozen small array operations, so their number and the
memory they touch are its cost. :class:`TwoLayerStages` writes every intermediate into buffers allocated once
per kernel, and its :meth:`~TwoLayerStages.descend` is the whole gradient-descent step of the integrator's
``scheme="euler"`` — W −= h∇L, the new gradient in place of the old, the loss and ‖∇L‖² — computed chunk by
chunk of instances (on the host :data:`HOST_BLOCK_ELEMENTS` pre-activations, so that a chunk's weights,
gradient and activations stay in the core's cache from the update to the gradient, as a single network's do
in a per-network loop; on a device one chunk). The arithmetic is that of the integrator's separate update,
gradient call and squared norms, operation for operation (the squared norms of the whole batch at once, as
the integrator sums them), so the results are the same to the bit; each instance's arithmetic is its own
(chunks and batches do not change it).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..backend import get_backend, stacked_eigvalsh
from .integrator import BlockwiseStages, DenseStages
from .integrator.kernels import row_squares
from .integrator.ragged import array_module

__all__ = ["HOST_BLOCK_ELEMENTS", "TwoLayerStages", "WidthBlockStages", "tangent_kernel_radius"]

#: pre-activations per chunk of instances on the host: the chunk's (units, n) arrays stay in the core's cache, where
#: tall-skinny products and elementwise passes run fastest (docs/benchmarks.md, "Cache-sized blocks")
HOST_BLOCK_ELEMENTS = 2**15


class _Chunk(NamedTuple):
    """One chunk of a batch (its instances ``rows``, a slice) as prebuilt views: of the states and their
    gradients ((k, m·d) and (k·m, d), (k, m, d)), of the signs ((k, 1, m), and (k, m, d) repeated along d: a
    product with a contiguous array, not a broadcast view), and of the kernel's workspace."""

    rows: slice
    weights: object
    weight_rows: object
    grad: object
    grad_units: object
    signs: object
    unit_signs: object
    pre: object
    pre_rows: object
    active: object
    outputs: object
    residual: object
    residual_column: object
    weighted: object
    squares: object
    scaled: object


class TwoLayerStages(DenseStages):
    """The stage kernel of one block of equally wide networks trained on one set (x, y) (module docstring).

    ``signs`` (B, m) the fixed a of every instance of the block, ``x`` (n, d) and ``y`` (n,) on the backend of
    the states (b, m·d), which hold vec(W) row by row. :attr:`gradient` is the integrator's gradient callable
    ``(state, rows) -> (grad, loss)``, :meth:`descend` the fused Euler step, ``spectral_radius`` λ_max of the
    empirical tangent kernel (:func:`tangent_kernel_radius`); RKC steps are those of
    :class:`~transfertheory.sim.integrator.DenseStages`. The views of
    the last (states, gradients, rows) are kept: an integration passes the same arrays at every step, updates
    states and gradients only in place and never modifies ``rows``.
    """

    def __init__(self, x, y, signs):
        self.xp = get_backend(x)
        self.width, self.inputs, self.points = signs.shape[1], x.shape[1], x.shape[0]
        self.signs, self.labels = signs, y
        self.x_t = self.xp.ascontiguousarray((x / math.sqrt(self.width)).T)  # (X/√m)ᵀ (d, n)
        # instances per chunk: all of them on a device, a cache-sized chunk on the host
        self.chunk = max(1, HOST_BLOCK_ELEMENTS // (self.width * self.points)) if self.xp is np else None
        self._buffers, self._rows_signs, self._last, self._chunks = None, (None, None, None), (None, None, None), ()
        super().__init__(self.gradient)
        self.spectral_radius = tangent_kernel_radius(x, signs)

    def _workspace(self, k, dtype):
        """Buffers of k instances: pre-activations and activation pattern (k, m, n), outputs (k, 1, n),
        residual-weighted inputs (k, n, d), squared residuals (k, n), and the scaled gradient of an update
        (k, m·d) in the pre-activations' memory (recomputed after the update; the buffer holds max(n, d) floats
        per unit); allocated for the largest k asked for (views of its first k)."""
        m, n, d = self.width, self.points, self.inputs
        if self._buffers is None or self._buffers[0].shape[0] < k or self._buffers[0].dtype != dtype:
            shapes = ((m * max(n, d),), (m, n), (1, n), (n, d), (n,))
            self._buffers = tuple(self.xp.empty((k, *shape), dtype=dtype) for shape in shapes)
        shared, active, outputs, weighted, squares = (buffer[:k] for buffer in self._buffers)
        shared = shared.reshape(-1)  # the first k rows of a contiguous buffer: one contiguous block
        pre, scaled = shared[:k * m * n].reshape(k, m, n), shared[:k * m * d].reshape(k, m * d)
        return pre, active, outputs, weighted, squares, scaled

    def _signs_of(self, rows):
        """The signs (b, m) of the instances ``rows`` and the same repeated along d (b, m, d)."""
        if self._rows_signs[0] is not rows:
            signs = self.signs[rows]
            repeated = self.xp.broadcast_to(signs[:, :, None], (*signs.shape, self.inputs))
            self._rows_signs = (rows, signs, self.xp.ascontiguousarray(repeated))
        return self._rows_signs[1:]

    def _chunk_views(self, state, grad, rows):
        """The :class:`_Chunk` views of the batch ``state``, ``grad`` (b, m·d) of the instances ``rows``."""
        b, (m, d) = state.shape[0], (self.width, self.inputs)
        k = b if self.chunk is None else min(b, self.chunk)
        signs, unit_signs = self._signs_of(rows)
        chunks = []
        for start in range(0, b, k):
            part = slice(start, min(start + k, b))
            size = part.stop - start
            pre, active, outputs, weighted, squares, scaled = self._workspace(size, state.dtype)
            chunks.append(_Chunk(part, state[part], state[part].reshape(size * m, d), grad[part],
                                 grad[part].reshape(size, m, d), signs[part, None, :], unit_signs[part], pre,
                                 pre.reshape(size * m, -1), active, outputs, outputs[:, 0, :], outputs[:, 0, :, None],
                                 weighted, squares, scaled))
        return tuple(chunks)

    def _evaluate(self, chunks, b, step):
        """The gradient of every chunk into its ``grad``, after the update weights −= step·grad when ``step``
        (b,) is given; returns L (b,)."""
        xp, x_t, labels = self.xp, self.x_t, self.labels
        matmul, multiply, subtract = xp.matmul, xp.multiply, xp.subtract
        loss = None if len(chunks) == 1 else xp.empty(b, dtype=chunks[0].weights.dtype)
        for c in chunks:
            if step is not None:  # y −= h·G: the integrator's update, in the chunk's cache
                multiply(c.grad, step[c.rows, None], out=c.scaled)
                subtract(c.weights, c.scaled, out=c.weights)
            pre, active, residual = c.pre, c.active, c.residual
            matmul(c.weight_rows, x_t, out=c.pre_rows)  # WᵀX/√m
            xp.greater(pre, 0, out=active)  # D
            multiply(pre, active, out=pre)  # σ(WᵀX)/√m
            matmul(c.signs, pre, out=c.outputs)  # u
            subtract(residual, labels, out=residual)  # r = u − y
            multiply(c.residual_column, x_t.T, out=c.weighted)  # r ∘ X/√m
            matmul(active, c.weighted, out=c.grad_units)
            multiply(c.grad_units, c.unit_signs, out=c.grad_units)  # ∇L = diag(a)·D·(r ∘ X)/√m
            multiply(residual, residual, out=c.squares)
            if loss is None:
                loss = c.squares.sum(axis=1)
            else:
                loss[c.rows] = c.squares.sum(axis=1)
        loss *= 0.5
        return loss

    def gradient(self, state, rows):
        """(∇L (b, m·d), L (b,)) of the instances ``rows`` at ``state`` (b, m·d)."""
        grad = self.xp.empty_like(state)
        return grad, self._evaluate(self._chunk_views(state, grad, rows), state.shape[0], None)

    def descend(self, state, grad, step, rows):
        """One gradient-descent step of the instances ``rows``, in place: state −= step·grad (``step`` (b,), one
        per instance), then ``grad`` overwritten by ∇L at the new state; returns (grad, L, ‖∇L‖²) (b,)
        (the integrator's optional fused Euler step, :class:`~transfertheory.sim.integrator.StageKernel`)."""
        if self._last[0] is not state or self._last[1] is not grad or self._last[2] is not rows:
            self._last, self._chunks = (state, grad, rows), self._chunk_views(state, grad, rows)
        loss = self._evaluate(self._chunks, state.shape[0], step)
        return grad, loss, row_squares(grad)  # the integrator's squared norms


class WidthBlockStages(BlockwiseStages):
    """:class:`~transfertheory.sim.integrator.BlockwiseStages` of :class:`TwoLayerStages` kernels (networks of
    several widths, one block per width) with their fused Euler step, block by block."""

    def __init__(self, kernels, counts):
        super().__init__(kernels, counts)
        self._last, self._blocks = (None, None, None), ()

    def descend(self, state, grad, step, rows):
        """:meth:`TwoLayerStages.descend` of every non-empty block of the ragged ``state`` and ``grad``."""
        if self._last[0] is not state or self._last[1] is not grad or self._last[2] is not rows:
            self._last = (state, grad, rows)
            self._blocks = tuple((self.kernels[g], block, grad.blocks[g], local, positions)
                                 for g, block, local, positions in self._local(state, rows))
        losses, squares = [], []
        for kernel, block, block_grad, local, positions in self._blocks:
            _, loss, norms = kernel.descend(block, block_grad, step[positions], local)
            losses.append(loss)
            squares.append(norms)
        xp = array_module(state)
        return (grad, *(parts[0] if len(parts) == 1 else xp.concatenate(parts) for parts in (losses, squares)))


def tangent_kernel_radius(x, signs):
    """The stage kernel's spectral-radius estimate: λ_max of the empirical tangent kernel, per instance.

    L is piecewise quadratic in W (σ is piecewise linear), so wherever the activation pattern is locally
    constant ∇²L = JᵀJ, J = ∂f(X)/∂W, and ρ(∇²L) = λ_max(JJᵀ) with (JJᵀ)_ij = x_iᵀx_j·(1/m)Σ_r 1{w_rᵀx_i > 0}
    1{w_rᵀx_j > 0} (the finite-width H∞; a_r² = 1). A finite-difference power iteration would instead see the
    gradient's jumps where a pre-activation crosses 0 and overestimate ρ by orders of magnitude. Returns the
    ``spectral_radius(y, carried, rows, state, iterations) -> (ρ, state, evaluations)`` callable of the
    integrator's stage-kernel contract (no gradient evaluations).
    """
    m, d = signs.shape[1], x.shape[1]
    inner = x @ x.T

    def estimate(state, carried, rows, warm, iterations):  # no warm start: the estimate is direct
        xp = get_backend(state)
        active = (state.reshape(state.shape[0], m, d) @ x.T > 0).astype(state.dtype)  # (b, m, n)
        kernel = inner[None] * (active.transpose(0, 2, 1) @ active) / m
        return stacked_eigvalsh(kernel)[:, -1], xp.zeros((state.shape[0], 1), dtype=state.dtype), 0

    return estimate
