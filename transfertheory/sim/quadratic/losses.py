r"""Losses of the quadratic network on sampled target data, the ridge inner head and MeRLin's validation loss.

Network (MeRLin §5): f(x) = θᵀσ(φᵀx), σ(z) = z², θ ∈ ℝ^m, φ ∈ ℝ^{d×m}; loss (f − y)². With z = Xφ (n × m)
the feature matrix is H = z∘z and f = Hθ. Everything here is batched over a leading axis B (one row per
instance: seed, restart) and runs on the array module of its inputs.

* :func:`empirical_loss_and_grad` — L_D̂(θ, φ) = (1/n)‖Hθ − y‖², ∂/∂θ = (2/n)Hᵀr, ∂/∂φ = (4/n)Xᵀ(r θᵀ ∘ z).
* :func:`ridge_head` — the closed-form inner head θ̂(φ) = argmin_θ (1/n)‖Hθ − y‖² + λ_h‖θ‖²
  = (HᵀH + nλ_hI)⁻¹Hᵀy (MeRLin Eq. 7 / Algorithm 2, written with the loss's 1/n normalization: Eq. 7's λ
  is nλ_h).
* :func:`meta_validation_loss_and_grad` — MeRLin's outer target term (Eq. 2) averaged over S fixed
  train/validation splits, L_val(φ) = (1/S)Σ_s (1/n_v)‖H_v θ̂_s(φ) − y_v‖², and its gradient through the
  ridge solve (derived in docs/merlin.md): with r_v = H_vθ̂ − y_v, g = (2/n_v)H_vᵀr_v, u = M⁻¹g,
  M = H_trᵀH_tr + n_trλ_hI and r_tr = y_tr − H_trθ̂,
  ∂L/∂H_v = (2/n_v) r_v θ̂ᵀ, ∂L/∂H_tr = r_tr uᵀ − (H_tr u) θ̂ᵀ, and ∂L/∂φ = Xᵀ(2z ∘ ∂L/∂H) summed over both.
"""
from __future__ import annotations

from ...backend import get_backend

__all__ = ["features", "empirical_loss_and_grad", "ridge_head", "meta_validation_loss_and_grad"]


def features(X, phi):
    """(z, H) = (Xφ, (Xφ)∘(Xφ)) for X (..., n, d), φ (..., d, m)."""
    z = X @ phi
    return z, z * z


def _feature_grad(X, z, grad_H):
    """∂/∂φ of Σ grad_H ∘ H through H = (Xφ)²: Xᵀ(2z ∘ grad_H), shape (..., d, m)."""
    return (X.swapaxes(-1, -2) @ (2 * z * grad_H))


def empirical_loss_and_grad(theta, phi, X, y):
    """(L, ∂L/∂θ, ∂L/∂φ) of L = (1/n)Σᵢ(θᵀ(φᵀxᵢ)² − yᵢ)²; θ (B, m), φ (B, d, m), X (B, n, d), y (B, n)."""
    n = X.shape[-2]
    z, H = features(X, phi)
    r = (H @ theta[..., None])[..., 0] - y
    loss = (r * r).sum(axis=-1) / n
    grad_theta = 2 / n * (H.swapaxes(-1, -2) @ r[..., None])[..., 0]
    grad_phi = _feature_grad(X, z, 2 / n * r[..., :, None] * theta[..., None, :])
    return loss, grad_theta, grad_phi


def _normal_matrix(H, ridge):
    xp = get_backend(H)
    n, m = H.shape[-2], H.shape[-1]
    return H.swapaxes(-1, -2) @ H + n * ridge * xp.eye(m, dtype=H.dtype)


def ridge_head(H, y, ridge):
    """θ̂ = (HᵀH + nλ_hI)⁻¹Hᵀy for H (..., n, m), y (..., n): the minimizer of (1/n)‖Hθ − y‖² + λ_h‖θ‖²."""
    xp = get_backend(H, y)
    return xp.linalg.solve(_normal_matrix(H, ridge), (H.swapaxes(-1, -2) @ y[..., None]))[..., 0]


def meta_validation_loss_and_grad(phi, X_train, y_train, X_val, y_val, ridge, grad=True):
    """MeRLin's validation loss averaged over S splits and its gradient in φ.

    φ (B, d, m); X_train (B, S, n_tr, d), y_train (B, S, n_tr), X_val (B, S, n_v, d), y_val (B, S, n_v).
    Returns (loss (B,), ∂loss/∂φ (B, d, m) or None, θ̂ (B, S, m)).
    """
    xp = get_backend(phi, X_train)
    S, n_val = X_train.shape[1], X_val.shape[-2]
    phi_s = phi[:, None]
    z_tr, H_tr = features(X_train, phi_s)
    z_v, H_v = features(X_val, phi_s)
    M = _normal_matrix(H_tr, ridge)
    head = xp.linalg.solve(M, H_tr.swapaxes(-1, -2) @ y_train[..., None])  # (B, S, m, 1)
    r_v = (H_v @ head)[..., 0] - y_val
    loss = (r_v * r_v).sum(axis=-1).mean(axis=-1) / n_val
    if not grad:
        return loss, None, head[..., 0]
    u = xp.linalg.solve(M, 2 / n_val * (H_v.swapaxes(-1, -2) @ r_v[..., None]))  # (B, S, m, 1), M symmetric
    head_row = head.swapaxes(-1, -2)  # (B, S, 1, m)
    r_tr = y_train[..., None] - H_tr @ head  # (B, S, n_tr, 1)
    grad_H_tr = r_tr * u.swapaxes(-1, -2) - (H_tr @ u) * head_row
    grad_H_v = 2 / n_val * r_v[..., None] * head_row
    grad_phi = (_feature_grad(X_train, z_tr, grad_H_tr) + _feature_grad(X_val, z_v, grad_H_v)).sum(axis=1) / S
    return loss, grad_phi, head[..., 0]
