r"""Fine-tuning a pretrained deep linear network: the paper's limit and the actual gradient-flow limit (FaF §3.4).

Model (FaF §3.1): x ~ N(0, I_d); unit source and target vectors with
β_sᵀβ_t = cos θ; labels y = β_tᵀx + ε, ε ~ N(0, σ²); n target samples in the
rows of X, γ = n/d; P the projector on the row space of X. Every layer of an
L-layer linear network pretrained to β_pre = β_s is trained on the target data
by gradient flow; the risk is R_ft = ‖β_ft − β_t‖² and the transferability
T_ft = E[R_sc − R_ft], with R_sc the scratch risk (:mod:`.scratch`).

Two limits of training, which differ when σ > 0:

* **The paper's** (FaF Thm 3.9, App. B.8, Eq. 142): β_ft = X⁺y + (I − P)β_s,
  the pretrained component outside the row space carried over unchanged ("c = 1").
  Its risk and transferability: FaF Eqs. 16–17 (n, d → ∞) and their exact
  finite-size forms :func:`fine_tune_risk_finite_paper`,
  :func:`fine_tune_transferability_finite_paper`.
* **The gradient-flow limit** (derived in docs/errata.md): the last layer also
  moves during fine-tuning; with balanced weights every layer stays rank one
  with a common singular value, so the frozen (I − P)W₁ forces
  (I − P)β_ft = c·(I − P)β_pre with c = (‖β_ft‖/‖β_pre‖)^{(L−1)/L}, and
  self-consistency ‖β_ft‖² = ‖X⁺y‖² + c²‖(I − P)β_pre‖² fixes c per draw
  (:func:`fine_tune_limit`). Asymptotically c → :func:`fine_tune_scale`
  (c = 1 iff σ = 0 or γ ≥ 1), giving :func:`fine_tune_risk_corrected`,
  :func:`fine_tune_transferability_corrected`; at finite size the per-draw c has
  no closed-form expectation and :func:`fine_tune_flow_expectation` averages it
  by Monte Carlo. The simulator's gradient flow agrees with this limit, not
  with Eq. 142 (tests/sim/test_deep_linear.py).

Vectorized closed forms (scalar in → float out); singular points as in
:mod:`.scratch` (``+inf`` risk where the noise term diverges with σ > 0).
"""
from __future__ import annotations

import numpy as np

from .. import params as P
from .._memory import FLOAT_BYTES, check_memory
from .._validation import root_seed
from ._closed_form import closed_form
from .scratch import design, min_norm_noise_gain, min_norm_solution, noise_term, row_space_solve, scratch_risk

__all__ = [
    "fine_tune_risk",
    "fine_tune_transferability",
    "fine_tune_risk_finite_paper",
    "fine_tune_transferability_finite_paper",
    "fine_tune_scale",
    "fine_tune_scale_deep_limit",
    "fine_tune_risk_corrected",
    "fine_tune_transferability_corrected",
    "fine_tune_limit",
    "fine_tune_flow_expectation",
]

#: draws ≥ 2: the Monte Carlo reports a standard error
_MC_DRAWS = P.DRAWS.with_range(low=2)
#: d ≥ 2: the Monte Carlo's target β_t = cos θ e₁ + sin θ e₂ needs two dimensions
_MC_D = P.D.with_range(low=2)


# --------------------------------------------------------------------------- the paper's limit (c = 1)


@closed_form(gamma=P.GAMMA, theta=P.THETA, sigma=P.SIGMA)
def fine_tune_risk(gamma, theta, sigma):
    r"""Expected fine-tuning risk as n, d → ∞, of the paper's limit (c = 1).

    FaF Eq. 16 (Thm 3.9): E R_ft = E R_sc + (1 − γ)(1 − 2cos θ) for γ ≤ 1,
    E R_sc for γ > 1. ``+inf`` at γ = 1 when σ > 0. Gradient flow converges
    elsewhere when σ > 0: :func:`fine_tune_risk_corrected`. ``validate=False``: the arguments were validated by
    the caller.
    """
    return scratch_risk(gamma, sigma, validate=False) - fine_tune_transferability(gamma, theta, validate=False)


@closed_form(gamma=P.GAMMA, theta=P.THETA)
def fine_tune_transferability(gamma, theta):
    r"""Fine-tuning transferability of the paper's limit, T_ft = (γ − 1)(1 − 2cos θ) for γ ≤ 1, else 0.

    FaF Eq. 17. Positive iff θ < π/3 (and γ < 1). At γ = 1 it is 0: the
    divergent noise term X⁺ε is common to both models and cancels pathwise.
    Independent of σ. Gradient flow: :func:`fine_tune_transferability_corrected`.
    """
    return -np.clip(1 - gamma, 0, None) * (1 - 2 * np.cos(theta))


@closed_form(n=P.N, d=P.D, theta=P.THETA, sigma=P.SIGMA)
def fine_tune_risk_finite_paper(n, d, theta, sigma):
    r"""Exact finite-size expected risk of the paper's fine-tuning limit (FaF Eq. 142, c = 1).

    β_ft − β_t = (I − P)(β_s − β_t) + X⁺ε, the two parts orthogonal, hence
    E R_ft = (1 − n/d)(2 − 2cos θ) + σ² E tr((XᵀX)⁺) for n ≤ d (``+inf``
    noise for |n − d| ≤ 1, σ > 0), and E R_ft = E R_sc for n ≥ d (docs/linear.md).
    Tends to FaF Eq. 16 as d → ∞. This is *not* the risk of gradient flow
    when σ > 0 (docs/errata.md): compare simulations with
    :func:`fine_tune_flow_expectation`. ``validate=False``: the arguments were validated by the caller.
    """
    bias = np.clip(1 - n / d, 0, None) * (2 - 2 * np.cos(theta))
    return bias + noise_term(sigma**2, min_norm_noise_gain(n, d, validate=False))


@closed_form(n=P.N, d=P.D, theta=P.THETA)
def fine_tune_transferability_finite_paper(n, d, theta):
    r"""Exact finite-size T_ft = −(1 − n/d)₊ (1 − 2cos θ) of the paper's limit (FaF Eq. 142, c = 1).

    The noise terms X⁺ε of scratch and fine-tuning are equal and cancel
    pathwise, so T_ft is finite even where both risks are ``+inf``. Tends to
    FaF Eq. 17 as d → ∞. *Not* the gradient-flow value when σ > 0
    (docs/errata.md; :func:`fine_tune_flow_expectation`).
    """
    return -np.clip(1 - n / d, 0, None) * (1 - 2 * np.cos(theta))


# --------------------------------------------------------------------------- the gradient-flow limit


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


def fine_tune_limit(X, y, beta_pre, depth=2):
    r"""Per-draw limit of fine-tuning by gradient flow (α → 0, t → ∞), for an L-layer net.

    β_ft = X⁺y + c·(I − P_row(X))β_pre with c > 0 solving
    ‖β_pre‖² c^{2L/(L−1)} = ‖X⁺y‖² + c²‖(I − P)β_pre‖². Corrects FaF Eq. 142,
    which has c = 1 (true asymptotically only for σ = 0, see :func:`fine_tune_scale`).
    ``X`` is (..., n, d) of full rank, ``y`` (..., n), ``beta_pre`` (..., d): stacks
    of draws broadcast; returns (..., d). NaN or inf in any of them is a ValueError.
    """
    X, y, beta_pre = design(X, y=y, beta_pre=beta_pre)
    if y.shape[-1:] != X.shape[-2:-1] or beta_pre.shape[-1:] != X.shape[-1:]:
        raise ValueError(f"X must be (..., n, d), y (..., n) and beta_pre (..., d); "
                         f"got {X.shape}, {y.shape}, {beta_pre.shape}")
    depth = P.DEPTH.scalar(depth)
    rhs = np.stack(np.broadcast_arrays(y, (X @ beta_pre[..., None])[..., 0]), axis=-1)
    sol = row_space_solve(X, rhs)
    sc, carried = sol[..., 0], beta_pre - sol[..., 1]
    c = _scale_root(np.sum(carried**2, -1), np.sum(sc**2, -1), np.sum(beta_pre**2, -1), depth)
    return sc + c[..., None] * carried


@closed_form(gamma=P.GAMMA, sigma=P.SIGMA, depth=P.DEPTH.scalar)
def fine_tune_scale(gamma, sigma, depth=2):
    r"""Asymptotic rescaling c of the carried-over component (n, d → ∞, unit β_s, β_t).

    c solves c^{2L/(L−1)} = (1 − γ)c² + γ(1 + σ²/(1 − γ)) for γ < 1 (‖(I−P)β_s‖² → 1 − γ,
    ‖X⁺y‖² → γ + σ²γ/(1 − γ)); c = 1 for γ ≥ 1 (nothing is carried over) and for σ = 0.
    For L = 2: c² = [(1 − γ) + √((1 − γ)² + 4γ(1 + σ²/(1 − γ)))]/2. For σ > 0,
    c → ∞ as γ → 1⁻. ``validate=False``: the arguments were validated by the caller.
    """
    under = gamma < 1
    gg = np.where(under, gamma, 0.5)
    c = _scale_root(1 - gg, gg * (1 + sigma**2 / (1 - gg)), 1.0, depth)
    return np.where(under, c, 1.0)


@closed_form(gamma=P.GAMMA, sigma=P.SIGMA)
def fine_tune_scale_deep_limit(gamma, sigma):
    r"""L → ∞ limit of :func:`fine_tune_scale`: c_∞ = √(1 + σ²/(1 − γ)) for γ < 1, 1 for γ ≥ 1.

    As L → ∞ the exponent 2L/(L − 1) → 2 and the equation of c becomes c² = (1 − γ)c² + γ(1 + σ²/(1 − γ)),
    i.e. c² = 1 + σ²/(1 − γ). c grows with L toward it (1.225, 1.338, 1.408 at L = 2, 3, 4 for σ = 1, γ = ½;
    c_∞ = √3).
    """
    under = gamma < 1
    c = np.sqrt(1 + sigma**2 / (1 - np.where(under, gamma, 0.5)))
    return np.where(under, c, 1.0)


@closed_form(gamma=P.GAMMA, theta=P.THETA, sigma=P.SIGMA, depth=P.DEPTH.scalar)
def fine_tune_risk_corrected(gamma, theta, sigma, depth=2):
    r"""Fine-tuning risk of the actual gradient-flow limit, n, d → ∞ (corrects FaF Eq. 16).

    E R_ft = E R_sc + (1 − γ)(c² − 2c cos θ) for γ < 1 with c = :func:`fine_tune_scale`;
    E R_sc for γ ≥ 1. Equals Eq. 16 when c = 1 (σ = 0). ``validate=False``: the arguments were validated by
    the caller.
    """
    transferability = fine_tune_transferability_corrected(gamma, theta, sigma, depth, validate=False)
    return scratch_risk(gamma, sigma, validate=False) - transferability


@closed_form(gamma=P.GAMMA, theta=P.THETA, sigma=P.SIGMA, depth=P.DEPTH.scalar)
def fine_tune_transferability_corrected(gamma, theta, sigma, depth=2):
    r"""T_ft = −(1 − γ)(c² − 2c cos θ) for γ < 1, else 0 (corrects FaF Eq. 17).

    Positive iff cos θ > c/2: the sign flips at θ* = arccos(c/2) < π/3 when σ > 0. ``validate=False``: the
    arguments were validated by the caller.
    """
    c = np.asarray(fine_tune_scale(gamma, sigma, depth, validate=False))
    return -np.clip(1 - gamma, 0, None) * (c**2 - 2 * c * np.cos(theta))


def _gaussian_designs(seed, n, d, draws, beta_t, sigma, scale=1.0):
    """The draws of a finite-size Monte Carlo, in chunks of ~32 MB: per chunk of m draws, designs X (m, 1, n, d) with
    N(0, scale²) entries in each column and the labels y = Xβ_t + σε (m, Θ, n) of the targets ``beta_t`` (Θ, d). The
    designs of (n, d) come from SeedSequence(seed, (n, d)), the same for every target."""
    gen = np.random.default_rng(np.random.SeedSequence(root_seed(seed), spawn_key=(n, d)))
    chunk = max(1, 4_000_000 // (n * d))
    for start in range(0, draws, chunk):
        m = min(chunk, draws - start)
        X = gen.standard_normal((m, 1, n, d)) * scale
        yield X, (X @ beta_t[None, :, :, None])[..., 0] + sigma * gen.standard_normal((m, 1, n))


def fine_tune_flow_expectation(n, d, theta, sigma, draws=4000, seed=0, depth=2):
    r"""Finite-size E R_ft and T_ft = E[R_sc − R_ft] of the gradient-flow fine-tuning limit, by Monte Carlo.

    The gradient-flow limit (:func:`fine_tune_limit`) has a per-draw rescaling
    c, so its finite-size expectation has no closed form; this averages it over
    ``draws`` Gaussian designs X (n, d) with β_s = e₁ and
    β_t = cos θ e₁ + sin θ e₂ (rotation invariance makes this WLOG), the same
    designs for every θ, in chunks of ~32 MB. Returns ``((risk_mean, risk_se),
    (T_mean, T_se))``, arrays over ``theta`` (floats for a scalar θ).
    For n ≥ d nothing is carried over: R_ft = R_sc pathwise and T_ft = 0.
    The risk's mean exists only for |n − d| ≥ 2 when σ > 0 (as for scratch). ``seed``: an integer ≥ 0, or a
    numpy Generator or SeedSequence that gives one; the designs of (n, d) come from SeedSequence(seed, (n, d)).
    """
    n_, d_ = P.N.scalar(n), _MC_D.scalar(d)
    t, s = np.atleast_1d(P.THETA.check(theta)), P.SIGMA.scalar(sigma)
    draws = _MC_DRAWS.scalar(draws)
    # per chunk of draws: X, y (Θ copies) and the solutions' pseudo-inverse / SVD work (about six X's)
    check_memory(FLOAT_BYTES * (6 + t.size) * max(4_000_000, n_ * d_), what="fine_tune_flow_expectation",
                 params={"n": n_, "d": d_, "len(theta)": t.size})
    e1, e2 = np.eye(2, d_)  # the first two basis vectors (no d × d identity)
    beta_t = np.cos(t)[:, None] * e1 + np.sin(t)[:, None] * e2  # (Θ, d)
    risks, gaps = [], []
    for X, y in _gaussian_designs(seed, n_, d_, draws, beta_t, s):
        r_ft = ((fine_tune_limit(X, y, e1, depth) - beta_t) ** 2).sum(-1)
        risks.append(r_ft)
        gaps.append(((min_norm_solution(X, y) - beta_t) ** 2).sum(-1) - r_ft)
    pick = (lambda a: float(a[0])) if np.ndim(theta) == 0 else (lambda a: a)
    return tuple(
        (pick(v.mean(axis=0)), pick(v.std(axis=0, ddof=1) / np.sqrt(draws)))
        for v in (np.concatenate(risks), np.concatenate(gaps))
    )
