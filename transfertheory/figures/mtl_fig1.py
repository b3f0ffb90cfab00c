r"""MTL Fig. 1: the distance between the ANIL and MTL predictors against depth and against λτ (Theorem 1).

Setting (MTL §5.1): few-shot regression tasks of :func:`transfertheory.theory.mtl.synthetic_problem` — d = 10,
20 training tasks of 10 points, test tasks of 5 support and 10 query points, μ ~ N(0, I), ν ~ Unif(1.3, 1.6),
y = ν‖x − μ‖², inputs standardized to ‖x‖² = d. The predictors are the infinite-width ones of Lemma 1 (MTL
Eqs. 15–16; the network of :mod:`transfertheory.theory.ntk`, He initialization, L hidden ReLU layers). Two
adaptation lengths enter: λτ, of ANIL's inner loop during training, and λτ̂, of the test head on the support
set. The point is the mean of ‖F_ANIL(X, X′, Y′) − F_MTL(X, X′, Y′)‖₂ over 20 test tasks × 5 runs (independent
draws of the whole data set), as the paper averages; the error bar is the SD over runs of the per-run mean.

Panels, as in the paper's three (its caption: L varied at λτ = 0, then λτ varied "in the two figures" at L = 10;
it does not say what tells those two apart, so they are the two ways λτ enters), each for both expressions of
Φ′_ANIL — the derivation's (App. Eqs. 61, 66) and the Lemma statement's (docs/mtl.md, erratum
``erratum-mtl-phi-prime-anil``):

(a) against L at λτ = λτ̂ = 0 (log–log, with the fitted exponent over the deepest half of the depths; Theorem 1:
    O(1/L));
(b) against the training λτ at a fixed test-time λτ̂ (:data:`FIXED_LAM_TAU_HAT`), L = 10, F_ANIL by Eq. 16 as
    written (:func:`~transfertheory.theory.mtl.literal_anil_predictions`, a dense solve with Φ_ANIL = DΘD): flat,
    because λτ cancels from Eq. 16 (docs/mtl.md, "The inner-loop length λτ cancels from F_ANIL");
(c) against λτ = λτ̂ at L = 10: the gap falls as λτ grows, where the paper's figure shows it rising (erratum
    ``erratum-mtl-fig1-lam-tau``); the figure says so on the panel.

All test tasks of a data set are evaluated at once (:class:`~transfertheory.theory.mtl.TestTaskBatch`) and its
Grams at all depths taken from one kernel recursion
(:func:`~transfertheory.theory.ntk.relu_kernels_at_depths`; ``benchmarks/bench_mtl_fig1.py``).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..theory import mtl as MTL
from ..theory.ntk import relu_kernels_at_depths
from .marks import legend_outside
from .output import FigureOutput, subplots
from .registry import Figure, register

NAME = "mtl_fig1"
#: the test-time λτ̂ of panel (b), where the training λτ varies (the value of the erratum's check)
FIXED_LAM_TAU_HAT = 0.1
COLUMNS = {
    "panel": "depth (L varied, λτ = λτ̂ = 0), inner_lam_tau (training λτ varied, λτ̂ fixed, Eq. 16 as written) or "
             "lam_tau (λτ = λτ̂ varied)",
    "depth": "hidden ReLU layers L",
    "lam_tau": "λτ: ANIL's inner-loop adaptation during training",
    "lam_tau_hat": "λτ̂: adaptation of the test head on the support set",
    "variant": "Φ′_ANIL expression: derivation (App. Eqs. 61, 66) or statement (Lemma 1's text)",
    "gap_mean": "mean of ‖F_ANIL − F_MTL‖₂ over test tasks × runs",
    "gap_run_sd": "SD over runs of the per-run mean of ‖F_ANIL − F_MTL‖₂",
    "runs": "independent draws of the data set",
    "test_tasks": "test tasks per run",
}


def run_gaps(problem, depth, lam_tau, variants=MTL.ANIL_VARIANTS, grams=None, lam_tau_hat=None, literal=False):
    """{variant: array (test tasks,) of ‖F_ANIL − F_MTL‖₂} on one data set at depth L, training λτ = ``lam_tau``
    and test-time λτ̂ = ``lam_tau_hat`` (None: λτ̂ = λτ), every test task at once
    (:meth:`~transfertheory.theory.mtl.FewShotProblem.test_task_batch`); ``grams``: the (NNGP, NTK) Grams over
    ``problem.points()`` at this depth, computed here if None; ``literal``: F_ANIL by Eq. 16 as written
    (:func:`~transfertheory.theory.mtl.literal_anil_predictions`) instead of its cancelled form."""
    lam_tau_hat = lam_tau if lam_tau_hat is None else lam_tau_hat
    nngp, ntk = grams if grams is not None else MTL.ReluNetwork(int(depth)).kernels(problem.points())
    batch = problem.test_task_batch(nngp, ntk)
    support_labels = np.stack(problem.support_labels)
    f_mtl = MTL.mtl_predictions(batch, problem.labels, support_labels, lam_tau_hat)
    anil = MTL.literal_anil_predictions if literal else MTL.anil_predictions
    return {variant: np.linalg.norm(anil(batch, problem.labels, support_labels, lam_tau, lam_tau_hat, variant) - f_mtl,
                                    axis=(1, 2))
            for variant in variants}


def _rows(per_run, point, variants):
    panel, depth, lam_tau, lam_tau_hat = point
    return [dict(panel=panel, depth=depth, lam_tau=lam_tau, lam_tau_hat=lam_tau_hat, variant=variant,
                 gap_mean=float(np.mean([g[variant] for g in per_run])),
                 gap_run_sd=float(np.std([g[variant].mean() for g in per_run], ddof=1)) if len(per_run) > 1 else 0.0,
                 runs=len(per_run), test_tasks=len(per_run[0][variant])) for variant in variants]


def _points(depths, lam_taus, panel_depth):
    """(panel, depth, λτ, λτ̂) of every point of the three panels."""
    return ([("depth", int(depth), 0.0, 0.0) for depth in depths]
            + [("inner_lam_tau", int(panel_depth), float(lt), FIXED_LAM_TAU_HAT) for lt in lam_taus]
            + [("lam_tau", int(panel_depth), float(lt), float(lt)) for lt in lam_taus])


def gap_table(depths, lam_taus, runs=5, test_tasks=20, panel_depth=10, seed=0):
    """The figure's data (:data:`COLUMNS`), both Φ′_ANIL expressions (at λτ̂ = 0 they still differ, by
    K(X, 𝒳)): panel (a) over ``depths`` at λτ = λτ̂ = 0, panels (b) and (c) over ``lam_taus`` at
    L = ``panel_depth`` (b: training λτ at λτ̂ = :data:`FIXED_LAM_TAU_HAT`, Eq. 16 as written; c: λτ = λτ̂). The
    Grams of a data set at all depths come from one kernel recursion."""
    points = _points(depths, lam_taus, panel_depth)
    per_run = {point: [] for point in points}
    for run in range(runs):
        problem = MTL.synthetic_problem(np.random.default_rng([seed, run]), test_tasks=test_tasks)
        depths_needed = sorted({point[1] for point in points})
        for depth, grams in zip(depths_needed, relu_kernels_at_depths(problem.points(), depths=depths_needed)):
            for point in (p for p in points if p[1] == depth):
                per_run[point].append(run_gaps(problem, depth, point[2], MTL.ANIL_VARIANTS, grams,
                                               lam_tau_hat=point[3], literal=point[0] == "inner_lam_tau"))
    rows = [row for point, gaps in per_run.items() for row in _rows(gaps, point, MTL.ANIL_VARIANTS)]
    return pd.DataFrame(rows, columns=list(COLUMNS))


def depth_exponent(table, variant="derivation"):
    """Least-squares slope of log gap against log L over the deepest half of panel (a), one Φ′_ANIL variant."""
    part = table[(table["panel"] == "depth") & (table["variant"] == variant)].sort_values("depth")
    part = part.iloc[len(part) // 2:]
    return float(np.polyfit(np.log(part["depth"]), np.log(part["gap_mean"]), 1)[0])


#: the two Φ′_ANIL expressions: marker and line style
VARIANT_STYLES = (("derivation", "o-"), ("statement", "s--"))
#: the note panel (c) carries: its trend against the paper's
PAPER_TREND_NOTE = ("the paper's Fig. 1 shows this gap rising with λτ;\nhere it falls (derivation) or stays flat "
                    "(statement):\nan erratum of the paper (docs/errata.md)")


def _plot_depth(ax, table):
    for variant, marker in VARIANT_STYLES:
        depth = table[(table["panel"] == "depth") & (table["variant"] == variant)]
        ax.errorbar(depth["depth"], depth["gap_mean"], yerr=depth["gap_run_sd"], fmt=marker,
                    label=f"Φ′_ANIL: {variant} (deep half: L^{depth_exponent(table, variant):+.2f})")
    depth = table[(table["panel"] == "depth") & (table["variant"] == "derivation")]
    last = depth.iloc[-1]
    ax.plot(depth["depth"], last["gap_mean"] * last["depth"] / depth["depth"].to_numpy(float), "k:", lw=0.8,
            label="∝ 1/L")
    ax.set(xscale="log", yscale="log", xlabel="hidden layers L", ylabel="‖F_ANIL − F_MTL‖₂",
           title="(a) against depth, λτ = λτ̂ = 0")
    legend_outside(ax, "below", fontsize=7, frameon=False)


def _plot_lam_tau(ax, part, x_label, title):
    for variant, marker in VARIANT_STYLES:
        rows = part[part["variant"] == variant]
        ax.errorbar(rows["lam_tau"], rows["gap_mean"], yerr=rows["gap_run_sd"], fmt=marker,
                    label=f"Φ′_ANIL: {variant}")
    top = float((part["gap_mean"] + part["gap_run_sd"]).max())
    ax.set(xlabel=x_label, ylabel="‖F_ANIL − F_MTL‖₂", ylim=(0, 1.1 * top), title=title)
    legend_outside(ax, "below", ncol=2, fontsize=7, frameon=False)


def plot(table):
    fig, axes = subplots(1, 3, figsize=(16, 5.4))
    _plot_depth(axes[0], table)
    inner, both = table[table["panel"] == "inner_lam_tau"], table[table["panel"] == "lam_tau"]
    depth = int(both["depth"].iloc[0])
    _plot_lam_tau(axes[1], inner, "training λτ (ANIL's inner loop)",
                  f"(b) against training λτ, test λτ̂ = {FIXED_LAM_TAU_HAT:g}, L = {depth}")
    axes[1].text(0.5, 0.04, "flat: λτ cancels from Eq. 16 (evaluated as written)", transform=axes[1].transAxes,
                 ha="center", va="bottom", fontsize=8)
    _plot_lam_tau(axes[2], both, "λτ = λτ̂ (training and test adaptation)", f"(c) against λτ = λτ̂, L = {depth}")
    axes[2].text(0.97, 0.62, PAPER_TREND_NOTE, transform=axes[2].transAxes, ha="right", va="center", fontsize=8,
                 color="C3", bbox=dict(boxstyle="round", fc="white", ec="C3", lw=0.8))
    runs, tests = int(table["runs"].iloc[0]), int(table["test_tasks"].iloc[0])
    fig.suptitle(f"MTL Fig. 1 (infinite width, MTL §5.1 tasks): mean over {tests} test tasks × {runs} runs; "
                 "λτ adapts the head in ANIL's training, λτ̂ on the support set at test time")
    fig.tight_layout()
    return fig


def build(depths=(1, 2, 4, 8, 16, 32, 64), lam_taus=(0.0, 0.01, 0.03, 0.1, 0.2, 0.3, 0.5), runs=5, test_tasks=20,
          panel_depth=10, seed=0):
    """Compute the table and draw the figure; a :class:`~transfertheory.figures.output.FigureOutput`."""
    table = gap_table(depths, lam_taus, runs, test_tasks, panel_depth, seed)
    slopes = {v: depth_exponent(table, v) for v in MTL.ANIL_VARIANTS}

    def ends(panel):
        part = table[table["panel"] == panel]
        return [f"{v} {values[0]:.3g} → {values[-1]:.3g}" for v in MTL.ANIL_VARIANTS
                for values in [part[part["variant"] == v]["gap_mean"].to_numpy()]]

    summary = (f"MTL Fig. 1: depths {list(depths)}, λτ {list(lam_taus)}, {runs} runs × {test_tasks} test tasks",
               "(a) fitted exponent of the gap over the deepest half of the depths: derivation {:+.3f}, statement "
               "{:+.3f} (Thm 1: -1)".format(slopes["derivation"], slopes["statement"]),
               f"(b) gap at training λτ = {lam_taus[0]:g} → {lam_taus[-1]:g}, λτ̂ = {FIXED_LAM_TAU_HAT:g}: "
               + ", ".join(ends("inner_lam_tau")),
               f"(c) gap at λτ = λτ̂ = {lam_taus[0]:g} → {lam_taus[-1]:g}: " + ", ".join(ends("lam_tau")))
    parameters = dict(depths=list(depths), lam_taus=list(lam_taus), runs=runs, test_tasks=test_tasks,
                      panel_depth=panel_depth, fixed_lam_tau_hat=FIXED_LAM_TAU_HAT, seed=seed)
    return FigureOutput(plot(table), table, COLUMNS, parameters, summary, notes=dict(depth_exponents=slopes))


FIGURE = register(Figure(
    name=NAME,
    title="MTL Fig. 1: ‖F_ANIL − F_MTL‖ of the infinite-width predictors against depth and against λτ",
    description="Mean over 20 test tasks × 5 runs of the MTL §5.1 few-shot regression tasks of the distance between "
    "the ANIL and MTL predictions of Lemma 1, with both expressions of Φ′_ANIL (the derivation's and the Lemma "
    "statement's): (a) against the number of hidden layers L at λτ = λτ̂ = 0 (log–log, Theorem 1's O(1/L)); "
    "(b) against the training λτ at a fixed test-time λτ̂ = 0.1, L = 10 (Eq. 16 as written; flat, λτ cancels); "
    "(c) against λτ = λτ̂ at L = 10 (falling, where the paper's figure rises: an erratum).",
    sources=("MTL Fig. 1", "MTL Thm 1", "MTL Lemma 1", "MTL §5.1"),
    build=build,
    profiles={"quick": dict(depths=(1, 2, 4, 8, 16, 32, 64), lam_taus=(0.0, 0.01, 0.03, 0.1, 0.2, 0.3, 0.5),
                            runs=5, test_tasks=20),
              "paper": dict(depths=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024),
                            lam_taus=(0.0, 0.01, 0.02, 0.03, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5), runs=5, test_tasks=20)},
    paper_sizes="the paper's (MTL §5.1, App. C.1): d = 10, 20 training tasks of n = 10, test tasks of 5 support "
    "and 10 query points, 20 test tasks × 5 runs; its kernels are empirical ones of width-512 networks (Neural "
    "Tangents), the package's the infinite-width closed forms; the L and λτ grids are not listed and are read "
    "from the axes",
    simulates=False,
))
