r"""FaF §4 closed forms (two-layer ReLU student–teacher, mean field): Monte Carlo of the defining expectations.

Model (FaF Eqs. 18–20, docs/relu.md): x ~ N(0, I_d), σ = ReLU, networks f(x) = (1/m) Σᵢ cᵢ σ(wᵢᵀx),
a target teacher f_t* of m* unit neurons and a source teacher without a random fraction μ of them.
Each claim samples x and computes the defining expectation directly — products of ReLU features, the
squared error of two networks, a least-squares regression on sampled features, the projection residual
over random teachers — and compares it with :mod:`transfertheory.theory.relu` by the 4-SE rule.
The estimators are public here so that tests/theory/test_relu.py runs them over wider hypothesis ranges.
"""
from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

from ..sim.relu_teacher.network import network_output
from ..theory import relu as R
from .compare import agreement, mc_agreement, significant
from .registry import combine, register

__all__ = ["sampled_kernel", "sampled_half_square_error", "least_squares_residual",
           "rows_with_cosines", "pperp_fraction_increase"]

#: x-samples per Monte Carlo repetition of the profile (one sample costs a few ReLUs, not a regression)
SAMPLES_PER_REP = 100
#: the kernel's: 10⁶ x in the quick profile, a relative SE of ~0.3%, so that a 2% error is caught
KERNEL_SAMPLES_PER_REP = 500


def rows_with_cosines(rng, d, norms_a, norms_b, cosines):
    """Rows aᵢ (random directions) and bᵢ with cos∠(aᵢ, bᵢ) = cosinesᵢ exactly, of the given norms."""
    a_hat = rng.standard_normal((len(norms_a), d))
    a_hat /= np.linalg.norm(a_hat, axis=1, keepdims=True)
    perp = rng.standard_normal((len(norms_a), d))
    perp -= (perp * a_hat).sum(axis=1, keepdims=True) * a_hat
    perp /= np.linalg.norm(perp, axis=1, keepdims=True)
    u = np.asarray(cosines, dtype=float)[:, None]
    b_hat = u * a_hat + np.sqrt(1 - u * u) * perp
    return np.asarray(norms_a, dtype=float)[:, None] * a_hat, np.asarray(norms_b, dtype=float)[:, None] * b_hat


def sampled_kernel(rng, A, B, samples, chunk=200_000):
    """(mean, SE) of σ(aᵢᵀx)σ(bⱼᵀx) over ``samples`` x ~ N(0, I_d): two (p, q) arrays (drawn in chunks)."""
    total = np.zeros((A.shape[0], B.shape[0]))
    total_sq = np.zeros_like(total)
    for start in range(0, samples, chunk):
        x = rng.standard_normal((min(chunk, samples - start), A.shape[1]))
        products = np.maximum(x @ A.T, 0.0)[:, :, None] * np.maximum(x @ B.T, 0.0)[:, None, :]
        total += products.sum(axis=0)
        total_sq += (products * products).sum(axis=0)
    mean = total / samples
    variance = np.maximum(total_sq / samples - mean * mean, 0.0) * samples / (samples - 1)
    return mean, np.sqrt(variance / samples)


def sampled_half_square_error(rng, W, c, W_star, c_star, samples):
    """½(f(x) − f*(x))² at ``samples`` x ~ N(0, I_d) (a 1-d sample)."""
    x = rng.standard_normal((samples, W.shape[1]))
    return 0.5 * (network_output(W, c, x) - network_output(W_star, c_star, x)) ** 2


def least_squares_residual(rng, W, W_star, c_star, samples):
    """(MSE, its SE, in-sample optimism) of the least-squares fit of f* on σ(Wx) over ``samples`` x.

    The L² projection is the population least-squares fit, so the residual MSE → ‖P⊥ f*‖². In-sample it
    is low by eᵀHe/N (H the hat matrix), whose mean is tr(K⁻¹ E[φφᵀe²])/N to first order: estimated
    from the samples (sandwich formula) and used as the stated allowance.
    """
    x = rng.standard_normal((samples, W.shape[1]))
    features = np.maximum(x @ W.T, 0.0)
    target = network_output(W_star, c_star, x)
    coef, *_ = np.linalg.lstsq(features, target, rcond=None)
    residual_sq = (target - features @ coef) ** 2
    gram = features.T @ features / samples
    meat = features.T @ (features * residual_sq[:, None]) / samples
    optimism = float(np.trace(np.linalg.pinv(gram) @ meat) / samples)
    return float(residual_sq.mean()), float(residual_sq.std(ddof=1) / math.sqrt(samples)), optimism


def pperp_fraction_increase(rng, teachers, m_star, d, mu_low, mu_high, output="ones"):
    """Paired increase of ‖P⊥ f_t*‖²/‖f_t*‖² from μ_low to μ_high over random teachers: (mean, SE, means).

    P projects on the source teacher's features (the kernel a pretrained student sparsifies to, FaF
    Fig. 4a–b); the two ablations of a teacher are drawn independently.
    """
    W_star, c_star = R.random_teacher(m_star, d, rng, batch=(teachers,), output=output)
    fractions = []
    for mu in (mu_low, mu_high):
        source = R.ablated_teacher(W_star, c_star, mu, rng)
        inside, outside = R.rkhs_projection_norms(source.W, W_star, c_star)
        fractions.append(outside / (inside + outside))
    diff = fractions[1] - fractions[0]
    return float(diff.mean()), float(diff.std(ddof=1) / math.sqrt(teachers)), (fractions[0].mean(), fractions[1].mean())



# --------------------------------------------------------------------------- FaF Eqs. 152–153


_NORM, _COSINE = st.floats(0.05, 5.0), st.one_of(st.sampled_from([-1.0, 0.0, 1.0]), st.floats(-1.0, 1.0))
_KERNEL_POINT = {"d": st.integers(2, 8), "norms_a": st.tuples(_NORM, _NORM, _NORM),
                 "norms_b": st.tuples(_NORM, _NORM, _NORM), "cosines": st.tuples(_COSINE, _COSINE, _COSINE)}


@register("faf.eq152-153.arccos-kernel", source="FaF Eqs. 152–153 (ReLU arc-cosine kernel)", kind="monte-carlo",
          statement="E[σ(aᵀx)σ(bᵀx)] = (‖a‖‖b‖/2π)(√(1 − u²) + u(π − arccos u)), u = cos∠(a, b), x ~ N(0, I_d)",
          strategy=_KERNEL_POINT, profiles=("quick", "full"))
def _arccos_kernel(case):
    """All 9 pairs of 3 rows aᵢ and 3 rows bⱼ (the pairs (aᵢ, bᵢ) at the drawn cosines, ±1 and 0 included)."""
    p = case.params
    rng = case.rng
    A, B = rows_with_cosines(rng, p["d"], p["norms_a"], p["norms_b"], p["cosines"])
    mean, se = sampled_kernel(rng, A, B, KERNEL_SAMPLES_PER_REP * case.profile.mc_reps)
    kernel = R.arccos_kernel(A, B)
    return combine(agreement(mean[i, j], se[i, j], kernel[i, j], label=f"{case.label} pair ({i},{j})")
                   for i in range(3) for j in range(3))


# --------------------------------------------------------------------------- FaF Eqs. 154–159


@register("faf.eq154-159.projection", source="FaF Eqs. 154–159 (App. C, ReLU RKHS)", kind="monte-carlo",
          statement="‖P⊥ f*‖² = c*ᵀK*c*/m* − c*ᵀK̃ᵀK⁻¹K̃c*/m* is the residual of the least-squares fit of f* "
                    "by the student's features σ(wᵢᵀx) in L²(N(0, I_d))",
          strategy=lambda profile: st.fixed_dictionaries({
              "d": st.integers(3, 8), "m_star": st.integers(2, 8), "mu": st.floats(0.0, 0.75),
              "extra": st.integers(0, 3), "output": st.sampled_from(R.TEACHER_OUTPUTS),
          }).filter(lambda p: 1 <= round(p["mu"] * p["m_star"]) <= p["m_star"] - 1), profiles=("quick", "full"),
          allowance=0.0, allowance_reason="none beyond the in-sample optimism of the fit, estimated per point "
                                          "(sandwich formula, < 5% of the SE) and added to the tolerance")
def _projection(case):
    """Student: the source teacher (Eq. 19) plus ``extra`` random unit neurons; target: the teacher (Eq. 20). The
    strategy drops at least one neuron: with none dropped the student's features contain the teacher's, ‖P⊥ f*‖² = 0
    and the least-squares residual is 0 up to rounding, a point where any formula that vanishes there passes."""
    p = case.params
    rng = case.rng
    W_star, c_star = R.random_teacher(p["m_star"], p["d"], rng, output=p["output"])
    source = R.ablated_teacher(W_star, c_star, p["mu"], rng)
    W = np.vstack([source.W, R.random_teacher(p["extra"], p["d"], rng)[0]]) if p["extra"] else source.W
    outside = R.rkhs_projection_norms(W, W_star, c_star).outside
    mse, se, optimism = least_squares_residual(rng, W, W_star, c_star, 2 * SAMPLES_PER_REP * case.profile.mc_reps)
    return agreement(mse, se, outside, allowance=optimism, label=case.label)


# --------------------------------------------------------------------------- population loss


_LOSS_POINT = {"m": st.integers(1, 8), "m_star": st.integers(1, 8), "d": st.integers(1, 8), "sphere": st.booleans()}


@register("faf.relu.population-loss", source="FaF §4 (ReLU population loss)", kind="monte-carlo",
          statement="½E(f − f*)² = ½[cᵀk(W,W)c/m² − 2cᵀk(W,W*)c*/(m m*) + c*ᵀk(W*,W*)c*/m*²] exactly",
          strategy=_LOSS_POINT, profiles=("quick", "full"))
def _population_loss(case):
    """A student with rows on the sphere (or of random norms) and N(0, 4) output weights; a random teacher."""
    p = case.params
    rng = case.rng
    W = rng.standard_normal((p["m"], p["d"]))
    W = W / np.linalg.norm(W, axis=1, keepdims=True) if p["sphere"] else W * rng.uniform(0.3, 2, size=(p["m"], 1))
    c = 2 * rng.standard_normal(p["m"])
    W_star, c_star = R.random_teacher(p["m_star"], p["d"], rng, output="normal")
    samples = sampled_half_square_error(rng, W, c, W_star, c_star, SAMPLES_PER_REP * case.profile.mc_reps)
    return mc_agreement(samples, R.population_loss(W, c, W_star, c_star), label=case.label)


# --------------------------------------------------------------------------- FaF Fig. 4d


_GROWTH_SIZES = {"quick": (20, 10), "full": (100, 100)}  # (m*, d); full is FaF's teacher (App. D.2)


@register("faf.relu.pperp-grows-with-mu", source="FaF §4, Fig. 4d (ReLU)", kind="monte-carlo",
          statement="‖P⊥ f_t*‖²/‖f_t*‖² increases with μ on average over teachers (P: on the source teacher's "
                    "features), here from μ = 0.25 to 0.5",
          profiles=("quick", "full"))
def _pperp_grows(case):
    """Paired increase over mc_reps/10 teachers (c* = 1 and c* ~ N(0, 1)); passes when it exceeds 4 SE
    (one-sided z > 4; the detail gives the fractions, the increase and its z)."""
    m_star, d = _GROWTH_SIZES.get(case.profile.name, _GROWTH_SIZES["full"])
    teachers = max(case.profile.mc_reps // 10, 20)
    results = []
    for output in R.TEACHER_OUTPUTS:
        mean, se, (low, high) = pperp_fraction_increase(case.rng, teachers, m_star, d, 0.25, 0.5, output)
        results.append(significant(mean, se, label=f"c* {output}, m*={m_star} d={d}, {teachers} teachers: fraction "
                                                   f"{low:.4g} → {high:.4g}, increase {mean:.3g} ± {se:.2g}"))
    return combine(results)
