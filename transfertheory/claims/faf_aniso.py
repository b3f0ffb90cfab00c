r"""Beyond FaF §3: transfer with anisotropic inputs x ~ N(0, Σ) (docs/anisotropic.md), checked like the papers'
claims.

Model: Σ = diag(λ) from a hypothesis-drawn family (power law λ_k ∝ k^(−a), a ∈ [0, 1.5], or a two-block
spectrum), teachers from a drawn family (flat, or coefficients ∝ k^(−b) on the top or the bottom of the
spectrum) at a drawn Σ-angle θ, unit Σ-norm; risk ‖β̂ − β_t‖²_Σ. The Monte Carlo claims compute the
*estimator* each formula is about with NumPy (X⁺y by an SVD pseudo-inverse or a Gram solve, ridge by a direct
solve, the per-draw fine-tuning limit) independently of :mod:`transfertheory.theory.anisotropic`:

* exact formulas (one-feature linear and ridge transfer at finite n, least squares above d) — 4-SE rule,
  no allowance;
* deterministic equivalents (scratch below d, ridge regression, fine-tuning's E R_ft and T_ft) — statements about
  n, d → ∞ at fixed n/d, checked as such with no allowance: at the drawn point's spectrum and teacher families, θ, σ,
  λ and n/d, the Monte Carlo mean minus the equivalent at (n, d) × :data:`LADDER` is fitted as a + b·d^(−p)
  (weights 1/SE²; p of :data:`RATES`, the one that fits best) and the limit a must be 0 within 4 SE (docs/anisotropic.md: the limit, the draws, how often a 5 % error
  of an equivalent fails).

The simulation claims run the deep-linear simulator with the spectrum: pretraining from small initialisation
leaves the rank-one feature along β_s for any Σ; scratch reaches X⁺y and fine-tuning the per-draw limit
X⁺y + c(I − P)β_s on every draw; linear transfer reaches its one-feature least-squares limit on every draw, whose
mean is the exact one-feature formula.
"""
from __future__ import annotations

import functools
import math

import numpy as np
from hypothesis import strategies as st

from ..sim import deep_linear as dl
from ..sim.deep_linear import LINEAR_RISK_ALLOWANCE
from ..theory import anisotropic as A
from ..theory import fine_tuning as FT
from ..theory import linear as L
from ..theory import spectra as S
from ..theory.scratch import min_norm_solution
from .compare import ROUNDING, agreement, holds, mc_agreement, mean_se, weighted_line, within
from .faf_linear import _risk, pinv_solution
from .faf_linear_sim import _reaches_limits, alpha_rate
from .faf_linear_sim import _sim_point as _isotropic_sim_point
from .faf_linear_sim import _simulate
from .registry import combine, register

# --------------------------------------------------------------------------- strategies

def _spectra(decay, ratio):
    """Power laws power:a, a ≤ ``decay``, and two-block spectra block:F:H, F ∈ [0.1, 0.5], H ≤ ``ratio``."""
    return st.one_of(st.floats(0.0, decay).map(lambda a: f"power:{a:.4g}"),
                     st.tuples(st.floats(0.1, 0.5), st.floats(1.0, ratio)).map(
                         lambda f: f"block:{f[0]:.4g}:{f[1]:.4g}"))


_SPECTRA = _spectra(1.5, 5.0)
_TEACHERS = st.one_of(st.just("flat"), st.tuples(st.floats(0.0, 1.5), st.sampled_from(("top", "bottom"))).map(
    lambda bw: f"power:{bw[0]:.4g}:{bw[1]}"))
_NOISE = st.one_of(st.just(0.0), st.floats(0.05, 1.0))


def _point(**fields):
    return st.fixed_dictionaries({"spectrum": _SPECTRA, "teacher": _TEACHERS, "theta": st.floats(0.0, math.pi),
                                  "sigma": _NOISE, **fields})


def _head_point(profile):
    """Small d (the head's cost does not grow with d), n ≥ 9 (finite fourth moment of 1/‖z‖²), λ ≥ 0."""
    return _point(d=st.integers(4, 12), n=st.integers(9, 40), ridge=st.one_of(st.just(0.0), st.floats(1e-3, 2.0)))


def _equivalent_point(profile, ridge=False):
    """d ∈ [48, 80], n < d with min(n, d − n) ≥ 16: the first rung of the size ladder (the last is 4d ≤ 320)."""
    fields = {"ridge": st.floats(0.01, 1.0)} if ridge else {}
    return st.integers(48, 80).flatmap(lambda d: _point(d=st.just(d), n=st.integers(16, d - 16), **fields))



def _draw(case, scale=1, reps=None, rng=None):
    """(λ, β_s, β_t, X (reps, n, d) with rows z·√λ, y = Xβ_t + ε) at the point's (n, d) × ``scale``; ``reps`` and ``rng``
    default to the profile's draws and the case's generator."""
    p = case.params
    rng = case.rng if rng is None else rng
    n, d = scale * p["n"], scale * p["d"]
    lam, beta_s, (beta_t,) = S.task(p["spectrum"], p["teacher"], d, [p["theta"]])
    X = rng.standard_normal((case.profile.mc_reps if reps is None else reps, n, d)) * np.sqrt(lam)
    return lam, beta_s, beta_t, X, X @ beta_t + p["sigma"] * rng.standard_normal(X.shape[:2])


# --------------------------------------------------------------------------- exact identities


@register("faf.aniso.reduction", source="FaF §3 with anisotropic inputs: Σ = I reduction",
          kind="exact",
          statement="at Σ = I every anisotropic formula (scratch, linear and ridge transfer, fine-tuning's corrected "
                    "limit) equals the isotropic FaF formula to rounding, for every teacher family")
def _reduction(case):
    d, thetas, results = 90, np.array([0.0, 0.4, 1.2, math.pi / 2, 2.8]), []
    for teacher in ("flat", "power:1:top", "power:2:bottom"):
        lam, beta_s, beta_t = S.task("isotropic", teacher, d, thetas)
        for n in (9, 30, 60, 89, 91, 150):
            pairs = [("scratch", A.scratch_risk(lam, beta_t, n, 0.3), L.scratch_risk(n / d, 0.3)),
                     ("linear", A.linear_transfer_risk(lam, beta_s, beta_t, 0.3, n),
                      L.linear_transfer_risk(thetas, 0.3, n)),
                     ("ridge", A.ridge_transfer_risk(lam, beta_s, beta_t, 0.3, n, 0.25),
                      L.ridge_transfer_risk_finite(thetas, 0.3, n, 0.25)),
                     ("finetune", A.fine_tune_risk(lam, beta_s, beta_t, n, 0.3, 3),
                      FT.fine_tune_risk_corrected(n / d, thetas, 0.3, 3))]
            gap = max(float(np.max(np.abs(np.asarray(a) - b) / (1 + np.abs(b)))) for _, a, b in pairs)
            results.append(within(gap, 0.0, 1e-12, f"largest relative gap at n={n}, teacher {teacher}"))
    return combine(results)


# --------------------------------------------------------------------------- exact formulas against Monte Carlo


@register("faf.aniso.linear", source="FaF §3 with anisotropic inputs: one-feature regression, exact at finite n",
          kind="monte-carlo", method="linear", strategy=_head_point,
          statement="linear transfer on the balanced feature β_s vᵀ (‖v‖ = ‖β_s‖^{-1/2}, L = 2): "
                    "E‖bβ_s − β_t‖²_Σ = τ² + ρ²E[c²/(s+c)²] + (τ² + σ²)E[s/(s+c)²], s ~ χ²_n, c = nλ‖β_s‖/‖β_s‖²_Σ; "
                    "τ² + (τ² + σ²)/(n − 2) at λ = 0, for any Σ")
def _linear(case):
    p = case.params
    lam, beta_s, beta_t, X, y = _draw(case)
    z = X @ beta_s
    b = (z * y).sum(-1) / ((z * z).sum(-1) + p["n"] * p["ridge"] * np.linalg.norm(beta_s))
    return mc_agreement(_risk(b[:, None] * beta_s, beta_t, lam),
                        A.ridge_transfer_risk(lam, beta_s, beta_t, p["sigma"], p["n"], p["ridge"]), label=case.label)


@register("faf.aniso.least-squares", source="FaF §3 with anisotropic inputs: least squares above d, exact",
          kind="monte-carlo",
          method="scratch",
          strategy=lambda profile: st.integers(4, 16).flatmap(
              lambda d: _point(d=st.just(d), n=st.integers(d + 8, 3 * d + 8))),
          statement="for n ≥ d + 2 the least-squares risk E‖X⁺y − β_t‖²_Σ = σ²d/(n − d − 1) for every Σ")
def _least_squares(case):
    p = case.params
    lam, _, beta_t, X, y = _draw(case)
    return mc_agreement(_risk(pinv_solution(X, y), beta_t, lam), A.scratch_risk_exact(lam, p["n"], p["sigma"]),
                        label=case.label)


# --------------------------------------------------------------------------- deterministic equivalents

#: the size ladder of the deterministic equivalents: (n, d) of the drawn point times each factor f, with
#: :data:`LADDER_DRAWS` × the profile's draws ÷ f (the risk's spread shrinks like 1/√d, so every rung's mean has about
#: the same SE, and every rung costs about the same)
LADDER = (1, 2, 4)
#: draws of the ladder's first rung relative to the profile's (docs/anisotropic.md: the cost, and how often a 5 % error
#: of an equivalent fails)
LADDER_DRAWS = 0.5
#: decay exponents p of the fits a + b·d^(−p): 1 is the O(1/d) of a spectrum with a limiting distribution; the gap
#: falls faster where the risk itself vanishes as d grows (teachers on the top of a decaying spectrum, whose top
#: eigenvalues grow with d: local exponents up to 2.8 measured, docs/anisotropic.md)
RATES = (1.0, 1.5, 2.0, 2.5, 3.0)
#: the most numbers in one design-matrix batch of a rung (a rung's draws are taken in batches: bounded memory)
_BATCH = 2**22


def _size_limit(case, rung):
    """The equivalents' statement: at the point's families, θ, σ, λ and n/d, the Monte Carlo mean minus the equivalent
    vanishes as the size grows, at least as fast as 1/d. ``rung(p, lam, beta_s, beta_t, X, y, n)`` → {name: (samples,
    equivalent)} at one rung of :data:`LADDER` (``p`` the point's parameters); per name the gaps are fitted as a + b·d^(−p) for each p of
    :data:`RATES` (weights 1/SE², SEs no smaller than the rounding of the equivalent); the limit a of the fit with the
    smallest χ² must be 0 within 4 SE: a constant error of the equivalent is a limit no decay absorbs."""
    p, gaps = case.params, {}
    for scale in LADDER:
        rng, reps = np.random.default_rng((case.seed, scale)), int(LADDER_DRAWS * case.profile.mc_reps) // scale
        batch = max(1, _BATCH // (scale**2 * p["n"] * p["d"]))
        samples, equivalents = {}, {}
        for start in range(0, reps, batch):
            lam, beta_s, beta_t, X, y = _draw(case, scale, min(batch, reps - start), rng)
            for name, (values, equivalent) in rung(p, lam, beta_s, beta_t, X, y, scale * p["n"]).items():
                samples.setdefault(name, []).append(values)
                equivalents[name] = float(equivalent)
        for name, values in samples.items():
            mean, se = mean_se(np.concatenate(values))
            gaps.setdefault(name, []).append((mean - equivalents[name],
                                              max(se, ROUNDING * (1 + abs(equivalents[name])))))
    sizes = np.array([scale * p["d"] for scale in LADDER], dtype=float)
    results = []
    for name, rows in gaps.items():
        gap, se = np.array(rows).T
        rungs = ", ".join(f"{g:+.3g} ± {s:.2g} (d = {d:g})" for g, s, d in zip(gap, se, sizes))
        fits = []
        for rate in RATES:
            (slope, limit), cov = weighted_line(sizes ** -rate, gap, se)
            misfit = float(np.sum(((gap - limit - slope * sizes ** -rate) / se) ** 2))
            fits.append((misfit, rate, slope, limit, math.sqrt(cov[1, 1])))
        # the decay chosen by how well it fits the gaps (χ²), not by what it makes of the limit
        misfit, rate, slope, limit, limit_se = min(fits)
        results.append(agreement(limit, limit_se, 0.0,
                                 label=f"{name}, {case.label}: mean − equivalent {rungs}; best fit (χ² {misfit:.2g}) "
                                       f"a + b·d^(−p) of p ∈ {{{', '.join(f'{r:g}' for r in RATES)}}}: p = {rate:g}, "
                                       f"b = {slope:.3g}, limit a"))
    return combine(results)


def _equivalent(id, **options):
    """Decorator: register the decorated rung (:func:`_size_limit`'s ``rung``) as claim ``id``, checked by
    :func:`_size_limit` (``options``: the other keywords of :func:`~.registry.register`)."""
    def decorate(rung):
        return register(id, kind="monte-carlo", **options, allowance_reason=(
            "none: the limit of the gap over the size ladder is held to 0; the finite-size error of the equivalent is "
            "the fitted b·d^(−p)"))(functools.partial(_size_limit, rung=rung))
    return decorate


_LIMIT = (f"the Monte Carlo mean minus the equivalent at (n, d) × {', '.join(map(str, LADDER))} (same families, θ, σ, "
          "n/d) vanishes at least as fast as 1/d: of the fits a + b·d^(−p), p = 1…3, the best has a limit a within 4 SE "
          "of 0")


@_equivalent("faf.aniso.scratch", source="FaF §3 with anisotropic inputs: minimum-norm interpolation (HMRT 2022 Thm 2)",
             method="scratch",
             strategy=_equivalent_point,
             statement="for n < d, E‖X⁺y − β_t‖²_Σ ≍ κ²β_tᵀΣ(Σ+κ)⁻²β_t/(1 − df₂/n) + σ²(df₂/n)/(1 − df₂/n) with "
                       f"Σ λ_i/(λ_i + κ) = n: {_LIMIT}")
def _scratch_equivalent(p, lam, beta_s, beta_t, X, y, n):
    return {"scratch risk": (_risk(min_norm_solution(X, y), beta_t, lam), A.scratch_risk(lam, beta_t, n, p["sigma"]))}


@_equivalent("faf.aniso.ridge", source="FaF §3 with anisotropic inputs: ridge regression (Bach 2024 §3)",
             method="ridge",
             strategy=lambda profile: _equivalent_point(profile, ridge=True),
             statement=f"ridge (XᵀX + nλ)⁻¹Xᵀy: E R ≍ B + σ²V with κ(1 − df₁(κ)/n) = λ: {_LIMIT}")
def _ridge_equivalent(p, lam, beta_s, beta_t, X, y, n):
    # (XᵀX + nλ)⁻¹Xᵀy = Xᵀ(XXᵀ + nλ)⁻¹y: the n × n system (n < d)
    beta_hat = np.swapaxes(X, -1, -2) @ np.linalg.solve(X @ np.swapaxes(X, -1, -2) + n * p["ridge"] * np.eye(n),
                                                        y[..., None])
    return {"ridge risk": (_risk(beta_hat[..., 0], beta_t, lam), A.ridge_risk(lam, beta_t, n, p["sigma"], p["ridge"]))}


@_equivalent("faf.aniso.finetune", source="FaF §3 with anisotropic inputs: fine-tuning's gradient-flow limit",
             method="finetune",
             strategy=_equivalent_point,
             statement="the limit X⁺y + c(I − P)β_s has E R_ft ≍ B(cβ_s − β_t) + σ²V and T_ft ≍ B(β_t) − "
                       "B(cβ_s − β_t), c from ‖β_s‖²c⁴ = c²Σκβ_s²/(λ+κ) + ‖β_t‖² − Σκβ_t²/(λ+κ) + σ²/κ (L = 2); for "
                       f"each of the two, {_LIMIT}")
def _finetune_equivalent(p, lam, beta_s, beta_t, X, y, n):
    scratch = _risk(min_norm_solution(X, y), beta_t, lam)
    tuned = _risk(FT.fine_tune_limit(X, y, beta_s), beta_t, lam)
    return {"E R_ft": (tuned, A.fine_tune_risk(lam, beta_s, beta_t, n, p["sigma"])),
            "T_ft": (scratch - tuned, A.fine_tune_transferability(lam, beta_s, beta_t, n, p["sigma"]))}


# --------------------------------------------------------------------------- the simulator


def _sim_point(profile):
    """The isotropic simulation claims' points with a spectrum and a teacher family; moderate spectra (a ≤ 1) so every
    flow converges."""
    return _isotropic_sim_point(profile, spectrum=_spectra(1.0, 4.0), teacher=_TEACHERS)


#: target draws of the per-draw comparisons (each draw is checked, so a few suffice)
_PER_DRAW = 6
#: the integrator's rtol of the per-draw comparisons: at 1e-3 a fine-tuned draw lies as far from its limit as the
#: isotropic 2e-3 allowance, at 1e-5 (at σ = 1, θ = π/2) as far as this one; at 1e-6 well below it (docs/anisotropic.md)
_LIMITS_RTOL = 1e-6
LIMITS_ALLOWANCE = 5e-4


@register("faf.aniso.limits", source="FaF §3 with anisotropic inputs: scratch and fine-tuning limits by gradient flow",
          kind="simulation", method="finetune", strategy=_sim_point, allowance=LIMITS_ALLOWANCE,
          allowance_reason="integrator error at rtol = 1e-6: every draw within 2.1e-4 of its limit at 18 anisotropic "
                           "corners (σ = 1, θ = π/2, d = 32, 30 draws each; docs/anisotropic.md)",
          statement="with x ~ N(0, Σ), scratch gradient flow from small init reaches X⁺y and fine-tuning reaches "
                    "X⁺y + c(I − P)β_pre on every draw (the isotropic derivation carries over)")
def _limits(case):
    p = case.params
    df = _simulate(case, ("scratch", "finetune"), draws=_PER_DRAW, options=dict(flow={"rtol": _LIMITS_RTOL}))
    lam, beta_s, beta_t = S.task(p["spectrum"], p["teacher"], p["d"], [p["theta"]])
    results = []
    for i in range(_PER_DRAW):
        X, Y = dl.target_draw(p["d"], p["n"], beta_t, p["sigma"], case.seed % 2**32, 0, i, lam)
        limits = {"scratch": pinv_solution(X, Y[:, 0]), "finetune": FT.fine_tune_limit(X, Y[:, 0], beta_s)}
        for method, beta_hat in limits.items():
            row = df[(df["method"] == method) & (df["draw"] == i)]
            results.append(within(float(row["risk"].iloc[0]), float(_risk(beta_hat, beta_t[0], lam)),
                                  case.claim.allowance, f"{method} risk of draw {i}, {case.label}"))
    return combine(results)


#: the pretraining of faf.aniso.linear.sim: at the default (gtol 1e-8, rtol 1e-4) a linear-transfer risk lies up to
#: 2.0e-8 from its draw's limit with anisotropic inputs (n = 9), above :data:`LINEAR_RISK_ALLOWANCE`; at these settings
#: within 1.3e-10 (docs/anisotropic.md)
_LINEAR_PRETRAIN = {"gtol": 1e-10, "rtol": 1e-6}


@register("faf.aniso.linear.sim", source="FaF §3 with anisotropic inputs: linear transfer by simulation",
          kind="simulation",
          method="linear", strategy=_sim_point, allowance=LINEAR_RISK_ALLOWANCE,
          allowance_reason=f"per draw, the simulated risk against its own draw's limit: an exact last-layer solve (no "
                           f"integrator), {LINEAR_RISK_ALLOWANCE:g} (pretraining at gtol 1e-10, rtol 1e-6: every draw "
                           "within 1.3e-10 at the quick and full points, 3 seeds, docs/anisotropic.md); the mean of "
                           "the limit against the formula: none, both are exact",
          statement="pretraining on ½(β − β_s)ᵀΣ(β − β_s) from small init leaves a rank-one feature along β_s, "
                    "the last layer on it reaches its least-squares limit on every draw, and the mean "
                    "linear-transfer risk is the exact τ² + (τ² + σ²)/(n − 2)")
def _linear_sim(case):
    """Like the isotropic mean-risk claims (:func:`~transfertheory.claims.faf_linear_sim._mean_risk_and_transferability`):
    every one of the ``sim_draws`` simulated risks is that of its own draw's limit (X, y rebuilt from the simulator's
    seed) within :data:`~transfertheory.sim.deep_linear.LINEAR_RISK_ALLOWANCE`, and the formula is compared with
    the mean of that limit over the profile's ``reference_draws`` draws (the trained ones among them) by the 4-SE rule:
    the mean of 100 right-skewed risks τ² + (τ² + σ²)·χ²₁/χ²ₙ-like has a heavy left tail of z (docs/testing.md)."""
    p = case.params
    df = _simulate(case, ("linear",), options=dict(pretrain_flow=_LINEAR_PRETRAIN))
    lam, beta_s, (beta_t,) = S.task(p["spectrum"], p["teacher"], p["d"], [p["theta"]])
    reached, _, limit, draws = _reaches_limits(case, df, "linear", 0.0, ("linear",))
    pre = df.attrs["pretrain"]
    return combine([
        *reached,
        agreement(*mean_se(limit), A.linear_transfer_risk(lam, beta_s, beta_t, p["sigma"], p["n"]),
                  label=f"linear risk of the limit ({draws} draws) {case.label}"),
        holds(pre["sv_ratio"] < 1e-3, f"pretrained features rank one: σ₂/σ₁ = {pre['sv_ratio']:.2g} < 1e-3 (α = 1e-5)"),
        holds(bool((df["feature_rank"] == 1).all()), "one feature direction kept"),
    ])


@register("faf.aniso.rank-one", source="FaF §3 with anisotropic inputs: rank-one pretrained features",
          kind="simulation",
          statement="for any Σ, population pretraining from small init gives W₁ ≈ β_s vᵀ: σ₂/σ₁ ∝ α, left singular "
                    "vector β_s/‖β_s‖, ‖v‖ = ‖β_s‖^{-1/2} (balance)",
          strategy={"d": st.integers(8, 20), "spectrum": _SPECTRA, "teacher": _TEACHERS})
def _rank_one(case):
    p = case.params
    lam, beta_s, _ = S.task(p["spectrum"], p["teacher"], p["d"], [0.0])
    arch = dl.Architecture(p["d"], 2)
    pres = {a: dl.pretrain(arch, beta_s, a, seed=case.seed % 2**32, backend="numpy", spectrum=lam)
            for a in (1e-2, 1e-3)}
    U, s, _ = np.linalg.svd(dl.feature_matrix(arch, pres[1e-3].weights)[0])
    norm = float(np.linalg.norm(beta_s))
    return combine([
        *alpha_rate({a: pre.singular_value_ratio for a, pre in pres.items()}),
        within(abs(U[:, 0] @ beta_s) / norm, 1.0, 1e-6, "|⟨u₁, β_s⟩|/‖β_s‖"),
        within(s[0], norm**0.5, 1e-3 * norm**0.5, "σ₁(W₁) = ‖β_s‖^{1/2} (balanced)"),
    ])
