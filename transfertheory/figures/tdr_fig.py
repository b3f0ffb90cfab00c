r"""TDR §6 by training: measured fine-tuning and scratch distances against their Gram formulas.

Model (TDR §6.1, docs/tdr.md): f(x) = (1/√m) aᵀσ(Wᵀx) trained by gradient flow
(:mod:`transfertheory.sim.ntk_two_layer`, symmetric initialization, κ = 1). Panels:

(a) the root-mean-square gap over seeds of ‖W(Q) − W(P)‖_F to √((y_Q − y_{P→Q})ᵀH_Q⁻¹(y_Q − y_{P→Q})) (TDR
    Thm 2, Eq. 2) and of ‖W_s(Q) − W(0)‖_F to √(y_QᵀH_Q⁻¹y_Q) against the width m, log–log, with the fitted rate;
(b) the fine-tuning distance (mean ± SD over seeds) and its bound against task similarity for the two task
    families of TDR §5.1: shared inputs with labels from teachers at angle θ (similarity cos θ), and shared
    labels (one teacher) on target inputs rotated away from the source inputs by φ (similarity cos φ); the
    scratch distance of each target is drawn for comparison.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..sim.ntk_two_layer import simulate_transfer
from ..sim.ntk_two_layer import task_pair as sim_task_pair
from ..theory.ntk_two_layer import transfer_summary
from .output import FigureOutput, use_agg
from .registry import Figure, register

NAME = "tdr_fig"
#: source-set size, dimension and the seed of the data
DATA = dict(n=8, d=5, seed=3)
COLUMNS = {
    "width": "hidden width m",
    "seeds": "trained networks (seeds) at this width",
    "finetune_mean": "mean over seeds of ‖W(Q) − W(P)‖_F",
    "finetune_rms_gap": "root-mean-square over seeds of ‖W(Q) − W(P)‖_F minus the Thm 2 bound",
    "finetune_bound": "√((y_Q − y_P→Q)ᵀH_Q⁻¹(y_Q − y_P→Q)) (TDR Thm 2, Eq. 2)",
    "scratch_mean": "mean over seeds of ‖W_s(Q) − W(0)‖_F",
    "scratch_rms_gap": "root-mean-square over seeds of ‖W_s(Q) − W(0)‖_F minus √(y_QᵀH_Q⁻¹y_Q)",
    "scratch_formula": "√(y_QᵀH_Q⁻¹y_Q)",
    "converged": "networks whose three training stages converged (‖∇L‖ <= gtol)",
}
SIMILARITY_COLUMNS = {
    "family": "shared-inputs (labels from teachers at angle θ) or shared-labels (inputs rotated by φ)",
    "similarity": "cos θ or cos φ",
    "width": "hidden width m",
    "finetune_mean": "mean over seeds of ‖W(Q) − W(P)‖_F",
    "finetune_sd": "SD over seeds of ‖W(Q) − W(P)‖_F",
    "finetune_bound": "√((y_Q − y_P→Q)ᵀH_Q⁻¹(y_Q − y_P→Q)) (TDR Thm 2, Eq. 2)",
    "scratch_mean": "mean over seeds of ‖W_s(Q) − W(0)‖_F",
    "scratch_formula": "√(y_QᵀH_Q⁻¹y_Q)",
    "converged": "networks whose three training stages converged",
}


def task_pair(family, angle):
    """The family member at similarity cos(angle) on the figure's data (:func:`~transfertheory.sim.ntk_two_layer.task_pair`)."""
    return sim_task_pair(family, angle, **DATA)


def width_study(widths, seeds, backend=None):
    """Table of panel (a): one row per width (:data:`COLUMNS`), the pair at θ = 1 of the shared-inputs family
    with target inputs rotated by φ = 1 (so both inputs and labels differ)."""
    x_p, y_p, _, _ = task_pair("shared-inputs", 1.0)
    _, _, x_q, _ = task_pair("shared-labels", 1.0)
    y_q = math.cos(1.0) * x_q[:, 0] + math.sin(1.0) * x_q[:, 1]
    summary = transfer_summary(x_p, y_p, x_q, y_q)
    rows = []
    for run in simulate_transfer(x_p, y_p, x_q, y_q, widths, seeds=seeds, backend=backend):
        rows.append(dict(width=run.width, seeds=seeds, finetune_mean=run.finetune_distance.mean(),
                         finetune_rms_gap=np.sqrt(((run.finetune_distance - summary.finetune_distance) ** 2).mean()),
                         finetune_bound=summary.finetune_distance, scratch_mean=run.scratch_distance.mean(),
                         scratch_rms_gap=np.sqrt(((run.scratch_distance - summary.scratch_distance) ** 2).mean()),
                         scratch_formula=summary.scratch_distance, converged=int(run.converged.sum())))
    return pd.DataFrame(rows, columns=list(COLUMNS))


def similarity_study(width, seeds, angles, backend=None):
    """Table of panel (b): one row per family and angle (:data:`SIMILARITY_COLUMNS`)."""
    rows = []
    for family, top in (("shared-inputs", math.pi), ("shared-labels", math.pi / 2)):
        for angle in np.linspace(0.0, top, angles):
            data = task_pair(family, angle)
            summary = transfer_summary(*data)
            (run,) = simulate_transfer(*data, [width], seeds=seeds, backend=backend)
            rows.append(dict(family=family, similarity=math.cos(angle), width=width,
                             finetune_mean=run.finetune_distance.mean(), finetune_sd=run.finetune_distance.std(ddof=1),
                             finetune_bound=summary.finetune_distance, scratch_mean=run.scratch_distance.mean(),
                             scratch_formula=summary.scratch_distance, converged=int(run.converged.sum())))
    return pd.DataFrame(rows, columns=list(SIMILARITY_COLUMNS))


def fitted_rate(table, column):
    """Least-squares slope of log(column) against log m."""
    return float(np.polyfit(np.log(table["width"]), np.log(table[column]), 1)[0])


def plot(widths_table, similarity_table):
    use_agg()
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for column, label, marker in (("finetune_rms_gap", "fine-tuning − Thm 2 bound", "o"),
                                  ("scratch_rms_gap", "scratch − √(yᵀH⁻¹y)", "s")):
        rate = fitted_rate(widths_table, column)
        m = widths_table["width"].to_numpy(float)
        fit = np.exp(np.polyval(np.polyfit(np.log(m), np.log(widths_table[column]), 1), np.log(m)))
        axes[0].loglog(m, widths_table[column], marker, label=f"{label} (rate m^{rate:+.2f})")
        axes[0].loglog(m, fit, "k:", lw=0.8)
    axes[0].set(xlabel="width m", ylabel="RMS gap over seeds", title="(a) gap to the Gram formulas")
    axes[0].legend(fontsize=8)
    for family, color in (("shared-inputs", "C0"), ("shared-labels", "C1")):
        part = similarity_table[similarity_table["family"] == family]
        axes[1].errorbar(part["similarity"], part["finetune_mean"], yerr=part["finetune_sd"], fmt="o", color=color,
                         label=f"{family}: fine-tuning (± SD)")
        axes[1].plot(part["similarity"], part["finetune_bound"], "-", color=color, label=f"{family}: Thm 2 bound")
        axes[1].plot(part["similarity"], part["scratch_mean"], "x--", color=color, lw=0.8,
                     label=f"{family}: scratch")
    axes[1].set(xlabel="task similarity (cos θ or cos φ)", ylabel="‖ΔW‖_F",
                title=f"(b) m = {int(similarity_table['width'].iloc[0])}")
    axes[1].legend(fontsize=7)
    fig.suptitle("TDR §6: trained two-layer ReLU networks against the Gram formulas")
    fig.tight_layout()
    return fig


def build(widths=(64, 256, 1024, 4096), seeds=8, similarity_width=1024, angles=5, backend=None, progress=None):
    """Simulate both studies and draw the figure; a :class:`~transfertheory.figures.output.FigureOutput`."""
    widths_table = width_study(widths, seeds, backend)
    similarity_table = similarity_study(similarity_width, seeds, angles, backend)
    rates = {c: fitted_rate(widths_table, c) for c in ("finetune_rms_gap", "scratch_rms_gap")}
    summary = (f"TDR §6 by training: widths {list(widths)}, {seeds} seeds, n = {DATA['n']}, d = {DATA['d']}",
               f"fitted rates of the RMS gap: fine-tuning m^{rates['finetune_rms_gap']:+.2f}, "
               f"scratch m^{rates['scratch_rms_gap']:+.2f}",
               f"converged networks: {int(widths_table['converged'].sum() + similarity_table['converged'].sum())} of "
               f"{seeds * (len(widths_table) + len(similarity_table))}")
    parameters = dict(widths=list(widths), seeds=seeds, similarity_width=similarity_width, angles=angles, **DATA)
    return FigureOutput(plot(widths_table, similarity_table), widths_table, COLUMNS, parameters, summary,
                        extra=(("_similarity", similarity_table, SIMILARITY_COLUMNS),),
                        notes=dict(fitted_rates=rates))


FIGURE = register(Figure(
    name=NAME,
    title="TDR §6: measured fine-tuning and scratch distances of trained ReLU networks against the Gram formulas",
    description="(a) RMS gap over seeds between the trained networks' ‖W(Q) − W(P)‖_F and Thm 2's bound, and "
    "between the scratch distance and √(y_QᵀH_Q⁻¹y_Q), against the width (log–log, fitted rate); (b) the "
    "fine-tuning distance and its bound against task similarity for shared inputs with rotated teachers and "
    "shared labels on rotated inputs (TDR §5.1), with the scratch distance.",
    sources=("TDR Thm 2", "TDR §6.3", "TDR §5.1"),
    build=build,
    profiles={"quick": dict(widths=(64, 256, 1024, 4096), seeds=8, similarity_width=1024, angles=5),
              "paper": dict(widths=(64, 256, 1024, 4096, 16384, 65536, 131072), seeds=16, similarity_width=16384,
                            angles=9)},
    extra_suffixes=("_similarity",),
))
