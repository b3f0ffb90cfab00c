r"""Closed forms for transfer learning with deep linear networks (FaF §3, App. B).

Model (THEORY §A): inputs x ~ N(0, I_d); unit source/target vectors with
β_sᵀβ_t = cos θ; labels y = β_tᵀx + ε, ε ~ N(0, σ²); n target samples,
γ = n/d. The network's end-to-end vector after training is

* scratch (FaF Thm 3.5): the minimum-norm least-squares solution β̂ = X⁺y;
* linear transfer (Thm 3.7): β̂ = bβ_s with b = zᵀy/‖z‖², z = Xβ_s;
* ridge linear transfer (Thm 3.8, Eq. 14): b = zᵀy/(‖z‖² + nλ);
* fine-tuning (Thm 3.9): β̂ = X⁺y + (I − P_row(X))β_s.

The risk is R = ‖β̂ − β_t‖² (label noise excluded) and the transferability is
T = E[R_scratch − R_transfer]. Every function is vectorized (NumPy
broadcasting; scalar in → float out). Two families are given: the
high-dimensional limits of the paper (n, d → ∞ at fixed γ) and *exact*
finite-size expectations (inverse-Wishart and χ² moments), which the paper
does not state.

Singular points are values: where the noise term diverges (γ = 1, or
|n − d| ≤ 1, with σ > 0) the risk is ``+inf``. With σ = 0 there is no noise
term and the risk stays finite there.
"""
from __future__ import annotations

import numpy as np

from .._validation import Interval, check_integer_param, check_param, scalar_or_array

__all__ = [
    "scratch_risk",
    "scratch_risk_finite",
    "linear_transfer_risk",
    "linear_transferability",
    "linear_transferability_finite",
    "negative_transfer_interval",
    "negative_transfer_threshold",
    "negative_transfer_onset_angle",
    "ridge_transfer_risk",
    "ridge_transfer_risk_finite",
    "fine_tune_risk",
    "fine_tune_risk_finite",
    "fine_tune_transferability",
    "fine_tune_transferability_finite",
    "fine_tune_scale",
    "fine_tune_risk_corrected",
    "fine_tune_transferability_corrected",
    "fine_tune_limit",
    "min_norm_solution",
    "fine_tune_flow_expectation",
    "min_norm_noise_gain",
    "chi2_resolvent_moments",
]

GAMMA = Interval(0, np.inf, "neither")
THETA = Interval(0, np.pi, "both")
NONNEG = Interval(0, np.inf, "left")


def _gamma(gamma):
    return check_param(gamma, "gamma", GAMMA)


def _theta(theta):
    return check_param(theta, "theta", THETA)


def _sigma(sigma):
    return check_param(sigma, "sigma", NONNEG)


def _lam(lam):
    return check_param(lam, "lam", NONNEG)


def _noise_term(sigma2, gain):
    """σ²·gain with the convention 0·∞ = 0 (no noise ⇒ no noise term)."""
    with np.errstate(invalid="ignore"):
        return np.where(sigma2 == 0, 0.0, sigma2 * gain)


# --------------------------------------------------------------------------- scratch


def _asymptotic_noise_gain(gamma):
    """lim E tr((XᵀX)⁺) at fixed γ = n/d: γ/(1−γ) (γ<1), 1/(γ−1) (γ>1), ∞ at γ=1.

    FaF App. B.5, Eqs. 97–102 (Marchenko–Pastur Stieltjes transform at z → 0).
    """
    with np.errstate(divide="ignore"):
        return np.where(gamma < 1, gamma / (1 - gamma), np.where(gamma > 1, 1 / (gamma - 1), np.inf))


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
    """
    g, s = _gamma(gamma), _sigma(sigma)
    bias = np.clip(1 - g, 0, None)
    return scalar_or_array(bias + _noise_term(s**2, _asymptotic_noise_gain(g)), gamma, sigma)


def min_norm_noise_gain(n, d):
    r"""Exact E tr((XᵀX)⁺) for X ∈ ℝ^{n×d} with i.i.d. N(0,1) entries.

    THEORY §A1 (inverse-Wishart mean E W⁻¹ = I/(m − p − 1)):
    n/(d − n − 1) for n ≤ d − 2, d/(n − d − 1) for n ≥ d + 2, ``+inf`` for
    |n − d| ≤ 1. The noise part of the minimum-norm risk is σ² times this.
    """
    n_, d_ = check_integer_param(n, "n", 1), check_integer_param(d, "d", 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        gain = np.where(n_ <= d_ - 2, n_ / (d_ - n_ - 1), np.where(n_ >= d_ + 2, d_ / (n_ - d_ - 1), np.inf))
    return scalar_or_array(gain, n, d)


def scratch_risk_finite(n, d, sigma):
    r"""Exact expected scratch risk E‖X⁺y − β_t‖² at finite n, d.

    THEORY §A1: (1 − n/d) + σ² n/(d−n−1) for n ≤ d−2; σ² d/(n−d−1) for
    n ≥ d+2; ``+inf`` for |n−d| ≤ 1 when σ > 0. Derivation: the bias is
    E‖(I − P_row(X))β_t‖² = 1 − n/d (a uniformly random n-plane), the noise
    term σ² E tr((XᵀX)⁺) (:func:`min_norm_noise_gain`). Tends to FaF Eq. 10
    as d → ∞ at fixed γ = n/d.
    """
    n_, d_ = check_integer_param(n, "n", 1), check_integer_param(d, "d", 1)
    s = _sigma(sigma)
    bias = np.clip(1 - n_ / d_, 0, None)
    return scalar_or_array(bias + _noise_term(s**2, min_norm_noise_gain(n_, d_)), n, d, sigma)


# --------------------------------------------------------------------------- linear transfer


def linear_transfer_risk(theta, sigma, n):
    r"""Exact expected risk of linear transfer on rank-one pretrained features.

    FaF Eq. 12 (Thm 3.7): E R_lt = sin²θ + (σ² + sin²θ)/(n − 2), exact for
    every n > 2 (E‖z‖⁻² = 1/(n−2) for z ~ N(0, I_n), FaF Eqs. 116–120).

    Parameters
    ----------
    theta : array_like in [0, π]
        Angle between source and target vectors.
    sigma : array_like, >= 0
    n : int array_like, >= 3
        Number of target samples.
    """
    t, s = _theta(theta), _sigma(sigma)
    n_ = check_integer_param(n, "n", 3)
    sin2 = np.sin(t) ** 2
    return scalar_or_array(sin2 + (s**2 + sin2) / (n_ - 2), theta, sigma, n)


def linear_transferability(gamma, theta, sigma):
    r"""Linear transferability T_lt = E R_sc − sin²θ in the limit n, d → ∞.

    FaF Eq. 13. ``+inf`` at γ = 1 when σ > 0 (scratch diverges).
    """
    t = _theta(theta)
    return scalar_or_array(scratch_risk(gamma, sigma) - np.sin(t) ** 2, gamma, theta, sigma)


def linear_transferability_finite(n, d, theta, sigma):
    r"""Exact T_lt(n, d) = E R_sc(n, d, σ) − E R_lt(θ, σ, n) (THEORY §A3)."""
    return scalar_or_array(scratch_risk_finite(n, d, sigma) - linear_transfer_risk(theta, sigma, n), n, d, theta, sigma)


def negative_transfer_interval(theta, sigma):
    r"""Bounds (γ₋, γ₊) of the γ < 1 negative linear-transfer region.

    FaF §3.3 (from Eq. 13): for γ < 1, T_lt < 0 ⇔ γ² − γ(1 + cos²θ − σ²) +
    cos²θ < 0 ⇔ γ ∈ (γ₋, γ₊),
    γ± = ½[(1 + cos²θ − σ²) ± √((1 + cos²θ − σ²)² − 4cos²θ)].
    The interval is non-empty iff |cos θ| < 1 − σ, i.e. θ ∈ (arccos(1−σ),
    π − arccos(1−σ)); otherwise both bounds are NaN. Returns a tuple of two
    floats (scalar input) or two arrays.
    """
    t, s = _theta(theta), _sigma(sigma)
    c2 = np.cos(t) ** 2
    a = 1 + c2 - s**2
    disc = a**2 - 4 * c2
    exists = np.sqrt(c2) < 1 - s
    root = np.sqrt(np.where(exists, disc, 0.0))
    lo = np.where(exists, (a - root) / 2, np.nan)
    hi = np.where(exists, (a + root) / 2, np.nan)
    return scalar_or_array(lo, theta, sigma), scalar_or_array(hi, theta, sigma)


def negative_transfer_threshold(theta, sigma):
    r"""Onset of γ > 1 negative linear transfer: γ_c = 1 + σ²/sin²θ.

    FaF §3.3: for γ > 1, T_lt < 0 ⇔ γ − 1 > σ²/sin²θ. ``+inf`` when
    sin θ = 0 (no negative transfer for aligned tasks).
    """
    t, s = _theta(theta), _sigma(sigma)
    sin2 = np.sin(t) ** 2
    sin2 = np.where(np.isclose(sin2, 0.0, atol=1e-30), 0.0, sin2)
    with np.errstate(divide="ignore", invalid="ignore"):
        thr = np.where(sin2 > 0, 1 + s**2 / np.where(sin2 > 0, sin2, 1.0), np.inf)
    return scalar_or_array(thr, theta, sigma)


def negative_transfer_onset_angle(sigma):
    r"""θ above which the γ < 1 negative region exists: arccos(1 − σ) (NaN for σ ≥ 1).

    FaF §3.3: negative transfer at γ < 1 requires SNR = 1/σ² > 1.
    """
    s = _sigma(sigma)
    with np.errstate(invalid="ignore"):
        return scalar_or_array(np.where(s < 1, np.arccos(np.clip(1 - s, -1, 1)), np.nan), sigma)


# --------------------------------------------------------------------------- ridge


def ridge_transfer_risk(theta, lam):
    r"""Ridge linear-transfer risk as n → ∞: 1 − cos²θ (1 + 2λ)/(1 + λ)².

    FaF Eq. 15 (Thm 3.8), normalization of Eq. 14: (1/2n)‖ΦW − y‖² +
    (λ/2)‖W‖² with balanced features (‖v‖ = 1). Strictly increasing in λ for
    cos θ ≠ 0, so the optimal ridge is λ* = 0.
    """
    t, lm = _theta(theta), _lam(lam)
    return scalar_or_array(1 - np.cos(t) ** 2 * (1 + 2 * lm) / (1 + lm) ** 2, theta, lam)


_QUAD_NODES = 801
_TAIL = 1e-17


def chi2_resolvent_moments(n, c):
    r"""(E[s/(s+c)], E[s/(s+c)²], E[s²/(s+c)²]) for s ~ χ²_n, c >= 0.

    The three one-dimensional integrals behind the exact ridge risk (THEORY
    §A4). Computed by the trapezoidal rule in x = log s, where the integrand
    is smooth with exponentially decaying tails and its only singularity
    (s = −c) lies a distance π from the real axis, so the rule converges
    geometrically; the window spans the χ²_n quantiles 10⁻¹⁷ … 1 − 10⁻¹⁷.
    Exact values are used at c = 0: (1, 1/(n−2), 1). Requires n >= 3.
    """
    # SciPy is imported here, not at module level: it is half the start-up
    # time of the phase-diagram CLI, which needs it only for finite-n ridge.
    from scipy import stats
    from scipy.special import gammaln

    n_ = check_integer_param(n, "n", 3)
    c_ = check_param(c, "c", NONNEG)
    n_b, c_b = np.broadcast_arrays(n_, c_)
    pairs, inverse = np.unique(np.stack([n_b.ravel(), c_b.ravel()], axis=1), axis=0, return_inverse=True)
    pn, pc = pairs[:, 0:1], pairs[:, 1:2]
    k = pn / 2
    lo = np.log(stats.chi2.ppf(_TAIL, pn))
    hi = np.log(stats.chi2.isf(_TAIL, pn))
    x = lo + (hi - lo) * np.linspace(0.0, 1.0, _QUAD_NODES)[None, :]
    s = np.exp(x)
    # density of x = log s: s·p_χ²(s), in log space for stability
    log_w = k * x - s / 2 - k * np.log(2.0) - gammaln(k)
    w = np.exp(log_w)
    dx = (hi - lo) / (_QUAD_NODES - 1)
    trap = np.full(_QUAD_NODES, 1.0)
    trap[[0, -1]] = 0.5
    denom = s + pc

    def integrate(f):
        return (f * w * trap).sum(axis=1) * dx[:, 0]

    a = integrate(s / denom)
    b = integrate(s / denom**2)
    cc = integrate((s / denom) ** 2)
    exact0 = pc[:, 0] == 0
    a = np.where(exact0, 1.0, a)
    b = np.where(exact0, 1.0 / (pn[:, 0] - 2), b)
    cc = np.where(exact0, 1.0, cc)
    shape = n_b.shape
    out = tuple(v[inverse.ravel()].reshape(shape) for v in (a, b, cc))
    return tuple(scalar_or_array(v, n, c) for v in out)


def ridge_transfer_risk_finite(theta, sigma, n, lam):
    r"""Exact expected ridge linear-transfer risk at finite n.

    THEORY §A4 (FaF App. B.7 before the saddle point): with s = ‖z‖² ~ χ²_n,
    b = zᵀy/(s + nλ),
    E R = 1 − 2cos²θ E[s/(s+nλ)] + cos²θ E[s²/(s+nλ)²] + (sin²θ + σ²) E[s/(s+nλ)²].
    Equals :func:`linear_transfer_risk` at λ = 0 and tends to FaF Eq. 15 as
    n → ∞.
    """
    t, s, lm = _theta(theta), _sigma(sigma), _lam(lam)
    n_ = check_integer_param(n, "n", 3)
    a, b, c = chi2_resolvent_moments(n_, n_ * lm)
    cos2 = np.cos(t) ** 2
    risk = 1 - 2 * cos2 * a + cos2 * c + (np.sin(t) ** 2 + s**2) * b
    return scalar_or_array(risk, theta, sigma, n, lam)


# --------------------------------------------------------------------------- fine-tuning


def fine_tune_risk(gamma, theta, sigma):
    r"""Expected fine-tuning risk as n, d → ∞.

    FaF Eq. 16 (Thm 3.9): E R_ft = E R_sc + (1 − γ)(1 − 2cos θ) for γ ≤ 1,
    E R_sc for γ > 1. ``+inf`` at γ = 1 when σ > 0.
    """
    g, t = _gamma(gamma), _theta(theta)
    extra = np.clip(1 - g, 0, None) * (1 - 2 * np.cos(t))
    return scalar_or_array(scratch_risk(g, sigma) + extra, gamma, theta, sigma)


def fine_tune_transferability(gamma, theta):
    r"""Fine-tuning transferability T_ft = (γ − 1)(1 − 2cos θ) for γ ≤ 1, else 0.

    FaF Eq. 17. Positive iff θ < π/3 (and γ < 1). At γ = 1 it is 0: the
    divergent noise term X⁺ε is common to both models and cancels pathwise.
    Independent of σ.
    """
    g, t = _gamma(gamma), _theta(theta)
    return scalar_or_array(-np.clip(1 - g, 0, None) * (1 - 2 * np.cos(t)), gamma, theta)


def fine_tune_risk_finite(n, d, theta, sigma):
    r"""Exact expected fine-tuning risk at finite n, d.

    THEORY §A5: β_ft − β_t = (I − P)(β_s − β_t) + X⁺ε, hence
    E R_ft = (1 − n/d)(2 − 2cos θ) + σ² E tr((XᵀX)⁺) for n ≤ d (``+inf``
    noise for |n − d| ≤ 1, σ > 0), and E R_ft = E R_sc for n ≥ d.
    """
    n_, d_ = check_integer_param(n, "n", 1), check_integer_param(d, "d", 1)
    t, s = _theta(theta), _sigma(sigma)
    bias = np.clip(1 - n_ / d_, 0, None) * (2 - 2 * np.cos(t))
    return scalar_or_array(bias + _noise_term(s**2, min_norm_noise_gain(n_, d_)), n, d, theta, sigma)


def fine_tune_transferability_finite(n, d, theta):
    r"""Exact T_ft(n, d) = −(1 − n/d)₊ (1 − 2cos θ); the noise terms cancel pathwise."""
    n_, d_ = check_integer_param(n, "n", 1), check_integer_param(d, "d", 1)
    t = _theta(theta)
    return scalar_or_array(-np.clip(1 - n_ / d_, 0, None) * (1 - 2 * np.cos(t)), n, d, theta)


# --------------------------------------------------------------------------- fine-tuning: the gradient-flow limit
#
# FaF Thm 3.9 (App. B.8, Eq. 142) takes the pretrained component (I − P)β_s to be
# carried over unchanged. It is not: the last layer also moves along v during
# fine-tuning, and with balanced weights (D_l → 0 as α → 0) every layer stays
# rank one with a common singular value s, so the frozen (I − P)W₁ forces
# (I − P)β_ft = c·(I − P)β_pre with c = (‖β_ft‖/‖β_pre‖)^{(L−1)/L}. Self-consistency
# ‖β_ft‖² = ‖X⁺y‖² + c²‖(I − P)β_pre‖² fixes c (docs/errata.md; tests compare it
# with the simulated gradient flow to 1e-6).


def _scale_root(a, b, norm_pre2, depth):
    """Positive root c of norm_pre2·c^{2L/(L−1)} = a·c² + b (bisection; the root is unique)."""
    p = 2 * depth / (depth - 1)
    a, b, w = np.broadcast_arrays(np.asarray(a, float), np.asarray(b, float), np.asarray(norm_pre2, float))
    lo = np.zeros(a.shape)
    hi = np.maximum(1.0, (a + b) / np.maximum(w, 1e-300)) ** 0.5 + 1.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        above = w * mid**p - a * mid**2 - b > 0
        hi, lo = np.where(above, mid, hi), np.where(above, lo, mid)
    return 0.5 * (lo + hi)


def _design(X, *vectors):
    X = np.asarray(X, float)
    if X.ndim < 2:
        raise ValueError(f"X must have shape (..., n, d), got {X.shape}")
    return (X, *(np.asarray(v, float) for v in vectors))


def _row_space_solve(X, rhs):
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
    X, y = _design(X, y)
    return _row_space_solve(X, y[..., None])[..., 0]


def fine_tune_limit(X, y, beta_pre, depth=2):
    r"""Per-draw limit of fine-tuning by gradient flow (α → 0, t → ∞), for an L-layer net.

    β_ft = X⁺y + c·(I − P_row(X))β_pre with c > 0 solving
    ‖β_pre‖² c^{2L/(L−1)} = ‖X⁺y‖² + c²‖(I − P)β_pre‖². Corrects FaF Eq. 142,
    which has c = 1 (true asymptotically only for σ = 0, see :func:`fine_tune_scale`).
    ``X`` is (..., n, d) of full rank, ``y`` (..., n), ``beta_pre`` (..., d): stacks
    of draws broadcast; returns (..., d).
    """
    X, y, beta_pre = _design(X, y, beta_pre)
    if y.shape[-1:] != X.shape[-2:-1] or beta_pre.shape[-1:] != X.shape[-1:]:
        raise ValueError(f"X must be (..., n, d), y (..., n) and beta_pre (..., d); got {X.shape}, {y.shape}, {beta_pre.shape}")
    check_integer_param(depth, "depth", 2)
    rhs = np.stack(np.broadcast_arrays(y, (X @ beta_pre[..., None])[..., 0]), axis=-1)
    sol = _row_space_solve(X, rhs)
    sc, carried = sol[..., 0], beta_pre - sol[..., 1]
    c = _scale_root(np.sum(carried**2, -1), np.sum(sc**2, -1), np.sum(beta_pre**2, -1), int(depth))
    return sc + c[..., None] * carried


def fine_tune_scale(gamma, sigma, depth=2):
    r"""Asymptotic rescaling c of the carried-over component (n, d → ∞, unit β_s, β_t).

    c solves c^{2L/(L−1)} = (1 − γ)c² + γ(1 + σ²/(1 − γ)) for γ < 1 (‖(I−P)β_s‖² → 1 − γ,
    ‖X⁺y‖² → γ + σ²γ/(1 − γ)); c = 1 for γ ≥ 1 (nothing is carried over) and for σ = 0.
    For L = 2: c² = [(1 − γ) + √((1 − γ)² + 4γ(1 + σ²/(1 − γ)))]/2.
    """
    g, s = _gamma(gamma), _sigma(sigma)
    check_integer_param(depth, "depth", 2)
    under = g < 1
    gg = np.where(under, g, 0.5)
    c = _scale_root(1 - gg, gg * (1 + s**2 / (1 - gg)), 1.0, int(depth))
    return scalar_or_array(np.where(under, c, 1.0), gamma, sigma)


def fine_tune_risk_corrected(gamma, theta, sigma, depth=2):
    r"""Fine-tuning risk of the actual gradient-flow limit, n, d → ∞ (corrects FaF Eq. 16).

    E R_ft = E R_sc + (1 − γ)(c² − 2c cos θ) for γ < 1 with c = :func:`fine_tune_scale`;
    E R_sc for γ ≥ 1. Equals Eq. 16 when c = 1 (σ = 0).
    """
    g, t = _gamma(gamma), _theta(theta)
    c = np.asarray(fine_tune_scale(g, sigma, depth))
    extra = np.clip(1 - g, 0, None) * (c**2 - 2 * c * np.cos(t))
    return scalar_or_array(scratch_risk(g, sigma) + extra, gamma, theta, sigma)


def fine_tune_transferability_corrected(gamma, theta, sigma, depth=2):
    r"""T_ft = −(1 − γ)(c² − 2c cos θ) for γ < 1, else 0 (corrects FaF Eq. 17).

    Positive iff cos θ > c/2: the sign flips at θ* = arccos(c/2) < π/3 when σ > 0.
    """
    g, t = _gamma(gamma), _theta(theta)
    c = np.asarray(fine_tune_scale(g, sigma, depth))
    return scalar_or_array(-np.clip(1 - g, 0, None) * (c**2 - 2 * c * np.cos(t)), gamma, theta, sigma)


def fine_tune_flow_expectation(n, d, theta, sigma, draws=4000, seed=0, depth=2):
    r"""Finite-size E R_ft and T_ft = E[R_sc − R_ft] of the gradient-flow fine-tuning limit, by Monte Carlo.

    The corrected limit (:func:`fine_tune_limit`, docs/errata.md) has a per-draw
    rescaling c, so its finite-size expectation has no closed form; this averages
    it over ``draws`` Gaussian designs X (n, d) with β_s = e₁ and
    β_t = cos θ e₁ + sin θ e₂ (rotation invariance makes this WLOG), the same
    designs for every θ, in chunks of ~32 MB. Returns ``((risk_mean, risk_se),
    (T_mean, T_se))``, arrays over ``theta`` (floats for a scalar θ).
    For n ≥ d nothing is carried over: R_ft = R_sc pathwise and T_ft = 0.
    """
    n_, d_ = int(check_integer_param(n, "n", 1)), int(check_integer_param(d, "d", 2))
    t, s = np.atleast_1d(_theta(theta)), float(_sigma(sigma))
    draws = int(check_integer_param(draws, "draws", 2))
    gen = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(n_, d_)))
    e1, e2 = np.eye(d_)[0], np.eye(d_)[1]
    beta_t = np.cos(t)[:, None] * e1 + np.sin(t)[:, None] * e2  # (Θ, d)
    risks, gaps, chunk = [], [], max(1, 4_000_000 // (n_ * d_))
    for start in range(0, draws, chunk):
        m = min(chunk, draws - start)
        X = gen.standard_normal((m, 1, n_, d_))
        y = (X @ beta_t[None, :, :, None])[..., 0] + s * gen.standard_normal((m, 1, n_))  # (m, Θ, n)
        r_ft = ((fine_tune_limit(X, y, e1, depth) - beta_t) ** 2).sum(-1)
        risks.append(r_ft)
        gaps.append(((min_norm_solution(X, y) - beta_t) ** 2).sum(-1) - r_ft)
    pick = (lambda a: float(a[0])) if np.ndim(theta) == 0 else (lambda a: a)
    return tuple(
        (pick(v.mean(axis=0)), pick(v.std(axis=0, ddof=1) / np.sqrt(draws)))
        for v in (np.concatenate(risks), np.concatenate(gaps))
    )
