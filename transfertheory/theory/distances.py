r"""Distances between source and target tasks, and why they do not predict transfer (FaF §2.1, App. B.1).

Model (FaF Assumption 2.1, §2.1). A task is a function f ∈ Φ ⊂ L²(p);
its data law p_f(x, y) is x ~ p, y = f(x) + ε, ε ~ N(0, σ²). With an
orthonormal basis {φ_i} of Φ in L²(p), f = Σ α_i φ_i is given by its
coefficient vector α. The linear tasks of FaF §3 are the case
x ~ N(0, I_d), φ_i(x) = x_i, α = β; the joint law of (x, y) is then
N(0, Σ_β), Σ_β = [[I_d, β], [βᵀ, ‖β‖² + σ²]] (:func:`joint_covariance`).

This module computes, for such tasks,

* the Kullback–Leibler divergence (FaF Eqs. 30–34, exact);
* the Dudley (bounded-Lipschitz) metric γ_β, which has no closed form:
  a valid lower bound from the test function h = cos(y)/2 (the first steps
  of the proof of Thm 2.2, Eqs. 25–27), a sharper one from ramp functions
  of |y| that tends to 2 for far targets, and an upper bound
  min(2, W₂, √(2·KL));
* the 2-Wasserstein distance between Gaussian laws (Bures closed form) and the
  1-Wasserstein distance between empirical measures (exact optimal transport
  with POT, as in FaF Fig. 5);
* transferability for targets that are not unit-norm, such as the proof's
  far target g = a·f (:func:`far_target`), by exact rescaling of the FaF §3
  closed forms in :mod:`transfertheory.theory.linear`.

**Erratum (FaF Thm 2.2, Dudley half).** γ_β ≤ 2 for every pair of laws
(‖h‖_∞ ≤ 1), so "for every δ > 0 there is g with γ_β(p_f, p_g) ≥ δ" is false
for δ ≥ 2, and the step Eq. 27 → Eq. 28 of the proof is invalid. See
``docs/errata.md`` and the ``test_erratum_*`` tests.

Conventions: vectors (β, coefficient vectors, means) are arrays whose last
axis is the dimension; leading axes are a batch and broadcast against each
other and against σ. Scalar results are returned as Python floats.
"""
from __future__ import annotations

import warnings

import numpy as np

from .. import params as P
from .._memory import FLOAT_BYTES, check_memory
from .._validation import Interval
from ._closed_form import Rule, closed_form
from .linear import (
    N_HEAD,
    linear_transfer_risk,
    linear_transferability,
    linear_transferability_finite,
    scratch_risk,
    scratch_risk_finite,
)

__all__ = [
    "kl_divergence",
    "kl_linear_gaussian",
    "dudley_lower_bound",
    "dudley_lower_bound_ramp",
    "dudley_upper_bound",
    "joint_covariance",
    "wasserstein2_gaussian",
    "wasserstein1_empirical",
    "far_target",
    "dudley_proof_scale",
    "scaled_target_scratch_risk",
    "scaled_target_scratch_risk_finite",
    "scaled_target_linear_transfer_risk",
    "scaled_target_transferability",
    "scaled_target_transferability_finite",
]

#: σ > 0 here: the laws p_f of noiseless tasks are singular (KL = ∞)
SIGMA_POSITIVE = P.SIGMA.with_range(closed="neither")
POSITIVE = SIGMA_POSITIVE.interval
FINITE = Interval(-np.inf, np.inf, "neither")
#: an array of finite reals (vectors, covariances, samples; each checked under its own name)
_FINITE_ARRAY = P.Param("array", FINITE)
DELTA = P.Param("delta", POSITIVE, description="distance δ the proof of FaF Thm 2.2 asks for")
DUDLEY_MAX = 2.0  # sup over ‖h‖_BL ≤ 1 of |E_p h − E_q h| ≤ 2‖h‖_∞ ≤ 2


def _vector(value, name):
    """A finite float array with at least one axis (last axis = dimension)."""
    arr = _FINITE_ARRAY.check(value, name)
    if arr.ndim == 0 or arr.shape[-1] == 0:
        raise ValueError(f"{name} must be a non-empty vector (or stack of vectors, last axis = dimension), "
                         f"got shape {arr.shape}")
    return arr


#: a stack of vectors (last axis = dimension) of a closed form
VECTORS = Rule(lambda value, name, arguments: _vector(value, name), vectors=True)


def _vectors_like(first):
    """The rule of a stack of vectors of the dimension of the argument ``first`` (validated before it)."""

    def check(value, name, arguments):
        arr, dimension = _vector(value, name), arguments[first].shape[-1]
        if arr.shape[-1] != dimension:
            raise ValueError(f"{first} and {name} must have the same dimension (last axis), "
                             f"got {dimension} and {arr.shape[-1]}")
        return arr

    return Rule(check, vectors=True)


# --------------------------------------------------------------------------- KL


@closed_form(f_coeffs=VECTORS, g_coeffs=_vectors_like("f_coeffs"), sigma=SIGMA_POSITIVE)
def kl_divergence(f_coeffs, g_coeffs, sigma):
    r"""D_KL(p_f ‖ p_g) for tasks given by coefficients in an orthonormal basis of L²(p).

    FaF Eqs. 30–34: D_KL(p_f ‖ p_g) = ‖f − g‖²_{L²(p)}/(2σ²), and by
    orthonormality (Eq. 30) ‖f − g‖²_{L²(p)} = Σ_i (α_i^f − α_i^g)². The input
    law p cancels, so the result holds for any p and any orthonormal basis.

    Parameters
    ----------
    f_coeffs, g_coeffs : array_like, shape (..., M)
        Coefficients α of f and g; leading axes broadcast.
    sigma : array_like, > 0
        Label-noise standard deviation (broadcasts against the batch axes).

    Returns
    -------
    float or ndarray of shape (...)
    """
    return np.sum((f_coeffs - g_coeffs) ** 2, axis=-1) / (2 * sigma**2)


@closed_form(beta_f=VECTORS, beta_g=_vectors_like("beta_f"), sigma=SIGMA_POSITIVE)
def kl_linear_gaussian(beta_f, beta_g, sigma):
    r"""D_KL(p_f ‖ p_g) = ‖β_f − β_g‖²/(2σ²) for linear tasks with x ~ N(0, I_d).

    FaF Eq. 34 with f(x) = β_fᵀx, g(x) = β_gᵀx: the coordinates x_i are an
    orthonormal basis of the linear functions in L²(N(0, I_d)), so this is
    :func:`kl_divergence` with α = β. For unit vectors at angle θ it equals
    (1 − cos θ)/σ². Vectorized over stacks of β (last axis = d).
    """
    return kl_divergence(beta_f, beta_g, sigma, validate=False)


# --------------------------------------------------------------------------- Dudley metric


@closed_form(beta_f=VECTORS, beta_g=_vectors_like("beta_f"), sigma=SIGMA_POSITIVE)
def dudley_lower_bound(beta_f, beta_g, sigma):
    r"""Lower bound on the Dudley metric from the test function h(x, y) = cos(y)/2.

    FaF Eqs. 25–27 (the valid part of the proof of Thm 2.2): ‖h‖_BL =
    ‖h‖_Lip + ‖h‖_∞ = 1/2 + 1/2 = 1, and E[cos y | x] = e^{−σ²/2} cos f(x), so
    γ_β(p_f, p_g) ≥ (e^{−σ²/2}/2)·|E cos f(x) − E cos g(x)|. For
    x ~ N(0, I_d), E cos(βᵀx) = exp(−‖β‖²/2) (characteristic function), hence

        γ_β ≥ (e^{−σ²/2}/2)·|exp(−‖β_f‖²/2) − exp(−‖β_g‖²/2)|  ≤ e^{−σ²/2}/2 < 2.

    Vectorized over stacks of β (last axis = d).
    """
    ef = np.exp(-np.sum(beta_f**2, axis=-1) / 2)
    eg = np.exp(-np.sum(beta_g**2, axis=-1) / 2)
    return np.exp(-(sigma**2) / 2) / 2 * np.abs(ef - eg)


#: Lipschitz constants L of the ramp test functions tried by :func:`dudley_lower_bound_ramp`
RAMP_LIPSCHITZ = np.logspace(-8, 0, 401)[:-1]


def _mean_min_abs(c, s):
    """E min(c, |Y|) for Y ~ N(0, s²): 2s(φ(0) − φ(c/s)) + 2c·P(Y > c)."""
    from scipy.stats import norm

    return 2 * s * (norm.pdf(0.0) - norm.pdf(c / s)) + 2 * c * norm.sf(c / s)


@closed_form(beta_f=VECTORS, beta_g=_vectors_like("beta_f"), sigma=SIGMA_POSITIVE)
def dudley_lower_bound_ramp(beta_f, beta_g, sigma):
    r"""Lower bound on the Dudley metric from ramp test functions of |y|; tends to 2 for far targets.

    Not in FaF: it shows what *is* true of Thm 2.2 (see ``docs/errata.md``).
    For L ∈ (0, 1) and M = 1 − L, h_L(x, y) = −M + min(2M, L|y|) has
    ‖h_L‖_∞ = M and ‖h_L‖_Lip = L, so ‖h_L‖_BL = 1 and
    γ_β(p_f, p_g) ≥ |E_f h_L − E_g h_L| = L·|m(c, s_f) − m(c, s_g)| with
    c = 2M/L, y ~ N(0, s²) under p_f (s_f² = ‖β_f‖² + σ²) and
    m(c, s) = E min(c, |y|) = 2s(φ(0) − φ(c/s)) + 2c·P(y > c). The bound is the
    maximum over a fixed grid of L (:data:`RAMP_LIPSCHITZ`), each a valid bound.
    As ‖β_g‖ → ∞ at fixed L it tends to 2M − L·m(c, s_f) ≥ 2 − L(2 + s_f),
    so sup_g γ_β(p_f, p_g) = 2: for every δ < 2 some g = a·f has γ_β ≥ δ.
    Vectorized over stacks of β (last axis = d).
    """
    s_f = np.sqrt(np.sum(beta_f**2, axis=-1) + sigma**2)[..., None]
    s_g = np.sqrt(np.sum(beta_g**2, axis=-1) + sigma**2)[..., None]
    lip = RAMP_LIPSCHITZ
    c = 2 * (1 - lip) / lip
    return np.max(lip * np.abs(_mean_min_abs(c, s_f) - _mean_min_abs(c, s_g)), axis=-1)


@closed_form(beta_f=VECTORS, beta_g=_vectors_like("beta_f"), sigma=SIGMA_POSITIVE)
def dudley_upper_bound(beta_f, beta_g, sigma):
    r"""Upper bound on the Dudley metric γ_β(p_f, p_g) for linear Gaussian tasks.

    min(2, W₂(p_f, p_g), √(2·D_KL(p_f ‖ p_g))), each term a valid bound
    (FaF Eq. 23–24 define γ_β = sup_{‖h‖_BL ≤ 1} |E_p h − E_q h|):

    * 2: ‖h‖_∞ ≤ ‖h‖_BL ≤ 1 (the erratum to Thm 2.2);
    * W₂: ‖h‖_Lip ≤ 1, so γ_β ≤ W₁ (Kantorovich–Rubinstein) ≤ W₂ (Jensen),
      with W₂ the Bures closed form between the joint laws N(0, Σ_β);
    * √(2·KL) = ‖β_f − β_g‖/σ: γ_β ≤ 2‖h‖_∞·TV ≤ 2·TV and Pinsker
      TV ≤ √(KL/2) with KL from FaF Eq. 34.
    """
    w2 = wasserstein2_gaussian(joint_covariance(beta_f, sigma), joint_covariance(beta_g, sigma))
    pinsker = np.sqrt(2 * np.asarray(kl_linear_gaussian(beta_f, beta_g, sigma, validate=False)))
    return np.minimum(DUDLEY_MAX, np.minimum(w2, pinsker))


# --------------------------------------------------------------------------- Wasserstein


def joint_covariance(beta, sigma):
    r"""Covariance of the joint law of (x, y) for the linear task y = βᵀx + ε, x ~ N(0, I_d).

    Σ_β = [[I_d, β], [βᵀ, ‖β‖² + σ²]] ∈ ℝ^{(d+1)×(d+1)} (the mean is 0).
    ``beta`` of shape (..., d) gives shape (..., d+1, d+1).
    """
    b = _vector(beta, "beta")
    s = SIGMA_POSITIVE.check(sigma)
    batch = np.broadcast_shapes(b.shape[:-1], s.shape)
    b = np.broadcast_to(b, (*batch, b.shape[-1]))
    d = b.shape[-1]
    cov = np.zeros((*batch, d + 1, d + 1))
    cov[..., :d, :d] = np.eye(d)
    cov[..., :d, d] = b
    cov[..., d, :d] = b
    cov[..., d, d] = np.sum(b**2, axis=-1) + s**2
    return cov


def _covariance(value, name):
    cov = _FINITE_ARRAY.check(value, name)
    if cov.ndim < 2 or cov.shape[-1] != cov.shape[-2] or cov.shape[-1] == 0:
        raise ValueError(f"{name} must be a square matrix (or stack, shape (..., k, k)), got shape {cov.shape}")
    scale = max(1.0, float(np.abs(cov).max()))
    if not np.allclose(cov, np.swapaxes(cov, -1, -2), rtol=0, atol=1e-10 * scale):
        raise ValueError(f"{name} must be symmetric")
    cov = (cov + np.swapaxes(cov, -1, -2)) / 2
    if np.linalg.eigvalsh(cov).min() < -1e-10 * scale:
        raise ValueError(f"{name} must be positive semi-definite")
    return cov


def _psd_sqrt(cov):
    """Symmetric PSD square root by eigendecomposition (round-off negatives clipped to 0)."""
    w, v = np.linalg.eigh(cov)
    return (v * np.sqrt(np.clip(w, 0, None))[..., None, :]) @ np.swapaxes(v, -1, -2)


def wasserstein2_gaussian(cov_p, cov_q, mean_p=None, mean_q=None):
    r"""W₂ between N(m_p, Σ_p) and N(m_q, Σ_q): the Bures closed form.

    W₂² = ‖m_p − m_q‖² + tr Σ_p + tr Σ_q − 2 tr (Σ_p^{1/2} Σ_q Σ_p^{1/2})^{1/2}
    (Dowson & Landau 1982; Givens & Shortt 1984). Applied here to the
    joint laws of linear tasks (:func:`joint_covariance`).

    Both square roots are taken by ``numpy.linalg.eigh`` of symmetric matrices
    rather than ``scipy.linalg.sqrtm``: eigh is batched over stacks, always
    real, and handles singular PSD matrices (round-off eigenvalues below zero
    are clipped), where the general Schur-based sqrtm can return complex
    parts. The tests compare with ``sqrtm`` directly. Round-off in the
    cancellation of W₂² is of order k·ε·(tr Σ_p + tr Σ_q) (ε = 2.2e-16), so for
    nearly equal laws W₂ itself is accurate only to about √(k·ε·(tr Σ_p + tr Σ_q))
    (≈ 1e-7 for k = 5, traces ≈ 10).

    Parameters
    ----------
    cov_p, cov_q : array_like, shape (..., k, k)
        Symmetric positive semi-definite covariances; batch axes broadcast.
    mean_p, mean_q : array_like, shape (..., k), optional
        Means (default 0).

    Returns
    -------
    float or ndarray of shape (...)
    """
    cp, cq = _covariance(cov_p, "cov_p"), _covariance(cov_q, "cov_q")
    k = cp.shape[-1]
    if cq.shape[-1] != k:
        raise ValueError(f"cov_p and cov_q must have the same size, got {k}x{k} and {cq.shape[-1]}x{cq.shape[-1]}")
    mp = np.zeros(k) if mean_p is None else _vector(mean_p, "mean_p")
    mq = np.zeros(k) if mean_q is None else _vector(mean_q, "mean_q")
    for name, m in (("mean_p", mp), ("mean_q", mq)):
        if m.shape[-1] != k:
            raise ValueError(f"{name} must have dimension {k} to match the covariances, got {m.shape[-1]}")
    try:
        np.broadcast_shapes(cp.shape[:-2], cq.shape[:-2], mp.shape[:-1], mq.shape[:-1])
    except ValueError:
        raise ValueError("batch shapes of cov_p, cov_q, mean_p and mean_q do not broadcast") from None
    root = _psd_sqrt(cp)
    middle = root @ cq @ root
    middle = (middle + np.swapaxes(middle, -1, -2)) / 2
    cross = np.sqrt(np.clip(np.linalg.eigvalsh(middle), 0, None)).sum(axis=-1)
    w2sq = np.sum((mp - mq) ** 2, axis=-1) + np.trace(cp, axis1=-2, axis2=-1) + np.trace(cq, axis1=-2, axis2=-1) - 2 * cross
    w2 = np.sqrt(np.clip(w2sq, 0, None))
    return float(w2) if w2.ndim == 0 else w2


def _samples(value, name):
    arr = _FINITE_ARRAY.check(value, name)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{name} must be a non-empty array of shape (N,) or (N, k), got shape {np.shape(value)}")
    return arr


def wasserstein1_empirical(samples_p, samples_q):
    r"""Exact W₁ between the uniform empirical measures of two samples (Euclidean cost).

    Solves the optimal-transport linear program
    min_π Σ_ij π_ij ‖x_i − y_j‖ over couplings of (1/N_p)Σδ_{x_i} and
    (1/N_q)Σδ_{y_j} with POT's network simplex (``ot.emd2``), as used for
    FaF Fig. 5 (W₁ "computed from finite samples"). Unequal sample counts are
    allowed. Memory and time grow like N_p·N_q (dense cost matrix).

    Note: the empirical W₁ is biased upwards — E W₁(P̂, Q̂) ≥ W₁(P, Q) by joint
    convexity — and in k dimensions the bias decays only like N^{−1/k}.

    Parameters
    ----------
    samples_p : array_like, shape (N_p,) or (N_p, k)
    samples_q : array_like, shape (N_q,) or (N_q, k)

    Raises
    ------
    RuntimeError
        If the solver stops before optimality (it should not: the iteration
        cap grows with the problem size).
    """
    xp, xq = _samples(samples_p, "samples_p"), _samples(samples_q, "samples_q")
    if xp.shape[1] != xq.shape[1]:
        raise ValueError(f"samples_p and samples_q must have the same dimension, got {xp.shape[1]} and {xq.shape[1]}")
    # the cost matrix, POT's copy of it and the transport plan
    check_memory(FLOAT_BYTES * 3 * xp.shape[0] * xq.shape[0], what="wasserstein1_empirical",
                 params={"len(samples_p)": xp.shape[0], "len(samples_q)": xq.shape[0]})
    import ot  # POT; imported lazily (it is a core dependency, but heavy)

    a = np.full(xp.shape[0], 1.0 / xp.shape[0])
    b = np.full(xq.shape[0], 1.0 / xq.shape[0])
    cost = ot.dist(xp, xq, metric="euclidean")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # reported below as an error instead
        value, log = ot.emd2(a, b, cost, numItermax=max(100_000, 100 * cost.size), log=True)
    if log["result_code"] != 1:
        raise RuntimeError(f"optimal transport did not reach optimality: {log['warning']}")
    return float(value)


# --------------------------------------------------------------------------- far targets


def far_target(beta, scale):
    r"""The proof's far target g = a·f: the vector ``scale * beta``.

    FaF App. B.1 builds g = a·f (a → ∞, or the Dudley scale of
    :func:`dudley_proof_scale`): g lies in the same feature space as f, yet
    D_KL and W₁ between p_f and p_g grow without bound. ``scale`` broadcasts
    against the batch axes of ``beta``. Transferability to such targets:
    :func:`scaled_target_transferability_finite`.
    """
    b = _vector(beta, "beta")
    a = _FINITE_ARRAY.check(scale, "scale")
    return a[..., None] * b


@closed_form(beta=VECTORS, delta=DELTA, sigma=SIGMA_POSITIVE)
def dudley_proof_scale(beta, delta, sigma):
    r"""The scale of the proof of FaF Thm 2.2 (Dudley half): a = √(|2δe^{σ²/2} − ‖f‖²|/‖f‖²).

    FaF App. B.1 (after Eq. 30) chooses g = a·f with this a, so that
    ‖f‖² + ‖g‖² ≥ 2δe^{σ²/2} and Eq. 28 evaluates to at least δ. Because the
    step Eq. 27 → 28 is invalid, γ_β(p_f, p_g) ≥ δ does *not* follow; for
    δ ≥ 2 it is false (see ``docs/errata.md``).
    """
    norm2 = np.sum(beta**2, axis=-1)
    if np.any(norm2 == 0):
        raise ValueError("beta must be non-zero (the proof rescales f)")
    return np.sqrt(np.abs(2 * delta * np.exp(sigma**2 / 2) - norm2) / norm2)


#: the norm a of a rescaled target: every risk of a target of norm a is a²·(the unit target's risk at noise σ/a),
#: for the FaF §3 risks are quadratic in (β_t, ε) and σ enters as σ²
NORM = P.Param("norm", POSITIVE, description="norm a of the target vector")


@closed_form(norm=NORM, sigma=P.SIGMA, gamma=P.GAMMA)
def scaled_target_scratch_risk(gamma, sigma, norm):
    r"""Scratch risk for a target β_t of norm a (n, d → ∞): a²·E R_sc(γ, σ/a).

    FaF Eq. 10 rescaled. With y = β_tᵀx + ε and u = β_t/a, the min-norm
    solution is X⁺y = a·X⁺(Xu + ε/a), so ‖X⁺y − β_t‖² = a²‖X⁺(Xu + ε/a) − u‖²:
    a unit-target problem with noise σ/a, times a². Holds for any direction.
    """
    return norm**2 * scratch_risk(gamma, sigma / norm, validate=False)


@closed_form(norm=NORM, sigma=P.SIGMA, n=P.N, d=P.D)
def scaled_target_scratch_risk_finite(n, d, sigma, norm):
    r"""Exact finite-size scratch risk for a target of norm a: a²·E R_sc(n, d, σ/a) (FaF Eq. 10 at finite size, rescaled)."""
    return norm**2 * scratch_risk_finite(n, d, sigma / norm, validate=False)


@closed_form(norm=NORM, sigma=P.SIGMA, theta=P.THETA, n=N_HEAD)
def scaled_target_linear_transfer_risk(theta, sigma, n, norm):
    r"""Exact linear-transfer risk for a target β_t = a·u, ‖u‖ = 1, u at angle θ to β_s.

    FaF Eq. 12 rescaled: b = zᵀy/‖z‖² is linear in y = a(Xu + ε/a), so
    ‖bβ_s − β_t‖² = a²·(unit problem with noise σ/a), and
    E R = a²·[sin²θ + ((σ/a)² + sin²θ)/(n − 2)] = a² sin²θ + (σ² + a² sin²θ)/(n − 2).
    """
    return norm**2 * linear_transfer_risk(theta, sigma / norm, n, validate=False)


@closed_form(norm=NORM, sigma=P.SIGMA, gamma=P.GAMMA, theta=P.THETA)
def scaled_target_transferability(gamma, theta, sigma, norm):
    r"""Linear transferability for a target of norm a, n, d → ∞: a²·T_lt(γ, θ, σ/a) (FaF Eq. 13 rescaled)."""
    return norm**2 * linear_transferability(gamma, theta, sigma / norm, validate=False)


@closed_form(norm=NORM, sigma=P.SIGMA, n=N_HEAD, d=P.D, theta=P.THETA)
def scaled_target_transferability_finite(n, d, theta, sigma, norm):
    r"""Exact finite-size linear transferability for a target of norm a: a²·T_lt(n, d, θ, σ/a).

    The exact T_lt of :func:`~transfertheory.theory.linear.linear_transferability_finite` rescaled: E R_sc − E R_lt with both risks from
    :func:`scaled_target_scratch_risk_finite` and
    :func:`scaled_target_linear_transfer_risk`. Used for FaF Fig. 5.
    """
    return norm**2 * linear_transferability_finite(n, d, theta, sigma / norm, validate=False)
