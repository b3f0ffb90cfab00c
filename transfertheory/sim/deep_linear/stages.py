r"""Factored RKC stage kernel for losses of the end-to-end vector (rank-one layer gradients).

Every stage of an RKC2 step is Y_k = Y₀ + hΣ_{m<k} A_k[m]F(Y_m)
(:func:`~transfertheory.sim.integrator.rkc_butcher_rows`), and every matrix
layer's gradient is rank one, ∇_{W_l}L = a_l r_lᵀ (FaF Eq. 39). So a stage's
weights are W_l⁰ + Σ_m c_m a_{l,m}r_{l,m}ᵀ (c = −hA_k): :class:`LowRankStages`
stores the vectors a, r of each stage instead of d×d gradients and applies a
stage's W_l to a vector as W_l⁰v + Σ_m c_m a_m(r_mᵀv). A stage then reads each
W_l⁰ twice (one matrix–vector product each way) instead of combining five d×d
buffers; the new weights are formed once per step by one (d×s)(s×d) product,
and no dense gradient is ever formed. It implements
:class:`~transfertheory.sim.integrator.StageKernel`.
"""
from __future__ import annotations

import math

import numpy as np

from ...backend import get_backend
from ..integrator import StepOutcome, StepRequest, rkc_butcher_rows
from .losses import EndToEndLoss
from .network import left_vectors, matvec, right_vectors, rmatvec
from .verdict import unreachable

__all__ = ["LowRankStages"]


def _squared_norms(M):
    """‖M_i‖²_F of every matrix of a stack (b, d, d) whose matrices are contiguous (views into packed states
    included): one BLAS dot per matrix (docs/benchmarks.md, "Cache-sized blocks", against einsum)."""
    v = M.reshape(M.shape[0], 1, -1)
    return (v @ v.transpose(0, 2, 1))[:, 0, 0]


def _low_rank_apply(left, right, coef, v, out):
    """out += Σ_m coef_m left_m (right_mᵀ v) for factor stacks left, right (b, k, d), coef (b, k), v (b, d)."""
    proj = (right @ v[:, :, None])[:, :, 0]
    proj *= coef
    out += (proj[:, None, :] @ left)[:, 0, :]
    return out


class _Factors:
    """Per-step workspace, reused across steps: the factors of ∇L at every stage and the current stage's
    coefficients.

    ``lefts[l, i, m]`` = a_{l,m} and ``rights[l, i, m]`` = r_{l,m} of matrix layer l at stage m of instance i
    (sorted order); ``last[i, 0]`` = W_L at the start of the step and ``last[i, m + 1]`` = ∇_{W_L}L at stage
    m, so that W_L at stage k is the single product ``coef[i, :k + 1] @ last[i, :k + 1]``; at stage k,
    ``coef[i, :k + 1]`` = (1, −hA_k[0], …, −hA_k[k − 1]) with the Butcher row A_k of the instance's own stage
    count (column 0 stays 1). ``scratch`` holds two d × d matrices per instance for the error estimate.
    """

    def __init__(self, xp, n_layers, b, S, d, dtype):
        self.lefts = xp.empty((n_layers, b, S, d), dtype=dtype)
        self.rights = xp.empty((n_layers, b, S, d), dtype=dtype)
        self.last = xp.empty((b, S + 1, d), dtype=dtype)
        self.coef = xp.ones((b, S + 1), dtype=dtype)
        self.scratch = xp.empty((2, b, d, d), dtype=dtype)

    def fits(self, b, S, dtype) -> bool:
        return self.last.shape[0] >= b and self.lefts.shape[2] >= S and self.last.dtype == dtype


class _ButcherRows:
    """:func:`~transfertheory.sim.integrator.rkc_butcher_rows` on the states' backend, grown on demand:
    ``rows[k][s − k]`` = A_s[k, :k] for every stage count s ≤ ``cap``."""

    def __init__(self):
        self.cap, self.rows = 0, []

    def upto(self, xp, coefficients, s_max):
        if s_max > self.cap:
            self.cap = min(coefficients.shape[1] - 1, 16 * -(-s_max // 16))
            self.rows = [xp.asarray(r) for r in rkc_butcher_rows(coefficients, self.cap)]
        return self.rows


class LowRankStages:
    r"""RKC stage kernel for an :class:`~.losses.EndToEndLoss` (rank-one layer gradients).

    The carried gradient representation (:attr:`StepOutcome.grad`) is, per
    instance, the (2(L−1)+1, d) stack [a₁ … a_{L−1}, r₁ … r_{L−1}, a_L] of ∇L
    at the step's result: the next step's stage 0.

    Error norm: the RKC2 estimate est = 0.8(y − y_new) − 0.4h(∇L(y) + ∇L(y_new))
    of a matrix layer is Σ_{m≤s} e_m a_m r_mᵀ; for few stages ((s + 1)² ≤ 2d) its
    Frobenius norm is eᵀ(AAᵀ ∘ RRᵀ)e from the factors' Grams, O(s²d), otherwise
    the step's displacement (formed anyway for W_new) plus two rank-one terms,
    O(d²) at any stage count; the norm is the
    RMS over layers of RMS(est_l) / (atol + rtol·max(RMS(W_l), RMS(W_l,new)))
    (layerwise, invariant under the rotations W_l → Q W_l that leave the model
    unchanged). The new states equal the dense kernel's up to rounding. The
    outcome is in the step's stage-count order (:attr:`StepOutcome.order`).

    Early verdict (``early_verdict``, default on): :meth:`unreachable` certifies instances that cannot converge
    before their time budget ends (:mod:`.verdict`), which the integrator stops with status ``unreachable``.
    """

    def __init__(self, loss: EndToEndLoss, early_verdict: bool = True):
        self.loss, self.arch = loss, loss.arch
        self.early_verdict = early_verdict
        self._workspace, self._butcher = None, _ButcherRows()

    def unreachable(self, y, rows, t_remaining, gtol):
        """The integrator's early verdict: instances that provably cannot reach ‖∇_βL‖ ≤ gtol in the time left
        (:func:`~.verdict.unreachable`; none when the kernel was built with ``early_verdict=False``)."""
        if not self.early_verdict:
            return np.zeros(y.shape[0], dtype=bool)
        return unreachable(self.loss, y, rows, t_remaining, gtol)

    def _factors(self, xp, b, S, dtype) -> _Factors:
        ws = self._workspace
        if ws is None or not ws.fits(b, S, dtype):
            size_b = max(b, 0 if ws is None else ws.last.shape[0])
            size_s = max(S, 0 if ws is None else ws.lefts.shape[2])
            ws = self._workspace = _Factors(xp, self.arch.depth - 1, size_b, size_s, self.arch.d, dtype)
        return ws

    def spectral_radius(self, y, carried, rows, state, iterations):
        r"""Power iteration for ρ(∇²L) with exact, factored Hessian–vector products.

        For a direction D = (V₁ … V_{L−1}, u), differentiating the chains of
        :func:`~.network.packed_gradient` gives δr_{l−1} = V_l r_l + W_l δr_l
        (δr_{L−1} = u), δg = ∇²_βL·δβ, δa_{l+1} = V_lᵀa_l + W_lᵀδa_l (δa₁ = δg)
        and ∇²L·D = (δa_l r_lᵀ + a_l δr_lᵀ, …, δa_L): rank two in every matrix
        layer. So after the first product every iterate is V_l = P_lQ_lᵀ with
        P_l, Q_l of shape (d, 2), and an iteration costs 2(L−1) matrix–vector
        products instead of a dense gradient with finite differences. The state
        (per instance: P, Q of every layer and u, packed) warm-starts the next
        call; the first direction is the gradient nudged by a fixed rank-one term.
        """
        arch, loss, xp = self.arch, self.loss, get_backend(y)
        nl, d, b = arch.depth - 1, arch.d, y.shape[0]
        mats, _ = arch.layers(y)
        rights, beta = right_vectors(arch, y)
        g = loss.beta_gradient(beta, rows, with_loss=False)
        g_at_zero = loss.beta_gradient(xp.zeros_like(beta), rows, with_loss=False)  # ∇²_βL·x = ∇_βL(x) − ∇_βL(0)
        lefts, a = left_vectors(arch, y, g)
        if state is None:
            nudge = xp.broadcast_to(xp.asarray(1e-2 * np.cos(np.arange(d) * 0.7548776662) / math.sqrt(d)), (b, d))
            P = xp.stack([xp.stack([lefts[l], nudge], axis=-1) for l in range(nl)], axis=1)  # (b, nl, d, 2)
            Q = xp.stack([xp.stack([rights[l], nudge], axis=-1) for l in range(nl)], axis=1)
            u = a
        else:
            P = state[:, : 2 * nl * d].reshape(b, nl, d, 2)
            Q = state[:, 2 * nl * d: 4 * nl * d].reshape(b, nl, d, 2)
            u = state[:, 4 * nl * d:]

        def norm(P, Q, u):
            frob = xp.einsum("bljk,bljk->b", xp.einsum("bldj,bldk->bljk", P, P), xp.einsum("bldj,bldk->bljk", Q, Q))
            return xp.sqrt(xp.maximum(frob, 0.0) + xp.sum(u * u, axis=1))

        rho = xp.zeros(b, dtype=y.dtype)
        for _ in range(iterations):
            scale = 1.0 / xp.maximum(norm(P, Q, u), 1e-300)
            P, u = P * scale[:, None, None, None], u * scale[:, None]
            dr, drs = u, [None] * nl
            for l in reversed(range(nl)):
                drs[l] = dr
                Vr = xp.einsum("bdk,bk->bd", P[:, l], xp.einsum("bdk,bd->bk", Q[:, l], rights[l]))
                dr = Vr + matvec(mats[l], dr)
            da = loss.beta_gradient(dr, rows, with_loss=False) - g_at_zero
            newP, newQ = [], []
            for l in range(nl):
                newP.append(xp.stack([da, lefts[l]], axis=-1))
                newQ.append(xp.stack([rights[l], drs[l]], axis=-1))
                Vta = xp.einsum("bdk,bk->bd", Q[:, l], xp.einsum("bdk,bd->bk", P[:, l], lefts[l]))
                da = Vta + rmatvec(mats[l], da)
            P, Q, u = xp.stack(newP, axis=1), xp.stack(newQ, axis=1), da
            rho = norm(P, Q, u)
        state = xp.concatenate([P.reshape(b, -1), Q.reshape(b, -1), u], axis=1)
        return rho, state, (iterations + 1) * b

    def __call__(self, step: StepRequest) -> StepOutcome:
        return _LowRankStep(self, step).run()


class _LowRankStep:
    """One step of :class:`LowRankStages` for a batch sorted by decreasing stage count."""

    def __init__(self, kernel: LowRankStages, step: StepRequest):
        xp, arch, y = get_backend(step.y), kernel.arch, step.y
        self.xp, self.arch, self.step = xp, arch, step
        self.b, self.nl, self.d = y.shape[0], arch.depth - 1, arch.d
        order = step.order
        s_sorted = step.stages[order]
        self.f = kernel._factors(xp, self.b, int(s_sorted[0]) + 1, y.dtype)
        self.butcher = kernel._butcher.upto(xp, step.coefficients, int(s_sorted[0]))
        # row_index[i, k] = s_i − k: where instance i's Butcher row A_{s_i}[k] sits in ``butcher[k]``
        self.row_index = xp.asarray(s_sorted[:, None] - np.arange(int(s_sorted[0]) + 1))
        self.neg_h = xp.asarray(-step.h[order])[:, None]
        self.beta_gradient = kernel.loss.gradient_of_rows(step.rows[order])
        # a batch already in order (e.g. every instance with the same stage count) is used as it is
        self.in_order = bool(np.array_equal(order, np.arange(order.size)))
        self.dev_order = xp.asarray(order)
        self.mats0, last0 = arch.layers(y if self.in_order else y[self.dev_order])
        self.f.last[: self.b, 0] = last0
        self.h = xp.asarray(step.h[order], dtype=y.dtype)
        self.counts = np.append(np.bincount(s_sorted)[::-1].cumsum()[::-1], 0)  # counts[k] = #(s ≥ k)
        # per instance, in sorted order: the new state, ‖est‖² and ‖W_new‖² per layer (matrix layers, then
        # W_L), ‖∇L(y_new)‖², the loss and the factors of ∇L(y_new) that the next step starts from
        b, nl, d = self.b, self.nl, self.d
        self.y_sorted = xp.empty_like(y)
        self.est2, self.size2 = xp.empty((nl + 1, b), dtype=y.dtype), xp.empty((nl + 1, b), dtype=y.dtype)
        self.gn2, self.loss_sorted = xp.zeros(b, dtype=y.dtype), xp.empty(b, dtype=y.dtype)
        self.carry = xp.empty((b, 2 * nl + 1, d), dtype=y.dtype)
        self.beta = xp.empty((b, d), dtype=y.dtype)

    def run(self) -> StepOutcome:
        step, f, nl, b, counts = self.step, self.f, self.nl, self.b, self.counts
        evals = 0
        if step.carried is None:  # stage 0: the factors of ∇L(y) carried from the step that produced y
            self.evaluate(0, b, False)
            evals += b
        else:
            carried = step.carried if self.in_order else step.carried[self.dev_order]
            f.lefts[:, :b, 0] = carried[:, :nl].transpose(1, 0, 2)
            f.rights[:, :b, 0] = carried[:, nl: 2 * nl].transpose(1, 0, 2)
            f.last[:b, 1] = carried[:, 2 * nl]
        for k in range(1, counts.size - 1):
            kb, done = int(counts[k]), int(counts[k + 1])
            # stage gradients, and ∇L(y_new) with the loss for the instances finishing at k
            loss_k = self.evaluate(k, kb, done < kb)
            evals += kb
            if done < kb:
                self.loss_sorted[done:kb] = loss_k[done:]
                self.complete(k, slice(done, kb))
        # in sorted order: the integrator's working set follows it, and the next step's batch, sorted by
        # stage counts that change slowly, is mostly in order already (no copies of the states at all)
        return StepOutcome(self.y_sorted, self.carry, evals, self.error_norm(), self.loss_sorted,
                           self.xp.sqrt(self.gn2), None if self.in_order else step.order)

    def evaluate(self, k, kb, with_loss):
        """Store the factors of ∇L at stage Y_k of the first kb instances; returns their losses if
        ``with_loss``. Each matrix layer costs one matrix–vector product with W_l⁰ each way, plus
        O(k·d) for the stage factors; every product writes straight into the factor stacks."""
        xp, f, mats0, nl = self.xp, self.f, self.mats0, self.nl
        coef = f.coef[:kb, : k + 1]  # (1, −hA_k) of each instance's own stage count s_i ≥ k
        c = coef[:, 1:]
        if k:
            xp.multiply(self.butcher[k][self.row_index[:kb, k]], self.neg_h[:kb], out=c)
        r = f.rights[nl - 1, :kb, k]
        xp.matmul(coef[:, None, :], f.last[:kb, : k + 1], out=r[:, None, :])  # W_L at stage k
        for l in reversed(range(nl)):  # right chain r_{l-1} = W_l r_l, ending at β
            out = f.rights[l - 1, :kb, k] if l else self.beta[:kb]
            xp.matmul(mats0[l][:kb], r[:, :, None], out=out[:, :, None])
            if k:
                _low_rank_apply(f.lefts[l, :kb, :k], f.rights[l, :kb, :k], c, r, out)
            r = out
        a = self.beta_gradient(r, with_loss, out=f.lefts[0, :kb, k])  # written into the factor stack
        a, loss = a if with_loss else (a, None)
        for l in range(nl):  # left chain a_{l+1} = W_lᵀa_l, ending at ∇_{W_L}L
            out = f.lefts[l + 1, :kb, k] if l + 1 < nl else f.last[:kb, k + 1]
            xp.matmul(a[:, None, :], mats0[l][:kb], out=out[:, None, :])
            if k:
                _low_rank_apply(f.rights[l, :kb, :k], f.lefts[l, :kb, :k], c, a, out)
            a = out
        return loss

    def complete(self, k, fin):
        """Form Y_k and the ingredients of its error estimate for the instances ``fin`` whose last stage is k."""
        xp, f, nl, d, d2 = self.xp, self.f, self.nl, self.d, self.d**2
        coef = f.coef[fin, : k + 1]  # this stage's, from :meth:`evaluate`
        c = coef[:, 1:]
        e = xp.empty_like(coef)  # est = Σ_{m ≤ k} e_m ∇L(Y_m): e = (−0.8c, 0) − 0.4h(e₀ + e_k)
        xp.multiply(c, -0.8, out=e[:, :k])
        e[:, k] = 0.0
        end_weight = 0.4 * self.h[fin]
        e[:, 0] -= end_weight
        e[:, k] -= end_weight
        ends = [0, k]  # the gradients at y (stage 0) and at y_new (stage k)
        for l in range(nl):
            left, right = f.lefts[l, fin, : k + 1], f.rights[l, fin, : k + 1]
            # W_new − W⁰ = Σ_m c_m a_m r_mᵀ, written into the new state (a contiguous left operand keeps the
            # product in BLAS: NumPy's matmul loops in Python-free C, but without BLAS, on a transposed one)
            W_new = self.y_sorted[fin, l * d2:(l + 1) * d2].reshape(-1, d, d)
            scaled_left = xp.empty((W_new.shape[0], d, k), dtype=W_new.dtype)
            xp.multiply(left[:, :k].transpose(0, 2, 1), c[:, None, :], out=scaled_left)
            xp.matmul(scaled_left, right[:, :k], out=W_new)
            if (k + 1) ** 2 <= 2 * d:  # few stages: ‖Σ_m e_m a_m r_mᵀ‖² = eᵀ(AAᵀ ∘ RRᵀ)e, O(k²d)
                gram = left @ left.transpose(0, 2, 1)
                gram *= right @ right.transpose(0, 2, 1)
                self.est2[l, fin] = (e[:, None, :] @ gram @ e[:, :, None])[:, 0, 0]
            else:  # est_l = 0.8(W⁰ − W_new) − 0.4h(a₀r₀ᵀ + a_k r_kᵀ): O(d²) per instance, at any stage count
                ends_left = scaled_left[:, :, :2]  # scratch: the two end factors, scaled and contiguous
                xp.multiply(left[:, ends].transpose(0, 2, 1), -end_weight[:, None, None], out=ends_left)
                est, scaled = f.scratch[0, fin], f.scratch[1, fin]
                xp.matmul(ends_left, right[:, ends], out=est)
                est -= xp.multiply(0.8, W_new, out=scaled)
                self.est2[l, fin] = _squared_norms(est)
            W_new += self.mats0[l][fin]
            self.size2[l, fin] = _squared_norms(W_new)
        w_new = self.y_sorted[fin, nl * d2:]
        xp.matmul(coef[:, None, :], f.last[fin, : k + 1], out=w_new[:, None, :])
        est = (e[:, None, :] @ f.last[fin, 1: k + 2])[:, 0, :]
        self.est2[nl, fin], self.size2[nl, fin] = xp.sum(est * est, axis=1), xp.sum(w_new * w_new, axis=1)
        # ‖∇L(y_new)‖² = Σ_l ‖a_l‖²‖r_l‖² + ‖∇_{W_L}L‖², summed over the layers in order
        lefts_k, rights_k, grad_last = f.lefts[:, fin, k], f.rights[:, fin, k], f.last[fin, k + 1]
        layer_norms = xp.sum(lefts_k**2, axis=2) * xp.sum(rights_k**2, axis=2)
        self.gn2[fin] = xp.sum(layer_norms, axis=0) + xp.sum(grad_last**2, axis=1)
        self.carry[fin, :nl] = lefts_k.transpose(1, 0, 2)
        self.carry[fin, nl: 2 * nl] = rights_k.transpose(1, 0, 2)
        self.carry[fin, 2 * nl] = grad_last

    def error_norm(self):
        """Layerwise RMS error norm: RMS(est_l) / (atol + rtol·max(RMS(W_l), RMS(W_l,new))), RMS over layers."""
        xp, nl, d, b = self.xp, self.nl, self.d, self.b
        sizes = xp.asarray([d**2] * nl + [d], dtype=self.y_sorted.dtype)[:, None]
        last0 = self.f.last[:b, 0]
        size0 = xp.stack([_squared_norms(W) for W in self.mats0] + [xp.sum(last0 * last0, axis=1)])
        atol = self.step.atol if self.in_order else self.step.atol[self.dev_order]
        scale = atol[None, :] + self.step.rtol * xp.sqrt(xp.maximum(size0, self.size2) / sizes)
        total = xp.sqrt(xp.mean(xp.maximum(self.est2, 0.0) / sizes / scale**2, axis=0))
        return xp.where(xp.isfinite(total), total, xp.inf)
