r"""MeRLin §5 and App. B closed forms (two-layer quadratic network): exact enumeration, Monte Carlo, numerical minimization.

Model (MeRLin §5, docs/merlin.md): f(x) = θᵀ(φᵀx)², loss (f − y)²; source law D_s with k label-carrying
coordinates, target law D_t = the k = 1 case. The independent computations here never use the
package's moment formulas: the laws are enumerated from their definition (every x ∈ {−1, 0, 1}^d with
its probability, f evaluated neuron by neuron), drawn with the package's samplers for Monte Carlo, and
the minimizers are searched with L-BFGS from random starts (the gradients used there are the package's,
checked against finite differences in tests/theory/test_merlin.py; the values compared are exact losses).
"""
from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
from hypothesis import strategies as st
from scipy.optimize import minimize, minimize_scalar
from scipy.stats import binom

from ..theory import merlin as M
from .compare import ROUNDING, holds, mc_agreement, within
from .registry import REMARK, CheckResult, combine, register

# --------------------------------------------------------------------------- independent references


def _enumerate_law(d, k):
    """Every (x, y) of the law with k label-carrying coordinates, with its probability (MeRLin §5, from the text)."""
    xs, ys, ps = [], [], []
    for y, weight in ((0.0, 1 / 3), (1.0, 2 / 3)):
        head = [(0.0,)] * k if y == 0 else [(-1.0, 1.0)] * k
        for x in itertools.product(*head, *[(-1.0, 0.0, 1.0)] * (d - k)):
            xs.append(x)
            ys.append(y)
            ps.append(weight * (0.5 ** k if y == 1 else 1.0) / 3 ** (d - k))
    return np.array(xs), np.array(ys), np.array(ps)


def _network_output(theta, phi, x):
    return (((x @ phi) ** 2) * theta).sum(axis=-1)



def _bounded_min(fun, bounds, xatol=1e-12):
    """The minimum value of the scalar ``fun`` on the interval ``bounds`` (bounded Brent search to ``xatol``)."""
    return minimize_scalar(fun, bounds=bounds, method="bounded", options={"xatol": xatol}).fun


def _lbfgs(fun, x0):
    """L-BFGS on ``fun`` (returning value and gradient) from ``x0``; returns the final point."""
    return minimize(fun, x0, jac=True, method="L-BFGS-B", options={"maxiter": 3000, "gtol": 1e-12, "ftol": 1e-15}).x


# --------------------------------------------------------------------------- the population loss


@register("merlin.population-loss", source="MeRLin §5 (model and laws)", kind="monte-carlo",
          statement="the exact population loss E[(θᵀ(φᵀx)² − y)²] (moment formula) equals the law's exact "
                    "enumeration (d ≤ 6) and the Monte Carlo mean of (f − y)² over the package's samplers",
          strategy=lambda profile: st.integers(2, 12).flatmap(lambda d: st.fixed_dictionaries(
              {"d": st.just(d), "k": st.integers(1, d), "m": st.integers(1, 4)})))
def _population_loss(case):
    p = case.params
    rng = case.rng
    theta, phi = rng.normal(size=p["m"]), rng.normal(size=(p["d"], p["m"])) / math.sqrt(p["d"])
    exact = M.population_loss(theta, phi, p["k"])
    draws = 10 * case.profile.mc_reps
    x, y = M.sample_target(draws, p["d"], rng) if p["k"] == 1 else M.sample_source(draws, p["d"], p["k"], rng)
    results = [mc_agreement((_network_output(theta, phi, x) - y) ** 2, exact, label=f"MC {case.label}")]
    d, k = min(p["d"], 6), min(p["k"], 6)  # enumeration: the first min(d, 6) coordinates (3^6 · 2 points)
    xs, ys, ps = _enumerate_law(d, k)
    enumerated = float(ps @ (_network_output(theta, phi[:d], xs) - ys) ** 2)
    results.append(within(M.population_loss(theta, phi[:d], k), enumerated, 1e-10 * (1 + abs(enumerated)),
                          label=f"enumeration d={d}, k={k}"))
    return combine(results)


# --------------------------------------------------------------------------- Lemma 4


@register("merlin.lemma4", source="MeRLin Lemma 4", kind="exact",
          statement="min of L_Ds + λ(‖θ‖² + ‖φ‖²_F) is L(μ*) at one neuron θ = (μ*/2)^{1/3}, φ = ±√2θe_j, "
                    "μ* = argmin (3λ/2^{2/3})|μ|^{2/3} + (2/3)(μ − 1)², μ* > 0 iff λ < 2^{1/3}/3",
          strategy={"lam": st.one_of(st.floats(0.01, 0.41), st.floats(0.43, 1.5)), "d": st.integers(3, 4),
                    "k": st.integers(2, 3)},
          allowance=1e-7,
          allowance_reason="optimizer: L-BFGS stops at a gradient norm ~1e-8 on a quartic loss: the value found lies "
                           "within 1e-7 of the minimum it approaches")
def _lemma4(case):
    p = case.params
    lam, d, k = p["lam"], p["d"], p["k"]
    mu = M.optimal_source_scale(lam)
    best_scalar = min(_bounded_min(lambda t: M.source_scale_objective(t, lam), b)
                      for b in ((-1.0, 0.0), (0.0, 0.5), (0.5, 2.0)))
    value = M.source_scale_objective(mu, lam)
    results = [within(value, min(best_scalar, 2 / 3), 1e-10, label=f"L(μ*) vs numerical min, μ*={mu:.6g}"),
               holds((mu > 0) == (lam < M.SOURCE_SCALE_THRESHOLD), label="μ* > 0 iff λ < 2^{1/3}/3")]
    # the threshold itself: a relative 1e-6 below it a μ > 0 beats L(0) = 2/3, 1e-6 above it none does (the strategy's
    # λ leave out (0.41, 0.43), so the iff above pins it only to that gap)
    threshold = M.SOURCE_SCALE_THRESHOLD
    beside = [_bounded_min(lambda t, f=f: M.source_scale_objective(t, f * threshold), (0.25, 2.0)) - 2 / 3
              for f in (1 - 1e-6, 1 + 1e-6)]
    results.append(holds(beside[0] < 0 < beside[1], label=f"threshold {threshold:.10g}: min_(μ>0) L − L(0) = "
                                                          f"{beside[0]:.2g} just below, {beside[1]:.2g} just above"))
    theta, phi = M.source_minimizer(lam, d, 2, k, k) if mu > 0 else (np.zeros(2), np.zeros((d, 2)))
    results.append(within(M.regularized_source_loss(theta, phi, k, lam), value, 1e-12, label="L^λ at the minimizer"))

    m = 2
    def objective(z):
        th, ph = z[:m], z[m:].reshape(d, m)
        loss, gt, gp = M.population_loss_and_grad(th, ph, k)
        reg = lam * (th @ th + (ph ** 2).sum())
        return loss + reg, np.concatenate([gt + 2 * lam * th, (gp + 2 * lam * ph).ravel()])

    rng = case.rng
    runs = [_lbfgs(objective, rng.normal(size=m + d * m)) for _ in range(8)]
    found = [objective(z)[0] for z in runs]
    best = runs[int(np.argmin(found))]
    A = best[m:].reshape(d, m) @ np.diag(best[:m]) @ best[m:].reshape(d, m).T
    distance = min(np.linalg.norm(A - mu * np.outer(e, e)) for e in np.eye(d)[:k])
    results.append(within(min(found), value, case.claim.allowance,
                          label=f"best of 8 L-BFGS runs (m=2, d={d}, k={k}) vs L(μ*)"))
    results.append(holds(min(found) >= value - case.claim.allowance, label="no run below L(μ*)"))
    results.append(within(distance, 0.0, 1e-3, label="best run's A = Σθᵢφᵢφᵢᵀ vs μ*e_je_jᵀ (Frobenius; the value "
                                                     "is within 1e-7, so A within ~√1e-7)"))
    return combine(results)


# --------------------------------------------------------------------------- Theorem 1


@register("merlin.thm1.finetune-head-loss", source="MeRLin Thm 1, Eqs. 52–54", kind="exact",
          statement="the head γ on a wrong feature e_j has exact target loss (2/3)γ² − (8/9)γ + 2/3 ≥ 10/27; "
                    "a head fine-tuned on n_t target samples (ridge) stays ≥ 10/27",
          strategy={"d": st.integers(2, 16), "gamma": st.floats(-3, 3), "n": st.integers(1, 40),
                    "lam": st.floats(0.0, 1.0)})
def _finetune_head_loss(case):
    p = case.params
    d, gamma = p["d"], p["gamma"]
    rng = case.rng
    j = int(rng.integers(2, d + 1))
    scale = rng.uniform(0.5, 2.0)  # φ = s·e_j, θ = γ/s²: the same predictor γ·x_j²
    phi = np.zeros((d, 1))
    phi[j - 1, 0] = scale
    exact = M.target_loss([gamma / scale ** 2], phi)
    results = [within(M.finetune_head_loss(gamma), exact, ROUNDING * (1 + exact), label=f"γ={gamma:.4g}, j={j}")]
    # the fine-tuned head: ridge on the target samples, min_γ Σ(γx_j² − y)² + λγ² (feature scale 1)
    losses = []
    for _ in range(50):
        x, y = M.sample_target(p["n"], d, rng)
        f = x[:, j - 1] ** 2
        head = (f @ y) / (f @ f + p["lam"]) if f @ f + p["lam"] > 0 else 0.0
        losses.append(M.target_loss([head], np.eye(d)[:, [j - 1]]))
    results.append(holds(min(losses) >= M.FINETUNE_HEAD_MIN - ROUNDING,
                         label=f"min over 50 fine-tuned heads {min(losses):.6g} ≥ 10/27"))
    vertex = _bounded_min(lambda g: M.target_loss([g], phi / scale), (-5, 5))
    results.append(within(vertex, M.FINETUNE_HEAD_MIN, 1e-12, label="min_γ of the exact target loss"))
    return combine(results)


@register("merlin.thm1.failure-probability", source="MeRLin Thm 1 (fine-tuning)", kind="exact",
          statement="every Lemma 4 minimizer e_j, j ∈ [k], has the same regularized source loss, and the best head "
                    "on it has target loss 0 (j = 1) or 10/27 (j ≠ 1): failure probability 1 − 1/k under a uniform j",
          strategy={"k": st.integers(2, 8), "lam": st.floats(0.01, 0.4)})
def _failure_probability(case):
    k, lam = case.params["k"], case.params["lam"]
    d = k + 1
    source, best_heads = [], []
    for j in range(1, k + 1):
        theta, phi = M.source_minimizer(lam, d, 1, k, j, sign=1 if j % 2 else -1)
        source.append(M.regularized_source_loss(theta, phi, k, lam))
        best_heads.append(_bounded_min(lambda g: M.target_loss([g], phi), (-10, 10), xatol=1e-13))
    failing = sum(h >= M.FINETUNE_HEAD_MIN - 1e-9 for h in best_heads)
    return combine([within(max(source) - min(source), 0.0, 1e-12, label="source loss equal over j"),
                    within(best_heads[0], 0.0, 1e-9, label="best head on e_1"),
                    holds(failing == k - 1, label=f"{failing} of k={k} features fail"),
                    within(M.finetune_failure_probability(k), (k - 1) / k, ROUNDING, label="1 − 1/k")])


# --------------------------------------------------------------------------- Lemma 1


@register("merlin.lemma1.joint-bound", source="MeRLin Lemma 1", kind="exact",
          statement="(1 − α)L_Ds(θ_s, φ) + λ(‖θ_s‖² + ‖θ_t‖² + ‖φ‖²_F) ≥ the Lemma 1 bound at ε = L_Dt(θ_t, φ) ≤ 2/3 "
                    "(a counterexample search: constrained minimization from random starts)",
          strategy={"lam": st.floats(0.01, 0.4), "alpha": st.floats(0.0, 0.9), "eps": st.floats(0.0, 0.6)},
          allowance=1e-9, allowance_reason="rounding of the exact losses at the points found")
def _joint_bound(case):
    lam, alpha, eps = case.params["lam"], case.params["alpha"], case.params["eps"]
    d, k, m = 3, 2, 3
    penalty_weight = 1e3

    def unpack(z):
        return z[:m], z[m:2 * m], z[2 * m:].reshape(d, m)

    def objective(z):
        ts, tt, ph = unpack(z)
        ls, gts, gps = M.population_loss_and_grad(ts, ph, k)
        lt, gtt, gpt = M.population_loss_and_grad(tt, ph, 1)
        excess = max(lt - eps, 0.0)
        value = (1 - alpha) * ls + lam * (ts @ ts + tt @ tt + (ph ** 2).sum()) + penalty_weight * excess ** 2
        grad = np.concatenate([(1 - alpha) * gts + 2 * lam * ts, 2 * penalty_weight * excess * gtt + 2 * lam * tt,
                               ((1 - alpha) * gps + 2 * penalty_weight * excess * gpt + 2 * lam * ph).ravel()])
        return value, grad

    rng = case.rng
    margins = []
    for _ in range(6):
        ts, tt, ph = unpack(_lbfgs(objective, rng.normal(size=2 * m + d * m)))
        achieved = M.target_loss(tt, ph)
        if achieved > 2 / 3:
            continue
        joint = (1 - alpha) * M.source_loss(ts, ph, k) + lam * (ts @ ts + tt @ tt + (ph ** 2).sum())
        margins.append(joint - M.joint_training_lower_bound(lam, alpha, achieved))
    if not margins:
        return CheckResult(1.0, 0.0, False, detail="no search run reached a target loss <= 2/3")
    worst = min(margins)
    return CheckResult(max(-worst, 0.0), case.claim.allowance, worst >= -case.claim.allowance,
                       detail=f"smallest margin L_joint − bound over {len(margins)} runs: {worst:.4g}")


# --------------------------------------------------------------------------- Theorem 2


def _fits_exactly(xj2, x12):
    """Whether some γ gives γ·x_j² = x₁² on every sample (least squares γ, exact residual on {0, 1} data)."""
    denominator = (xj2 * xj2).sum(axis=-1)
    gamma = np.where(denominator > 0, (xj2 * x12).sum(axis=-1) / np.where(denominator > 0, denominator, 1), 0.0)
    return np.all(gamma[..., None] * xj2 == x12, axis=-1)


#: the values of (x₁, x_j) of one target sample, equally likely: x₁ = 0 (y = 0) w.p. 1/3, x₁ = ±1 w.p. 2/3 · 1/2;
#: x_j ∈ {−1, 0, 1} w.p. 1/3 each, independent
_PAIRS = [(x1, xj) for x1 in (-1, 0, 1) for xj in (-1, 0, 1)]


def _enumerated_fit_probability(n):
    """Exact P(fit) by enumerating the 9ⁿ equally likely configurations of (x₁, x_j) over n samples (a fraction)."""
    fits = 0
    for combo in itertools.product(_PAIRS, repeat=n):
        x1, xj = np.array(combo, float).T
        fits += bool(_fits_exactly(xj ** 2, x1 ** 2))
    return Fraction(fits, 9 ** n)


@register("merlin.thm2.wrong-fit-probability", source="MeRLin Thm 2 (proof)", kind="monte-carlo",
          statement="a wrong feature e_j fits n target samples exactly w.p. (5/9)ⁿ + (1/3)ⁿ − (1/9)ⁿ: exact "
                    "enumeration (n ≤ 4) and Monte Carlo over the target sampler",
          strategy={"n": st.integers(1, 12), "d": st.integers(2, 20)})
def _wrong_fit(case):
    n, d = case.params["n"], case.params["d"]
    rng = case.rng
    draws = 20 * case.profile.mc_reps
    x, _ = M.sample_target(n * draws, d, rng)
    x = x.reshape(draws, n, d)
    j = rng.integers(1, d, size=draws)
    xj2 = np.take_along_axis(x, j[:, None, None], axis=2)[..., 0] ** 2
    fits = _fits_exactly(xj2, x[..., 0] ** 2).astype(float)
    exact = M.wrong_feature_fit_probability(n)
    results = [mc_agreement(fits, exact, label=f"MC n={n}, d={d}")]
    if n <= 4:
        enumerated = _enumerated_fit_probability(n)
        results.append(within(exact, float(enumerated), 1e-15, label=f"enumeration n={n}: {enumerated}"))
    return combine(results)


def _per_sample_probabilities():
    """Per target sample, exactly (fractions, by enumerating (x₁, x_j) ∈ {−1, 0, 1}², each w.p. 1/9):
    P(x_j² = x₁²), P(x₁ = 0) and P(x_j² = x₁² and x₁ = 0)."""
    count = lambda event: Fraction(sum(event(x1, xj) for x1, xj in _PAIRS), len(_PAIRS))  # noqa: E731
    return (count(lambda x1, xj: xj * xj == x1 * x1), count(lambda x1, xj: x1 == 0),
            count(lambda x1, xj: xj * xj == x1 * x1 and x1 == 0))


#: the (n, k) at which the union bound is checked: every n up to 40 (the terms are exact fractions) and k up to 64
_UNION_NS, _UNION_KS = range(1, 41), (2, 3, 5, 12, 64)


@register("merlin.thm2.bound-2-3", source="MeRLin Thm 2 (proof, App. B.2: union bound k(2/3)ⁿ)", kind="exact",
          erratum="erratum-merlin-fit-bound", category=REMARK,
          statement="the paper's union bound: the k events 'x_j² = x₁² on every sample' (j = 2…k, each "
                    "(5/9)ⁿ ≤ (2/3)ⁿ) "
                    "and 'x₁ = 0 on every sample' ((1/3)ⁿ ≤ (2/3)ⁿ) have total probability ≤ k(2/3)ⁿ "
                    "(any_wrong_feature_fit_bound), and the exact P(some wrong feature fits) is below it, for every "
                    "n ≥ 1; the package's finding beside it: one feature alone fits w.p. (5/9)ⁿ + (1/3)ⁿ − (1/9)ⁿ, "
                    "7/9 > 2/3 at n = 1")
def _union_bound_2_3(case):
    same_square, zero_first, both = _per_sample_probabilities()
    ratios, below = {}, True
    for n in _UNION_NS:
        for k in _UNION_KS:
            union = float((k - 1) * same_square ** n + zero_first ** n)
            ratios[n, k] = union / M.any_wrong_feature_fit_bound(n, k)
            below &= M.any_wrong_feature_fit_probability(n, k) <= union * (1 + ROUNDING)
    (n, k), worst = max(ratios.items(), key=lambda item: item[1])
    per_feature = same_square + zero_first - both
    return combine([
        CheckResult(worst, 1.0, worst <= 1, detail=f"(union of the k events)/k(2/3)ⁿ for n ≤ {_UNION_NS[-1]}, "
                                                   f"k ∈ {_UNION_KS}: largest {worst:.4f} at n = {n}, k = {k}"),
        holds(below, label="the exact P(some wrong feature fits) ≤ the union of the k events at every (n, k)"),
        within(M.wrong_feature_fit_probability(1), float(per_feature), ROUNDING,
               label=f"finding: one wrong feature fits one sample w.p. {per_feature} > 2/3 (enumerated)"),
    ])


@register("merlin.thm2.sample-size", source="MeRLin Thm 2 (proof)", kind="exact",
          statement="at n_t = max(⌈18 log(2/ξ)⌉, ⌈3 log(2k/ξ)⌉) the exact binomial tail P(≥ n_t/2 samples with "
                    "x₁ = 0) ≤ ξ/2 and (k − 1)·P(a wrong feature fits) ≤ ξ/2",
          strategy={"k": st.integers(2, 10 ** 6), "xi": st.floats(1e-6, 0.99)})
def _sample_size(case):
    k, xi = case.params["k"], case.params["xi"]
    n = M.merlin_sample_size(k, xi)
    half_zero = float(binom.sf(math.ceil(n / 2) - 1, n, 1 / 3))
    wrong = (k - 1) * M.wrong_feature_fit_probability(n)
    need = max(18 * math.log(2 / xi), 3 * math.log(2 * k / xi))
    # both sides: the tails hold by a wide margin one sample below the formula, so they do not pin n down
    return combine([holds(half_zero <= xi / 2, label=f"n={n}: P(≥ half zeros) = {half_zero:.3g} ≤ ξ/2"),
                    holds(wrong <= xi / 2, label=f"(k−1)·P(fit) = {wrong:.3g} ≤ ξ/2"),
                    holds(n - 1 < need <= n, label=f"n = ⌈max(18 log(2/ξ), 3 log(2k/ξ))⌉ = ⌈{need:.6g}⌉")])


@register("merlin.thm2.any-wrong-fit", source="MeRLin Thm 2 (proof: union bound k(2/3)ⁿ)", kind="monte-carlo",
          statement="P(some wrong feature e_j, 2 ≤ j ≤ k, fits n target samples) has the exact form "
                    "any_wrong_feature_fit_probability(n, k) (Monte Carlo over the target sampler), and stays "
                    "below the paper's union bound k(2/3)ⁿ even at n = 1",
          strategy={"n": st.integers(1, 10), "k": st.integers(2, 12)})
def _any_wrong_fit(case):
    n, k = case.params["n"], case.params["k"]
    draws = 10 * case.profile.mc_reps
    x, _ = M.sample_target(n * draws, k, case.rng)
    x2 = x.reshape(draws, n, k) ** 2
    any_fit = np.zeros(draws, bool)
    for j in range(1, k):
        any_fit |= _fits_exactly(x2[..., j], x2[..., 0])
    exact = M.any_wrong_feature_fit_probability(n, k)
    return combine([mc_agreement(any_fit.astype(float), exact, label=f"MC n={n}, k={k}"),
                    within(M.any_wrong_feature_fit_probability(n, 2), M.wrong_feature_fit_probability(n),
                           ROUNDING, label="k = 2 is one wrong feature"),
                    holds(exact <= M.any_wrong_feature_fit_bound(n, k), label=f"{exact:.4g} ≤ k(2/3)ⁿ")])


@register("merlin.lemma2.joint-construction", source="MeRLin Lemma 2, Eq. 26", kind="exact",
          statement="the Lemma 2 solution fits the n_t target samples exactly and its joint objective "
                    "(1 − α)L_Ds + λ(‖θ_s‖² + ‖θ_t‖² + ‖φ‖²_F) equals Eq. 26 with ‖φ̂_t‖ of the min-norm feature",
          strategy={"lam": st.floats(0.01, 1.0), "alpha": st.floats(0.0, 1.0), "n": st.integers(1, 8),
                    "d": st.integers(10, 24), "k": st.integers(2, 4)})
def _joint_construction(case):
    p = case.params
    x, y = M.sample_target(p["n"], p["d"], case.rng)
    feature = np.linalg.pinv(x) @ x[:, 0]  # min-norm φ̂_t with Xφ̂_t = Xe₁ (always solvable: e₁ is a solution)
    theta_s, theta_t, phi = M.joint_training_construction(p["lam"], p["alpha"], feature)
    fitted = ((x @ phi) ** 2) @ theta_t
    joint = ((1 - p["alpha"]) * M.source_loss(theta_s, phi, p["k"])
             + p["lam"] * (theta_s @ theta_s + theta_t @ theta_t + (phi ** 2).sum()))
    value = M.joint_training_construction_value(p["lam"], p["alpha"], np.linalg.norm(feature))
    return combine([within(np.abs(fitted - y).max(), 0.0, 1e-9, label="empirical target residual"),
                    within(joint, value, 1e-12 * (1 + value), label="joint objective vs Eq. 26")])
