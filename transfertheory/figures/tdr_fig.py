r"""TDR §6 by training: measured fine-tuning and scratch distances against their Gram formulas.

Model (TDR §6.1, docs/tdr.md): f(x) = (1/√m) aᵀσ(Wᵀx) trained by gradient descent
(:mod:`transfertheory.sim.tdr`, symmetric initialization, κ = 1). Panels:

(a) the root-mean-square gap over seeds of ‖W(Q) − W(P)‖_F to √((y_Q − y_{P→Q})ᵀH_Q⁻¹(y_Q − y_{P→Q})) (TDR
    Thm 2, Eq. 2), of ‖W_s(Q) − W(0)‖_F to √(y_QᵀH_Q⁻¹y_Q), of the pretrained outputs u_Q(P) to y_{P→Q} and of
    the change of ‖∂L/∂X¹‖² to Thm 1's −y_Qᵀy_Q + ‖y_Q − y_{P→Q}‖² against the width m (10² … 10⁴ in the quick
    profile), log–log, each with its fitted rate in its own colour; a vertical line marks the width of (b)–(c);
(b) the fine-tuning distance (mean ± SD over seeds, hollow markers) and its bound (line) against task
    similarity for the two task families of TDR §5.1: shared inputs with labels from teachers at angle θ
    (similarity cos θ), and shared labels (one teacher) on target inputs rotated away from the source inputs by
    φ (similarity cos φ); the scratch distance of each target is drawn for comparison;
(c) what (b) cannot show at its scale: the fine-tuning distance minus its bound (mean ± SD over seeds).

Only networks whose three training stages converged enter the points; the figure states how many did and to
which training loss. The tables are computed by :mod:`transfertheory.sim.tdr_study` (``width_study`` for (a),
``similarity_study`` for (b)–(c)); this module only draws them. The papers have no figure of this experiment (TDR §6 is theory only).
"""
from __future__ import annotations

import numpy as np

from ..sim.tdr import TRAINING_FLOW, width_rate
from ..sim.tdr_study import COLUMNS, DATA, GAP_COLUMNS, SIMILARITY_COLUMNS, similarity_study, width_study
from ..sweep.named import named_profile
from .marks import left_out_text, legend_below, title_with_footnote
from .output import FigureOutput, subplots
from .registry import Figure, register

NAME = "tdr_fig"


#: panel (a): gap column, legend label, marker and colour of its points and of its fitted line
GAP_STYLES = (("finetune_rms_gap", "fine-tuning distance − Thm 2 bound", "o", "C0"),
              ("scratch_rms_gap", "scratch distance − √(yᵀH⁻¹y)", "s", "C1"),
              ("labels_rms_gap", "u_Q(P) − y_P→Q", "^", "C2"),
              ("gradient_change_rms_gap", "Δ‖∂L/∂X¹‖² − Thm 1", "d", "C3"))
#: panels (b)–(c): task family and its colour
FAMILY_COLORS = (("shared-inputs", "C0"), ("shared-labels", "C1"))


def _plot_gaps(ax, widths_table, similarity_width):
    m = widths_table["width"].to_numpy(float)
    for column, label, marker, color in GAP_STYLES:
        rate, intercept = width_rate(m, widths_table[column])
        ax.loglog(m, widths_table[column], marker, color=color, label=f"{label} (fit: m^{rate:+.2f})")
        ax.loglog(m, np.exp(intercept + rate * np.log(m)), ":", color=color, lw=1.0)
    ax.axvline(similarity_width, color="0.6", lw=0.8, ls="--")
    ax.annotate(f"m of (b), (c) = {similarity_width}", (similarity_width, 1.0), xycoords=("data", "axes fraction"),
                xytext=(3, -3), textcoords="offset points", ha="left", va="top", fontsize=7, color="0.4")
    ax.set(xlabel="width m", ylabel="RMS gap over seeds", title="(a) gap to the Gram formulas (dotted: fits)")
    legend_below(ax, fontsize=7, frameon=False)


def _plot_similarity(distance_ax, difference_ax, similarity_table):
    for family, color in FAMILY_COLORS:
        part = similarity_table[similarity_table["family"] == family]
        distance_ax.plot(part["similarity"], part["finetune_bound"], "-", color=color, lw=2.5, alpha=0.45,
                         label=f"{family}: Thm 2 bound")
        distance_ax.errorbar(part["similarity"], part["finetune_mean"], yerr=part["finetune_sd"], fmt="o",
                             mfc="none", color=color, ms=6, capsize=2, label=f"{family}: fine-tuning (± SD)")
        distance_ax.plot(part["similarity"], part["scratch_mean"], "x--", color=color, lw=0.8,
                         label=f"{family}: scratch")
        difference_ax.errorbar(part["similarity"], part["finetune_mean"] - part["finetune_bound"],
                               yerr=part["finetune_sd"], fmt="o-", mfc="none", color=color, capsize=2, label=family)
    width = int(similarity_table["width"].iloc[0])
    distance_ax.set(xlabel="task similarity (cos θ or cos φ)", ylabel="‖ΔW‖_F",
                    title=f"(b) distances against similarity, m = {width}")
    legend_below(distance_ax, ncol=2, fontsize=7, frameon=False)
    difference_ax.axhline(0.0, color="k", lw=0.8, ls=":")
    difference_ax.set(xlabel="task similarity (cos θ or cos φ)", ylabel="‖W(Q) − W(P)‖_F − Thm 2 bound",
                      title=f"(c) fine-tuning distance − bound (± SD), m = {width}")
    legend_below(difference_ax, ncol=2, fontsize=7, frameon=False)


def plot(widths_table, similarity_table, convergence):
    """Draw the three panels; ``convergence``: the line stating how many networks converged."""
    fig, axes = subplots(1, 3, figsize=(15, 5.4))
    _plot_gaps(axes[0], widths_table, int(similarity_table["width"].iloc[0]))
    _plot_similarity(axes[1], axes[2], similarity_table)
    title_with_footnote(fig, "TDR §6: trained two-layer ReLU networks against the Gram formulas", convergence)
    return fig


def build(widths=(100, 316, 1000, 3162, 10000), draws=8, similarity_width=1000, angles=5, backend=None,
          progress=None):
    """Simulate both studies and draw the figure; a :class:`~transfertheory.figures.output.FigureOutput`.
    ``similarity_width`` must be one of ``widths`` (so panels (b)–(c) show a width of panel (a))."""
    if similarity_width not in widths:
        raise ValueError(f"similarity_width must be one of widths {list(widths)}, got {similarity_width!r}")
    widths_table = width_study(widths, draws, backend)
    similarity_table = similarity_study(similarity_width, draws, angles, backend)
    rates = {c: width_rate(widths_table["width"], widths_table[c])[0] for c in GAP_COLUMNS}
    tables = (widths_table, similarity_table)
    counts = {"networks": (sum(int(t["converged"].sum()) for t in tables), draws * sum(len(t) for t in tables),
                           max(float(t["final_loss_max"].max()) for t in tables))}
    done, total, loss = counts["networks"]
    convergence = left_out_text("networks", done, total, f"‖∇L‖ ≤ {TRAINING_FLOW.gtol:g} in all three stages; "
                                f"largest final training loss {loss:.1g}")
    summary = (f"TDR §6 by training: widths {list(widths)}, {draws} draws (seeds), n = {DATA['n']}, d = {DATA['d']}",
               "fitted rates of the RMS gaps: " + ", ".join(f"{GAP_COLUMNS[c]} m^{r:+.2f}" for c, r in rates.items()),
               convergence)
    parameters = dict(widths=list(widths), draws=draws, similarity_width=similarity_width, angles=angles, **DATA)
    return FigureOutput(plot(widths_table, similarity_table, convergence), widths_table, COLUMNS, parameters,
                        summary, extra=(("_similarity", similarity_table, SIMILARITY_COLUMNS),),
                        convergence=counts, notes=dict(fitted_rates=rates))


def _sizes(profile, **similarity):
    """The figure's sizes at ``profile``: panel (a)'s widths and seeds are the named sweep ``tdr``'s
    (:mod:`transfertheory.sweep.named`, where they are declared), the similarity study's its own."""
    sizes = named_profile("tdr", profile)
    return dict(widths=tuple(sizes["width"]), draws=sizes["draws"], **similarity)


FIGURE = register(Figure(
    name=NAME,
    title="TDR §6: measured fine-tuning and scratch distances of trained ReLU networks against the Gram formulas",
    description="(a) RMS gap over seeds between the trained networks' ‖W(Q) − W(P)‖_F and Thm 2's bound, "
    "between the scratch distance and √(y_QᵀH_Q⁻¹y_Q), between u_Q(P) and y_P→Q and between the change of "
    "‖∂L/∂X¹‖² and Thm 1, against the width m = 10² … 10⁴ (log–log, fitted rates); (b) the "
    "fine-tuning distance and its bound against task similarity for shared inputs with rotated teachers and "
    "shared labels on rotated inputs (TDR §5.1), with the scratch distance; (c) the fine-tuning distance minus "
    "its bound against task similarity.",
    sources=("TDR Thm 1", "TDR Thm 2", "TDR §6.3", "TDR §5.1"),
    build=build,
    profiles={"quick": _sizes("quick", similarity_width=1000, angles=5),
              "paper": _sizes("paper", similarity_width=10000, angles=9)},
    paper_sizes="TDR §6 is theory only (no experiment of trained networks in the paper): the paper profile is the "
    "package's own larger size (widths to 10⁵, 16 seeds, 9 angles)",
))
