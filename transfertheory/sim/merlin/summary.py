r"""MeRLin §5's statistics of :func:`~transfertheory.sim.merlin.run_comparison` tables: the target loss per
(algorithm, n_t) and MeRLin's success frequency per n_t, over the seeds whose kept flow converged.

:func:`loss_table` gives each point's mean loss with its 68 % percentile bootstrap interval (the losses are
bimodal, recovered ≈ 1e-4 or failed ≈ 0.1–0.6: the interval stays positive, a log axis draws it) and its SE;
:func:`success_table` MeRLin's frequency of recovering the target (``recovered``: loss ≤
:data:`~transfertheory.sim.merlin.RECOVERY_LOSS` on feature e₁) with its 68 % Wilson interval, beside the proof of
Thm 2's union bound and the exact probability that no wrong feature fits (:mod:`transfertheory.sim.statistics`).
Used by the figure :mod:`transfertheory.figures.merlin_fig`; each row states how many seeds converged, to which
gradient norm.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ...theory import merlin as M
from ..statistics import bootstrap_mean_interval, mean_se, wilson_interval

__all__ = ["LOSS_COLUMNS", "SUCCESS_COLUMNS", "loss_table", "success_table"]

#: the columns of :func:`loss_table` (one row per (algorithm, n_t)) and their definitions
LOSS_COLUMNS = {
    "algorithm": "finetune (head-only), joint, target_only or merlin",
    "n_t": "target samples n_t",
    "seeds": "seeds (target sets) at this point",
    "loss_mean": "mean over converged seeds of the exact target population loss of the trained predictor",
    "loss_low": "lower end of the 68 % percentile bootstrap interval of loss_mean",
    "loss_high": "upper end of the 68 % percentile bootstrap interval of loss_mean",
    "loss_se": "standard error of loss_mean",
    "loss_median": "median over converged seeds of the target loss",
    "recovered": "fraction of seeds with target loss <= 1e-3 on feature e1",
    "top_coord_e1": "fraction of seeds whose learned φ puts most of its norm on coordinate 1",
    "restarts_needed_max": "largest index + 1 of the restart kept (restarts per seed in the JSON)",
    "converged": "seeds whose kept flow (and, for fine-tuning, the pre-training flow) converged",
    "grad_norm_max": "largest final gradient norm of a converged kept flow",
}
#: the columns of :func:`success_table` (one row per n_t) and their definitions
SUCCESS_COLUMNS = {
    "n_t": "target samples n_t",
    "seeds": "seeds (target sets)",
    "success": "MeRLin's success frequency over converged seeds (target loss <= 1e-3 on feature e1)",
    "success_low": "lower end of the 68 % Wilson score interval of success",
    "success_high": "upper end of the 68 % Wilson score interval of success",
    "union_bound": "1 − (k − 1)·P_wrong(n_t), P_wrong = (5/9)^n + (1/3)^n − (1/9)^n (proof of Thm 2)",
    "no_wrong_fit": "1 − P(some wrong feature fits all n_t samples), exact",
    "restarts_needed_max": "largest index + 1 of the restart kept",
    "converged": "seeds whose kept MeRLin flow converged",
    "grad_norm_max": "largest final gradient norm of a converged kept flow",
}


def _table(df, keys, columns, statistics):
    """One row per group of ``keys`` (n_t the last): ``statistics(converged rows, n_t)`` and the group's seed,
    restart and convergence counts (the largest final gradient norm of a converged flow; NaN if none converged)."""
    rows = []
    for key, part in df.groupby(keys, sort=True):
        kept = part[part["converged"].astype(bool)]
        rows.append(dict(zip(keys, key), seeds=len(part), **statistics(kept, key[-1]),
                         restarts_needed_max=int(part["restarts_needed"].max()), converged=len(kept),
                         grad_norm_max=float(kept["grad_norm"].max()) if len(kept) else float("nan")))
    return pd.DataFrame(rows, columns=list(columns))


def _loss(kept, n_t):
    loss = kept["target_loss"].to_numpy()
    low, high = bootstrap_mean_interval(loss) if len(loss) else (np.nan, np.nan)
    return dict(loss_mean=loss.mean() if len(loss) else np.nan, loss_low=low, loss_high=high,
                loss_se=mean_se(loss)[1] if len(loss) > 1 else np.nan,
                loss_median=np.median(loss) if len(loss) else np.nan, recovered=kept["recovered"].mean(),
                top_coord_e1=(kept["top_coord"] == 1).mean())


def loss_table(df):
    """Target-loss statistics of a :func:`run_comparison` frame per (algorithm, n_t) (:data:`LOSS_COLUMNS`), over
    converged seeds."""
    return _table(df, ["algorithm", "n_t"], LOSS_COLUMNS, _loss)


def success_table(df, k):
    """MeRLin's success frequency per n_t of a MeRLin-only :func:`run_comparison` frame (:data:`SUCCESS_COLUMNS`),
    over converged seeds, beside Thm 2's union bound and the exact no-wrong-fit probability at ``k``."""
    def success(kept, n_t):
        wins = int(kept["recovered"].sum())
        low, high = wilson_interval(wins, len(kept)) if len(kept) else (np.nan, np.nan)
        return dict(success=wins / len(kept) if len(kept) else np.nan, success_low=low, success_high=high,
                    union_bound=1 - (k - 1) * float(M.wrong_feature_fit_probability(n_t)),
                    no_wrong_fit=1 - M.any_wrong_feature_fit_probability(n_t, k))

    return _table(df, ["n_t"], SUCCESS_COLUMNS, success)
