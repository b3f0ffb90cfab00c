r"""Training losses of the deep-linear transfer experiments (FaF Eqs. 4, 5, 11, 14).

Each loss is a callable ``loss(y, rows) -> (∇L (b, P), L (b,))`` on a batch of
packed networks (:class:`~.network.Architecture`), the ``gradient`` argument of
:func:`~transfertheory.sim.integrator.integrate_gradient_flow`. Losses of the
end-to-end vector β (:class:`PopulationLoss`, :class:`LeastSquaresLoss`) also
expose ``beta_gradient`` — all that the factored stage kernel
:class:`~.stages.LowRankStages` needs — and ``residual`` = ‖∇_βL‖, the
integrator's saddle guard. The array module is that of the loss's data.
"""
from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from ...backend import get_backend, stacked_eigh
from .network import Architecture, end_to_end, left_vectors, matvec, packed_gradient, right_vectors, rmatvec

__all__ = ["EndToEndLoss", "PopulationLoss", "LeastSquaresLoss", "LastLayerLoss", "rotate_to_data_eigenbasis"]


class EndToEndLoss(ABC):
    """A loss of the end-to-end vector β: subclasses set ``arch``, ``xp`` and define ``beta_gradient``."""

    arch: Architecture
    xp: object

    def __call__(self, y, rows):
        rights, beta = right_vectors(self.arch, y)
        g, loss = self.beta_gradient(beta, rows)
        return packed_gradient(self.arch, rights, *left_vectors(self.arch, y, g)), loss

    @abstractmethod
    def beta_gradient(self, beta, rows, with_loss=True):
        """∇_βL (b, d) at end-to-end vectors ``beta`` of instances ``rows``; (∇_βL, L) if ``with_loss``."""

    def gradient_of_rows(self, rows):
        """∇_βL for the instances ``rows`` and their prefixes: a callable ``(beta, with_loss, out=None)`` that
        treats ``beta`` (b, d) as the first b of ``rows`` (the stage kernel sorts its batch once per step and
        evaluates prefixes of it); returns what :meth:`beta_gradient` returns, ∇_βL written into ``out`` (b, d)
        when given (the stage kernel's factor stack)."""

        def gradient(beta, with_loss, out=None):
            result = self.beta_gradient(beta, rows[: beta.shape[0]], with_loss)
            if out is None:
                return result
            out[...] = result[0] if with_loss else result
            return (out, result[1]) if with_loss else out

        return gradient

    def curvatures(self, rows):
        """The diagonal of ∇²_βL (b, d) for the instances ``rows`` when ∇²_βL is diagonal, else None (the
        early verdict of :mod:`.verdict` needs it)."""
        return None

    def residual(self, y, rows):
        """‖∇_βL‖ per instance: vanishes at the minimizers of L(β) but is O(1) at the saddle W = 0,
        where the weight gradient is only O(α^{L−1}) (the integrator's ``residual`` guard)."""
        g = self.beta_gradient(end_to_end(self.arch, y), rows, with_loss=False)
        return self.xp.sqrt(self.xp.sum(g * g, axis=1))


class PopulationLoss(EndToEndLoss):
    """Population source loss ½E(f − y)² = ½(β − β_s)ᵀΣ(β − β_s) + const (FaF Eq. 4 at Σ = I); ``beta_s`` (1, d)
    or (b, d); ``spectrum`` the eigenvalues (d,) of a diagonal input covariance Σ, None for Σ = I
    (docs/anisotropic.md)."""

    def __init__(self, arch: Architecture, beta_s, spectrum=None):
        self.arch, self.beta_s, self.xp = arch, beta_s, get_backend(beta_s)
        self.spectrum = None if spectrum is None else self.xp.asarray(spectrum, dtype=beta_s.dtype)[None, :]

    def beta_gradient(self, beta, rows, with_loss=True):
        """∇_βL = Σ(β − β_s) (and L if ``with_loss``)."""
        r = beta - self.beta_s
        if self.spectrum is None:
            return (r, 0.5 * self.xp.sum(r * r, axis=1)) if with_loss else r
        g = self.spectrum * r
        return (g, 0.5 * self.xp.sum(r * g, axis=1)) if with_loss else g

    def curvatures(self, rows):
        """∇²_βL = Σ (diagonal)."""
        ones = self.xp.ones((len(rows), self.arch.d), dtype=self.beta_s.dtype)
        return ones if self.spectrum is None else ones * self.spectrum


class LeastSquaresLoss(EndToEndLoss):
    r"""Empirical target loss (1/2n)‖y − Xβ‖² = ½βᵀΣ̂β − ĉᵀβ + ‖y‖²/2n (FaF Eq. 5).

    Instances are grouped: instance i uses Gram matrix ``gram[i // k]``
    (Σ̂ = XᵀX/n of its target draw) and its own ``c[i]`` (ĉ = Xᵀy/n) and
    ``y2[i]`` (‖y‖²/n). ``gram`` of shape (m, d) is a diagonal Σ̂ = diag(λ):
    the loss in the eigenbasis of the data, where Σ̂β costs O(d) instead of
    O(d²) (see :func:`rotate_to_data_eigenbasis`). The data of the requested
    rows are gathered once per row order.
    """

    def __init__(self, arch: Architecture, gram, c, y2):
        self.arch, self.gram, self.c, self.y2 = arch, gram, c, y2
        self.xp = get_backend(gram, c, y2)
        self.k = c.shape[0] // gram.shape[0]
        self._cached_rows, self._cached = np.empty(0, dtype=np.int64), None

    def _data_of(self, rows):
        """(Σ̂, ĉ, ‖y‖²/n) of each requested row, gathered once per row order.

        The integrator's stages within a step request prefixes of one sorted row
        order, so one gather serves all of them (a gather moves as many bytes as
        the first layer's weights).
        """
        cached = self._cached_rows
        if rows.size > cached.size or not np.array_equal(cached[: rows.size], rows):
            self._cached_rows = np.array(rows, copy=True)
            dev_rows = self.xp.asarray(rows)
            self._cached = (self.gram[self.xp.asarray(rows // self.k)], self.c[dev_rows], self.y2[dev_rows])
        return tuple(a[: rows.size] for a in self._cached)

    def beta_gradient(self, beta, rows, with_loss=True):
        """∇_βL = Σ̂β − ĉ for end-to-end vectors ``beta`` of instances ``rows`` (and L if ``with_loss``)."""
        return self._gradient(*self._data_of(rows), beta, with_loss)

    def curvatures(self, rows):
        """λ of each instance's diagonal Σ̂ (None for a dense Gram matrix)."""
        return self._data_of(rows)[0] if self.gram.ndim == 2 else None

    def gradient_of_rows(self, rows):
        """As :meth:`EndToEndLoss.gradient_of_rows`, with the data of ``rows`` gathered once."""
        gram, c, y2 = self._data_of(rows)

        def gradient(beta, with_loss, out=None):
            b = beta.shape[0]
            return self._gradient(gram[:b], c[:b], y2[:b], beta, with_loss, out)

        return gradient

    def _gradient(self, gram, c, y2, beta, with_loss, out=None):
        """∇_βL (and L) from the instances' data (Σ̂, ĉ, ‖y‖²/n), one row each; ∇_βL into ``out`` if given."""
        xp = self.xp
        # one product per instance: results do not depend on the batch
        Sb = gram * beta if gram.ndim == 2 else matvec(gram, beta)
        g = xp.subtract(Sb, c, out=out)
        if not with_loss:
            return g
        loss = 0.5 * xp.sum(beta * Sb, axis=1) - xp.sum(c * beta, axis=1) + 0.5 * y2
        return g, xp.maximum(loss, 0.0)


class LastLayerLoss:
    r"""Linear transfer by gradient flow on W_L alone: frozen features F = W₁⋯W_{L−1}.

    Loss (1/2n)‖XFw − y‖² + (λ/2)‖w‖² (FaF Eq. 11 / Eq. 14); ∇_w = Fᵀ∇_βL + λw.
    """

    def __init__(self, target: LeastSquaresLoss, features, lam: float):
        self.target, self.features, self.lam, self.xp = target, features, lam, target.xp

    def __call__(self, w, rows):
        beta = w @ self.features.T
        g, loss = self.target.beta_gradient(beta, rows)
        return g @ self.features + self.lam * w, loss + 0.5 * self.lam * self.xp.sum(w * w, axis=1)


def rotate_to_data_eigenbasis(arch: Architecture, gram, c, y0):
    r"""The target flows in the eigenbasis of their data, Σ̂ = Q diag(λ) Qᵀ.

    Gradient flow commutes with the orthogonal change of variables
    W₁ → QᵀW₁ (the loss depends on W₁ only through XW₁, and the Euclidean
    metric is invariant), so the flow of (QᵀW₁(0), W₂, …) on the loss with
    diagonal Gram λ and ĉ → Qᵀĉ is the original flow rotated: β(t) = Qβ̃(t),
    and losses, gradient norms, D_l (Eq. 35) and the layerwise error norm of
    :class:`~.stages.LowRankStages` are unchanged. ``gram`` (m, d, d), ``c``
    and ``y0`` (m·k, ·) grouped as in :class:`LeastSquaresLoss`. Returns
    (λ (m, d), Q (m, d, d), Qᵀĉ, rotated y0).
    """
    xp = get_backend(gram, c, y0)
    lam, Q = stacked_eigh(gram)
    m, d, k = gram.shape[0], arch.d, c.shape[0] // gram.shape[0]
    c_rot = rmatvec(xp.repeat(Q, k, axis=0), c)
    y_rot = y0.copy().reshape(m, k, -1)
    W1 = y_rot[:, :, : d * d].reshape(m, k, d, d)
    y_rot[:, :, : d * d] = (Q.transpose(0, 2, 1)[:, None] @ W1).reshape(m, k, d * d)
    return xp.maximum(lam, 0.0), Q, c_rot, y_rot.reshape(y0.shape)
