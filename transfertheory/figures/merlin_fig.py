r"""MeRLin §5 by training: target loss of the four algorithms against n_t, and MeRLin's success probability.

Model (MeRLin §5, docs/merlin.md): f(x) = θᵀ(φᵀx)², source law with k label-carrying coordinates, target
y = x₁²; every algorithm trained by gradient flow (:func:`transfertheory.sim.merlin.run_comparison`).
Panels:

(a) the exact target population loss of head-only fine-tuning, joint training, target-only training and MeRLin
    against n_t, with 10/27 (the loss of a head on a wrong feature, Thm 1): each seed's loss (a short tick: the
    losses are bimodal, recovered ≈ 1e-4 or failed ≈ 0.1–0.6) and their mean with its 68 % percentile bootstrap
    interval (:func:`~transfertheory.sim.statistics.bootstrap_mean_interval`; positive, so a log axis draws it);
(b) MeRLin's success frequency (target recovered: loss ≤ 1e-3 on feature e₁; 68 % Wilson interval) against n_t,
    with the proof of Thm 2's union bound 1 − (k − 1)·P_wrong(n_t), P_wrong = (5/9)ⁿ + (1/3)ⁿ − (1/9)ⁿ, and the
    exact 1 − P(some wrong feature fits).

Only converged kept flows enter the points; the figure states how many converged, to which gradient norm. The
tables are :mod:`transfertheory.sim.merlin.experiment`'s.
"""
from __future__ import annotations

import numpy as np

from ..sim.merlin import MERLIN_RIDGE, MERLIN_SPLITS, STUDY_TOLERANCES, merlin_restarts, run_comparison
from ..sim.merlin.experiment import LOSS_COLUMNS, SUCCESS_COLUMNS, loss_table, success_table
from ..sweep.named import named_profile
from ..theory import merlin as M
from .marks import left_out_text, legend_below, title_with_footnote
from .output import FigureOutput, subplots
from .registry import Figure, register

NAME = "merlin_fig"
ALGORITHMS = ("finetune", "joint", "target_only", "merlin")


def _interval(mid, low, high):
    """Matplotlib's asymmetric ``yerr`` for an interval [low, high] around ``mid``."""
    return np.vstack([mid - low, high - mid])


#: horizontal offset factor between the algorithms' markers on panel (a)'s log n_t axis
_DODGE = 1.07


def plot(losses, successes, k, seed_losses, convergence):
    """Draw both panels; ``seed_losses``: the converged rows (algorithm, n_t, target_loss) behind panel (a),
    ``convergence``: the line stating how many runs converged."""
    fig, axes = subplots(1, 2, figsize=(11, 5.4))
    for i, (algorithm, marker) in enumerate(zip(ALGORITHMS, "osd^")):
        shift = _DODGE ** (i - (len(ALGORITHMS) - 1) / 2)
        seeds = seed_losses[seed_losses["algorithm"] == algorithm]
        part = losses[losses["algorithm"] == algorithm]
        line = axes[0].errorbar(part["n_t"] * shift, part["loss_mean"],
                                yerr=_interval(part["loss_mean"], part["loss_low"], part["loss_high"]),
                                fmt=marker + "-", capsize=2, label=algorithm.replace("_", "-"), zorder=3)
        axes[0].plot(seeds["n_t"] * shift, seeds["target_loss"], "_", ms=7, alpha=0.6,
                     color=line.lines[0].get_color(), zorder=4)  # a tick per seed, visible across the bar
    axes[0].axhline(M.FINETUNE_HEAD_MIN, color="k", ls=":", lw=0.8, label="10/27 (head on a wrong feature)")
    n_values = sorted(losses["n_t"].unique())
    axes[0].set(xscale="log", yscale="log", xlabel="target samples n_t", ylabel="target population loss",
                title="(a) target loss: mean (68 % bootstrap) and each seed (ticks)")
    axes[0].set_xticks(n_values, [str(n) for n in n_values])
    axes[0].minorticks_off()
    legend_below(axes[0], ncol=2, fontsize=7, frameon=False)
    axes[1].errorbar(successes["n_t"], successes["success"],
                     yerr=_interval(successes["success"], successes["success_low"], successes["success_high"]),
                     fmt="o", capsize=2, label="MeRLin (simulated, 68 % Wilson)")
    axes[1].plot(successes["n_t"], successes["union_bound"], "-", label="1 − (k − 1)·P_wrong(n_t)")
    axes[1].plot(successes["n_t"], successes["no_wrong_fit"], "--", label="1 − P(some wrong feature fits)")
    axes[1].set(xlabel="target samples n_t", ylabel="success probability", ylim=(-0.05, 1.05),
                title=f"(b) MeRLin recovers e₁ (k = {k}, d = k + 1)")
    legend_below(axes[1], ncol=2, fontsize=7, frameon=False)
    title_with_footnote(fig, "MeRLin §5: quadratic network trained by gradient flow", convergence)
    return fig


def build(d=12, k=3, m=2, lam=0.1, n_targets=(2, 4, 8, 16, 32), draws=8, restarts=9, success_n=(2, 3, 4, 6, 8, 10),
          success_draws=30, splits=MERLIN_SPLITS, seed=0, backend=None, progress=None,
          rtol=STUDY_TOLERANCES["rtol"], gtol=STUDY_TOLERANCES["gtol"]):
    """Run both studies and draw the figure; a :class:`~transfertheory.figures.output.FigureOutput`.

    MeRLin's inner ridge, its restarts in the success study and the tolerances ``rtol, gtol`` are those of the
    claims (:data:`~transfertheory.sim.merlin.MERLIN_RIDGE`, :func:`~transfertheory.sim.merlin.merlin_restarts`,
    :data:`~transfertheory.sim.merlin.STUDY_TOLERANCES`)."""
    tolerances = dict(rtol=rtol, gtol=gtol)
    comparison = run_comparison(d, m, k, list(n_targets), lam, draws, algorithms=ALGORITHMS, restarts=restarts,
                                splits=splits, seed=seed, backend=backend, flow=tolerances)
    merlin_runs = run_comparison(k + 1, m, k, list(success_n), lam, success_draws, algorithms=("merlin",),
                                 restarts=merlin_restarts(k), splits=splits, seed=seed + 1, backend=backend,
                                 flow=tolerances)
    losses, successes = loss_table(comparison), success_table(merlin_runs, k)
    runs = len(comparison) + len(merlin_runs)
    converged = int(losses["converged"].sum() + successes["converged"].sum())
    unconverged = runs - converged
    gtol = comparison.attrs["flow"]["gtol"]
    convergence = left_out_text("kept flows", converged, runs, f"final ‖∇ objective‖ ≤ {gtol:g}")
    summary = (f"MeRLin §5 by training: d = {d}, k = {k}, m = {m}, λ = {lam}, {draws} draws (target sets) × {restarts} restarts",
               "mean target loss at the largest n_t: " + ", ".join(
                   f"{r.algorithm} {r.loss_mean:.3g}" for r in losses[losses["n_t"] == max(n_targets)].itertuples()),
               "MeRLin success vs 1 − (k − 1)P_wrong: " + ", ".join(
                   f"n={r.n_t}: {r.success:.2f}/{r.union_bound:.2f}" for r in successes.itertuples()),
               convergence)
    parameters = dict(d=d, k=k, m=m, lam=lam, n_targets=list(n_targets), draws=draws, restarts=restarts,
                      success_n=list(success_n), success_draws=success_draws, success_d=k + 1,
                      success_restarts=merlin_restarts(k), splits=splits, ridge=MERLIN_RIDGE, seed=seed, **tolerances)
    seed_losses = comparison.loc[comparison["converged"].astype(bool), ["algorithm", "n_t", "target_loss"]]
    return FigureOutput(plot(losses, successes, k, seed_losses, convergence), losses, LOSS_COLUMNS, parameters, summary,
                        extra=(("_success", successes, SUCCESS_COLUMNS),), notes=dict(unconverged=unconverged))


def _sizes(profile, **success):
    """The figure's sizes at ``profile``: panel (a)'s are the named sweep ``merlin``'s
    (:mod:`transfertheory.sweep.named`, where they are declared), the success study's (``success``) its own."""
    s = named_profile("merlin", profile)
    return dict(d=s["d"], k=s["k"], m=s["m"], lam=s["lam"], n_targets=tuple(s["n_t"]), draws=s["draws"],
                restarts=s["restarts"], **success)


FIGURE = register(Figure(
    name=NAME,
    title="MeRLin §5: target loss of fine-tuning, joint, target-only and MeRLin against n_t, and MeRLin's "
          "success probability",
    description="(a) Exact target population loss (each seed, and the mean with its 68 % bootstrap interval) of "
    "the quadratic network trained by gradient flow with each algorithm (head-only fine-tuning after pre-training "
    "on the exact source loss, joint training, target-only, MeRLin with the ridge inner head), against n_t; (b) "
    "MeRLin's frequency of recovering the target feature (68 % Wilson interval) against n_t, with Thm 2's union "
    "bound 1 − (k − 1)·P_wrong(n_t) and the exact probability that no wrong feature fits the target samples.",
    sources=("MeRLin Thm 1", "MeRLin Thm 2", "MeRLin §5"),
    build=build,
    profiles={"quick": _sizes("quick", success_n=(2, 3, 4, 6, 8, 10), success_draws=30),
              "paper": _sizes("paper", success_n=(2, 3, 4, 5, 6, 8, 10, 12, 16), success_draws=200)},
    paper_sizes="MeRLin §5 is theory only (Thms 1–2 state n_t ≤ cd and n_t > Θ(log k/ξ) with unspecified "
    "constants; the paper simulates nothing of it): the paper profile is the package's own larger size (d = 32, "
    "m = 3, k = 3, n_t to 128, 40 seeds; 200 seeds for the success probability)",
    gpu_pays=False,  # networks of d ≤ 32: launch-bound, CuPy ~10x slower than NumPy on an H200 (docs/benchmarks.md)
))
