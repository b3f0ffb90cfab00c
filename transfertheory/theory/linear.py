r"""Closed forms for transfer learning with deep linear networks (FaF §3, App. B).

Model (FaF §3.1): inputs x ~ N(0, I_d); unit source/target vectors with
β_sᵀβ_t = cos θ; labels y = β_tᵀx + ε, ε ~ N(0, σ²); n target samples,
γ = n/d. The network's end-to-end vector after training is

* scratch (FaF Thm 3.5): the minimum-norm least-squares solution β̂ = X⁺y
  (:mod:`.scratch`);
* linear transfer (Thm 3.7): β̂ = bβ_s with b = zᵀy/‖z‖², z = Xβ_s (this module);
* ridge linear transfer (Thm 3.8, Eq. 14): b = zᵀy/(‖z‖² + nλ) (this module);
* fine-tuning (Thm 3.9): β̂ = X⁺y + (I − P_row(X))β_s in the paper, a rescaled
  carried-over component under gradient flow (:mod:`.fine_tuning`).

The risk is R = ‖β̂ − β_t‖² (label noise excluded) and the transferability is
T = E[R_scratch − R_transfer]. Every function is vectorized (NumPy
broadcasting; scalar in → float out) and validates its input against the
ranges of :mod:`transfertheory.params`. Two families are given: the
high-dimensional limits of the paper (n, d → ∞ at fixed γ) and *exact*
finite-size expectations (χ² and inverse-Wishart moments, derived in
docs/linear.md), which the paper does not state.

This module also re-exports the scratch and fine-tuning functions, so that
``theory.linear`` is the whole FaF §3 contract.

Singular points are values: where the noise term diverges (γ = 1, or
|n − d| ≤ 1, with σ > 0) the risk is ``+inf``. With σ = 0 there is no noise
term and the risk stays finite there.
"""
from __future__ import annotations

import numpy as np

from .. import params as P
from ._closed_form import closed_form
from . import fine_tuning, scratch
from .fine_tuning import *  # noqa: F401,F403  (re-exported: this module is the whole FaF §3 contract)
from .scratch import *  # noqa: F401,F403
from .scratch import scratch_risk, scratch_risk_finite

__all__ = [*scratch.__all__, "linear_transfer_risk", "linear_transferability", "linear_transferability_finite",
           "negative_transfer_interval", "negative_transfer_threshold", "negative_transfer_onset_angle",
           "ridge_transfer_risk", "ridge_transfer_risk_finite", "chi2_resolvent_moments", *fine_tuning.__all__]

#: n ≥ 3: the linear-transfer risk has E‖z‖⁻² = 1/(n − 2), z ~ N(0, I_n)
N_HEAD = P.N.with_range(low=3)


# --------------------------------------------------------------------------- linear transfer


@closed_form(theta=P.THETA, sigma=P.SIGMA, n=N_HEAD)
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
    validate : bool
        False: the arguments were validated by the caller.
    """
    sin2 = np.sin(theta) ** 2
    return sin2 + (sigma**2 + sin2) / (n - 2)


@closed_form(gamma=P.GAMMA, theta=P.THETA, sigma=P.SIGMA)
def linear_transferability(gamma, theta, sigma):
    r"""Linear transferability T_lt = E R_sc − sin²θ in the limit n, d → ∞.

    FaF Eq. 13. ``+inf`` at γ = 1 when σ > 0 (scratch diverges). ``validate=False``: the arguments were
    validated by the caller.
    """
    return scratch_risk(gamma, sigma, validate=False) - np.sin(theta) ** 2


@closed_form(n=N_HEAD, d=P.D, theta=P.THETA, sigma=P.SIGMA)
def linear_transferability_finite(n, d, theta, sigma):
    r"""Exact finite-size T_lt(n, d) = E R_sc(n, d, σ) − E R_lt(θ, σ, n), n ≥ 3 (tends to FaF Eq. 13);
    ``validate=False``: the arguments were validated by the caller."""
    return scratch_risk_finite(n, d, sigma, validate=False) - linear_transfer_risk(theta, sigma, n, validate=False)


@closed_form(theta=P.THETA, sigma=P.SIGMA)
def negative_transfer_interval(theta, sigma):
    r"""Bounds (γ₋, γ₊) of the γ < 1 negative linear-transfer region.

    FaF §3.3 (from Eq. 13): for γ < 1, T_lt < 0 ⇔ γ² − γ(1 + cos²θ − σ²) +
    cos²θ < 0 ⇔ γ ∈ (γ₋, γ₊),
    γ± = ½[(1 + cos²θ − σ²) ± √((1 + cos²θ − σ²)² − 4cos²θ)].
    The interval is non-empty iff |cos θ| < 1 − σ, i.e. θ ∈ (arccos(1−σ),
    π − arccos(1−σ)); otherwise both bounds are NaN. Returns a tuple of two
    floats (scalar input) or two arrays.
    """
    c2 = np.cos(theta) ** 2
    a = 1 + c2 - sigma**2
    disc = a**2 - 4 * c2
    exists = np.sqrt(c2) < 1 - sigma
    root = np.sqrt(np.where(exists, disc, 0.0))
    return np.where(exists, (a - root) / 2, np.nan), np.where(exists, (a + root) / 2, np.nan)


@closed_form(theta=P.THETA, sigma=P.SIGMA)
def negative_transfer_threshold(theta, sigma):
    r"""Onset of γ > 1 negative linear transfer: γ_c = 1 + σ²/sin²θ.

    FaF §3.3: for γ > 1, T_lt < 0 ⇔ γ − 1 > σ²/sin²θ. ``+inf`` when
    sin θ = 0 (no negative transfer for aligned tasks).
    """
    sin2 = np.sin(theta) ** 2
    sin2 = np.where(np.isclose(sin2, 0.0, atol=1e-30), 0.0, sin2)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(sin2 > 0, 1 + sigma**2 / np.where(sin2 > 0, sin2, 1.0), np.inf)


@closed_form(sigma=P.SIGMA)
def negative_transfer_onset_angle(sigma):
    r"""θ above which the γ < 1 negative region exists: arccos(1 − σ) (NaN for σ ≥ 1).

    FaF §3.3: negative transfer at γ < 1 requires SNR = 1/σ² > 1. ``validate=False``: σ was validated by the
    caller.
    """
    with np.errstate(invalid="ignore"):
        return np.where(sigma < 1, np.arccos(np.clip(1 - sigma, -1, 1)), np.nan)


# --------------------------------------------------------------------------- ridge


@closed_form(theta=P.THETA, lam=P.LAM)
def ridge_transfer_risk(theta, lam):
    r"""Ridge linear-transfer risk as n → ∞: 1 − cos²θ (1 + 2λ)/(1 + λ)².

    FaF Eq. 15 (Thm 3.8), normalization of Eq. 14: (1/2n)‖ΦW − y‖² +
    (λ/2)‖W‖² with balanced features (‖v‖ = 1). Strictly increasing in λ for
    cos θ ≠ 0, so the optimal ridge is λ* = 0.
    """
    return 1 - np.cos(theta) ** 2 * (1 + 2 * lam) / (1 + lam) ** 2


_QUAD_NODES = 801
_TAIL = 1e-17


@closed_form(n=N_HEAD, c=P.LAM)
def chi2_resolvent_moments(n, c):
    r"""(E[s/(s+c)], E[s/(s+c)²], E[s²/(s+c)²]) for s ~ χ²_n, c >= 0.

    The three one-dimensional integrals behind the exact ridge risk
    (:func:`ridge_transfer_risk_finite`). Computed by the trapezoidal rule in
    x = log s, where the integrand is smooth with exponentially decaying tails and its only singularity
    (s = −c) lies a distance π from the real axis, so the rule converges
    geometrically; the window spans the χ²_n quantiles 10⁻¹⁷ … 1 − 10⁻¹⁷.
    Exact values are used at c = 0: (1, 1/(n−2), 1). Requires n >= 3.
    """
    # SciPy is imported here, not at module level: it is half the start-up
    # time of the phase-diagram CLI, which needs it only for finite-n ridge.
    from scipy import stats
    from scipy.special import gammaln

    n_b, c_b = np.broadcast_arrays(n, c)
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

    exact0 = pc[:, 0] == 0  # (integrand, its exact moment at c = 0) of each of the three
    terms = ((s / denom, 1.0), (s / denom**2, 1.0 / (pn[:, 0] - 2)), ((s / denom) ** 2, 1.0))
    moments = [np.where(exact0, exact, integrate(integrand)) for integrand, exact in terms]
    return tuple(v[inverse.ravel()].reshape(n_b.shape) for v in moments)


@closed_form(theta=P.THETA, sigma=P.SIGMA, n=N_HEAD, lam=P.LAM)
def ridge_transfer_risk_finite(theta, sigma, n, lam):
    r"""Exact expected ridge linear-transfer risk at finite n.

    Derived in docs/linear.md (FaF App. B.7 before the saddle point): with s = ‖z‖² ~ χ²_n,
    b = zᵀy/(s + nλ),
    E R = 1 − 2cos²θ E[s/(s+nλ)] + cos²θ E[s²/(s+nλ)²] + (sin²θ + σ²) E[s/(s+nλ)²].
    Equals :func:`linear_transfer_risk` at λ = 0 and tends to FaF Eq. 15 as
    n → ∞. ``validate=False``: the arguments were validated by the caller.
    """
    a, b, c = chi2_resolvent_moments(n, n * lam)
    cos2 = np.cos(theta) ** 2
    return 1 - 2 * cos2 * a + cos2 * c + (np.sin(theta) ** 2 + sigma**2) * b
