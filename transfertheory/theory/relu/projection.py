r"""Projection of a teacher network on the span of a student's ReLU features (FaF §4 Eq. 21, App. C Eqs. 154–159).

P is the orthogonal projection, in L²(N(0, I_d)), onto the span of the student's features
{σ(wᵢᵀx)}ᵢ≤m: the RKHS of the student's kernel k_W(x, x') = (1/m) Σᵢ σ(wᵢᵀx) σ(wᵢᵀx') (FaF App. C).
P⊥ = I − P. For the teacher f*(x) = (1/m*) Σⱼ c*ⱼ σ(w*ⱼᵀx), FaF Eqs. 158–159 read, with
K = k(W,W)/m, K* = k(W*,W*)/m*, K̃ = k(W,W*)/√(m m*) (Eqs. 154–156, k the arc-cosine kernel):

    ‖P f*‖² = c*ᵀ K̃ᵀ K⁻¹ K̃ c* / m*,    ‖P⊥ f*‖² = c*ᵀ K* c* / m* − ‖P f*‖².

These are the squared norms of the population least-squares fit of f* by the features and of its
residual: min_a E(f* − Σᵢ aᵢ σ(wᵢᵀx))² = ‖P⊥ f*‖² (docs/relu.md shows that the normalisations
1/m, 1/m*, 1/√(m m*) cancel to this).

Computation (numerically safe when K is singular or ill-conditioned): the Gram matrix G of the m + 1
functions (σ(w₁ᵀx), …, σ(w_mᵀx), f*), scaled to a unit diagonal (each function normalised; the span is
unchanged), is factored as G = R Rᵀ by a symmetric eigendecomposition,
eigenvalues below ``(m + 1)·eps·λ_max`` (rounding noise) set to 0; the rows of R are coordinates of the
functions in an orthonormal basis of their span. ‖P⊥ f*‖² is then the squared distance from the last
row r to the row space of the student rows R_W (an SVD of R_W, singular values s with
s² ≤ (m + 1)·eps·λ_max treated as 0, the same noise floor), computed as the norm of the residual vector,
so it is ≥ 0 by construction (no clipping) and needs no inverse of K. Where K is singular P projects on
the span of the features, of whatever dimension. ‖P f*‖² + ‖P⊥ f*‖² = ‖f*‖² up to that noise floor.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ...backend import get_backend, stacked_eigh
from .kernel import _broadcast_batch, _check_pair, _kernel, _output_weights, _quadratic_form, check_gram_memory

__all__ = ["rkhs_projection_norms", "ProjectionNorms"]


class ProjectionNorms(NamedTuple):
    """(‖P f*‖², ‖P⊥ f*‖²) in L²(N(0, I_d)), each of the batch shape; their sum is ‖f*‖²."""

    inside: Any  #: ‖P f*‖², the part of f* in the span of the student's features
    outside: Any  #: ‖P⊥ f*‖², the part orthogonal to it (FaF Eq. 159)


def rkhs_projection_norms(W, W_star, c_star):
    r"""(‖P f*‖², ‖P⊥ f*‖²) for the teacher f* = (1/m*) Σⱼ c*ⱼ σ(w*ⱼᵀx) and the features σ(wᵢᵀx) (FaF Eqs. 158–159).

    P projects, in L²(N(0, I_d)), on span{σ(wᵢᵀx) : i ≤ m}; see the module docstring for the
    computation (no inverse of K; singular K allowed).

    Parameters
    ----------
    W : array_like, shape (..., m, d)
        Student hidden weights (rows of any norm; a zero row adds nothing to the span).
    W_star : array_like, shape (..., m*, d)
        Teacher hidden weights.
    c_star : array_like, shape (..., m*)
        Teacher output weights. Batch axes of the three arrays broadcast.

    Returns
    -------
    ProjectionNorms
        ``(inside, outside)``, both ≥ 0, arrays of the batch shape.
    """
    xp = get_backend(W, W_star, c_star)
    W, W_star = _check_pair(W, W_star, "W", "W_star", xp)
    c_star = _output_weights(c_star, W_star, "c_star", "W_star", xp)
    m, m_star = W.shape[-2], W_star.shape[-2]
    # the Gram and its scaled copy, the kernels it is built from, the eigenvectors and the projections
    check_gram_memory("rkhs_projection_norms", _broadcast_batch(W.shape[:-2], W_star.shape[:-2], c_star.shape[:-1]),
                      max(m, m_star) + 1, max(m, m_star) + 1, 6, xp)
    gram = _function_gram(W, W_star, c_star / m_star, xp)
    # unit diagonal (Jacobi scaling): the span is unchanged and functions of very different norms get one noise floor
    scale = xp.sqrt(xp.diagonal(gram, axis1=-2, axis2=-1))
    scale = xp.where(scale > 0, scale, 1.0)
    gram = gram / (scale[..., :, None] * scale[..., None, :])
    eigenvalues, vectors = stacked_eigh(gram)
    floor = (m + 1) * np.finfo(gram.dtype).eps * eigenvalues[..., -1:]
    coordinates = vectors * xp.sqrt(xp.where(eigenvalues > floor, eigenvalues, 0.0))[..., None, :]
    student, teacher = coordinates[..., :m, :], coordinates[..., m, :]
    _, singular, row_basis = xp.linalg.svd(student, full_matrices=False)
    kept = (singular * singular > floor).astype(gram.dtype)
    along = kept * (row_basis @ teacher[..., :, None])[..., 0]
    residual = teacher - (xp.swapaxes(row_basis, -1, -2) @ along[..., :, None])[..., 0]
    teacher_norm_sq = scale[..., m] ** 2
    return ProjectionNorms(inside=teacher_norm_sq * (along * along).sum(axis=-1),
                           outside=teacher_norm_sq * (residual * residual).sum(axis=-1))


def _function_gram(W, W_star, teacher_weights, xp):
    """Gram matrix in L² of (σ(w₁ᵀx), …, σ(w_mᵀx), f*), f* = Σⱼ teacher_weightsⱼ σ(w*ⱼᵀx): shape (..., m+1, m+1)."""
    batch = _broadcast_batch(W.shape[:-2], W_star.shape[:-2], teacher_weights.shape[:-1])
    m = W.shape[-2]
    cross = (_kernel(W, W_star, xp) @ teacher_weights[..., :, None])[..., 0]
    norm_sq = _quadratic_form(_kernel(W_star, W_star, xp), teacher_weights)
    gram = xp.empty(batch + (m + 1, m + 1), dtype=cross.dtype)
    gram[..., :m, :m] = _kernel(W, W, xp)
    gram[..., :m, m] = cross
    gram[..., m, :m] = cross
    gram[..., m, m] = norm_sq
    return gram
