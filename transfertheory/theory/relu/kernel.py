r"""The degree-1 arc-cosine kernel, the exact population loss of a two-layer ReLU network and the projection of a
teacher on a student's features (FaF §4, App. C).

For x ~ N(0, I_d) and σ = ReLU, FaF Eqs. 152–153 (Cho & Saul 2009):

    k(a, b) = E[σ(aᵀx) σ(bᵀx)] = (‖a‖‖b‖ / 2π) · J(u),   J(u) = √(1 − u²) + u(π − arccos u),

u = aᵀb / (‖a‖‖b‖) the cosine of the angle θ between a and b (J(cos θ) = sin θ + (π − θ) cos θ).
Special values: k(a, a) = ‖a‖²/2, k(a, −a) = 0, k(a, b) = ‖a‖‖b‖/2π for a ⊥ b; a zero row gives 0.

Its gradient in the first argument (derived in docs/relu.md; J'(u) = π − arccos u):

    ∇_a k(a, b) = (1/2π) [ (π − θ) b + ‖b‖ sin θ · a/‖a‖ ],   a ≠ 0,

continuous up to u = ±1: b/2 at θ = 0 (so ∇_a k(a, a) = a/2, half of ∇‖a‖²/2) and 0 at θ = π.

A mean-field network f(x) = (1/m) Σᵢ cᵢ σ(wᵢᵀx) (FaF Eq. 18) and a teacher
f*(x) = (1/m*) Σⱼ c*ⱼ σ(w*ⱼᵀx) (FaF Eq. 20) differ by g = f − f* = Σₖ vₖ σ(bₖᵀx) with
B = [W; W*] and v = [c/m; −c*/m*], so the population loss is exact in weight space:

    L = ½ E(f − f*)² = ½ vᵀ k(B, B) v
      = ½ [cᵀk(W,W)c/m² − 2cᵀk(W,W*)c*/(m m*) + c*ᵀk(W*,W*)c*/m*²],

with gradients ∂L/∂cᵢ = (1/m) Σₖ k(wᵢ, bₖ) vₖ and ∇_{wᵢ}L = (cᵢ/m) Σₖ vₖ ∇_a k(wᵢ, bₖ). With the
hidden weights on the unit sphere (FaF §4) the Riemannian gradient is the Euclidean one projected
on the tangent space of each row: (I − ŵᵢŵᵢᵀ) ∇_{wᵢ}L.

Every function takes a leading batch of instances (W of shape (..., m, d), c of shape (..., m);
batch axes broadcast) and runs on the array module of its inputs (NumPy or CuPy). The weight arrays are
validated where they are: only the scalar results of the checks (finite? nonzero rows?) travel to the host;
integer input becomes float64, a floating dtype is kept.

**Projection** (:func:`rkhs_projection_norms`, FaF §4 Eq. 21, App. C Eqs. 154–159). P is the orthogonal projection, in
L²(N(0, I_d)), onto the span of the student's features {σ(wᵢᵀx)}ᵢ≤m: the RKHS of the student's kernel k_W(x, x') =
(1/m) Σᵢ σ(wᵢᵀx) σ(wᵢᵀx') (FaF App. C). P⊥ = I − P. For the teacher f*(x) = (1/m*) Σⱼ c*ⱼ σ(w*ⱼᵀx), FaF Eqs. 158–159
read, with K = k(W,W)/m, K* = k(W*,W*)/m*, K̃ = k(W,W*)/√(m m*) (Eqs. 154–156, k the arc-cosine kernel):

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

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from ..._memory import FLOAT_BYTES, check_memory
from ..._validation import finite_real_array
from ...backend import get_backend, stacked_eigh

__all__ = ["arccos_kernel", "population_loss", "population_loss_and_gradients", "PopulationLossGradients",
           "rkhs_projection_norms", "ProjectionNorms"]


def _weights(W, name, xp):
    """Hidden weights of shape (..., m, d), m, d >= 1: rows are the neurons' weight vectors."""
    arr = finite_real_array(W, name, "(..., m, d)", xp)
    if arr.ndim < 2 or arr.shape[-1] < 1 or arr.shape[-2] < 1:
        raise ValueError(f"{name} must have shape (..., m, d) with m, d >= 1, got shape {arr.shape}")
    return arr


def _output_weights(c, W, name, w_name, xp):
    """Output weights of shape (..., m) matching hidden weights ``W`` of shape (..., m, d)."""
    arr = finite_real_array(c, name, "(..., m)", xp)
    if arr.ndim < 1 or arr.shape[-1] != W.shape[-2]:
        raise ValueError(f"{name} must have shape (..., m) with m = {W.shape[-2]} (the rows of {w_name}), "
                         f"got shape {arr.shape}")
    try:
        np.broadcast_shapes(arr.shape[:-1], W.shape[:-2])
    except ValueError:
        raise ValueError(f"the leading (batch) axes of {name} {arr.shape[:-1]} and {w_name} {W.shape[:-2]} "
                         "do not broadcast") from None
    return arr


def _nonzero_rows(W, name, xp):
    """Raise ValueError when a row of ``W`` is zero (where σ(wᵀx) has no gradient in w)."""
    norms = xp.linalg.norm(W, axis=-1)
    if bool((norms == 0).any()):
        raise ValueError(f"every row of {name} must be nonzero (the gradient of E[σ(wᵀx)·] in w is undefined "
                         "at w = 0)")


def _norms_and_cosines(A, B, xp):
    """Row norms of A (..., p), of B (..., q) and the clipped cosines u (..., p, q); u = 0 where a norm is 0."""
    norm_a = xp.linalg.norm(A, axis=-1)
    norm_b = norm_a if B is A else xp.linalg.norm(B, axis=-1)
    inner = A @ xp.swapaxes(B, -1, -2)
    scale = norm_a[..., :, None] * norm_b[..., None, :]
    cosine = xp.where(scale > 0, inner / xp.where(scale > 0, scale, 1.0), 0.0)
    return norm_a, norm_b, xp.clip(cosine, -1.0, 1.0)


def _check_pair(A, B, a_name, b_name, xp):
    """Validated hidden-weight arrays A (..., p, d) and B (..., q, d) of array module ``xp``."""
    A, B = _weights(A, a_name, xp), _weights(B, b_name, xp)
    if A.shape[-1] != B.shape[-1]:
        raise ValueError(f"{a_name} and {b_name} must have the same number of columns d, got {A.shape[-1]} "
                         f"and {B.shape[-1]}")
    return A, B


def check_gram_memory(what, batch_shape, p, q, arrays, xp):
    """The memory guard of the arc-cosine Grams: ``arrays`` (p, q) arrays per instance of the batch shape
    (:func:`transfertheory._memory.check_memory`; ValueError before they are formed)."""
    batch = math.prod(batch_shape)
    check_memory(FLOAT_BYTES * arrays * batch * p * q, what=what, xp=xp,
                 params={"batch": batch, "rows": p, "columns": q})


def _kernel(A, B, xp):
    """k(A, B) of validated arrays."""
    return _kernel_from(*_norms_and_cosines(A, B, xp), xp)


def _angle_terms(u, xp):
    """(π − θ, sin θ) = (π − arccos u, √(1 − u²)) of the cosines u: the kernel and its gradient share them."""
    return math.pi - xp.arccos(u), xp.sqrt(1.0 - u * u)


def _kernel_from(norm_a, norm_b, u, xp, angle_terms=None):
    """k from the row norms and cosines of :func:`_norms_and_cosines` (FaF Eq. 153 scaled by ‖a‖‖b‖);
    ``angle_terms``: :func:`_angle_terms` of u, when already computed."""
    slope, sine = _angle_terms(u, xp) if angle_terms is None else angle_terms
    bracket = sine + u * slope
    return norm_a[..., :, None] * norm_b[..., None, :] * bracket / (2 * math.pi)


def arccos_kernel(A, B):
    r"""The matrix k(aᵢ, bⱼ) = E[σ(aᵢᵀx) σ(bⱼᵀx)], x ~ N(0, I_d), σ = ReLU (FaF Eqs. 152–153).

    Parameters
    ----------
    A : array_like, shape (..., p, d)
        Rows aᵢ of any norm (a zero row gives a zero row of the kernel).
    B : array_like, shape (..., q, d)
        Rows bⱼ of any norm; leading batch axes broadcast with those of ``A``.

    Returns
    -------
    array, shape (..., p, q)
        (‖aᵢ‖‖bⱼ‖/2π)(√(1 − u²) + u(π − arccos u)), u the cosine between aᵢ and bⱼ (clipped to
        [−1, 1] against rounding). Symmetric and positive semi-definite when A = B.
    """
    xp = get_backend(A, B)
    A, B = _check_pair(A, B, "A", "B", xp)
    # the inner products, their scale, the cosines, the bracket and the result
    check_gram_memory("arccos_kernel", _broadcast_batch(A.shape[:-2], B.shape[:-2]), A.shape[-2], B.shape[-2], 5, xp)
    return _kernel(A, B, xp)


def _kernel_gradient_sum(A, B, v, norm_a, norm_b, angle_terms, xp):
    r"""Σₖ vₖ ∇_a k(aᵢ, bₖ) for every row aᵢ (nonzero): shape (..., p, d).

    ``norm_a``, ``norm_b`` are those of :func:`_norms_and_cosines`, ``angle_terms`` (π − θᵢₖ, sin θᵢₖ) those of
    :func:`_angle_terms` (θᵢₖ = arccos uᵢₖ): (1/2π)[ ((π − θ) ∘ v) B + (Σₖ vₖ ‖bₖ‖ sin θᵢₖ) âᵢ ].
    """
    slope, sine = angle_terms
    weight_b = slope * v[..., None, :]
    weight_a = (sine * (norm_b * v)[..., None, :]).sum(axis=-1)
    unit_a = A / norm_a[..., None]
    return (weight_b @ B + weight_a[..., None] * unit_a) / (2 * math.pi)


def _check_network(W, c, W_star, c_star):
    """Validated (xp, W, c, W*, c*): matching d, c of shape (..., m), c* of shape (..., m*)."""
    xp = get_backend(W, c, W_star, c_star)
    W, W_star = _check_pair(W, W_star, "W", "W_star", xp)
    c = _output_weights(c, W, "c", "W", xp)
    c_star = _output_weights(c_star, W_star, "c_star", "W_star", xp)
    return xp, W, c, W_star, c_star


def _difference_network(W, c, W_star, c_star, xp, what, shared_grams=False):
    """(B, v) with f − f* = Σₖ vₖ σ(bₖᵀx): B = [W; W*], v = [c/m; −c*/m*], batch axes broadcast; refused (memory
    guard of ``what``) when the six (m + m*)² Grams of the loss and its gradients do not fit. ``shared_grams``: B
    spans only the broadcast batch of the hidden weights, so that a Gram of B serves every output-weight vector
    broadcast against it (v spans the whole batch either way)."""
    m, m_star = W.shape[-2], W_star.shape[-2]
    batch = _broadcast_batch(W.shape[:-2], c.shape[:-1], W_star.shape[:-2], c_star.shape[:-1])
    grams = _broadcast_batch(W.shape[:-2], W_star.shape[:-2]) if shared_grams else batch
    check_gram_memory(what, grams, m + m_star, m + m_star, 6, xp)
    d = W.shape[-1]
    B = xp.concatenate([xp.broadcast_to(W, grams + (m, d)), xp.broadcast_to(W_star, grams + (m_star, d))], axis=-2)
    v = xp.concatenate([xp.broadcast_to(c / m, batch + (m,)), xp.broadcast_to(-c_star / m_star, batch + (m_star,))],
                       axis=-1)
    return B, v


def _broadcast_batch(*shapes):
    """The broadcast of the batch shapes of the inputs; ValueError listing them when they do not broadcast."""
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError(f"the leading (batch) axes of the weight arrays {shapes} do not broadcast") from None


def _quadratic_form(K, v):
    """vᵀ K v per instance (batch shape)."""
    return (v[..., None, :] @ K @ v[..., :, None])[..., 0, 0]


def population_loss(W, c, W_star, c_star):
    r"""½ E_x (f(x) − f*(x))², x ~ N(0, I_d), exactly (no sampling).

    f(x) = (1/m) Σᵢ cᵢ σ(wᵢᵀx) (FaF Eq. 18), f*(x) = (1/m*) Σⱼ c*ⱼ σ(w*ⱼᵀx) (FaF Eq. 20); the value
    is ½[cᵀk(W,W)c/m² − 2cᵀk(W,W*)c*/(m m*) + c*ᵀk(W*,W*)c*/m*²] with k the arc-cosine kernel.
    A sum of terms of size ~‖f*‖², it is accurate to about 1e-16·(‖f‖² + ‖f*‖²) in absolute terms.

    Parameters
    ----------
    W : array_like, shape (..., m, d)
        Student hidden weights (rows of any norm; FaF §4 keeps them on the unit sphere).
    c : array_like, shape (..., m)
        Student output weights.
    W_star : array_like, shape (..., m*, d)
        Teacher hidden weights.
    c_star : array_like, shape (..., m*)
        Teacher output weights.

    Returns
    -------
    array of the broadcast batch shape (a scalar for a single instance)

    The Gram k(B, B) is formed once per entry of the hidden weights' broadcast batch: output weights ``c`` (or
    ``c_star``) with batch axes that ``W`` and ``W_star`` lack (size 1 there) share it.
    """
    xp, W, c, W_star, c_star = _check_network(W, c, W_star, c_star)
    B, v = _difference_network(W, c, W_star, c_star, xp, "population_loss", shared_grams=True)
    return 0.5 * _quadratic_form(_kernel(B, B, xp), v)


@dataclass(frozen=True)
class PopulationLossGradients:
    """The population loss and its gradients at one point (arrays of the batch shape + the parameter's shape).

    ``grad_W_sphere`` is the Riemannian gradient on the product of spheres (each row of W on its own
    sphere ‖wᵢ‖ = const): ``grad_W`` minus its component along each row.
    """

    loss: Any  #: ½ E(f − f*)², shape (...)
    grad_c: Any  #: ∂L/∂c, shape (..., m)
    grad_W: Any  #: Euclidean ∇_W L, shape (..., m, d)
    grad_W_sphere: Any  #: (I − ŵᵢŵᵢᵀ) ∇_{wᵢ} L, shape (..., m, d)


def population_loss_and_gradients(W, c, W_star, c_star):
    r"""The population loss of :func:`population_loss` and its exact gradients in c and W.

    ∂L/∂cᵢ = (1/m)[Σₗ k(wᵢ,wₗ) cₗ/m − Σⱼ k(wᵢ,w*ⱼ) c*ⱼ/m*] and
    ∇_{wᵢ}L = (cᵢ/m)[Σₗ (cₗ/m) ∇_a k(wᵢ,wₗ) − Σⱼ (c*ⱼ/m*) ∇_a k(wᵢ,w*ⱼ)], with
    ∇_a k(a, b) = (1/2π)[(π − θ) b + ‖b‖ sin θ a/‖a‖] (docs/relu.md). Both carry a factor 1/m: the
    mean-field scaling, which FaF App. D.2 compensates with a learning rate 0.01·m.

    Parameters are those of :func:`population_loss`; every row of ``W`` must be nonzero.

    Returns
    -------
    PopulationLossGradients
    """
    xp, W, c, W_star, c_star = _check_network(W, c, W_star, c_star)
    _nonzero_rows(W, "W", xp)
    B, v = _difference_network(W, c, W_star, c_star, xp, "population_loss_and_gradients")
    m = W.shape[-2]
    norms, _, u = _norms_and_cosines(B, B, xp)
    slope, sine = angle_terms = _angle_terms(u, xp)  # arccos and √ once for the kernel and its gradient
    K = _kernel_from(norms, norms, u, xp, angle_terms)
    grad_c = (K[..., :m, :] @ v[..., :, None])[..., 0] / m
    grad_W = v[..., :m, None] * _kernel_gradient_sum(B[..., :m, :], B, v, norms[..., :m], norms,
                                                     (slope[..., :m, :], sine[..., :m, :]), xp)
    unit = B[..., :m, :] / norms[..., :m, None]
    grad_sphere = grad_W - (grad_W * unit).sum(axis=-1, keepdims=True) * unit
    return PopulationLossGradients(loss=0.5 * _quadratic_form(K, v), grad_c=grad_c, grad_W=grad_W,
                                   grad_W_sphere=grad_sphere)


# --------------------------------------------------------------------------- projection on the student's features


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
