r"""Network algebra of scalar-output deep linear networks (FaF §3, App. B.2).

f(x) = xᵀW₁W₂⋯W_L with W_l ∈ ℝ^{d×d} (l < L) and W_L ∈ ℝ^d; a batch of
networks is one array (b, P), P = (L−1)d² + d (:class:`Architecture`). For a
loss of the end-to-end vector β = W₁⋯W_L with g = ∇_βL, every matrix layer's
gradient is the rank-one outer product ∇_{W_l}L = a_l r_lᵀ with
a_l = (W₁⋯W_{l−1})ᵀg and r_l = W_{l+1}⋯W_L (FaF Eq. 39): two chains of
matrix–vector products, O(L·d²) per network. Also here: the conserved
imbalance D_l of gradient flow (FaF Eq. 35) and the initializations. The
array module is inferred from the arrays.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ... import params as P
from ..._validation import one_of
from ...backend import get_backend, stacked_eigvalsh

__all__ = [
    "Architecture",
    "INITS",
    "init_weights",
    "end_to_end",
    "feature_matrix",
    "conserved_imbalance",
    "assumption22_margin",
    "imbalance_drift",
]

INITS = ("gaussian", "balanced", "assumption22")


@dataclass(frozen=True)
class Architecture:
    """Widths of an L-layer scalar-output linear network on ℝ^d.

    A batch of networks is stored as one array (b, P), P = (L−1)d² + d:
    the d×d matrices W₁ … W_{L−1} row-major, then the vector W_L.
    """

    d: int
    depth: int = 2

    def __post_init__(self):
        P.D.scalar(self.d)
        P.DEPTH.scalar(self.depth)

    @property
    def n_params(self) -> int:
        return (self.depth - 1) * self.d**2 + self.d

    def layers(self, y):
        """Views [W₁ … W_{L−1}] of shape (b, d, d) and W_L of shape (b, d)."""
        d, b = self.d, y.shape[0]
        mats = [y[:, l * d * d:(l + 1) * d * d].reshape(b, d, d) for l in range(self.depth - 1)]
        return mats, y[:, (self.depth - 1) * d * d:]


def matvec(M, v):
    """Batched M @ v for M (b, d, d), v (b, d)."""
    return (M @ v[:, :, None])[:, :, 0]


def rmatvec(M, v):
    """Batched Mᵀ @ v."""
    return (v[:, None, :] @ M)[:, 0, :]


def right_vectors(arch: Architecture, y):
    """r_l = W_{l+1}⋯W_L for every matrix layer l (a list) and β = W₁r₁, right to left (L − 1 products)."""
    mats, r = arch.layers(y)
    rights = [None] * len(mats)
    for l in reversed(range(len(mats))):
        rights[l] = r
        r = matvec(mats[l], r)
    return rights, r


def left_vectors(arch: Architecture, y, g):
    """a_l = (W₁⋯W_{l−1})ᵀg for every matrix layer l (a list) and ∇_{W_L}L = a_L, left to right."""
    mats, _ = arch.layers(y)
    lefts, a = [], g
    for W in mats:
        lefts.append(a)
        a = rmatvec(W, a)
    return lefts, a


def packed_gradient(arch: Architecture, rights, lefts, a_last):
    """The packed (b, P) gradient from its factors: ∇_{W_l}L = a_l r_lᵀ, then ∇_{W_L}L = a_L."""
    d2 = arch.d**2
    out = get_backend(a_last).empty((a_last.shape[0], arch.n_params), dtype=a_last.dtype)
    for l, (a, r) in enumerate(zip(lefts, rights)):
        out[:, l * d2:(l + 1) * d2] = (a[:, :, None] * r[:, None, :]).reshape(-1, d2)
    out[:, (arch.depth - 1) * d2:] = a_last
    return out


def end_to_end(arch: Architecture, y):
    """β = W₁W₂⋯W_L for each network of the batch, right to left (O(L d²))."""
    return right_vectors(arch, y)[1]


def feature_matrix(arch: Architecture, y):
    """F = W₁⋯W_{L−1} for each network of the batch, shape (b, d, d)."""
    mats, _ = arch.layers(y)
    F = mats[0]
    for W in mats[1:]:
        F = F @ W
    return F


def conserved_imbalance(arch: Architecture, y):
    r"""D_l = W_lᵀW_l − W_{l+1}W_{l+1}ᵀ for l = 1 … L−1 (FaF Eq. 35), list of (b, d, d).

    Exactly conserved by gradient flow on any loss of β.
    """
    mats, last = arch.layers(y)
    nxt = mats[1:] + [last[:, :, None]]
    return [W.transpose(0, 2, 1) @ W - V @ V.transpose(0, 2, 1) for W, V in zip(mats, nxt)]


def assumption22_margin(arch: Architecture, y):
    r"""min_l λ_min(D_l) per network: Assumption (22) of FaF holds iff this is > 0."""
    xp = get_backend(y)
    return xp.min(xp.stack([stacked_eigvalsh(D)[:, 0] for D in conserved_imbalance(arch, y)]), axis=0)


def imbalance_drift(arch: Architecture, y0, y1):
    """max_l ‖D_l(y1) − D_l(y0)‖_F / max(‖W_l(y1)‖²_F, ‖W_{l+1}(y1)‖²_F): the integrator's Eq. 35 error."""
    xp = get_backend(y0, y1)
    D0, D1 = conserved_imbalance(arch, y0), conserved_imbalance(arch, y1)
    mats, last = arch.layers(y1)
    sq = [xp.sum(W * W, axis=(1, 2)) for W in mats] + [xp.sum(last * last, axis=1)]
    drifts = [
        xp.sqrt(xp.sum((a - b) ** 2, axis=(1, 2))) / xp.maximum(xp.maximum(sq[l], sq[l + 1]), 1e-300)
        for l, (a, b) in enumerate(zip(D0, D1))
    ]
    return xp.max(xp.stack(drifts), axis=0)


def init_weights(arch: Architecture, alpha: float, seeds, scheme: str = "gaussian", dtype=np.float64) -> np.ndarray:
    r"""Initial weights W_l(0) = αW̄_l for a batch, one network per seed, on the host.

    ``scheme``:

    * ``"gaussian"`` — entries of W̄_l i.i.d. N(0, 1/d) (FaF App. D.1);
    * ``"balanced"`` — D_l = 0 exactly: the rank-one chain W̄_l = u_l u_{l+1}ᵀ,
      W̄_L = u_L with random unit vectors;
    * ``"assumption22"`` — D_l = α²I exactly, so FaF Assumption (22) holds with
      λ = 1: W̄_L Gaussian, then W̄_l = Q_l (I + W̄_{l+1}W̄_{l+1}ᵀ)^{1/2} with Q_l
      Haar-orthogonal, from the last layer backwards.

    ``seeds`` holds one seed per network, each what :func:`numpy.random.default_rng` takes (a Generator, used as
    it is — e.g. from :func:`transfertheory.sim.seeding.generator` —, a SeedSequence or an int).
    Returns a NumPy array (len(seeds), P); move it with
    :func:`transfertheory.backend.to_device`.
    """
    one_of(scheme, "init", INITS)
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
    return (alpha * out).astype(dtype)
