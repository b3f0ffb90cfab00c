r"""`run_comparison`: every algorithm of MeRLin §5 on the same target sets, one tidy row per (algorithm, n_t, draw).

Every draw comes from the package's seeding rule, :func:`transfertheory.sim.seeding.generator`
(``SeedSequence(seed, spawn_key=key)``), keyed by what it is:

* ``(0, n_t, s)`` — draw s's target set of size n_t (:func:`target_sets`; the same set for every algorithm:
  comparisons are paired);
* ``(1,)`` — the starts of pre-training (draws × restarts networks; pre-training does not see target data and is
  run once per draw, its kept network is shared by the two fine-tuning algorithms at every n_t);
* ``(2, a, n_t)`` — the starts (and MeRLin's validation splits) of algorithm a (its index in :data:`ALGORITHMS`)
  at n_t, for all draws × restarts at once.

So an algorithm's draws at one n_t do not depend on which other algorithms or target sizes are run.

Each parameter's range and default is declared once, in :data:`FIELDS` (the fields of the ``merlin`` experiment,
:data:`MERLIN`, defined at the end), and :func:`run_comparison` validates its arguments through them.

The statistics of :func:`run_comparison` tables (:func:`loss_table`, :func:`success_table`): the target loss per
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

from ... import params as P
from ..._memory import FLOAT_BYTES, check_memory, guarded_entry_point
from ..._validation import root_seed
from ...backend import backend_name, resolve_backend, to_device
from ...theory import merlin as M
from ..convergence import convergence_columns
from ..integrator import count, positive
from ..records import Experiment, Field, checked, flow_arguments, flow_fields
from ..seeding import generator
from ..statistics import bootstrap_mean_interval, mean_se, wilson_interval
from . import algorithms as A

__all__ = ["ALGORITHMS", "FIELDS", "ROW_KEYS", "RECOVERY_LOSS", "recovered", "run_comparison", "target_sets", "MERLIN",
           "LOSS_COLUMNS", "SUCCESS_COLUMNS", "loss_table", "success_table"]

ALGORITHMS = ("finetune", "finetune_full", "joint", "target_only", "merlin")
ROW_KEYS = ("algorithm", "n_t", "draw")
#: "target loss ≈ 0": a ridge head (λ_h ≤ 1e-2) on the exact feature e₁ leaves a target loss ~1e-4; a wrong
#: feature leaves ≥ 10/27 (Thm 1), so a run has recovered the target when its loss is ≤ 1e-3 and φ uses e₁
RECOVERY_LOSS = 1e-3


def recovered(target_loss, top):
    """Per run: it recovered the target, its loss ≤ :data:`RECOVERY_LOSS` with φ's top coordinate 1 (``top``, 1-based,
    of :func:`.algorithms.feature_usage`)."""
    return (target_loss <= RECOVERY_LOSS) & (top == 1)


#: the parameters of :func:`run_comparison` and of the ``merlin`` experiment (one n_t, :data:`MERLIN`) by name:
#: each one's range and default
FIELDS = {f.name: f for f in (
    Field("d", 12, P.D), Field("m", 2, count("m", "hidden width")),
    Field("k", 3, M.SOURCE_K), Field("n_t", 8, P.N), Field("lam", 0.1, M.LAM_POS), Field("draws", 8, P.DRAWS),
    Field("algorithms", ("finetune", "joint", "target_only", "merlin"), choices=ALGORITHMS, sequence=True),
    Field("alpha", 0.5, M.ALPHA_JOINT), Field("rho", 1.0, positive("rho")),
    Field("ridge", A.MERLIN_RIDGE, positive("ridge")),
    Field("splits", A.MERLIN_SPLITS, count("splits", "train/validation splits S")),
    Field("restarts", A.merlin_restarts(3), count("restarts", "restarts per draw")))}


def target_sets(n_t, d, draws, seed):
    """(X (draws, n_t, d), y (draws, n_t)) on the host: draw s's target set, drawn with key (0, n_t, s) of
    ``seed`` (an integer ≥ 0, or a numpy Generator or SeedSequence that gives one)."""
    seed = root_seed(seed)
    sets = [M.sample_target(n_t, d, generator(seed, 0, n_t, s)) for s in range(draws)]
    return np.stack([x for x, _ in sets]), np.stack([t for _, t in sets])


def _rows(algorithm, n_t, outcome: A.Outcome, **extra) -> pd.DataFrame:
    top, share, coords = A.feature_usage(outcome.params["phi"])
    return pd.DataFrame({
        "algorithm": algorithm, "n_t": n_t, "draw": np.arange(outcome.target_loss.size),
        "target_loss": outcome.target_loss, "objective": outcome.objective,
        "top_coord": top, "top_share": share, "coords": coords,
        "recovered": recovered(outcome.target_loss, top),
        "restarts_needed": outcome.restarts_needed, "restarts_at_best": outcome.restarts_at_best,
        **convergence_columns(outcome.convergence), **extra,
    })


def _validate(d, m, k, n_targets, lam, draws, algorithms, alpha, rho, ridge, splits, restarts, init_scale, seed):
    s = checked(FIELDS, d=d, m=m, k=k, lam=lam, draws=draws, alpha=alpha, rho=rho, ridge=ridge, splits=splits)
    if s["k"] > s["d"]:
        raise ValueError(f"k must be an integer in [2, d] = [2, {s['d']}], got {k}")
    n_targets = [int(n) for n in FIELDS["n_t"].param.sequence(n_targets, "n_targets", distinct=True)]
    algorithms = FIELDS["algorithms"].check(algorithms)
    if "merlin" in algorithms and min(n_targets) < 2:
        raise ValueError(f"n_targets must be >= 2 with 'merlin' (a train and a validation half), got {min(n_targets)}")
    return dict(s, n_targets=n_targets, algorithms=algorithms, init_scale=A.INIT_SCALE.scalar(init_scale),
                restarts=A.merlin_restarts(s["k"]) if restarts is None else FIELDS["restarts"].check(restarts),
                seed=root_seed(seed))


#: algorithms whose objective holds the exact source loss, O(d²) per instance (MeRLin Lemma 4's A = φ diag(θ) φᵀ)
_SOURCE_TERM = ("pretrain", "joint", "merlin")


def _memory_estimate(s: dict, algorithms) -> float:
    """Peak bytes of :func:`run_comparison`, from the arrays it allocates.

    Each algorithm trains B instances in one integrator call (pre-training and the restarts' algorithms
    draws·restarts per n_t, fine-tuning draws per n_t), each costing :func:`.algorithms.instance_memory`; the
    target data X (B, n_t, d) of joint, target-only and MeRLin training are all built before training (each
    repeated per restart and padded to the largest n_t, two copies), plus the d × d pair weights.
    """
    d, m, draws, restarts = s["d"], s["m"], s["draws"], s["restarts"]
    n_max, sizes = max(s["n_targets"]), len(s["n_targets"])
    batches = {name: draws * restarts * sizes for name in ("joint", "target_only", "merlin") if name in algorithms}
    data = sum(2 * instances * n_max * d for instances in batches.values()) + draws * n_max * d * sizes
    if {"finetune", "finetune_full"} & set(algorithms):
        batches.update(pretrain=draws * restarts, finetune=draws * sizes)
    flow = max(instances * A.instance_memory(d, m, source=name in _SOURCE_TERM, samples=n_max,
                                           splits=s["splits"] if name == "merlin" else 0)
               for name, instances in batches.items())
    return FLOAT_BYTES * (data + d * d) + flow


@guarded_entry_point
def run_comparison(d, m, k, n_targets, lam, draws, *, algorithms=ALGORITHMS, alpha=FIELDS["alpha"].default,
                   rho=FIELDS["rho"].default, ridge=FIELDS["ridge"].default, splits=FIELDS["splits"].default,
                   restarts=None, init_scale=0.5, seed=0, backend=None, max_memory=None, flow=None) -> pd.DataFrame:
    """Train every algorithm for every draw and n_t ∈ ``n_targets``; one row per (algorithm, n_t, draw).

    Columns: ``algorithm, n_t, draw``; ``target_loss`` (exact target population loss of the predictor);
    ``objective`` (the trained objective's final value); ``recovered`` (target loss ≤ :data:`RECOVERY_LOSS` with
    top coordinate 1); ``top_coord, top_share, coords`` (which input
    coordinates the learned φ uses: 1-based coordinate with the largest share of ‖φ‖²_F, that share, and every
    coordinate above 1 %); ``restarts_needed, restarts_at_best`` (see :mod:`.algorithms`); the convergence
    columns ``converged, status, t_final, steps, grad_norm`` of the kept flow (for the fine-tuning rows:
    ``converged`` requires the pre-training flow to have converged too, reported in ``pretrain_status``).
    ``draws``: the independent target sets (and pre-trainings) per n_t. ``ridge`` (MeRLin's inner λ_h),
    ``splits`` (S) and ``restarts`` (None: 3k) default to MeRLin's settings (:data:`.algorithms.MERLIN_RIDGE`,
    :data:`.algorithms.MERLIN_SPLITS`, :func:`.algorithms.merlin_restarts`), those of the figure and the claims;
    every range is that of :data:`FIELDS`. ``flow``: the integrator settings of every flow — None
    (:data:`.algorithms.FLOW_SETTINGS`), a :class:`~..integrator.FlowSettings`, or the changes by name (``rtol``,
    ``gtol``, ``max_time``, ``max_steps``, …; e.g. :data:`.algorithms.STUDY_TOLERANCES`). ``df.attrs`` holds the
    settings (``flow``: the integrator's, by name) and the pre-training report (``pretrain``: per draw objective,
    top coordinate, restarts needed, status).

    ``max_memory`` (bytes or ``"64G"``; None: ``TRANSFERTHEORY_MAX_MEMORY``, else the memory available): the
    run's peak memory is estimated from the arguments (:func:`_memory_estimate`; the source loss costs O(d²)
    per instance) and a run above the limit is refused with a ValueError before any work.
    """
    s = _validate(d, m, k, n_targets, lam, draws, algorithms, alpha, rho, ridge, splits, restarts, init_scale, seed)
    algorithms, flow = s.pop("algorithms"), A.FLOW_SETTINGS.overridden(flow, "flow")
    xp, seed, init_scale = resolve_backend(backend), s["seed"], s["init_scale"]
    check_memory(_memory_estimate(s, algorithms), what="run_comparison", max_memory=max_memory, xp=xp,
                 params={"d": s["d"], "m": s["m"], "draws": s["draws"], "restarts": s["restarts"],
                         "n_targets": s["n_targets"], "splits": s["splits"]})
    pre, finetune_frames = None, []
    if {"finetune", "finetune_full"} & set(algorithms):
        pre = A.pretrain(s["d"], s["m"], s["k"], s["lam"], s["draws"], s["restarts"], generator(seed, 1),
                         backend=backend_name(xp), init_scale=init_scale, flow=flow)
    k, lam, m, restarts = s["k"], s["lam"], s["m"], s["restarts"]
    builders = {  # the flows of the algorithms with restarts on one target set, from the generator of their starts
        "joint": lambda X, y, rng: A.joint_problem(X, y, k, lam, s["alpha"], m, restarts, rng, init_scale),
        "target_only": lambda X, y, rng: A.joint_problem(X, y, k, lam, 1.0, m, restarts, rng, init_scale),  # α = 1
        "merlin": lambda X, y, rng: A.merlin_problem(X, y, k, lam, m, restarts, rng, s["rho"], s["ridge"],
                                                     s["splits"], init_scale)}
    problems = {name: [] for name in builders if name in algorithms}
    for n_t in s["n_targets"]:  # the problems of every n_t, then each algorithm trained for all n_t at once
        X, y = (to_device(a, xp) for a in target_sets(n_t, s["d"], s["draws"], seed))
        if pre is not None:
            finetune_frames.append(_finetune_rows(pre, X, y, n_t, lam, algorithms, flow))
        for name, batch in problems.items():
            batch.append(builders[name](X, y, generator(seed, 2, ALGORITHMS.index(name), n_t)))  # key (2, a, n_t)
    outcomes = {name: A.solve(batch, flow=flow) for name, batch in problems.items()}
    frames = []
    for i, n_t in enumerate(s["n_targets"]):
        frames += finetune_frames[i] if pre is not None else []
        frames += [_rows(name, n_t, outcomes[name][i]) for name in problems]
    df = pd.concat(frames, ignore_index=True)
    df.attrs.update({**s, "backend": backend_name(xp), "flow": flow.as_dict()})
    if pre is not None:
        df.attrs["pretrain"] = _rows("pretrain", 0, pre).drop(columns=["algorithm", "n_t"]).to_dict("list")
    return df


def _finetune_rows(pre: A.Outcome, X, y, n_t, lam, algorithms, flow) -> list:
    """Head-only (and full) fine-tuning of the pre-trained networks on one target set per draw."""
    head = A.finetune_head(pre.params["phi"], X, y, lam, flow=flow)
    extra = {"pretrain_status": pre.status, "pretrain_restarts_needed": pre.restarts_needed}
    frames = [_rows("finetune", n_t, head.requiring(pre.converged), **extra)] if "finetune" in algorithms else []
    if "finetune_full" in algorithms:
        full = A.finetune_full(head.head, pre.params["phi"], X, y, lam, flow=flow)
        frames.append(_rows("finetune_full", n_t, full.requiring(pre.converged), **extra))
    return frames


def _merlin(p, seed, backend):
    return run_comparison(p["d"], p["m"], p["k"], [p["n_t"]], p["lam"], p["draws"], algorithms=p["algorithms"],
                          alpha=p["alpha"], rho=p["rho"], ridge=p["ridge"], splits=p["splits"],
                          restarts=p["restarts"], seed=seed, backend=backend, **flow_arguments(p))


#: the ``merlin`` experiment (MeRLin §5): every algorithm at one target size n_t, a thin wrapper over
#: :func:`run_comparison` whose fields are its :data:`FIELDS` (one n_t) and the integrator's ``rtol`` and ``gtol``
MERLIN = Experiment(
    name="merlin", paper="MeRLin §5", version=3,
    description="quadratic network: fine-tuning, joint training, target-only and MeRLin at one target size n_t",
    fields=(*FIELDS.values(), *flow_fields(A.FLOW_SETTINGS, "rtol", "gtol")),
    example=dict(d=4, m=1, k=2, n_t=4, draws=1, restarts=1, splits=1),
    renamed={"seeds": "draws", "instance": "draw"},
    simulate=_merlin)


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
