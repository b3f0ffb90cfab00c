r"""Gradient-flow simulator of transfer learning in deep linear networks (FaF §3).

Model (THEORY §A): f(x) = xᵀW₁W₂⋯W_L with W_l ∈ ℝ^{d×d} (l < L), W_L ∈ ℝ^d,
end-to-end vector β = W₁⋯W_L, x ~ N(0, I_d). Pretraining runs gradient flow
on the population loss ½‖β − β_s‖² (FaF Eq. 4); the target task has n = γd
samples and loss (1/2n)‖y − Xβ‖² (Eq. 5). Compared methods:

* ``scratch`` — gradient flow from W_l(0) = αW̄_l on the target (Thm 3.5/3.6);
* ``linear`` — frozen pretrained features Φ = XW₁⋯W_{L−1}, last layer solved
  exactly (minimum-norm least squares, or ridge with the (1/2n, λ/2)
  normalization of Eq. 14), or by gradient flow on W_L (Thm 3.7/3.8);
* ``finetune`` — gradient flow on all layers from the pretrained weights
  (Thm 3.9).

Cost per gradient evaluation is O(L·d²) per instance: for a scalar-output
deep linear net ∇_{W_l}L = (W₁⋯W_{l−1})ᵀ g (W_{l+1}⋯W_L)ᵀ is a rank-one outer
product of two vectors obtained by matrix–vector chains, with g = ∇_βL. The
data enter only through Σ̂ = XᵀX/n and ĉ = Xᵀy/n; the target flows run in the
eigenbasis of Σ̂ (:func:`rotate_to_data_eigenbasis`, an exact change of
variables), and the integrator's stages keep the rank-one gradients factored
(:class:`LowRankStages`), so a stage costs two d×d matrix–vector products
per layer. Instances of a call advance together in
:func:`~transfertheory.sim.integrator.integrate_gradient_flow`; each one's
result is independent of the rest of its batch, bit for bit.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..backend import backend_name, get_array_module, to_host
from ..theory.linear import GAMMA, THETA, NONNEG
from .._validation import Interval, check_integer_param, check_param
from .integrator import FlowResult, StepOutcome, integrate_gradient_flow, rkc_butcher_rows

__all__ = [
    "Architecture",
    "init_weights",
    "end_to_end",
    "chain_gradient",
    "conserved_imbalance",
    "assumption22_margin",
    "PopulationLoss",
    "LeastSquaresLoss",
    "LastLayerLoss",
    "LowRankStages",
    "rotate_to_data_eigenbasis",
    "PretrainResult",
    "pretrain",
    "feature_matrix",
    "linear_transfer_exact",
    "train",
    "run_transfer_experiment",
    "task_vectors",
    "target_draw",
    "METHODS",
    "ROW_KEYS",
    "INITS",
]

METHODS = ("scratch", "linear", "finetune")
ROW_KEYS = ("method", "gamma", "theta", "lam", "instance")  # one row per key; the output is sorted by it
INITS = ("gaussian", "balanced", "assumption22")


# --------------------------------------------------------------------------- parameters


@dataclass(frozen=True)
class Architecture:
    """Widths of an L-layer scalar-output linear network on ℝ^d.

    A batch of networks is stored as one array (b, P), P = (L−1)d² + d:
    the d×d matrices W₁ … W_{L−1} row-major, then the vector W_L.
    """

    d: int
    depth: int = 2

    def __post_init__(self):
        check_integer_param(self.d, "d", 1)
        check_integer_param(self.depth, "depth", 2)

    @property
    def n_params(self) -> int:
        return (self.depth - 1) * self.d**2 + self.d

    def layers(self, y):
        """Views [W₁ … W_{L−1}] of shape (b, d, d) and W_L of shape (b, d)."""
        d, b = self.d, y.shape[0]
        mats = [y[:, l * d * d:(l + 1) * d * d].reshape(b, d, d) for l in range(self.depth - 1)]
        return mats, y[:, (self.depth - 1) * d * d:]


def _matvec(xp, M, v):
    """Batched M @ v for M (b, d, d), v (b, d)."""
    return xp.matmul(M, v[:, :, None])[:, :, 0]


def _rmatvec(xp, M, v):
    """Batched Mᵀ @ v."""
    return xp.matmul(v[:, None, :], M)[:, 0, :]


def _right_vectors(arch: Architecture, y, xp):
    """r_l = W_{l+1}⋯W_L for every matrix layer l (a list) and β = W₁r₁, right to left (L − 1 products)."""
    mats, r = arch.layers(y)
    rights = [None] * len(mats)
    for l in reversed(range(len(mats))):
        rights[l] = r
        r = _matvec(xp, mats[l], r)
    return rights, r


def _left_vectors(arch: Architecture, y, g, xp):
    """a_l = (W₁⋯W_{l−1})ᵀg for every matrix layer l (a list) and ∇_{W_L}L = a_L, left to right."""
    mats, _ = arch.layers(y)
    lefts, a = [], g
    for W in mats:
        lefts.append(a)
        a = _rmatvec(xp, W, a)
    return lefts, a


def _packed_gradient(arch: Architecture, rights, lefts, a_last, xp):
    """The packed (b, P) gradient from its factors: ∇_{W_l}L = a_l r_lᵀ, then ∇_{W_L}L = a_L."""
    d2 = arch.d**2
    out = xp.empty((a_last.shape[0], arch.n_params), dtype=a_last.dtype)
    for l, (a, r) in enumerate(zip(lefts, rights)):
        out[:, l * d2:(l + 1) * d2] = (a[:, :, None] * r[:, None, :]).reshape(-1, d2)
    out[:, (arch.depth - 1) * d2:] = a_last
    return out


def end_to_end(arch: Architecture, y, xp):
    """β = W₁W₂⋯W_L for each network of the batch, right to left (O(L d²))."""
    return _right_vectors(arch, y, xp)[1]


def chain_gradient(arch: Architecture, y, g, xp):
    r"""∇ of L(β(W)) given g = ∇_βL, as a packed (b, P) array.

    ∇_{W_l}L = a_l r_lᵀ with a_l = (W₁⋯W_{l−1})ᵀg and r_l = W_{l+1}⋯W_L
    (FaF App. B.2, Eq. 39); ∇_{W_L}L = a_L.
    """
    return _packed_gradient(arch, _right_vectors(arch, y, xp)[0], *_left_vectors(arch, y, g, xp), xp)


def conserved_imbalance(arch: Architecture, y, xp):
    r"""D_l = W_lᵀW_l − W_{l+1}W_{l+1}ᵀ for l = 1 … L−1 (FaF Eq. 35), list of (b, d, d).

    Exactly conserved by gradient flow on any loss of β.
    """
    mats, last = arch.layers(y)
    nxt = mats[1:] + [last[:, :, None]]
    return [xp.matmul(W.transpose(0, 2, 1), W) - xp.matmul(V, V.transpose(0, 2, 1)) for W, V in zip(mats, nxt)]


def assumption22_margin(arch: Architecture, y, xp):
    r"""min_l λ_min(D_l) per network: Assumption (22) of FaF holds iff this is > 0."""
    return xp.min(xp.stack([xp.linalg.eigvalsh(D)[:, 0] for D in conserved_imbalance(arch, y, xp)]), axis=0)


def _imbalance_drift(arch, y0, y1, xp):
    """max_l ‖D_l(y1) − D_l(y0)‖_F / max(‖W_l(y1)‖²_F, ‖W_{l+1}(y1)‖²_F): the integrator's Eq. 35 error."""
    D0, D1 = conserved_imbalance(arch, y0, xp), conserved_imbalance(arch, y1, xp)
    mats, last = arch.layers(y1)
    sq = [xp.sum(W * W, axis=(1, 2)) for W in mats] + [xp.sum(last * last, axis=1)]
    drifts = [
        xp.sqrt(xp.sum((a - b) ** 2, axis=(1, 2))) / xp.maximum(xp.maximum(sq[l], sq[l + 1]), 1e-300)
        for l, (a, b) in enumerate(zip(D0, D1))
    ]
    return xp.max(xp.stack(drifts), axis=0)


def init_weights(arch: Architecture, alpha: float, seeds, scheme: str, xp, dtype=np.float64):
    r"""Initial weights W_l(0) = αW̄_l for a batch, one network per seed.

    ``scheme``:

    * ``"gaussian"`` — entries of W̄_l i.i.d. N(0, 1/d) (FaF App. D.1);
    * ``"balanced"`` — D_l = 0 exactly: the rank-one chain W̄_l = u_l u_{l+1}ᵀ,
      W̄_L = u_L with random unit vectors;
    * ``"assumption22"`` — D_l = α²I exactly, so FaF Assumption (22) holds with
      λ = 1: W̄_L Gaussian, then W̄_l = Q_l (I + W̄_{l+1}W̄_{l+1}ᵀ)^{1/2} with Q_l
      Haar-orthogonal, from the last layer backwards.

    ``seeds`` is a sequence of :class:`numpy.random.SeedSequence` (or ints).
    """
    if scheme not in INITS:
        raise ValueError(f"init must be one of {INITS}, got {scheme!r}")
    d, L = arch.d, arch.depth
    out = np.empty((len(seeds), arch.n_params))
    for i, seed in enumerate(seeds):
        gen = np.random.default_rng(seed)
        if scheme == "gaussian":
            out[i] = gen.normal(0.0, 1.0 / math.sqrt(d), arch.n_params)
            continue
        if scheme == "balanced":
            u = gen.standard_normal((L, d))
            u /= np.linalg.norm(u, axis=1, keepdims=True)
            mats = [np.outer(u[l], u[l + 1]) for l in range(L - 1)]
            last = u[L - 1]
        else:
            last = gen.normal(0.0, 1.0 / math.sqrt(d), d)
            nxt, mats = last[:, None], []
            for _ in range(L - 1):
                evals, evecs = np.linalg.eigh(np.eye(d) + nxt @ nxt.T)
                root = (evecs * np.sqrt(evals)) @ evecs.T
                q, r = np.linalg.qr(gen.standard_normal((d, d)))
                nxt = (q * np.sign(np.diag(r))) @ root
                mats.insert(0, nxt)
        out[i] = np.concatenate([m.ravel() for m in mats] + [last])
    return xp.asarray((alpha * out).astype(dtype))


# --------------------------------------------------------------------------- losses


class _EndToEndLoss:
    """A loss of the end-to-end vector β: subclasses define ``beta_gradient(beta, rows, with_loss)``."""

    def __call__(self, y, rows):
        rights, beta = _right_vectors(self.arch, y, self.xp)
        g, loss = self.beta_gradient(beta, rows)
        return _packed_gradient(self.arch, rights, *_left_vectors(self.arch, y, g, self.xp), self.xp), loss

    def residual(self, y, rows):
        """‖∇_βL‖ per instance: vanishes at the minimizers of L(β) but is O(1) at the saddle W = 0,
        where the weight gradient is only O(α^{L−1}) (the integrator's ``residual`` guard)."""
        g = self.beta_gradient(end_to_end(self.arch, y, self.xp), rows, with_loss=False)
        return self.xp.sqrt(self.xp.sum(g * g, axis=1))


class PopulationLoss(_EndToEndLoss):
    """Population source loss ½E(f − y)² = ½‖β − β_s‖² + const (FaF Eq. 4)."""

    def __init__(self, arch: Architecture, beta_s, xp):
        self.arch, self.beta_s, self.xp = arch, beta_s, xp

    def beta_gradient(self, beta, rows, with_loss=True):
        """∇_βL = β − β_s (and L if ``with_loss``)."""
        g = beta - self.beta_s
        return (g, 0.5 * self.xp.sum(g * g, axis=1)) if with_loss else g


class LeastSquaresLoss(_EndToEndLoss):
    r"""Empirical target loss (1/2n)‖y − Xβ‖² = ½βᵀΣ̂β − ĉᵀβ + ‖y‖²/2n (FaF Eq. 5).

    Instances are grouped: instance i uses Gram matrix ``gram[i // k]``
    (Σ̂ = XᵀX/n of its target draw) and its own ``c[i]`` (ĉ = Xᵀy/n) and
    ``y2[i]`` (‖y‖²/n). ``gram`` of shape (m, d) is a diagonal Σ̂ = diag(λ):
    the loss in the eigenbasis of the data, where Σ̂β costs O(d) instead of
    O(d²) (see :func:`rotate_to_data_eigenbasis`). The data of the requested
    rows are gathered once per row order.
    """

    def __init__(self, arch: Architecture, gram, c, y2, xp):
        self.arch, self.gram, self.c, self.y2, self.xp = arch, gram, c, y2, xp
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
        xp = self.xp
        gram, c, y2 = self._data_of(rows)
        # one product per instance: results do not depend on the batch
        Sb = gram * beta if gram.ndim == 2 else _matvec(xp, gram, beta)
        g = Sb - c
        if not with_loss:
            return g
        loss = 0.5 * xp.sum(beta * Sb, axis=1) - xp.sum(c * beta, axis=1) + 0.5 * y2
        return g, xp.maximum(loss, 0.0)


def rotate_to_data_eigenbasis(arch: Architecture, gram, c, y0, xp):
    r"""The target flows in the eigenbasis of their data, Σ̂ = Q diag(λ) Qᵀ.

    Gradient flow commutes with the orthogonal change of variables
    W₁ → QᵀW₁ (the loss depends on W₁ only through XW₁, and the Euclidean
    metric is invariant), so the flow of (QᵀW₁(0), W₂, …) on the loss with
    diagonal Gram λ and ĉ → Qᵀĉ is the original flow rotated: β(t) = Qβ̃(t),
    and losses, gradient norms, D_l (Eq. 35) and the layerwise error norm of
    :class:`LowRankStages` are unchanged. ``gram`` (m, d, d), ``c`` and
    ``y0`` (m·k, ·) grouped as in :class:`LeastSquaresLoss`. Returns
    (λ (m, d), Q (m, d, d), Qᵀĉ, rotated y0).
    """
    lam, Q = xp.linalg.eigh(gram)
    m, d, k = gram.shape[0], arch.d, c.shape[0] // gram.shape[0]
    c_rot = _rmatvec(xp, xp.repeat(Q, k, axis=0), c)
    y_rot = y0.copy().reshape(m, k, -1)
    W1 = y_rot[:, :, : d * d].reshape(m, k, d, d)
    y_rot[:, :, : d * d] = xp.matmul(Q.transpose(0, 2, 1)[:, None], W1).reshape(m, k, d * d)
    return xp.maximum(lam, 0.0), Q, c_rot, y_rot.reshape(y0.shape)


def _low_rank_apply(left, right, coef, v, xp):
    """Σ_m coef_m left_m (right_mᵀ v) for factor stacks left, right (b, k, d), coef (b, k), v (b, d)."""
    proj = coef * xp.matmul(right, v[:, :, None])[:, :, 0]
    return xp.matmul(proj[:, None, :], left)[:, 0, :]


class LowRankStages:
    r"""RKC stage kernel for losses of the end-to-end vector (rank-one layer gradients).

    Every stage of a step is Y_k = Y₀ + hΣ_{m<k} A_k[m]F(Y_m)
    (:func:`~transfertheory.sim.integrator.rkc_butcher_rows`), and every
    matrix layer's gradient is rank one, ∇_{W_l}L = a_l r_lᵀ (Eq. 39). So a stage's
    weights are W_l⁰ + Σ_m c_m a_{l,m}r_{l,m}ᵀ (c = −hA_k): the kernel stores
    the vectors a, r of each stage instead of d×d gradients and applies a
    stage's W_l to a vector as W_l⁰v + Σ_m c_m a_m(r_mᵀv). A stage then reads
    each W_l⁰ twice (one matrix–vector product each way) instead of
    combining five d×d buffers; the new weights are formed once per step by
    one (d×s)(s×d) product, and no dense gradient is ever formed.

    Error norm: the RKC2 estimate est = 0.8(y − y_new) − 0.4h(∇L(y) + ∇L(y_new))
    is a sum of the stored rank-one terms, so its Frobenius norm per layer
    comes from the (s+1)×(s+1) Gram matrices of the factors; the norm is the
    RMS over layers of RMS(est_l) / (atol + rtol·max(RMS(W_l), RMS(W_l,new)))
    (layerwise, invariant under the rotations W_l → Q W_l that leave the model
    unchanged). The new states equal :func:`dense_stages`' up to rounding.
    Works with any loss that exposes ``beta_gradient(beta, rows,
    with_loss=...)`` (:class:`PopulationLoss`, :class:`LeastSquaresLoss`).
    """

    def __init__(self, loss):
        self.loss, self.arch, self.xp = loss, loss.arch, loss.xp
        self._workspace = None

    def _buffers(self, b, S, dtype):
        """Factor stacks (layer, left/right, b, S, d) and last-layer gradients (b, S, d), reused across steps."""
        nl, d = self.arch.depth - 1, self.arch.d
        ws = self._workspace
        if ws is None or ws[0].shape[2] < b or ws[0].shape[3] < S or ws[0].dtype != dtype:
            size_b, size_s = max(b, 0 if ws is None else ws[0].shape[2]), max(S, 0 if ws is None else ws[0].shape[3])
            ws = self._workspace = (self.xp.empty((nl, 2, size_b, size_s, d), dtype=dtype),
                                    self.xp.empty((size_b, size_s, d), dtype=dtype))
        return ws

    def spectral_radius(self, y, G, rows, state, iterations, xp):
        r"""Power iteration for ρ(∇²L) with exact, factored Hessian–vector products.

        For a direction D = (V₁ … V_{L−1}, u), differentiating the chains of
        :func:`chain_gradient` gives δr_{l−1} = V_l r_l + W_l δr_l (δr_{L−1} = u),
        δg = ∇²_βL·δβ, δa_{l+1} = V_lᵀa_l + W_lᵀδa_l (δa₁ = δg) and
        ∇²L·D = (δa_l r_lᵀ + a_l δr_lᵀ, …, δa_L): rank two in every matrix
        layer. So after the first product every iterate is V_l = P_lQ_lᵀ with
        P_l, Q_l of shape (d, 2), and an iteration costs 2(L−1) matrix–vector
        products instead of a dense gradient with finite differences. The state
        (per instance: P, Q of every layer and u, packed) warm-starts the next
        call; the first direction is the gradient nudged by a fixed rank-one term.
        Same contract as :func:`~transfertheory.sim.integrator.dense_spectral_radius`.
        """
        arch, loss = self.arch, self.loss
        nl, d, b = arch.depth - 1, arch.d, y.shape[0]
        mats, _ = arch.layers(y)
        rights, beta = _right_vectors(arch, y, xp)
        g = loss.beta_gradient(beta, rows, with_loss=False)
        g_at_zero = loss.beta_gradient(xp.zeros_like(beta), rows, with_loss=False)  # ∇²_βL·x = ∇_βL(x) − ∇_βL(0)
        lefts, a = _left_vectors(arch, y, g, xp)
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
                dr = Vr + _matvec(xp, mats[l], dr)
            da = loss.beta_gradient(dr, rows, with_loss=False) - g_at_zero
            newP, newQ = [], []
            for l in range(nl):
                newP.append(xp.stack([da, lefts[l]], axis=-1))
                newQ.append(xp.stack([rights[l], drs[l]], axis=-1))
                Vta = xp.einsum("bdk,bk->bd", Q[:, l], xp.einsum("bdk,bd->bk", P[:, l], lefts[l]))
                da = Vta + _rmatvec(xp, mats[l], da)
            P, Q, u = xp.stack(newP, axis=1), xp.stack(newQ, axis=1), da
            rho = norm(P, Q, u)
        state = xp.concatenate([P.reshape(b, -1), Q.reshape(b, -1), u], axis=1)
        return rho, state, (iterations + 1) * b

    def __call__(self, y, G, order, h, s_row, rows, coef, tol, xp):
        arch, loss = self.arch, self.loss
        (rtol, atol), d = tol, arch.d
        b, nl, d2 = y.shape[0], arch.depth - 1, d**2
        h_s, s_s, rows_s = h[order], s_row[order], rows[order]
        factors, last_grads = self._buffers(b, int(s_s[0]) + 1, y.dtype)
        dev_order = xp.asarray(order)
        mats0, last0 = arch.layers(y[dev_order])
        h_dev = xp.asarray(h_s, dtype=y.dtype)
        atol = atol[dev_order]
        counts = np.append(np.bincount(s_s)[::-1].cumsum()[::-1], 0)  # counts[k] = #(s ≥ k)

        def evaluate(k, kb, c, with_loss):
            """Store the factors of ∇L at stage Y_k of the first kb instances (c = −hA_k, or None at k = 0);
            returns their losses if ``with_loss``."""
            r = last0[:kb] if c is None else last0[:kb] + xp.matmul(c[:, None, :], last_grads[:kb, :k])[:, 0, :]
            for l in reversed(range(nl)):  # right chain r_l = W_{l+1}⋯W_L, then β
                left, right = factors[l, 0, :kb, :k], factors[l, 1, :kb, :k]
                factors[l, 1, :kb, k] = r
                v = _matvec(xp, mats0[l][:kb], r)
                r = v if c is None else v + _low_rank_apply(left, right, c, r, xp)
            a = loss.beta_gradient(r, rows_s[:kb], with_loss=with_loss)
            a, lossv = a if with_loss else (a, None)
            for l in range(nl):  # left chain a_{l+1} = W_lᵀa_l
                left, right = factors[l, 0, :kb, :k], factors[l, 1, :kb, :k]
                factors[l, 0, :kb, k] = a
                v = _rmatvec(xp, mats0[l][:kb], a)
                a = v if c is None else v + _low_rank_apply(right, left, c, a, xp)
            last_grads[:kb, k] = a
            return lossv

        # per instance, in sorted order: the new state, ‖est‖² and ‖W_new‖² per layer (matrix layers, then
        # W_L), ‖∇L(y_new)‖², the loss and the factors of ∇L(y_new) that the next step starts from
        y_sorted = xp.empty_like(y)
        est2, size2 = xp.empty((nl + 1, b), dtype=y.dtype), xp.empty((nl + 1, b), dtype=y.dtype)
        gn2, loss_sorted = xp.zeros(b, dtype=y.dtype), xp.empty(b, dtype=y.dtype)
        fsal = xp.empty((b, 2 * nl + 1, d), dtype=y.dtype)

        def complete(k, fin, c):
            """Form Y_k and the ingredients of its error estimate for the instances ``fin`` whose last stage is k."""
            e = xp.concatenate([-0.8 * c, xp.zeros_like(c[:, :1])], axis=1)  # est = Σ_{m ≤ k} e_m ∇L(Y_m)
            e[:, [0, k]] -= 0.4 * h_dev[fin, None]
            for l in range(nl):
                left, right = factors[l, 0, fin, : k + 1], factors[l, 1, fin, : k + 1]
                W_new = xp.matmul((left[:, :k] * c[:, :, None]).transpose(0, 2, 1), right[:, :k])
                W_new += mats0[l][fin]
                y_sorted[fin, l * d2:(l + 1) * d2] = W_new.reshape(-1, d2)
                gram = xp.matmul(left, left.transpose(0, 2, 1)) * xp.matmul(right, right.transpose(0, 2, 1))
                est2[l, fin] = xp.einsum("bm,bmp,bp->b", e, gram, e)
                size2[l, fin] = xp.einsum("bij,bij->b", W_new, W_new)
                gn2[fin] += gram[:, k, k]
            w_new = y_sorted[fin, nl * d2:]
            xp.add(last0[fin], xp.matmul(c[:, None, :], last_grads[fin, :k])[:, 0, :], out=w_new)
            est = xp.matmul(e[:, None, :], last_grads[fin, : k + 1])[:, 0, :]
            est2[nl, fin], size2[nl, fin] = xp.sum(est * est, axis=1), xp.sum(w_new * w_new, axis=1)
            gn2[fin] += xp.sum(last_grads[fin, k] ** 2, axis=1)
            fsal[fin, : 2 * nl] = factors[:, :, fin, k].transpose(2, 0, 1, 3).reshape(-1, 2 * nl, d)
            fsal[fin, 2 * nl] = last_grads[fin, k]

        # stage 0: the factors of ∇L(y) carried from the step that produced y, else evaluated
        evals = 0
        if G is None:
            evaluate(0, b, None, False)
            evals += b
        else:
            packed = G[dev_order].reshape(b, 2 * nl + 1, d)
            factors[:, :, :b, 0] = packed[:, : 2 * nl].reshape(b, nl, 2, d).transpose(1, 2, 0, 3)
            last_grads[:b, 0] = packed[:, 2 * nl]
        for k, A_k in rkc_butcher_rows(coef, s_s):
            kb = A_k.shape[0]
            c = -h_dev[:kb, None] * xp.asarray(A_k, dtype=y.dtype)
            fin = slice(int(counts[k + 1]), kb)
            # stage gradients, and ∇L(y_new) with the loss for the instances finishing at k
            loss_k = evaluate(k, kb, c, fin.start < fin.stop)
            evals += kb
            if fin.start < fin.stop:
                loss_sorted[fin] = loss_k[fin]
                complete(k, fin, c[fin])
        # layerwise RMS error norm: RMS(est_l) / (atol + rtol·max(RMS(W_l), RMS(W_l,new))), RMS over layers
        sizes = xp.asarray([d2] * nl + [d], dtype=y.dtype)[:, None]
        size0 = xp.stack([xp.einsum("bij,bij->b", W, W) for W in mats0] + [xp.sum(last0 * last0, axis=1)])
        scale = atol[None, :] + rtol * xp.sqrt(xp.maximum(size0, size2) / sizes)
        total = xp.sqrt(xp.mean(xp.maximum(est2, 0.0) / sizes / scale**2, axis=0))
        err_sorted = xp.where(xp.isfinite(total), total, xp.inf)
        inverse = xp.asarray(np.argsort(order))
        return StepOutcome(y_sorted[inverse], fsal.reshape(b, -1)[inverse], evals, err_sorted[inverse],
                           loss_sorted[inverse], xp.sqrt(gn2)[inverse])


class LastLayerLoss:
    r"""Linear transfer by gradient flow on W_L alone: frozen features F = W₁⋯W_{L−1}.

    Loss (1/2n)‖XFw − y‖² + (λ/2)‖w‖² (FaF Eq. 11 / Eq. 14); ∇_w = Fᵀ∇_βL + λw.
    """

    def __init__(self, target: LeastSquaresLoss, features, lam: float):
        self.target, self.features, self.lam, self.xp = target, features, lam, target.xp

    def __call__(self, w, rows):
        xp = self.xp
        beta = w @ self.features.T
        g, loss = self.target.beta_gradient(beta, rows)
        return g @ self.features + self.lam * w, loss + 0.5 * self.lam * xp.sum(w * w, axis=1)


# --------------------------------------------------------------------------- pretraining


@dataclass
class PretrainResult:
    """Pretrained network and the structure checks of FaF Lemma 3.3 / Thm 3.4.

    Attributes: ``weights`` (1, P) backend array; ``beta`` end-to-end vector;
    ``flow`` the :class:`FlowResult`; ``feature_singular_values`` of
    F = W₁⋯W_{L−1} (descending); ``v_norm`` = σ₁(F)/‖β_s‖ (the ‖v‖ of
    F = β_s vᵀ); ``imbalance_drift`` (Eq. 35 error, relative);
    ``assumption22_margin`` of the initialization (divided by α²);
    ``init_imbalance`` = Σ_l ‖D_l(0)‖_F + the absolute drift (the scale of
    the residue that gradient flow never removes).
    """

    arch: Architecture
    weights: object
    beta: np.ndarray
    flow: FlowResult
    feature_singular_values: np.ndarray
    v_norm: float
    imbalance_drift: float
    assumption22_margin: float
    init_imbalance: float
    alpha: float

    @property
    def singular_value_ratio(self) -> float:
        """σ₂/σ₁ of the feature matrix (→ 0 as α → 0, FaF Thm 3.4)."""
        s = self.feature_singular_values
        return float(s[1] / s[0]) if s.size > 1 else 0.0

    def summary(self) -> dict:
        return {
            "converged": bool(self.flow.converged[0]),
            "status": str(self.flow.status[0]),
            "t_final": float(self.flow.t[0]),
            "steps": int(self.flow.steps[0]),
            "grad_norm": float(self.flow.grad_norm[0]),
            "sv_ratio": self.singular_value_ratio,
            "v_norm": self.v_norm,
            "imbalance_drift": self.imbalance_drift,
            "assumption22_margin": self.assumption22_margin,
        }


def feature_matrix(arch: Architecture, y, xp):
    """F = W₁⋯W_{L−1} for each network of the batch, shape (b, d, d)."""
    mats, _ = arch.layers(y)
    F = mats[0]
    for W in mats[1:]:
        F = xp.matmul(F, W)
    return F


def train(loss, y0, *, rtol, gtol, max_time, max_steps=200_000, progress=None):
    """Gradient flow of ``loss`` from ``y0`` with the package integrator.

    Absolute tolerance per instance from its initial scale, 10⁻²·rtol·RMS(y0ᵢ).
    For losses of the end-to-end vector: low-rank stages, and convergence
    needs ‖∇_βL‖ ≤ gtol as well as ‖∇L‖ ≤ gtol (no false convergence at the
    saddle W = 0, where ‖∇L‖ = O(α^{L−1})); dense stages otherwise.
    """
    xp = loss.xp
    atol = rtol * 1e-2 * np.maximum(to_host(xp.sqrt(xp.mean(y0 * y0, axis=1))), 1e-12)
    structured = isinstance(loss, _EndToEndLoss)
    return integrate_gradient_flow(loss, y0, rtol=rtol, atol=atol, gtol=gtol, max_time=max_time, max_steps=max_steps,
                                   progress=progress, stage_kernel=LowRankStages(loss) if structured else None,
                                   residual=loss.residual if structured else None)


def pretrain(arch: Architecture, beta_s, alpha: float, *, seed=0, init="gaussian", rtol=1e-4, gtol=1e-8,
             max_time=1e4, backend=None) -> PretrainResult:
    r"""Gradient flow on the population source loss from W_l(0) = αW̄_l (FaF Lemma 3.3, Thm 3.4).

    Tolerances are tighter than the target flows' because every transfer
    method starts from these weights: at d = 100 the pretrained weights
    (rtol = 1e-4, ‖∇L‖ and ‖β − β_s‖ ≤ gtol = 1e-8) are within 1.3e-9 of an
    rtol = 1e-6, gtol = 1e-10 run. (gtol must sit above the integrator's
    error floor: at rtol = 1e-4 the flow cannot get ‖∇L‖ below ~1e-9.)
    """
    xp = get_array_module(backend)
    beta_s = xp.asarray(beta_s, dtype=xp.float64)
    seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    y0 = init_weights(arch, alpha, [seq], init, xp)
    flow = train(PopulationLoss(arch, beta_s[None, :], xp), y0, rtol=rtol, gtol=gtol, max_time=max_time)
    svals = to_host(xp.linalg.svd(feature_matrix(arch, flow.y, xp)[0], compute_uv=False))
    D0, D1 = conserved_imbalance(arch, y0, xp), conserved_imbalance(arch, flow.y, xp)
    imbalance = sum(float(to_host(xp.linalg.norm(a[0]) + xp.linalg.norm(b[0] - a[0]))) for a, b in zip(D0, D1))
    return PretrainResult(
        arch=arch,
        weights=flow.y,
        beta=to_host(end_to_end(arch, flow.y, xp)[0]),
        flow=flow,
        feature_singular_values=svals,
        v_norm=float(svals[0] / to_host(xp.linalg.norm(beta_s))),
        imbalance_drift=float(to_host(_imbalance_drift(arch, y0, flow.y, xp))[0]),
        assumption22_margin=float(to_host(assumption22_margin(arch, y0, xp))[0]) / alpha**2,
        init_imbalance=imbalance,
        alpha=alpha,
    )


def _feature_basis(pre: PretrainResult, cutoff, xp):
    """Truncated SVD (U_r, s_r, V_r) of the pretrained features F = W₁⋯W_{L−1}, and F.

    Singular values ≤ ``cutoff`` are the initialization residue that gradient
    flow never removes (FaF Eq. 60 bounds its squared size by the imbalance
    ‖D‖ = O(α²)). Default cutoff: 10·√(Σ_l‖D_l‖_F) including the integrator's
    drift (:attr:`PretrainResult.init_imbalance`), never below the numerical
    rank tolerance.
    """
    F = feature_matrix(pre.arch, pre.weights, xp)[0]
    U, s, Vt = xp.linalg.svd(F)
    s_host = to_host(s)
    if cutoff is None:
        cutoff = 10 * math.sqrt(pre.init_imbalance)
    cutoff = max(cutoff, s_host[0] * pre.arch.d * np.finfo(float).eps)
    r = max(1, int((s_host > cutoff).sum()))
    return U[:, :r], s[:r], Vt[:r].T, F


def linear_transfer_exact(target: LeastSquaresLoss, U, s, V, lam: float, xp):
    r"""Exact last-layer solution on the features F ≈ U_r diag(s_r) V_rᵀ.

    Eq. 14 with W_L = V_r w: (S A S + λI) w = S U_rᵀĉ, A = U_rᵀΣ̂U_r; λ = 0
    gives the minimum-norm least-squares solution (pseudo-inverse; FaF
    Eq. 11, 104). Returns (β̂ = U_r S w, W_L = V_r w), each of shape (B, d).
    """
    A = xp.matmul(xp.matmul(U.T[None], target.gram), U[None])  # (m, r, r)
    A = xp.repeat(A, target.k, axis=0)
    M = s[None, :, None] * A * s[None, None, :] + lam * xp.eye(s.shape[0])[None]
    rhs = _rmatvec(xp, U[None], target.c) * s[None, :]  # row by row: results do not depend on the batch
    evals, evecs = xp.linalg.eigh(M)
    tol = evals[:, -1:] * s.shape[0] * np.finfo(float).eps
    inv = xp.where(evals > tol, 1.0 / xp.where(evals > tol, evals, 1.0), 0.0)
    w = xp.matmul(evecs, (inv * xp.matmul(rhs[:, None, :], evecs)[:, 0, :])[:, :, None])[:, :, 0]
    return _rmatvec(xp, U.T[None], w * s[None, :]), _rmatvec(xp, V.T[None], w)


# --------------------------------------------------------------------------- experiment


def _accumulate(stats: dict, flow: FlowResult) -> None:
    stats["evaluations"] += flow.evaluations
    stats["rejected"] += flow.rejected
    stats["max_stages"] = max(stats["max_stages"], flow.max_stages)


def task_vectors(d: int, thetas, seed):
    """Unit β_s, unit ν ⊥ β_s and β_t(θ) = cos θ β_s + sin θ ν (Θ, d), drawn from spawn key (0,) of ``seed``.

    The draw :func:`run_transfer_experiment` uses; public so that other implementations (benchmarks)
    can reproduce the same tasks.
    """
    gen = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0,)))
    beta_s = gen.standard_normal(d)
    beta_s /= np.linalg.norm(beta_s)
    nu = gen.standard_normal(d)
    nu -= (nu @ beta_s) * beta_s
    nu /= np.linalg.norm(nu)
    return beta_s, nu, np.cos(thetas)[:, None] * beta_s + np.sin(thetas)[:, None] * nu


def target_draw(d: int, n: int, beta_t, sigma: float, seed, gamma_index: int, instance: int):
    """(X, Y) of the target draw (γ index, instance) of ``seed``: spawn key (2, γ index, instance).

    X (n, d) first, then ε (n,); Y = Xβ_tᵀ + ε for every row of ``beta_t`` (Θ, d), shape (n, Θ).
    """
    gen = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(2, gamma_index, instance)))
    X = gen.standard_normal((n, d))
    eps = sigma * gen.standard_normal(n)
    return X, X @ beta_t.T + eps[:, None]


def _target_statistics(X, Y):
    """Σ̂ = XᵀX/n and, for each target (column of Y), ĉ = Xᵀy/n and ‖y‖²/n."""
    n = X.shape[0]
    return X.T @ X / n, (X.T @ Y / n).T, (Y * Y).sum(axis=0) / n


def run_transfer_experiment(
    d,
    gammas,
    thetas,
    sigma,
    instances,
    depth=2,
    alpha=1e-5,
    methods=METHODS,
    ridge=(0.0,),
    seed=0,
    backend="auto",
    tol=1e-6,
    max_time=1e4,
    rtol=1e-3,
    init="gaussian",
    linear_solver="exact",
    feature_cutoff=None,
    chunk_size=None,
    progress=None,
) -> pd.DataFrame:
    r"""Simulate FaF §3 transfer experiments; one tidy row per (method, γ, θ, λ, instance).

    For each γ and instance a target set (X, ε) with n = round(γd) is drawn;
    all θ share it (common random numbers, so T = R_sc − R_tx is estimated
    with a paired difference). One network is pretrained on β_s. Scratch and
    fine-tuning of every (γ, θ, instance) advance together as one batched
    gradient flow; linear transfer is solved exactly per λ in ``ridge`` (or
    by gradient flow on W_L, ``linear_solver="flow"``).

    Parameters
    ----------
    d : int ≥ 2
    gammas, thetas : sequences (γ > 0, θ ∈ [0, π])
    sigma : float ≥ 0
    instances : int ≥ 1
        Target draws per γ.
    depth : int ≥ 2
    alpha : float > 0
        Initialization scale (FaF App. D.1 uses 1e-5).
    methods : subset of ("scratch", "linear", "finetune")
    ridge : sequence of λ ≥ 0 for linear transfer (Eq. 14)
    seed : int
        Seeds the task vectors, initializations and target draws; results do
        not depend on ``chunk_size`` or the backend beyond rounding.
    backend : "auto" | "numpy" | "cupy"
    tol : float
        Convergence: ‖∇L‖ ≤ tol (gradient w.r.t. all trained weights) and
        ‖∇_βL‖ ≤ tol (end-to-end gradient; rules out the saddle W = 0).
    max_time : float
        Gradient-flow time budget per instance.
    rtol : float
        Relative local-error tolerance of the integrator. The default 1e-3
        moves single fine-tuning risks by ≤ 1.5e-3 against an rtol = 1e-6
        reference (mean risks ≤ 9e-4, scratch ≤ 2e-5; d = 32 … 100,
        docs/simulator.md), far below the statistical error of 20 draws;
        1e-4 halves that error at twice the cost.
    init : "gaussian" | "balanced" | "assumption22"
    linear_solver : "exact" | "flow"
    feature_cutoff : float or None
        Singular values of the pretrained features treated as residue
        (default 10·√‖D(0)‖, see :func:`_feature_basis`); 0 keeps them all.
    chunk_size : int or None
        Target draws (γ, instance pairs) per batched integration (memory).
    progress : bool or None
        tqdm progress bar (None: shown only if the run exceeds 2 s).

    Returns
    -------
    pandas.DataFrame
        Columns ``method, gamma, n, d, theta, sigma, lam, instance, risk,
        converged, status, t_final, steps, grad_norm, beta_grad_norm, loss,
        imbalance_drift, assumption22`` (``beta_grad_norm`` = ‖∇_βL‖ of the
        flows, which must also be ≤ tol for ``converged``; NaN for linear
        transfer); ``df.attrs`` holds the pretraining diagnostics,
        the backend and the integrator statistics.
    """
    d = int(check_integer_param(d, "d", 2))
    depth = int(check_integer_param(depth, "depth", 2))
    instances = int(check_integer_param(instances, "instances", 1))
    gammas = np.atleast_1d(check_param(gammas, "gammas", GAMMA))
    thetas = np.atleast_1d(check_param(thetas, "thetas", THETA))
    sigma = float(check_param(sigma, "sigma", NONNEG))
    alpha = float(check_param(alpha, "alpha", Interval(0, np.inf, "neither")))
    ridge = np.atleast_1d(check_param(ridge, "ridge", NONNEG))
    unknown = set(methods) - set(METHODS)
    if unknown or not methods:
        raise ValueError(f"methods must be a non-empty subset of {METHODS}, got {tuple(methods)}")
    if linear_solver not in ("exact", "flow"):
        raise ValueError(f"linear_solver must be 'exact' or 'flow', got {linear_solver!r}")
    ns = np.maximum(1, np.round(gammas * d).astype(int))
    xp = get_array_module(backend)
    arch = Architecture(d, depth)

    beta_s, nu, beta_t = task_vectors(d, thetas, seed)

    needs_pre = "linear" in methods or "finetune" in methods
    pre = None
    if needs_pre:
        pre = pretrain(arch, beta_s, alpha, seed=np.random.SeedSequence(seed, spawn_key=(1,)), init=init,
                       backend=backend_name(xp))
        U, s_feat, V, F = _feature_basis(pre, feature_cutoff, xp)
    flow_methods = [m for m in ("scratch", "finetune") if m in methods]
    groups = [(gi, i) for gi in range(len(gammas)) for i in range(instances)]
    chunk = len(groups) if chunk_size is None else int(check_integer_param(chunk_size, "chunk_size", 1))
    rows, stats = [], {"evaluations": 0, "rejected": 0, "max_stages": 0}

    from tqdm.auto import tqdm

    bar = tqdm(total=float(len(groups)), desc="transfer experiment", unit="draw", delay=0 if progress else 2.0,
               disable=progress is False, bar_format="{l_bar}{bar}| {n:.1f}/{total:.0f} draws [{elapsed}<{remaining}]")
    for start in range(0, len(groups), chunk):
        part = groups[start:start + chunk]
        gram, c, y2 = [], [], []
        for gi, i in part:
            S, cc, yy = _target_statistics(*target_draw(d, ns[gi], beta_t, sigma, seed, gi, i))
            gram.append(S)
            c.append(cc)
            y2.append(yy)
        gram_dev = xp.asarray(np.stack(gram))
        meta = [(gi, i, ti) for gi, i in part for ti in range(len(thetas))]

        def emit(method, risk, lam=0.0, **cols):
            for j, (gi, i, ti) in enumerate(meta):
                row = dict(method=method, gamma=gammas[gi], n=ns[gi], d=d, theta=thetas[ti], sigma=sigma,
                           lam=lam, instance=i, risk=risk[j])
                row.update({k: (v[j] if isinstance(v, np.ndarray) else v) for k, v in cols.items()})
                rows.append(row)

        targets = np.repeat(beta_t[None], len(part), axis=0).reshape(-1, d)
        if flow_methods:
            c_rep = np.concatenate([np.stack(c)] * len(flow_methods), axis=1).reshape(-1, d)
            y2_rep = np.concatenate([np.stack(y2)] * len(flow_methods), axis=1).reshape(-1)
            starts = []
            if "scratch" in flow_methods:
                scratch0 = init_weights(arch, alpha, [np.random.SeedSequence(seed, spawn_key=(3, gi, i)) for gi, i in part],
                                        init, xp)
                starts.append(xp.repeat(scratch0[:, None, :], len(thetas), axis=1))
            if "finetune" in flow_methods:
                starts.append(xp.broadcast_to(pre.weights[None], (len(part), len(thetas), arch.n_params)))
            y0 = xp.stack(starts, axis=1).reshape(-1, arch.n_params)
            lam, Q, c_rot, y0_rot = rotate_to_data_eigenbasis(arch, gram_dev, xp.asarray(c_rep), y0, xp)
            loss = LeastSquaresLoss(arch, lam, c_rot, xp.asarray(y2_rep), xp)
            done_before = bar.n

            def advance(fraction, base=done_before, size=len(part)):  # instances finished in this chunk
                bar.update(base + fraction * size - bar.n)

            flow = train(loss, y0_rot, rtol=rtol, gtol=tol, max_time=max_time, progress=advance)
            beta_rot = end_to_end(arch, flow.y, xp).reshape(len(part), -1, d)
            beta_hat = to_host(xp.matmul(Q[:, None], beta_rot[..., None])[..., 0])  # β = Qβ̃
            beta_hat = beta_hat.reshape(len(part), len(flow_methods), len(thetas), d)
            drift = to_host(_imbalance_drift(arch, y0_rot, flow.y, xp))
            _accumulate(stats, flow)
            for mi, method in enumerate(flow_methods):
                def pick(a):
                    return np.asarray(a).reshape(len(part), len(flow_methods), len(thetas))[:, mi].reshape(-1)

                if method == "scratch":
                    holds = np.repeat(to_host(assumption22_margin(arch, scratch0, xp)) > 0, len(thetas))
                else:
                    holds = pre.assumption22_margin > 0
                risk = ((beta_hat[:, mi].reshape(-1, d) - targets) ** 2).sum(axis=1)
                emit(method, risk, converged=pick(flow.converged), status=pick(flow.status), t_final=pick(flow.t),
                     steps=pick(flow.steps), grad_norm=pick(flow.grad_norm), beta_grad_norm=pick(flow.residual),
                     loss=pick(flow.loss), imbalance_drift=pick(drift), assumption22=holds)
        if "linear" in methods:
            c_dev = xp.asarray(np.stack(c).reshape(-1, d))
            lin = LeastSquaresLoss(arch, gram_dev, c_dev, xp.asarray(np.stack(y2).reshape(-1)), xp)
            pre_ok = bool(pre.flow.converged[0])
            for lam in ridge:
                if linear_solver == "exact":
                    beta_hat, w_last = linear_transfer_exact(lin, U, s_feat, V, float(lam), xp)
                    g_beta, loss_v = lin.beta_gradient(beta_hat, np.arange(c_dev.shape[0]))
                    grad = _rmatvec(xp, F[None], g_beta) + float(lam) * w_last
                    cols = dict(converged=pre_ok, status="exact" if pre_ok else "pretrain_" + pre.flow.status[0],
                                t_final=np.nan, steps=0, grad_norm=to_host(xp.linalg.norm(grad, axis=1)),
                                loss=to_host(loss_v + 0.5 * float(lam) * xp.sum(w_last * w_last, axis=1)))
                else:
                    w0 = xp.repeat(arch.layers(pre.weights)[1], c_dev.shape[0], axis=0)
                    flow = train(LastLayerLoss(lin, F, float(lam)), w0, rtol=rtol, gtol=tol, max_time=max_time)
                    beta_hat = flow.y @ F.T
                    _accumulate(stats, flow)
                    cols = dict(converged=flow.converged & pre_ok, status=flow.status, t_final=flow.t,
                                steps=flow.steps, grad_norm=flow.grad_norm, loss=flow.loss)
                risk = ((to_host(beta_hat) - targets) ** 2).sum(axis=1)
                emit("linear", risk, lam=float(lam), imbalance_drift=np.nan, beta_grad_norm=np.nan,
                     assumption22=pre.assumption22_margin > 0, feature_rank=int(U.shape[1]), **cols)
        bar.update(start + len(part) - bar.n)
    bar.close()
    df = pd.DataFrame(rows).sort_values(list(ROW_KEYS), kind="stable").reset_index(drop=True)
    df.attrs.update(backend=backend_name(xp), depth=depth, alpha=alpha, init=init, rtol=rtol, tol=tol,
                    max_time=max_time, integrator=stats, beta_s=tuple(beta_s), nu=tuple(nu),
                    pretrain=None if pre is None else pre.summary())
    return df
