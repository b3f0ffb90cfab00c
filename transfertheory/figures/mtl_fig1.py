r"""MTL Fig. 1: the distance between the ANIL and MTL predictors against depth and against λτ (Theorem 1).

Setting (MTL §5.1): few-shot regression tasks of :func:`transfertheory.theory.mtl.synthetic_problem` — d = 10,
20 training tasks of 10 points, test tasks of 5 support and 10 query points, μ ~ N(0, I), ν ~ Unif(1.3, 1.6),
y = ν‖x − μ‖², inputs standardized to ‖x‖² = d. The predictors are the infinite-width ones of Lemma 1 (MTL
Eqs. 15–16; the network of :mod:`transfertheory.theory.ntk`, He initialization, L hidden ReLU layers) with one
adaptation length for training and test, λτ̂ = λτ. The point is the mean of ‖F_ANIL(X, X′, Y′) − F_MTL(X, X′, Y′)‖₂
over 20 test tasks × 5 runs (independent draws of the whole data set), as the paper averages; the error bar is
the SD over runs of the per-run mean.

Panels, each for both expressions of Φ′_ANIL — the derivation's (App. Eqs. 61, 66) and the Lemma statement's
(docs/mtl.md, erratum ``erratum-mtl-phi-prime-anil``): (a) against L at λτ = 0 (log–log, with the fitted exponent
over the deepest half of the depths; Theorem 1: O(1/L)); (b) against λτ at L = 10. The inner-loop λτ cancels from
Eq. 16 (docs/mtl.md, "The inner-loop length λτ cancels from F_ANIL"), so panel (b) varies with the test-time
λτ̂ = λτ only.

All test tasks of a data set are evaluated at once (:class:`~transfertheory.theory.mtl.TestTaskBatch`) and its
Grams computed once per depth (``benchmarks/bench_mtl_fig1.py``).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..theory import mtl as MTL
from .output import FigureOutput, use_agg
from .registry import Figure, register

NAME = "mtl_fig1"
COLUMNS = {
    "panel": "depth (λτ = 0, depth varied) or lam_tau (L = 10, λτ varied)",
    "depth": "hidden ReLU layers L",
    "lam_tau": "λτ = λτ̂ (inner-loop and test-time adaptation)",
    "variant": "Φ′_ANIL expression: derivation (App. Eqs. 61, 66) or statement (Lemma 1's text)",
    "gap_mean": "mean of ‖F_ANIL − F_MTL‖₂ over test tasks × runs",
    "gap_run_sd": "SD over runs of the per-run mean of ‖F_ANIL − F_MTL‖₂",
    "runs": "independent draws of the data set",
    "test_tasks": "test tasks per run",
}


def run_gaps(problem, depth, lam_tau, variants=MTL.ANIL_VARIANTS, grams=None):
    """{variant: array (test tasks,) of ‖F_ANIL − F_MTL‖₂} on one data set at depth L, λτ = λτ̂ = ``lam_tau``,
    every test task at once (:meth:`~transfertheory.theory.mtl.FewShotProblem.test_task_batch`); ``grams``: the
    (NNGP, NTK) Grams over ``problem.points()`` at this depth, computed here if None."""
    nngp, ntk = grams if grams is not None else MTL.ReluNetwork(int(depth)).kernels(problem.points())
    batch = problem.test_task_batch(nngp, ntk)
    support_labels = np.stack(problem.support_labels)
    f_mtl = MTL.mtl_predictions(batch, problem.labels, support_labels, lam_tau)
    return {variant: np.linalg.norm(MTL.anil_predictions(batch, problem.labels, support_labels, lam_tau, lam_tau,
                                                         variant) - f_mtl, axis=(1, 2))
            for variant in variants}


def _rows(per_run, panel, depth, lam_tau, variants):
    return [dict(panel=panel, depth=depth, lam_tau=lam_tau, variant=variant,
                 gap_mean=float(np.mean([g[variant] for g in per_run])),
                 gap_run_sd=float(np.std([g[variant].mean() for g in per_run], ddof=1)) if len(per_run) > 1 else 0.0,
                 runs=len(per_run), test_tasks=len(per_run[0][variant])) for variant in variants]


def gap_table(depths, lam_taus, runs=5, test_tasks=20, panel_depth=10, seed=0):
    """The figure's data (:data:`COLUMNS`), both Φ′_ANIL expressions (at λτ̂ = 0 they still differ, by
    K(X, 𝒳)): panel (a) over ``depths`` at λτ = 0, panel (b) over ``lam_taus`` at L = ``panel_depth``. The Grams
    of a data set are computed once per depth."""
    points = [(0.0, "depth", int(depth)) for depth in depths] + [(float(lt), "lam_tau", int(panel_depth))
                                                                for lt in lam_taus]
    per_run = {point: [] for point in points}
    for run in range(runs):
        problem = MTL.synthetic_problem(np.random.default_rng([seed, run]), test_tasks=test_tasks)
        for depth in sorted({depth for _, _, depth in points}):
            grams = MTL.ReluNetwork(depth).kernels(problem.points())
            for point in (p for p in points if p[2] == depth):
                per_run[point].append(run_gaps(problem, depth, point[0], MTL.ANIL_VARIANTS, grams))
    rows = [row for (lam_tau, panel, depth), gaps in per_run.items()
            for row in _rows(gaps, panel, depth, lam_tau, MTL.ANIL_VARIANTS)]
    return pd.DataFrame(rows, columns=list(COLUMNS))


def depth_exponent(table, variant="derivation"):
    """Least-squares slope of log gap against log L over the deepest half of panel (a), one Φ′_ANIL variant."""
    part = table[(table["panel"] == "depth") & (table["variant"] == variant)].sort_values("depth")
    part = part.iloc[len(part) // 2:]
    return float(np.polyfit(np.log(part["depth"]), np.log(part["gap_mean"]), 1)[0])


def plot(table):
    use_agg()
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for variant, marker in (("derivation", "o-"), ("statement", "s--")):
        depth = table[(table["panel"] == "depth") & (table["variant"] == variant)]
        axes[0].errorbar(depth["depth"], depth["gap_mean"], yerr=depth["gap_run_sd"], fmt=marker,
                         label=f"Φ′_ANIL: {variant} (deep half: L^{depth_exponent(table, variant):+.2f})")
    depth = table[(table["panel"] == "depth") & (table["variant"] == "derivation")]
    last = depth.iloc[-1]
    guide = last["gap_mean"] * last["depth"] / depth["depth"].to_numpy(float)
    axes[0].plot(depth["depth"], guide, "k:", lw=0.8, label="∝ 1/L")
    axes[0].set(xscale="log", yscale="log", xlabel="hidden layers L", ylabel="‖F_ANIL − F_MTL‖₂",
                title="(a) against depth, λτ = 0")
    axes[0].legend(fontsize=8)
    lam = table[table["panel"] == "lam_tau"]
    for variant, marker in (("derivation", "o-"), ("statement", "s--")):
        part = lam[lam["variant"] == variant]
        axes[1].errorbar(part["lam_tau"], part["gap_mean"], yerr=part["gap_run_sd"], fmt=marker,
                         label=f"Φ′_ANIL: {variant}")
    axes[1].set(xlabel="λτ = λτ̂", ylabel="‖F_ANIL − F_MTL‖₂",
                title=f"(b) against λτ, L = {int(lam['depth'].iloc[0])} (F_ANIL depends on λτ̂ only)")
    axes[1].legend(fontsize=8)
    runs, tests = int(table["runs"].iloc[0]), int(table["test_tasks"].iloc[0])
    fig.suptitle(f"MTL Fig. 1 (infinite width): mean over {tests} test tasks × {runs} runs, MTL §5.1 tasks")
    fig.tight_layout()
    return fig


def build(depths=(1, 2, 4, 8, 16, 32, 64), lam_taus=(0.0, 0.01, 0.03, 0.1, 0.2, 0.3, 0.5), runs=5, test_tasks=20,
          panel_depth=10, seed=0):
    """Compute the table and draw the figure; a :class:`~transfertheory.figures.output.FigureOutput`."""
    table = gap_table(depths, lam_taus, runs, test_tasks, panel_depth, seed)
    slopes = {v: depth_exponent(table, v) for v in MTL.ANIL_VARIANTS}
    lam = table[table["panel"] == "lam_tau"]
    ends = {v: lam[lam["variant"] == v]["gap_mean"].to_numpy()[[0, -1]] for v in MTL.ANIL_VARIANTS}
    summary = (f"MTL Fig. 1: depths {list(depths)}, λτ {list(lam_taus)}, {runs} runs × {test_tasks} test tasks",
               "(a) fitted exponent of the gap over the deepest half of the depths: derivation {:+.3f}, statement "
               "{:+.3f} (Thm 1: -1)".format(slopes["derivation"], slopes["statement"]),
               "(b) gap at λτ = {:g} → {:g}: derivation {:.3g} → {:.3g}, statement {:.3g} → {:.3g}".format(
                   lam_taus[0], lam_taus[-1], *ends["derivation"], *ends["statement"]))
    parameters = dict(depths=list(depths), lam_taus=list(lam_taus), runs=runs, test_tasks=test_tasks,
                      panel_depth=panel_depth, seed=seed)
    return FigureOutput(plot(table), table, COLUMNS, parameters, summary, notes=dict(depth_exponents=slopes))


FIGURE = register(Figure(
    name=NAME,
    title="MTL Fig. 1: ‖F_ANIL − F_MTL‖ of the infinite-width predictors against depth and against λτ",
    description="Mean over 20 test tasks × 5 runs of the MTL §5.1 few-shot regression tasks of the distance between "
    "the ANIL and MTL predictions of Lemma 1: (a) against the number of hidden layers L at λτ = 0 (log–log, "
    "Theorem 1's O(1/L)); (b) against λτ = λτ̂ at L = 10 with both expressions of Φ′_ANIL (the derivation's and "
    "the Lemma statement's).",
    sources=("MTL Fig. 1", "MTL Thm 1", "MTL Lemma 1", "MTL §5.1"),
    build=build,
    profiles={"quick": dict(depths=(1, 2, 4, 8, 16, 32, 64), lam_taus=(0.0, 0.01, 0.03, 0.1, 0.2, 0.3, 0.5),
                            runs=5, test_tasks=20),
              "paper": dict(depths=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024),
                            lam_taus=(0.0, 0.01, 0.02, 0.03, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5), runs=5, test_tasks=20)},
    simulates=False,
))
