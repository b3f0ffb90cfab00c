r"""Exact linear transfer on pretrained features (FaF Thms 3.7, 3.8; Eqs. 11, 14, 104).

Linear transfer freezes F = W₁⋯W_{L−1} and retrains the last layer. At
finite α the pretrained features are rank one plus an O(α) residue that
gradient flow never removes (FaF Eq. 60); :func:`feature_basis` cuts that
residue, and :func:`linear_transfer_exact` solves the last layer exactly
(minimum-norm least squares, or ridge) on the kept singular directions.
"""
from __future__ import annotations

import math

import numpy as np

from ...backend import get_backend, stacked_eigh, to_host
from .losses import LeastSquaresLoss
from .network import feature_matrix, rmatvec
from .training import PretrainResult

__all__ = ["feature_basis", "linear_transfer_exact"]


def feature_basis(pre: PretrainResult, cutoff=None):
    """Truncated SVD (U_r, s_r, V_r) of the pretrained features F = W₁⋯W_{L−1}, and F.

    Singular values ≤ ``cutoff`` are the initialization residue that gradient
    flow never removes (FaF Eq. 60 bounds its squared size by the imbalance
    ‖D‖ = O(α²)). Default cutoff: 10·√(Σ_l‖D_l‖_F) including the integrator's
    drift (:attr:`PretrainResult.init_imbalance`), never below the numerical
    rank tolerance.
    """
    F = feature_matrix(pre.arch, pre.weights)[0]
    U, s, Vt = get_backend(F).linalg.svd(F)
    s_host = to_host(s)
    if cutoff is None:
        cutoff = 10 * math.sqrt(pre.init_imbalance)
    cutoff = max(cutoff, s_host[0] * pre.arch.d * np.finfo(float).eps)
    r = max(1, int((s_host > cutoff).sum()))
    return U[:, :r], s[:r], Vt[:r].T, F


def linear_transfer_exact(target: LeastSquaresLoss, U, s, V, lam: float):
    r"""Exact last-layer solution on the features F ≈ U_r diag(s_r) V_rᵀ.

    Eq. 14 with W_L = V_r w: (S A S + λI) w = S U_rᵀĉ, A = U_rᵀΣ̂U_r; λ = 0
    gives the minimum-norm least-squares solution (pseudo-inverse; FaF
    Eq. 11, 104). Returns (β̂ = U_r S w, W_L = V_r w), each of shape (B, d).
    """
    xp = get_backend(U, s, V)
    A = (U.T[None] @ target.gram) @ U[None]  # (m, r, r)
    A = xp.repeat(A, target.k, axis=0)
    M = s[None, :, None] * A * s[None, None, :] + lam * xp.eye(s.shape[0])[None]
    rhs = rmatvec(U[None], target.c) * s[None, :]  # row by row: results do not depend on the batch
    evals, evecs = stacked_eigh(M)
    tol = evals[:, -1:] * s.shape[0] * np.finfo(float).eps
    inv = xp.where(evals > tol, 1.0 / xp.where(evals > tol, evals, 1.0), 0.0)
    w = (evecs @ (inv * (rhs[:, None, :] @ evecs)[:, 0, :])[:, :, None])[:, :, 0]
    return rmatvec(U.T[None], w * s[None, :]), rmatvec(V.T[None], w)
