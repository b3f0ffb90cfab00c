r"""Transfer in deep linear networks with anisotropic inputs x ~ N(0, Σ): scratch, ridge, linear transfer and
fine-tuning (docs/anisotropic.md; the first result of the package beyond FaF).

Model: Σ = diag(λ) (:mod:`.spectra`), teachers β_s, β_t given by their coefficients in Σ's eigenbasis,
labels y = β_tᵀx + ε, ε ~ N(0, σ²), n target samples in the rows of X (x = z·√λ, z ~ N(0, I_d)). The risk
is the excess test error R = ‖β̂ − β_t‖²_Σ = (β̂ − β_t)ᵀΣ(β̂ − β_t), which is FaF's ‖β̂ − β_t‖² at Σ = I.
What each formula is:

* **scratch** (:func:`scratch_risk`): gradient flow from a vanishing initialisation stays in the row space
  of X, so it reaches the minimum-norm interpolant X⁺y (n < d) or least squares (n > d) for any Σ. For
  n ≥ d + 2 its risk is *exact*: σ² d/(n − d − 1), independent of Σ (:func:`scratch_risk_exact`). For
  n < d, :func:`scratch_risk` is the *deterministic equivalent* (asymptotic in n, d → ∞ at fixed n/d;
  Hastie, Montanari, Rosset & Tibshirani 2022, "HMRT", Thm 2, linear model x = Σ^{1/2}z; in the
  degrees-of-freedom form of Bach 2024, §3): the effective regularisation κ solves df₁(κ) = Σ λ_i/(λ_i + κ) = n, then
  B = κ²βᵀΣ(Σ + κ)⁻²β / (1 − df₂/n), V = σ² (df₂/n)/(1 − df₂/n), df₂ = Σ λ_i²/(λ_i + κ)².
* **ridge regression** (:func:`ridge_risk`): the same deterministic equivalent with
  κ(1 − df₁(κ)/n) = λ, for the loss (1/2n)‖y − Xβ‖² + (λ/2)‖β‖² (FaF Eq. 14's normalisation).
* **linear transfer** (:func:`linear_transfer_risk`): pretraining from small initialisation leaves the
  rank-one feature β_s vᵀ for any Σ (the conserved balance W₁ᵀW₁ = W₂W₂ᵀ forces rank one, whatever drives
  the flow), so linear transfer is the one-feature regression β̂ = bβ_s, b = zᵀy/‖z‖², z = Xβ_s, whose risk
  is *exact* at every n ≥ 3: E R = τ² + (τ² + σ²)/(n − 2), τ² = ‖β_t‖²_Σ − ⟨β_s, β_t⟩²_Σ/‖β_s‖²_Σ
  (= sin²θ for unit teachers at Σ-angle θ), independent of Σ otherwise. Ridge linear transfer
  (:func:`ridge_transfer_risk`) is exact at finite n too (one-dimensional χ² integrals), with the
  effective ridge λ‖β_s‖^{2/L}/‖β_s‖²_Σ (the balanced feature has ‖v‖ = ‖β_s‖^{−1/L}).
* **fine-tuning**: the per-draw gradient-flow limit β_ft = X⁺y + c(I − P)β_s of
  :func:`~.fine_tuning.fine_tune_limit` holds for any Σ (its derivation uses the balance and the row space
  only); :func:`fine_tune_scale` and :func:`fine_tune_risk` are its deterministic equivalents
  (asymptotic), using λ(Σ̂ + λ)⁻¹ ≍ κ(Σ + κ)⁻¹ for I − P and tr((XXᵀ)⁻¹) ≍ 1/κ.

**Finite size by Monte Carlo** (:func:`limit_expectations`). Below n = d the scratch and fine-tuning risks under a
general Σ have no closed form at finite size (their deterministic equivalents above are asymptotic). What a simulation
at finite (n, d) must be compared with is the expectation of the limit points themselves — X⁺y (scratch), the
one-feature regression bβ_s (linear transfer) and X⁺y + c(I − P)β_s (fine-tuning,
:func:`~.fine_tuning.fine_tune_limit`) — which :func:`limit_expectations` averages over Gaussian designs x = z·√λ,
paired on the same draws, as :func:`~.fine_tuning.fine_tune_flow_expectation` does at Σ = I.

At Σ = I every function reduces to the isotropic one of :mod:`.linear` / :mod:`.fine_tuning` to rounding
(tests/theory/test_anisotropic.py). Arguments: ``lam`` the spectrum (d,) (a sequence or a :func:`~.spectra.spectrum`
spec); teachers (…, d); ``n`` (a real n > 0 in a deterministic equivalent, an integer where exact) and σ
broadcast against the teachers' leading shape. Validated once here; scalars in → float out.
"""
from __future__ import annotations

import numpy as np

from .. import params as P
from .._memory import FLOAT_BYTES, check_memory
from .._validation import Interval, one_of
from ._closed_form import Rule, closed_form
from .fine_tuning import _MC_DRAWS, _gaussian_designs, _scale_root, fine_tune_limit
from .linear import N_HEAD, chi2_resolvent_moments
from .scratch import min_norm_noise_gain, min_norm_solution, noise_term
from .spectra import check_spectrum, check_teacher, spectrum

__all__ = ["effective_regularization", "bias_variance", "scratch_risk", "scratch_risk_exact", "ridge_risk",
           "geometry", "linear_transfer_risk", "ridge_transfer_risk", "ridge_transfer_risk_limit",
           "fine_tune_scale", "fine_tune_risk", "fine_tune_transferability", "GRID_METHODS", "transfer_grid",
           "limit_expectations"]

#: n of a deterministic equivalent: any real n > 0
N_REAL = P.Param("n", Interval(0, np.inf, "neither"), description="number of target samples (real in an equivalent)")
#: halvings of the bracket of κ: 2⁻¹²⁰ of its width, far below rounding
_BISECTIONS = 120


def _spectrum(lam, name="lam"):
    return spectrum(lam, name=name)


#: a teacher (…, d) on the spectrum ``lam`` (the first argument, validated before it)
_TEACHER = Rule(lambda beta, name, arguments: check_teacher(beta, arguments["lam"], name), vectors=True)


def _df(lam, kappa):
    """(df₁, df₂) = (Σ λ/(λ+κ), Σ λ²/(λ+κ)²) for κ (…) ≥ 0, summed over the spectrum."""
    r = lam / (lam + kappa[..., None])
    return r.sum(-1), (r * r).sum(-1)


def _kappa(lam, n, ridge):
    """Effective regularisation κ(n, λ) (float arrays, validated): the ridgeless root of df₁(κ) = n for n < d
    (0 for n ≥ d), then the root of κ(1 − df₁(κ)/n) = λ above it."""
    d = lam.size
    n, ridge = np.broadcast_arrays(np.asarray(n, float), np.asarray(ridge, float))
    over = n < d
    ratio = np.where(over, d / np.where(over, n, 1.0) - 1, 0.0)
    # df₁ lies between d·λ_min/(λ_min + κ) and d·λ_max/(λ_max + κ): the root lies between λ_min and λ_max
    # times d/n − 1 (a bracket of width 0 at Σ = I, where κ = d/n − 1 exactly)
    lo, hi = lam.min() * ratio, lam.max() * ratio
    for _ in range(_BISECTIONS):
        mid = 0.5 * (lo + hi)
        big = _df(lam, mid)[0] > n  # df₁ decreases in κ
        lo, hi = np.where(big, mid, lo), np.where(big, hi, mid)
    kappa0 = np.where(over, 0.5 * (lo + hi), 0.0)
    if not np.any(ridge > 0):
        return kappa0
    # g(κ) = κ(1 − df₁/n) increases above κ₀ and g(κ₀ + λ + tr Σ/n) ≥ λ
    lo, hi = kappa0, kappa0 + ridge + lam.sum() / n
    for _ in range(_BISECTIONS):
        mid = 0.5 * (lo + hi)
        low = mid * (1 - _df(lam, mid)[0] / n) < ridge
        lo, hi = np.where(low, mid, lo), np.where(low, hi, mid)
    return np.where(ridge > 0, 0.5 * (lo + hi), kappa0)


@closed_form(n=N_REAL, ridge=P.LAM)
def effective_regularization(lam, n, ridge=0.0):
    r"""κ of the deterministic equivalent (HMRT 2022 Thm 2 at λ = 0; Bach 2024 §3): κ(1 − df₁(κ)/n) = λ_ridge,
    df₁(κ) = Σ_i λ_i/(λ_i + κ); in the ridgeless case the positive root of df₁(κ) = n for n < d, 0 for n ≥ d."""
    return _kappa(_spectrum(lam), n, ridge)


@closed_form(lam=_spectrum, beta=_TEACHER, n=N_REAL, ridge=P.LAM)
def bias_variance(lam, beta, n, ridge=0.0):
    r"""(B, V₁) of the deterministic equivalent of ridge(less) regression: E R ≍ B + σ²V₁ with
    B = κ²βᵀΣ(Σ + κ)⁻²β/(1 − df₂/n) and V₁ = (df₂/n)/(1 − df₂/n) (HMRT 2022 Thm 2 at λ = 0;
    Bach 2024 §3). Ridgeless at n = d: B = 0, V₁ = +inf."""
    kappa = _kappa(lam, n, ridge)
    _, df2 = _df(lam, kappa)
    with np.errstate(divide="ignore", invalid="ignore"):
        left = 1 - df2 / n
        weight = lam * (kappa[..., None] / (lam + kappa[..., None])) ** 2
        bias = np.where(kappa > 0, np.sum(weight * beta * beta, axis=-1) / left, 0.0)
        gain = np.where(left > 0, (df2 / n) / np.where(left > 0, left, 1.0), np.inf)
    return bias, gain


@closed_form(lam=_spectrum, beta_t=_TEACHER, sigma=P.SIGMA, n=N_REAL, ridge=P.LAM)
def ridge_risk(lam, beta_t, n, sigma, ridge):
    r"""Deterministic equivalent of the ridge-regression risk E‖β̂_λ − β_t‖²_Σ, β̂_λ = (XᵀX + nλ)⁻¹Xᵀy.

    Bach 2024 §3 (ridge with general covariance; HMRT 2022 Thm 2 is its λ → 0 limit): κ(1 − df₁(κ)/n) = λ, then
    B + σ²V₁ (:func:`bias_variance`). Asymptotic (n, d → ∞ at fixed n/d); exact only as n → ∞.
    """
    bias, gain = bias_variance(lam, beta_t, n, ridge, validate=False)
    return bias + noise_term(sigma**2, gain)


def scratch_risk(lam, beta_t, n, sigma):
    r"""Deterministic equivalent of the scratch risk E‖X⁺y − β_t‖²_Σ (minimum-norm interpolant / least squares).

    n < d: κ solves Σ λ_i/(λ_i + κ) = n; E R ≍ κ²β_tᵀΣ(Σ + κ)⁻²β_t/(1 − df₂/n) + σ²(df₂/n)/(1 − df₂/n)
    (HMRT 2022 Thm 2). n > d: σ²d/(n − d) (the exact value is :func:`scratch_risk_exact`). n = d: +inf for
    σ > 0. At Σ = I it is FaF Eq. 10 at γ = n/d (:func:`transfertheory.theory.scratch_risk`).
    """
    return ridge_risk(lam, beta_t, n, sigma, 0.0)


@closed_form(n=P.N, sigma=P.SIGMA)
def scratch_risk_exact(lam, n, sigma):
    r"""Exact scratch (least-squares) risk for n ≥ d + 2, any Σ: σ²d/(n − d − 1).

    With X = ZΣ^{1/2}, (XᵀX)⁻¹ = Σ^{−1/2}(ZᵀZ)⁻¹Σ^{−1/2}, so E‖X⁺ε‖²_Σ = σ² E tr((ZᵀZ)⁻¹) = σ²d/(n − d − 1)
    (inverse-Wishart mean) and the bias vanishes. ``+inf`` for n = d ± 1 with σ > 0. Below d there is no exact
    closed form for general Σ (use :func:`scratch_risk`); a ValueError names n.
    """
    lam = _spectrum(lam)
    if np.any(n < lam.size):
        raise ValueError(f"n must be >= d = {lam.size} for the exact scratch risk with general Σ, got "
                         f"{n[n < lam.size].flat[0]:g} (below d use the deterministic equivalent scratch_risk)")
    return noise_term(sigma**2, np.asarray(min_norm_noise_gain(n, lam.size, validate=False)))


@closed_form(lam=_spectrum, beta_s=_TEACHER, beta_t=_TEACHER)
def geometry(lam, beta_s, beta_t):
    r"""(‖β_s‖²_Σ, ⟨β_s, β_t⟩_Σ, ‖β_t‖²_Σ, θ) of a teacher pair: θ = arccos(⟨β_s, β_t⟩_Σ/(‖β_s‖_Σ‖β_t‖_Σ)) is
    the transfer angle in the Σ inner product (FaF's θ at Σ = I)."""
    ss, st, tt = (np.sum(lam * a * b, axis=-1) for a, b in ((beta_s, beta_s), (beta_s, beta_t), (beta_t, beta_t)))
    theta = np.arccos(np.clip(st / np.sqrt(ss * tt), -1.0, 1.0))
    return ss, st, tt, theta


@closed_form(lam=_spectrum, beta_s=_TEACHER, beta_t=_TEACHER, sigma=P.SIGMA, n=N_HEAD)
def linear_transfer_risk(lam, beta_s, beta_t, sigma, n):
    r"""Exact E‖bβ_s − β_t‖²_Σ of linear transfer on the rank-one feature along β_s, every n ≥ 3, any Σ.

    z = Xβ_s ~ N(0, ‖β_s‖²_Σ I_n); Xβ_t = (ρ/‖β_s‖_Σ) z + w with w ~ N(0, τ²I_n) independent of z,
    ρ = ⟨β_s, β_t⟩_Σ/‖β_s‖_Σ, τ² = ‖β_t‖²_Σ − ρ²; b − ρ/‖β_s‖_Σ = zᵀ(w + ε)/‖z‖², so
    E R = τ² + (τ² + σ²)/(n − 2) (E‖z̃‖⁻² = 1/(n − 2)). FaF Eq. 12 at Σ = I (τ² = sin²θ).
    """
    ss, st, tt, _ = geometry(lam, beta_s, beta_t, validate=False)
    tau2 = np.maximum(tt - st**2 / ss, 0.0)
    return tau2 + (tau2 + sigma**2) / (n - 2)


def _ridge_transfer_terms(lam, bs, bt, ridge, depth):
    """(ρ², τ², λ′): the one-feature regression on the unit-Σ-norm direction u = β_s/‖β_s‖_Σ with effective
    ridge λ′ = λ‖β_s‖^{2/L}/‖β_s‖²_Σ (balanced features: ‖v‖ = ‖β_s‖^{−1/L})."""
    ss, st, tt, _ = geometry(lam, bs, bt, validate=False)
    rho2 = st**2 / ss
    euclid = np.sqrt(np.sum(bs * bs, axis=-1))
    return rho2, np.maximum(tt - rho2, 0.0), ridge * euclid ** (2.0 / depth) / ss


@closed_form(lam=_spectrum, beta_s=_TEACHER, beta_t=_TEACHER, sigma=P.SIGMA, n=N_HEAD, ridge=P.LAM,
             depth=P.DEPTH.scalar)
def ridge_transfer_risk(lam, beta_s, beta_t, sigma, n, ridge, depth=2):
    r"""Exact finite-n risk of ridge linear transfer (loss (1/2n)‖ΦW − y‖² + (λ/2)‖W‖², FaF Eq. 14) on the
    balanced rank-one feature of an L-layer network pretrained on β_s, any Σ.

    With s = ‖z̃‖² ~ χ²_n and c = nλ′ (λ′ of the module docstring):
    E R = τ² + ρ²E[c²/(s + c)²] + (τ² + σ²)E[s/(s + c)²] (:func:`~.linear.chi2_resolvent_moments`).
    FaF's exact finite-n ridge risk at Σ = I (unit teachers, L = 2); :func:`linear_transfer_risk` at λ = 0.
    """
    rho2, tau2, lam_eff = _ridge_transfer_terms(lam, beta_s, beta_t, ridge, depth)
    a, b, c = (np.asarray(v) for v in chi2_resolvent_moments(n, n * lam_eff))
    return tau2 + rho2 * (1 - 2 * a + c) + (tau2 + sigma**2) * b


@closed_form(lam=_spectrum, beta_s=_TEACHER, beta_t=_TEACHER, ridge=P.LAM, depth=P.DEPTH.scalar)
def ridge_transfer_risk_limit(lam, beta_s, beta_t, ridge, depth=2):
    r"""n → ∞ limit of :func:`ridge_transfer_risk`: τ² + ρ²λ′²/(1 + λ′)² (FaF Eq. 15 at Σ = I), where λ′ is the
    effective ridge of the module docstring; :func:`linear_transfer_risk`'s limit τ² at λ = 0."""
    rho2, tau2, lam_eff = _ridge_transfer_terms(lam, beta_s, beta_t, ridge, depth)
    return tau2 + rho2 * (lam_eff / (1 + lam_eff)) ** 2


@closed_form(lam=_spectrum, beta_s=_TEACHER, beta_t=_TEACHER, n=N_REAL, sigma=P.SIGMA, depth=P.DEPTH.scalar)
def fine_tune_scale(lam, beta_s, beta_t, n, sigma, depth=2):
    r"""Deterministic equivalent of the rescaling c of fine-tuning's gradient-flow limit, n < d (1 for n ≥ d).

    c solves ‖β_s‖²c^{2L/(L−1)} = c²·A + B with A ≍ E‖(I − P)β_s‖² = Σ κβ_{s,i}²/(λ_i + κ) and
    B ≍ E‖X⁺y‖² = ‖β_t‖² − Σ κβ_{t,i}²/(λ_i + κ) + σ²/κ (Euclidean norms; κ of :func:`effective_regularization`).
    :func:`~.fine_tuning.fine_tune_scale` at Σ = I.
    """
    kappa = _kappa(lam, n, 0.0)
    k = np.where(kappa > 0, kappa, 1.0)[..., None]
    shrink = k / (lam + k)  # I − P ≍ κ(Σ + κ)⁻¹
    carried = np.sum(shrink * beta_s * beta_s, axis=-1)
    fitted = (np.sum(beta_t * beta_t, axis=-1) - np.sum(shrink * beta_t * beta_t, axis=-1)
              + noise_term(sigma**2, 1 / k[..., 0]))
    c = _scale_root(carried, fitted, np.sum(beta_s * beta_s, axis=-1), depth)
    return np.where(kappa > 0, c, 1.0)


def _fine_tune(lam, bs, bt, n, s, depth):
    """(E R_ft, T_ft) of the deterministic equivalent, validated arrays."""
    c = np.asarray(fine_tune_scale(lam, bs, bt, n, s, depth, validate=False))
    bias_ft, gain = bias_variance(lam, c[..., None] * bs - bt, n, 0.0, validate=False)
    bias_sc, _ = bias_variance(lam, bt, n, 0.0, validate=False)
    return bias_ft + noise_term(s**2, gain), bias_sc - bias_ft


@closed_form(lam=_spectrum, beta_s=_TEACHER, beta_t=_TEACHER, n=N_REAL, sigma=P.SIGMA, depth=P.DEPTH.scalar)
def fine_tune_risk(lam, beta_s, beta_t, n, sigma, depth=2):
    r"""Deterministic equivalent of the fine-tuning risk of the gradient-flow limit X⁺y + c(I − P)β_s.

    β_ft − β_t = (I − P)(cβ_s − β_t) + X⁺ε, so E R ≍ B(cβ_s − β_t) + σ²V₁ (:func:`bias_variance`) with c of
    :func:`fine_tune_scale`; the scratch risk for n ≥ d. Asymptotic; FaF's corrected limit at Σ = I
    (:func:`~.fine_tuning.fine_tune_risk_corrected`).
    """
    return _fine_tune(lam, beta_s, beta_t, n, sigma, depth)[0]


@closed_form(lam=_spectrum, beta_s=_TEACHER, beta_t=_TEACHER, n=N_REAL, sigma=P.SIGMA, depth=P.DEPTH.scalar)
def fine_tune_transferability(lam, beta_s, beta_t, n, sigma, depth=2):
    r"""Deterministic equivalent of T_ft = E[R_sc − R_ft] = B(β_t) − B(cβ_s − β_t) (the noise terms cancel);
    0 for n ≥ d. :func:`~.fine_tuning.fine_tune_transferability_corrected` at Σ = I."""
    return _fine_tune(lam, beta_s, beta_t, n, sigma, depth)[1]


#: the transfer methods of :func:`transfer_grid`
GRID_METHODS = ("linear", "ridge", "finetune")


def transfer_grid(method, lam, beta_s, beta_t, n, sigma, ridge=0.0, depth=2):
    r"""(T, E R_scratch, E R_method), each (Θ, Γ), for the teacher pairs ``beta_t`` (Θ, d) and the sample sizes
    ``n`` (Γ,): the phase diagram of transfer under Σ (n, d → ∞ at n/d fixed, the spectrum's d).

    Scratch: the deterministic equivalent :func:`scratch_risk` (σ²d/(n − d) above d). ``linear`` and ``ridge``:
    the n → ∞ limit of the exact one-feature risk, τ² + ρ²λ′²/(1 + λ′)² (:func:`ridge_transfer_risk_limit`;
    τ² = sin²θ for unit-Σ-norm teachers at Σ-angle θ, whatever Σ). ``finetune``: the deterministic equivalents
    :func:`fine_tune_risk`, :func:`fine_tune_transferability` (T = 0 for n ≥ d). At Σ = I this is
    :func:`~.transfer.transfer_risks` with ``limit="flow"``. The sums over the spectrum are matrix products, so a
    400 × 400 grid at d = 400 costs about 0.1 s. A grid whose memory exceeds the limit is refused before any work
    (:func:`transfertheory._memory.check_memory`).
    """
    one_of(method, "method", GRID_METHODS)
    lam = _spectrum(lam)
    bs, bt = check_teacher(beta_s, lam, "beta_s"), check_teacher(beta_t, lam, "beta_t")
    if bs.ndim != 1 or bt.ndim != 2:
        raise ValueError(f"beta_s must be (d,) and beta_t (Θ, d), got shapes {bs.shape} and {bt.shape}")
    n_ = N_REAL.sequence(n)
    s, lm, depth = P.SIGMA.scalar(sigma), P.LAM.scalar(ridge, "ridge"), P.DEPTH.scalar(depth)
    if method != "ridge" and lm != 0:
        raise ValueError(f"ridge applies to method 'ridge' only, got ridge={lm:g} for method {method!r}")
    # the (Γ, d) weights, shrinkages and their temporaries, the (Θ, d) squared teachers: at most (3Γ + Θ + 2)·d
    # floats at any time (tracemalloc, all three methods)
    check_memory(FLOAT_BYTES * (3 * n_.size + bt.shape[0] + 2) * lam.size, what="transfer_grid",
                 params={"n": n_.size, "beta_t": bt.shape[0], "d": lam.size})
    kappa = _kappa(lam, n_, 0.0)
    _, df2 = _df(lam, kappa)
    positive = (kappa > 0)[:, None]
    k = np.where(kappa > 0, kappa, 1.0)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        left = 1 - df2 / n_
        gain = np.where(left > 0, (df2 / n_) / np.where(left > 0, left, 1.0), np.inf)
        weight = np.where(positive, lam * (k / (lam + k)) ** 2 / left[:, None], 0.0)  # (Γ, d): bias = Σ w β²
    noise = noise_term(s**2, gain)[None, :]
    bias_sc = (bt * bt) @ weight.T
    r_sc = bias_sc + noise
    if method != "finetune":
        rho2, tau2, lam_eff = _ridge_transfer_terms(lam, bs[None, :], bt, lm, depth)
        r_tr = np.broadcast_to((tau2 + rho2 * (lam_eff / (1 + lam_eff)) ** 2)[:, None], r_sc.shape)
        with np.errstate(invalid="ignore"):
            return r_sc - r_tr, r_sc, np.array(r_tr)
    shrink = np.where(positive, k / (lam + k), 0.0)  # I − P ≍ κ(Σ + κ)⁻¹
    carried = shrink @ (bs * bs)
    fitted = np.sum(bt * bt, axis=1)[:, None] - (bt * bt) @ shrink.T + noise_term(s**2, 1 / k[:, 0])[None, :]
    c = np.where(positive[:, 0], _scale_root(carried[None, :], fitted, np.sum(bs * bs), depth), 1.0)
    bias_ft = c**2 * (weight @ (bs * bs))[None, :] - 2 * c * ((bt * bs) @ weight.T) + bias_sc
    return bias_sc - bias_ft, r_sc, bias_ft + noise


# --------------------------------------------------------------------------- finite size by Monte Carlo


def limit_expectations(lam, beta_s, beta_t, n, sigma, draws=2000, seed=0, depth=2):
    r"""Paired Monte Carlo of the limits at size (n, d = len(λ)) for the targets ``beta_t`` (Θ, d).

    Returns ``{"scratch": (mean, se), "linear": …, "finetune": …, "T_linear": …, "T_finetune": …}``, each a pair of
    arrays over Θ: the Σ-norm risks E‖β̂ − β_t‖²_Σ of X⁺y, of bβ_s (b = zᵀy/‖z‖², z = Xβ_s) and of the fine-tuning
    limit with β_pre = β_s, and the paired transferabilities E[R_sc − R]. The designs come from
    ``SeedSequence(seed, (n, d))``, the same for every θ. n ≥ 3 (the one-feature risk needs E‖z‖⁻² < ∞).
    """
    lam = check_spectrum(lam, name="lam")
    bs, bt = check_teacher(beta_s, lam, "beta_s"), np.atleast_2d(check_teacher(beta_t, lam, "beta_t"))
    n, s, draws = P.N.with_range(low=3).scalar(n), P.SIGMA.scalar(sigma), _MC_DRAWS.scalar(draws)
    depth, d = P.DEPTH.scalar(depth), lam.size
    check_memory(FLOAT_BYTES * (8 + len(bt)) * max(4_000_000, n * d), what="limit_expectations",
                 params={"n": n, "d": d, "len(beta_t)": len(bt)})
    samples = {k: [] for k in ("scratch", "linear", "finetune")}
    for X, y in _gaussian_designs(seed, n, d, draws, bt, s, scale=np.sqrt(lam)):  # y: (m, Θ, n)
        z = X @ bs  # (m, 1, n): one z per design
        b = (z * y).sum(-1) / (z * z).sum(-1)
        estimates = {"scratch": min_norm_solution(X, y), "linear": b[..., None] * bs,
                     "finetune": fine_tune_limit(X, y, bs, depth)}
        for key, beta_hat in estimates.items():
            samples[key].append(((beta_hat - bt) ** 2 * lam).sum(-1))
    risks = {k: np.concatenate(v) for k, v in samples.items()}
    risks["T_linear"] = risks["scratch"] - risks["linear"]
    risks["T_finetune"] = risks["scratch"] - risks["finetune"]
    return {k: (v.mean(axis=0), v.std(axis=0, ddof=1) / np.sqrt(draws)) for k, v in risks.items()}
