r"""MeRLin §5 by training: target loss of the four algorithms against n_t, and MeRLin's success probability.

Model (MeRLin §5, docs/merlin.md): f(x) = θᵀ(φᵀx)², source law with k label-carrying coordinates, target
y = x₁²; every algorithm trained by gradient flow (:func:`transfertheory.sim.quadratic.run_comparison`).
Panels:

(a) the exact target population loss (mean ± SE over seeds) of head-only fine-tuning, joint training,
    target-only training and MeRLin against n_t, with 10/27 (the loss of a head on a wrong feature, Thm 1);
(b) MeRLin's success frequency (target recovered: loss ≤ 1e-3 on feature e₁; ± binomial SE) against n_t,
    with the proof of Thm 2's union bound 1 − (k − 1)·P_wrong(n_t), P_wrong = (5/9)ⁿ + (1/3)ⁿ − (1/9)ⁿ, and the
    exact 1 − P(some wrong feature fits).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..sim.quadratic import run_comparison
from ..theory import merlin as M
from .output import FigureOutput, use_agg
from .registry import Figure, register

NAME = "merlin_fig"
ALGORITHMS = ("finetune", "joint", "target_only", "merlin")
COLUMNS = {
    "algorithm": "finetune (head-only), joint, target_only or merlin",
    "n_t": "target samples n_t",
    "seeds": "seeds (target sets) at this point",
    "loss_mean": "mean over seeds of the exact target population loss of the trained predictor",
    "loss_se": "standard error of loss_mean",
    "loss_median": "median over seeds of the target loss",
    "recovered": "fraction of seeds with target loss <= 1e-3 on feature e1",
    "top_coord_e1": "fraction of seeds whose learned φ puts most of its norm on coordinate 1",
    "restarts_needed_max": "largest index + 1 of the restart kept (restarts per seed in the JSON)",
    "converged": "seeds whose kept flow (and, for fine-tuning, the pre-training flow) converged",
}
SUCCESS_COLUMNS = {
    "n_t": "target samples n_t",
    "seeds": "seeds (target sets)",
    "success": "MeRLin's success frequency (target loss <= 1e-3 on feature e1)",
    "success_se": "binomial standard error of success",
    "union_bound": "1 − (k − 1)·P_wrong(n_t), P_wrong = (5/9)^n + (1/3)^n − (1/9)^n (proof of Thm 2)",
    "no_wrong_fit": "1 − P(some wrong feature fits all n_t samples), exact",
    "restarts_needed_max": "largest index + 1 of the restart kept",
    "converged": "seeds whose kept MeRLin flow converged",
}


def loss_table(df):
    """Panel (a)'s table from a :func:`run_comparison` frame (:data:`COLUMNS`)."""
    rows = []
    for (algorithm, n_t), part in df.groupby(["algorithm", "n_t"], sort=True):
        loss = part["target_loss"].to_numpy()
        rows.append(dict(algorithm=algorithm, n_t=n_t, seeds=len(part), loss_mean=loss.mean(),
                         loss_se=loss.std(ddof=1) / np.sqrt(len(loss)) if len(loss) > 1 else np.nan,
                         loss_median=np.median(loss), recovered=part["recovered"].mean(),
                         top_coord_e1=(part["top_coord"] == 1).mean(),
                         restarts_needed_max=int(part["restarts_needed"].max()), converged=int(part["converged"].sum())))
    return pd.DataFrame(rows, columns=list(COLUMNS))


def success_table(df, k):
    """Panel (b)'s table from a MeRLin-only :func:`run_comparison` frame (:data:`SUCCESS_COLUMNS`)."""
    rows = []
    for n_t, part in df.groupby("n_t", sort=True):
        p = part["recovered"].mean()
        rows.append(dict(n_t=n_t, seeds=len(part), success=p, success_se=np.sqrt(p * (1 - p) / len(part)),
                         union_bound=1 - (k - 1) * float(M.wrong_feature_fit_probability(n_t)),
                         no_wrong_fit=1 - M.any_wrong_feature_fit_probability(n_t, k),
                         restarts_needed_max=int(part["restarts_needed"].max()), converged=int(part["converged"].sum())))
    return pd.DataFrame(rows, columns=list(SUCCESS_COLUMNS))


def plot(losses, successes, k):
    use_agg()
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for algorithm, marker in zip(ALGORITHMS, "osd^"):
        part = losses[losses["algorithm"] == algorithm]
        axes[0].errorbar(part["n_t"], part["loss_mean"], yerr=part["loss_se"], fmt=marker + "-", capsize=2,
                         label=algorithm.replace("_", "-"))
    axes[0].axhline(M.FINETUNE_HEAD_MIN, color="k", ls=":", lw=0.8, label="10/27 (head on a wrong feature)")
    n_values = sorted(losses["n_t"].unique())
    axes[0].set(xscale="log", yscale="log", xlabel="target samples n_t", ylabel="target population loss",
                title="(a) target loss (mean ± SE over seeds)")
    axes[0].set_xticks(n_values, [str(n) for n in n_values])
    axes[0].minorticks_off()
    axes[0].legend(fontsize=8)
    axes[1].errorbar(successes["n_t"], successes["success"], yerr=successes["success_se"], fmt="o", capsize=2,
                     label="MeRLin (simulated)")
    axes[1].plot(successes["n_t"], successes["union_bound"], "-", label="1 − (k − 1)·P_wrong(n_t)")
    axes[1].plot(successes["n_t"], successes["no_wrong_fit"], "--", label="1 − P(some wrong feature fits)")
    axes[1].set(xlabel="target samples n_t", ylabel="success probability", ylim=(-0.05, 1.05),
                title=f"(b) MeRLin recovers e₁ (k = {k}, d = k + 1)")
    axes[1].legend(fontsize=8)
    fig.suptitle("MeRLin §5: quadratic network trained by gradient flow")
    fig.tight_layout()
    return fig


def build(d=12, k=3, m=2, lam=0.1, n_targets=(2, 4, 8, 16, 32), seeds=8, restarts=9, success_n=(2, 3, 4, 6, 8, 10),
          success_seeds=30, splits=4, seed=0, backend=None, progress=None):
    """Run both studies and draw the figure; a :class:`~transfertheory.figures.output.FigureOutput`."""
    comparison = run_comparison(d, m, k, list(n_targets), lam, seeds, algorithms=ALGORITHMS, restarts=restarts,
                                splits=splits, seed=seed, backend=backend, rtol=1e-4, gtol=1e-6)
    merlin_runs = run_comparison(k + 1, m, k, list(success_n), lam, success_seeds, algorithms=("merlin",),
                                 restarts=3 * k, splits=splits, seed=seed + 1, backend=backend, rtol=1e-4, gtol=1e-6)
    losses, successes = loss_table(comparison), success_table(merlin_runs, k)
    unconverged = int(len(comparison) + len(merlin_runs) - losses["converged"].sum() - successes["converged"].sum())
    summary = (f"MeRLin §5 by training: d = {d}, k = {k}, m = {m}, λ = {lam}, {seeds} seeds × {restarts} restarts",
               "mean target loss at the largest n_t: " + ", ".join(
                   f"{r.algorithm} {r.loss_mean:.3g}" for r in losses[losses["n_t"] == max(n_targets)].itertuples()),
               "MeRLin success vs 1 − (k − 1)P_wrong: " + ", ".join(
                   f"n={r.n_t}: {r.success:.2f}/{r.union_bound:.2f}" for r in successes.itertuples()),
               f"unconverged kept flows: {unconverged}")
    parameters = dict(d=d, k=k, m=m, lam=lam, n_targets=list(n_targets), seeds=seeds, restarts=restarts,
                      success_n=list(success_n), success_seeds=success_seeds, success_d=k + 1,
                      success_restarts=3 * k, splits=splits, seed=seed)
    return FigureOutput(plot(losses, successes, k), losses, COLUMNS, parameters, summary,
                        extra=(("_success", successes, SUCCESS_COLUMNS),), notes=dict(unconverged=unconverged))


FIGURE = register(Figure(
    name=NAME,
    title="MeRLin §5: target loss of fine-tuning, joint, target-only and MeRLin against n_t, and MeRLin's "
          "success probability",
    description="(a) Exact target population loss (mean ± SE over seeds) of the quadratic network trained by "
    "gradient flow with each algorithm (head-only fine-tuning after pre-training on the exact source loss, joint "
    "training, target-only, MeRLin with the ridge inner head), against n_t; (b) MeRLin's frequency of recovering "
    "the target feature against n_t, with Thm 2's union bound 1 − (k − 1)·P_wrong(n_t) and the exact probability "
    "that no wrong feature fits the target samples.",
    sources=("MeRLin Thm 1", "MeRLin Thm 2", "MeRLin §5"),
    build=build,
    profiles={"quick": dict(d=12, k=3, m=2, lam=0.1, n_targets=(2, 4, 8, 16, 32), seeds=8, restarts=9,
                            success_n=(2, 3, 4, 6, 8, 10), success_seeds=30),
              "paper": dict(d=32, k=3, m=3, lam=0.1, n_targets=(2, 4, 8, 16, 32, 64, 128), seeds=40, restarts=8,
                            success_n=(2, 3, 4, 5, 6, 8, 10, 12, 16), success_seeds=200)},
    extra_suffixes=("_success",),
))
