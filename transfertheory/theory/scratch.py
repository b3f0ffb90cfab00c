r"""Scratch training of a deep linear network: the minimum-norm interpolator and its risk (FaF §3.2, Thms 3.5–3.6).

Model (FaF §3.1): inputs x ~ N(0, I_d); a unit target vector β_t; labels
y = β_tᵀx + ε, ε ~ N(0, σ²); n target samples in the rows of X ∈ ℝ^{n×d},
γ = n/d. Gradient flow from a vanishing initialization converges to the
minimum-norm least-squares solution β̂ = X⁺y (FaF Thm 3.5), whose risk is
R_sc = ‖X⁺y − β_t‖² (label noise excluded).

Two forms of E R_sc are given: the paper's n, d → ∞ limit at fixed γ (FaF
Eq. 10) and the exact finite-size expectation (derived in docs/linear.md,
"Exact at finite n, d"), which the paper does not state:
X⁺y − β_t = −(I − P)β_t + X⁺ε with P the projector on the row space of X, so
E R_sc = E‖(I − P)β_t‖² + σ² E tr((XᵀX)⁺) = (1 − n/d)₊ + σ²·:func:`min_norm_noise_gain`.

Singular points are values: where the noise term diverges (γ = 1, or
|n − d| ≤ 1, with σ > 0) the risk is ``+inf``; with σ = 0 there is no noise
term and the risk stays finite there. Functions are vectorized (NumPy
broadcasting; scalar in → float out) and validate their input
(:mod:`transfertheory.params`).
"""
from __future__ import annotations

import numpy as np

from .. import params as P
from ._closed_form import closed_form

__all__ = ["scratch_risk", "scratch_risk_finite", "min_norm_noise_gain", "min_norm_solution"]


def noise_term(sigma2, gain):
    """σ²·gain with the convention 0·∞ = 0 (no noise ⇒ no noise term)."""
    with np.errstate(invalid="ignore"):
        return np.where(sigma2 == 0, 0.0, sigma2 * gain)


def _asymptotic_noise_gain(gamma):
    """lim E tr((XᵀX)⁺) at fixed γ = n/d: γ/(1−γ) (γ<1), 1/(γ−1) (γ>1), ∞ at γ=1.

    FaF App. B.5, Eqs. 97–102 (Marchenko–Pastur Stieltjes transform at z → 0).
    """
    with np.errstate(divide="ignore"):
        return np.where(gamma < 1, gamma / (1 - gamma), np.where(gamma > 1, 1 / (gamma - 1), np.inf))


@closed_form(gamma=P.GAMMA, sigma=P.SIGMA)
def scratch_risk(gamma, sigma):
    r"""Expected risk of scratch training (minimum-norm interpolator), n, d → ∞.

    FaF Eq. 10 (Thm 3.6): E R_sc = (1−γ) + σ²γ/(1−γ) for γ < 1 and σ²/(γ−1)
    for γ > 1. At γ = 1 the risk is ``+inf`` (double descent) when σ > 0 and
    0 when σ = 0.

    Parameters
    ----------
    gamma : array_like, > 0
        Samples per dimension n/d.
    sigma : array_like, >= 0
        Label-noise standard deviation.
    validate : bool
        False: the arguments were validated by the caller (they are only converted to floats).
    """
    bias = np.clip(1 - gamma, 0, None)
    return bias + noise_term(sigma**2, _asymptotic_noise_gain(gamma))


@closed_form(n=P.N, d=P.D)
def min_norm_noise_gain(n, d):
    r"""Exact E tr((XᵀX)⁺) for X ∈ ℝ^{n×d} with i.i.d. N(0,1) entries.

    The non-zero eigenvalues of XᵀX are those of a Wishart_p(m, I) matrix,
    p = min(n, d), m = max(n, d), whose inverse has mean I/(m − p − 1)
    (docs/linear.md): n/(d − n − 1) for n ≤ d − 2, d/(n − d − 1) for
    n ≥ d + 2, ``+inf`` for |n − d| ≤ 1. The noise part of the minimum-norm
    risk is σ² times this.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n <= d - 2, n / (d - n - 1), np.where(n >= d + 2, d / (n - d - 1), np.inf))


@closed_form(n=P.N, d=P.D, sigma=P.SIGMA)
def scratch_risk_finite(n, d, sigma):
    r"""Exact expected scratch risk E‖X⁺y − β_t‖² at finite n, d.

    (1 − n/d) + σ² n/(d−n−1) for n ≤ d−2; σ² d/(n−d−1) for n ≥ d+2; ``+inf``
    for |n−d| ≤ 1 when σ > 0. The bias is E‖(I − P_row(X))β_t‖² = 1 − n/d (a
    uniformly random n-plane), the noise term σ² E tr((XᵀX)⁺)
    (:func:`min_norm_noise_gain`). Tends to FaF Eq. 10 as d → ∞ at fixed γ = n/d. ``validate=False``: the
    arguments were validated by the caller.
    """
    bias = np.clip(1 - n / d, 0, None)
    return bias + noise_term(sigma**2, min_norm_noise_gain(n, d, validate=False))


def design(X, **vectors):
    """``X`` (..., n, d) and the named ``vectors`` as float arrays, in that order.

    ValueError if X is not at least 2-D, or if any array holds NaN or inf (naming it).
    """
    X = np.asarray(X, float)
    if X.ndim < 2:
        raise ValueError(f"X must have shape (..., n, d), got {X.shape}")
    arrays = {"X": X, **{name: np.asarray(v, float) for name, v in vectors.items()}}
    for name, arr in arrays.items():
        if not np.isfinite(arr).all():
            raise ValueError(f"{name} must be finite (no NaN or inf)")
    return tuple(arrays.values())


def row_space_solve(X, rhs):
    """Xᵀ(XXᵀ)⁻¹ rhs for n ≤ d, (XᵀX)⁻¹Xᵀ rhs otherwise; rhs (..., n, k). One Gram solve, no SVD."""
    n, d = X.shape[-2:]
    Xt = np.swapaxes(X, -1, -2)
    if n <= d:
        return Xt @ np.linalg.solve(X @ Xt, rhs)
    return np.linalg.solve(Xt @ X, Xt @ rhs)


def min_norm_solution(X, y):
    r"""X⁺y, the limit of scratch gradient flow (FaF Thm 3.5), for full-rank X.

    ``X`` (..., n, d), ``y`` (..., n) → (..., d); stacks broadcast. Uses one Gram
    solve (Xᵀ(XXᵀ)⁻¹y or (XᵀX)⁻¹Xᵀy), exact for full-rank designs such as
    Gaussian X, and much cheaper than an SVD-based pseudo-inverse.
    """
    X, y = design(X, y=y)
    if y.shape[-1:] != X.shape[-2:-1]:
        raise ValueError(f"X must be (..., n, d) and y (..., n); got {X.shape}, {y.shape}")
    return row_space_solve(X, y[..., None])[..., 0]
