r"""MTL Fig. 1's study: the distance ‖F_ANIL − F_MTL‖₂ between the infinite-width predictors of MTL Lemma 1 (Eqs.
15–16) on the synthetic few-shot tasks of MTL §5.1 (:func:`~transfertheory.theory.mtl.synthetic_problem`),
against the depth L and against λτ, for both expressions of Φ′_ANIL.

:func:`prediction_gaps` evaluates every test task of one data set at once
(:meth:`~transfertheory.theory.mtl.FewShotProblem.test_task_batch`); :func:`gap_table` tabulates the mean over
test tasks × runs (independent draws of the whole data set, as the paper averages) of the three panels of the
figure, the Grams of a data set at all depths from one kernel recursion
(:func:`~transfertheory.theory.ntk.relu_kernels_at_depths`); :func:`depth_exponent` fits the exponent of the depth
panel. The figure ``mtl_fig1`` draws this table; the claim ``mtl.fig1.lam-tau-trend`` uses
:func:`prediction_gaps`.
"""
from __future__ import annotations

import numpy as np

from . import mtl as MTL
from .ntk import relu_kernels_at_depths

__all__ = ["FIXED_LAM_TAU_HAT", "COLUMNS", "prediction_gaps", "gap_table", "depth_exponent"]

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


def prediction_gaps(problem, depth, lam_tau, variants=MTL.ANIL_VARIANTS, grams=None, lam_tau_hat=None, literal=False):
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
    L = ``panel_depth`` (b: training λτ at λτ̂ = :data:`FIXED_LAM_TAU_HAT`, Eq. 16 as written; c: λτ = λτ̂). Run r
    is the data set :func:`~transfertheory.theory.mtl.synthetic_problem` draws from ``[seed, r]``; the Grams of a
    data set at all depths come from one kernel recursion."""
    import pandas as pd

    points = _points(depths, lam_taus, panel_depth)
    per_run = {point: [] for point in points}
    for run in range(runs):
        problem = MTL.synthetic_problem(np.random.default_rng([seed, run]), test_tasks=test_tasks)
        depths_needed = sorted({point[1] for point in points})
        for depth, grams in zip(depths_needed, relu_kernels_at_depths(problem.points(), depths=depths_needed)):
            for point in (p for p in points if p[1] == depth):
                per_run[point].append(prediction_gaps(problem, depth, point[2], MTL.ANIL_VARIANTS, grams,
                                                      lam_tau_hat=point[3], literal=point[0] == "inner_lam_tau"))
    rows = [row for point, gaps in per_run.items() for row in _rows(gaps, point, MTL.ANIL_VARIANTS)]
    return pd.DataFrame(rows, columns=list(COLUMNS))


def depth_exponent(table, variant="derivation"):
    """Least-squares slope of log gap against log L over the deepest half of panel (a), one Φ′_ANIL variant."""
    part = table[(table["panel"] == "depth") & (table["variant"] == variant)].sort_values("depth")
    part = part.iloc[len(part) // 2:]
    return float(np.polyfit(np.log(part["depth"]), np.log(part["gap_mean"]), 1)[0])
