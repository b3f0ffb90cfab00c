r"""TDR §6's studies of trained networks against the Gram formulas: the statistics of
:func:`~transfertheory.sim.tdr.simulate_transfer` tables.

:func:`per_width` and :func:`gradient_norm_change` read a table per width (one array over the draws): the
fine-tuning and scratch distances and the change of ‖∂L/∂X¹‖² that TDR Thms 1–2 state in the limit; the claims
(:mod:`transfertheory.claims.tdr`) test them. :func:`width_study` tabulates, per width, the root-mean-square
gap over seeds of each trained quantity to its formula (:data:`COLUMNS`) on one task pair, and
:func:`similarity_study` the fine-tuning distance against its bound over the two task families of TDR §5.1
(:data:`SIMILARITY_COLUMNS`); only networks whose three training stages converged enter their statistics. The
figure ``tdr_fig`` draws these two tables.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..theory.tdr import transfer_summary
from .tdr import STAGES, simulate_transfer, task_pair

__all__ = ["per_width", "gradient_norm_change", "DATA", "COLUMNS", "GAP_COLUMNS", "SIMILARITY_COLUMNS",
           "width_study", "similarity_study"]


def per_width(table, column, stage="finetune"):
    """Per width of a :func:`~.tdr.simulate_transfer` table, in order: one stage's ``column`` over the draws."""
    rows = table[table["stage"] == stage]
    return [part[column].to_numpy() for _, part in rows.groupby("width", sort=False)]


def gradient_norm_change(table):
    """Per width of a :func:`~.tdr.simulate_transfer` table, in order: ‖∂L(W(P))/∂X¹‖² − ‖∂L(W(0))/∂X¹‖² over the
    draws (TDR Thm 1's measured side)."""
    return [after - before for after, before in zip(per_width(table, "gradient_norm_pretrained"),
                                                    per_width(table, "gradient_norm_init"))]


#: source-set size, dimension and the seed of the data of the studies (:func:`~.tdr.task_pair`)
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
    "labels_rms_gap": "root-mean-square over seeds and target points of u_Q(P) minus y_P→Q = H_PQᵀH_P⁻¹y_P",
    "gradient_change_rms_gap": "root-mean-square over seeds of ‖∂L(W(P))/∂X¹‖² − ‖∂L(W(0))/∂X¹‖² minus Eq. 1's "
                               "−y_Qᵀy_Q + ‖y_Q − y_P→Q‖² (TDR Thm 1)",
    "converged": "networks whose three training stages converged (‖∇L‖ <= gtol); the other columns use only these",
    "final_loss_max": "largest final training loss ½‖y − f(X)‖² of a stage of a converged network",
}
#: the gap columns of :func:`width_study` and their short names
GAP_COLUMNS = {"finetune_rms_gap": "fine-tuning", "scratch_rms_gap": "scratch", "labels_rms_gap": "u_Q(P)",
               "gradient_change_rms_gap": "Thm 1"}
SIMILARITY_COLUMNS = {
    "family": "shared-inputs (labels from teachers at angle θ) or shared-labels (inputs rotated by φ)",
    "similarity": "cos θ or cos φ",
    "width": "hidden width m",
    "finetune_mean": "mean over seeds of ‖W(Q) − W(P)‖_F",
    "finetune_sd": "SD over seeds of ‖W(Q) − W(P)‖_F",
    "finetune_bound": "√((y_Q − y_P→Q)ᵀH_Q⁻¹(y_Q − y_P→Q)) (TDR Thm 2, Eq. 2)",
    "scratch_mean": "mean over seeds of ‖W_s(Q) − W(0)‖_F",
    "scratch_formula": "√(y_QᵀH_Q⁻¹y_Q)",
    "converged": "networks whose three training stages converged; the other columns use only these",
    "final_loss_max": "largest final training loss ½‖y − f(X)‖² of a stage of a converged network",
}


def _rms(values):
    return float(np.sqrt(np.mean(np.square(values)))) if np.size(values) else float("nan")


def _converged(table, summary):
    """Per width of a :func:`~.tdr.simulate_transfer` table, in order, and the Gram formulas (``summary``) of its
    task pair: (mask of the draws whose three stages converged, their fine-tuning distances, their scratch
    distances, the columns both tables share — the mean distances, the formulas, the converged count and the
    largest final training loss of a stage among the kept draws)."""
    keeps = np.logical_and.reduce([np.array(per_width(table, "converged", stage), bool) for stage in STAGES])
    losses = [per_width(table, "loss", stage) for stage in STAGES]
    for k, (keep, finetune, scratch) in enumerate(zip(keeps, per_width(table, "distance"),
                                                      per_width(table, "distance", "scratch"))):
        finetune, scratch = finetune[keep], scratch[keep]
        kept_losses = np.concatenate([stage[k][keep] for stage in losses])
        yield keep, finetune, scratch, dict(
            finetune_mean=finetune.mean() if keep.any() else np.nan, finetune_bound=summary.finetune_distance,
            scratch_mean=scratch.mean() if keep.any() else np.nan, scratch_formula=summary.scratch_distance,
            converged=int(keep.sum()), final_loss_max=float(kept_losses.max()) if kept_losses.size else float("nan"))


def width_study(widths, draws, backend=None):
    """Table of one row per width (:data:`COLUMNS`), the pair at θ = 1 of the shared-inputs family with target
    inputs rotated by φ = 1 (so both inputs and labels differ); statistics over converged networks."""
    x_p, y_p, _, _ = task_pair("shared-inputs", 1.0, **DATA)
    _, _, x_q, _ = task_pair("shared-labels", 1.0, **DATA)
    y_q = math.cos(1.0) * x_q[:, 0] + math.sin(1.0) * x_q[:, 1]
    summary = transfer_summary(x_p, y_p, x_q, y_q)
    table = simulate_transfer(x_p, y_p, x_q, y_q, widths, draws=draws, backend=backend)
    outputs, changes = table.attrs["pretrained_outputs"], gradient_norm_change(table)
    rows = [dict(width=width, seeds=draws, **shared, finetune_rms_gap=_rms(finetune - summary.finetune_distance),
                 scratch_rms_gap=_rms(scratch - summary.scratch_distance),
                 labels_rms_gap=_rms(outputs[width][keep] - summary.transformed_labels),
                 gradient_change_rms_gap=_rms(change[keep] - summary.gradient.change))
            for width, change, (keep, finetune, scratch, shared) in zip(outputs, changes, _converged(table, summary))]
    return pd.DataFrame(rows, columns=list(COLUMNS))


def similarity_study(width, draws, angles, backend=None):
    """Table of one row per task family of TDR §5.1 and angle, ``angles`` angles from similarity 1 to the family's
    least similar member (:data:`SIMILARITY_COLUMNS`); statistics over converged networks."""
    rows = []
    for family, top in (("shared-inputs", math.pi), ("shared-labels", math.pi / 2)):
        for angle in np.linspace(0.0, top, angles):
            data = task_pair(family, angle, **DATA)
            runs = simulate_transfer(*data, [width], draws=draws, backend=backend)
            (keep, finetune, _, shared), = _converged(runs, transfer_summary(*data))
            rows.append(dict(family=family, similarity=math.cos(angle), width=width, **shared,
                             finetune_sd=finetune.std(ddof=1) if keep.sum() > 1 else np.nan))
    return pd.DataFrame(rows, columns=list(SIMILARITY_COLUMNS))
