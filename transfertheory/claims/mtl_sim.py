r"""MTL §4 (Lemma 1, Lemma 3; App. B.2–B.4) against finite-width networks: the deep ReLU kernels against random
networks, and Lemma 1's predictions against networks trained with MTL and ANIL (:mod:`transfertheory.sim.mtl`).

Finite-width networks (the independent computation of the NNGP and NTK): the network of
:mod:`transfertheory.theory.ntk` at width h, weights and biases N(0, 1), NTK parameterization, drawn and
differentiated by :mod:`transfertheory.sim.mtl.network` (explicit per-layer Jacobians, no autograd). For each
random network the checks use

* the readout Gram c²aᴸ(x)·aᴸ(x′) + b² = E[f(x)f(x′) | hidden layers] (the exact mean over the readout layer,
  so its mean over networks is E[f(x)f(x′)]; c = w_std/√h, aᴸ the last hidden activations);
* the empirical NTK Σ_l ⟨∂f(x)/∂θ_l, ∂f(x′)/∂θ_l⟩ = Σ_l (c_l²(δ_l(x)·δ_l(x′))(a_{l−1}(x)·a_{l−1}(x′)) +
  b²δ_l(x)·δ_l(x′)), δ_l = ∂f/∂z_l by backpropagation;
* the empirical multi-head Gram Φ̂_MTL: the shared-body part (NTK minus readout Gram) plus the readout Gram
  within a task only (each task its own head), whose mean is Φ_MTL (MTL App. Eq. 64).

At width h the means carry an O(depth/h) finite-width bias. The width grows with the number of networks R
(h = max(64, R)), so bias/SE ∝ depth/√R shrinks with the profile; measured at h = 64, depth 3, 300 networks:
every entry within |z| ≤ 1.4 of the infinite-width kernel, so at h ≥ 200 the bias is below 0.3 SE: no allowance.
Inputs: standard normal rows of random norms (the kernels take inputs as given).

Trained networks (:func:`transfertheory.sim.mtl.finite_width_study`, sizes of the named sweep ``mtl``): MTL and ANIL by
gradient flow from shared head draws, test predictions from the initial, the trained or a fresh head, compared with
the four infinite-width predictions; one study per profile serves the three training claims.
"""
from __future__ import annotations

import functools
import math

import numpy as np
from hypothesis import strategies as st

from ..sim.mtl import MATCHES, finite_width_study, random_network_kernels
from ..sim.mtl.network import NetworkShape, body_gram, forward, init_parameters
from ..sweep.named import named_profile
from ..theory import mtl as MTL
from .compare import agreement, mc_agreement, mean_se, not_above, significant, weighted_line
from .registry import CLARIFICATION, combine, register

# --------------------------------------------------------------------------- finite-width networks


_KERNEL_POINT = {"depth": st.integers(1, 3), "w_std": st.floats(1.0, 2.0), "b_std": st.floats(0.0, 0.5),
                 "d": st.integers(2, 6)}


def _finite_width(case, n=4, sample=random_network_kernels):
    """The point's network, n inputs of random norms, its infinite-width (K, Θ) there and ``sample`` of random
    finite-width networks there (default: their readout Grams and empirical NTKs)."""
    p, rng = case.params, case.rng
    network = MTL.ReluNetwork(p["depth"], p["w_std"], p["b_std"])
    x = rng.standard_normal((n, p["d"])) * rng.uniform(0.5, 2.0, (n, 1))
    reps = max(50, case.profile.mc_reps // 10)  # networks; their width h = max(64, R) (module docstring)
    return network, x, network.kernels(x), sample(network, x, max(64, reps), reps, rng)


def _entrywise(samples, reference, what, case):
    n = reference.shape[0]
    return combine(mc_agreement(samples[:, i, j], float(reference[i, j]), label=f"{what}[{i},{j}] {case.label}")
                   for i in range(n) for j in range(i, n))


@register("mtl.ntk.nngp-mc", source="MTL §4.3 (NNGP K), App. B.4", kind="monte-carlo", strategy=_KERNEL_POINT,
          statement="K(x, x′) of relu_kernels = E[f(x)f(x′)] over random finite-width ReLU networks (NTK "
                    "parameterization), entrywise within 4 SE")
def _nngp_mc(case):
    _, _, (nngp, _), (readout, _) = _finite_width(case)
    return _entrywise(readout, nngp, "K", case)


@register("mtl.ntk.ntk-mc", source="MTL §4.3 (NTK Θ), App. B.3 Eq. 55", kind="monte-carlo", strategy=_KERNEL_POINT,
          statement="Θ(x, x′) of relu_kernels = E⟨∂f(x)/∂θ, ∂f(x′)/∂θ⟩ over random finite-width networks "
                    "(explicit per-layer Jacobians), entrywise within 4 SE")
def _ntk_mc(case):
    _, _, (_, ntk), (_, samples) = _finite_width(case)
    return _entrywise(samples, ntk, "Θ", case)


@register("mtl.lemma3.phi-mtl-mc", source="MTL Lemma 3 (Φ_MTL), App. Eq. 64", kind="monte-carlo",
          strategy=_KERNEL_POINT,
          statement="Φ_MTL = Θ − K + blockdiag(K) is the mean Gram of the multi-head network's parameter gradients "
                    "(shared body, one readout head per task): two tasks of two points, entrywise within 4 SE")
def _phi_mtl_mc(case):
    network, x, _, (readout, ntk) = _finite_width(case)
    same_task = np.kron(np.eye(2), np.ones((2, 2)))
    samples = ntk - readout + readout * same_task
    tk = MTL.task_kernels(network, [x[:2], x[2:]])
    return _entrywise(samples, MTL.mtl_kernel(tk), "Φ_MTL", case)


def independent_head_cross_gram(network, x, width, networks, rng, correlation=0.0):
    """(R, n, n) body-gradient Gram ∇_body f_w(x)·∇_body f_w′(x′)ᵀ of R random networks, each with a second head
    w′ = ρw + √(1 − ρ²)ξ (ξ independent; ρ = ``correlation``, 0: an independent draw, 1: the same head)."""
    shape = NetworkShape(x.shape[1], int(width), network)
    body, head = init_parameters(shape, networks, rng)
    other = correlation * head + math.sqrt(1 - correlation**2) * rng.standard_normal(head.shape)
    fwd, c = forward(shape, body, x), shape.readout_scale
    return body_gram(shape, body, fwd, c * head[:, None, :-1], fwd, c * other[:, None, :-1])


@register("mtl.lemma3.independent-heads-mc", source="MTL Lemma 3 (App. Eq. 63, footnote 12), §3.4", kind="monte-carlo",
          strategy=_KERNEL_POINT,
          statement="the off-diagonal blocks Θ − K of Φ_MTL (and App. Eq. 62) need heads from one draw: for two "
                    "independently drawn heads w, w′ the mean body-gradient Gram ∇_body f_w·∇_body f_w′ᵀ over random "
                    "networks is 0 (entrywise within 4 SE) and differs from Θ − K (diagonal entries by > 4 SE)")
def _independent_heads_mc(case):
    _, x, (nngp, ntk), samples = _finite_width(case, 3, independent_head_cross_gram)
    body = ntk - nngp
    results = [_entrywise(samples, np.zeros_like(body), "independent heads' cross Gram", case)]
    for i in range(len(x)):
        mean, se = mean_se(samples[:, i, i])
        results.append(significant(mean - body[i, i], se, two_sided=True,
                                   label=f"mean − (Θ − K)[{i},{i}] (mean {mean:.3g}, Θ − K {body[i, i]:.3g})"))
    return combine(results)


#: the widths of the two rate claims below; the networks per width ∝ 1/h (:func:`_width_ladder`)
RATE_WIDTHS = np.array([32, 64, 128, 256, 512])


def _width_ladder(case, network, x, networks, statistics):
    """Per width h of RATE_WIDTHS, ``networks``·32/h random networks (:func:`random_network_kernels`, so the cost
    per width ∝ h: the narrow widths fix the 1/h term of the fit, the wide ones the exponent) and, for each name of
    ``statistics`` (name → function (K̂, Θ̂) → per-network positive samples), the log of the samples' mean and its
    SE by the delta method. Returns (logs, SEs, the networks per width), each a dict name → list over widths."""
    logs, ses = {name: [] for name in statistics}, {name: [] for name in statistics}
    counts = [networks * 32 // int(h) for h in RATE_WIDTHS]
    for h, count in zip(RATE_WIDTHS, counts):
        samples = random_network_kernels(network, x, int(h), count, case.rng)
        for name, statistic in statistics.items():
            mean, se = mean_se(statistic(*samples))
            logs[name].append(math.log(mean))
            ses[name].append(se / mean)
    return logs, ses, counts


def fitted_exponent(widths, log_values, se, correction=False):
    """(slope, SE) of the weighted least-squares line through (log width, log value), SEs of the log values;
    ``correction``: the fit is log value = c + s·log h + b/h, the 1/h term the first correction to a power law."""
    coef, cov = weighted_line(np.log(widths), log_values, se, *([1 / np.asarray(widths, dtype=float)] if correction
                                                                else []))
    return float(coef[0]), math.sqrt(cov[0, 0])


def _rate_check(widths, log_values, se, what, counts):
    slope, slope_se = fitted_exponent(widths, log_values, se, correction=True)
    return agreement(slope, slope_se, -0.5, label=f"fitted exponent s of log {what} = c + s·log h + b/h over h = "
                                                  f"{widths[0]}…{widths[-1]} ({counts[0]}…{counts[-1]} networks)")


@register("mtl.ntk.fluctuation-rate", source="MTL App. B.4 (Lemma 1's O(1/√h) finite-width error)",
          kind="monte-carlo",
          statement="the empirical NTK's fluctuation over random networks decays like h^(−1/2): with sd² = "
                    "Σ_{i≤j} Var Θ̂(xᵢ, xⱼ) over 8 inputs (depth 2, d = 10) at h = 32, 64, …, 512, the exponent s of "
                    "the weighted fit log sd = c + s·log h + b/h (b/h: the O(1/h) correction of the variance, Hanin & "
                    "Nica 2020) is −1/2 within 4 SE, no allowance")
def _fluctuation_rate(case):
    x = MTL.standardize_inputs(case.rng.standard_normal((8, 10)))

    rows, columns = np.triu_indices(len(x))

    def squared_deviation(_, ntk):  # per network Σ_{i≤j}(Θ̂ᵢⱼ − mean)²·R/(R − 1): their mean is sd², unbiased
        return ((ntk - ntk.mean(axis=0))[:, rows, columns] ** 2).sum(axis=1) * len(ntk) / (len(ntk) - 1)

    logs, ses, counts = _width_ladder(case, MTL.ReluNetwork(2), x, 2 * case.profile.mc_reps,
                                      {"sd": squared_deviation})
    return _rate_check(RATE_WIDTHS, np.array(logs["sd"]) / 2, np.array(ses["sd"]) / 2, "sd(Θ̂)", counts)


@register("mtl.ntk.width-rate", source="MTL App. B.3.1 (Lemma 1's O(1/√h) kernel error; Hanin & Nica 2020)",
          kind="monte-carlo",
          statement="the empirical kernels of random finite-width networks (explicit per-layer Jacobians) converge "
                    "to relu_kernels like h^(−1/2): for the mean relative Frobenius distances ‖K̂ − K‖/‖K‖ and "
                    "‖Θ̂ − Θ‖/‖Θ‖ over networks (depth 3, 8 inputs, d = 10, h = 32, 64, …, 512) the exponent s of the "
                    "weighted fit log distance = c + s·log h + b/h (b/h: the O(1/h) bias and variance corrections) "
                    "is −1/2 within 4 SE, no allowance")
def _width_rate(case):
    network = MTL.ReluNetwork(3)
    x = MTL.standardize_inputs(case.rng.standard_normal((8, 10)))
    nngp, ntk = network.kernels(x)
    logs, ses, counts = _width_ladder(case, network, x, case.profile.mc_reps, {
        "K": lambda k, _: np.linalg.norm(k - nngp, axis=(1, 2)) / np.linalg.norm(nngp),
        "Θ": lambda _, t: np.linalg.norm(t - ntk, axis=(1, 2)) / np.linalg.norm(ntk)})
    return combine(_rate_check(RATE_WIDTHS, logs[name], ses[name], f"mean ‖{name}̂ − {name}‖/‖{name}‖", counts)
                   for name in ("K", "Θ"))


# --------------------------------------------------------------------------- trained finite-width networks (Lemma 1)

#: the three training claims share the study (:func:`_training_study`, cached): the registry's ``shares``
TRAINING_STUDY_NAME = "mtl.training-study"
_TRAINING = dict(kind="simulation", shares=TRAINING_STUDY_NAME)


@functools.lru_cache(maxsize=3)
def _training_study(profile_name):
    """The table of :func:`transfertheory.sim.mtl.finite_width_study` at a profile's sizes (computed once): the
    hidden layers, widths, networks per width, ANIL's λτ and the test-time λτ̂ of the named sweep ``mtl``
    (:mod:`transfertheory.sweep.named`; its CPU time: docs/benchmarks.md, "Claims"), on 4 training tasks of 5 points
    and one test task of 5 support and 5 query points of MTL §5.1, d = 10."""
    p = named_profile("mtl", profile_name)
    problem = MTL.synthetic_problem(np.random.default_rng(5), tasks=4, n=5, test_tasks=1, n_support=5, n_query=5)
    return finite_width_study(problem, MTL.ReluNetwork(p["depth"]), p["width"], p["draws"],
                              lam_tau=p["lam_tau"], lam_tau_hat=p["lam_tau_hat"], seed=1)


def _converged_study(profile_name):
    """The profile's training study, or a RuntimeError (status ERROR) naming every network that did not converge.

    The three training claims compare converged networks with Lemma 1's limits: an unconverged network would be
    judged on where its flow stopped, not on where it goes, so none of them passes, fails or shows an erratum on one.
    """
    table = _training_study(profile_name)
    unconverged = table[~table["converged"].astype(bool)]
    if len(unconverged):
        runs = unconverged.drop_duplicates(["method", "width", "draw"])
        listed = ", ".join(f"{r.method} h={r.width} #{r.draw} ({r.status}, ‖∇L‖ {r.grad_norm:.2g})"
                           for r in runs.itertuples())
        raise RuntimeError(f"{len(runs)} trained network(s) did not converge: {listed}")
    return table


@register("mtl.lemma1.trained-width-rate", source="MTL Lemma 1 (Eqs. 15–16, O(1/√h)); App. B.2 Lemma 2", **_TRAINING,
          statement="finite-width networks trained by gradient flow (MTL; ANIL with its inner loop on the head; "
                    "explicit gradients, the package integrator) approach Lemma 1's predictions on a test task: the "
                    "mean relative distance to the prediction the derivation matches to the protocol (MTL: Eq. 15; "
                    "ANIL, test head from the initial draw: Φ′_ANIL of Eqs. 61/66; from the trained head: Φ′_ANIL of "
                    "the Lemma statement; a fresh head: G_τ̂ alone), fitted as a + b·h^(−1/2) over the widths "
                    "(weighted by the SEs of the means), has a limit a not above 0 by more than 4 SE (one-sided: a "
                    "distance cannot have a negative limit; a < 0 is the faster O(1/h) decay at small h)")
def _trained_width_rate(case):
    table, p = _converged_study(case.profile.name), named_profile("mtl", case.profile.name)
    study = f"depth {p['depth']}, λτ = {p['lam_tau']:g}, λτ̂ = {p['lam_tau_hat']:g}, {p['draws']} networks per width"
    results = []
    for (method, head), part in table[table["matched"]].groupby(["method", "test_head"]):
        stats = part.groupby("width")["distance"].agg(["mean", "std", "count"])
        widths = stats.index.to_numpy(float)
        coef, cov = weighted_line(widths ** -0.5, stats["mean"], stats["std"] / np.sqrt(stats["count"]))
        slope, _ = fitted_exponent(widths, np.log(stats["mean"]), stats["std"] / np.sqrt(stats["count"]) / stats["mean"])
        # one-sided: a distance cannot have a negative limit; a negative fitted a is the curvature of the O(1/h)
        # corrections (decay faster than h^−½ over the widths), a positive one a wrong limit
        limit, se = float(coef[1]), math.sqrt(cov[1, 1])
        results.append(not_above(limit, se, label=f"{method}, test head {head} → {MATCHES[(method, head)]}: limit a of "
                                                  f"the mean distance ≈ a + b·h^−½ (b = {coef[0]:.3g}; means "
                                                  f"{np.round(stats['mean'].to_numpy(), 4).tolist()} at h = "
                                                  f"{stats.index.tolist()}, log-log exponent {slope:.2f}; {study}): "
                                                  f"a = {limit:.3g} ± {se:.2g}"))
    return combine(results)


def _paired_distances(case, selected, column, comparisons):
    """At the largest width, among the study's networks with ``selected`` = (column, value): per (value of ``column``,
    right, wrong, what) of ``comparisons``, the paired distance to the ``wrong`` reference exceeds the distance to the
    ``right`` one by > 4 SE."""
    table = _converged_study(case.profile.name)
    top = table[(table[selected[0]] == selected[1]) & (table["width"] == table["width"].max())]
    results = []
    for value, right, wrong, what in comparisons:
        part = top[top[column] == value].pivot(index="draw", columns="reference", values="distance")
        mean, se = mean_se(part[wrong] - part[right])
        results.append(significant(mean, se, label=f"{what} = {mean:.4f} ± {se:.2g} (h = {int(top['width'].max())}, "
                                                   f"distances {part[right].mean():.4f} vs {part[wrong].mean():.4f})"))
    return combine(results)


@register("mtl.lemma1.phi-prime-anil-trained", source="MTL Lemma 1 / Lemma 3 vs App. Eqs. 61, 62, 66", **_TRAINING,
          statement="which Φ′_ANIL trained ANIL networks follow depends on the test head's start: from the shared "
                    "initial draw (the derivation's Eq. 62) they follow Φ′_MTL·D (App. Eqs. 61/66), from ANIL's "
                    "outer-loop-trained head the Lemma statement's [Θ − K T Θ]·D; at the largest width the paired "
                    "per-network distance to the other expression exceeds the distance to the matching one by > 4 SE")
def _phi_prime_anil_trained(case):
    return _paired_distances(case, ("method", "anil"), "test_head", [
        (head, right, wrong, f"test head {head}: distance to {wrong} − distance to {right}")
        for head, right, wrong in (("initial", "derivation", "statement"), ("trained", "statement", "derivation"))])


@register("mtl.lemma1.fresh-test-head", source="MTL §3.4 (Eqs. 6–9) with Lemma 1 (Eqs. 15–16), App. Eq. 62",
          erratum="erratum-mtl-fresh-test-head", category=CLARIFICATION, **_TRAINING,
          statement="MTL: a randomly initialized test head appended to the trained body and fine-tuned on the support "
                    "set gives F = G_τ̂ + Φ′Φ⁻¹(…) (Lemma 1). With a head drawn independently of the training heads, "
                    "its body gradients are uncorrelated with theirs (Σ_k w_k w′_k/h → 0), the Φ′ terms vanish and "
                    "trained networks approach G_τ̂ alone: at the largest width the paired distance to Lemma 1's F "
                    "exceeds the distance to G_τ̂ by > 4 SE (MTL: F_MTL; ANIL: both Φ′_ANIL)")
def _fresh_test_head(case):
    return _paired_distances(case, ("test_head", "fresh"), "method", [
        (method, "adaptation", lemma, f"{method}, fresh test head: distance to Lemma 1 ({lemma}) − distance to G_τ̂")
        for method, lemma in (("mtl", "mtl"), ("anil", "derivation"), ("anil", "statement"))])
