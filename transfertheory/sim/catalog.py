"""The registered experiments: one :class:`~.records.Experiment` per simulator, thin wrappers over its entry point.

* ``faf_linear`` — FaF §3 deep linear transfer at one (γ, θ) (:mod:`.deep_linear.record`), with
  isotropic inputs by default or a ``spectrum`` and ``teacher`` family (docs/anisotropic.md);
* ``faf_relu`` — FaF §4 ablated ReLU student–teacher transfer at the fractions ``mus`` over the sample sizes ``ns``
  (:mod:`.relu_teacher.record`); a point may be a chunk of a run's teachers and data sets;
* ``merlin`` — MeRLin §5, every algorithm at one target size n_t (:func:`.merlin.run_comparison`; the
  per-seed index is the column ``instance``);
* ``tdr`` — TDR §6 wide two-layer networks of one width on one §5.1 task pair
  (:func:`.tdr.simulate_transfer`; one row per (stage, instance), stage pretrain / finetune / scratch,
  ``distance`` = ‖W(Q) − W(P)‖_F or ‖W_s(Q) − W(0)‖_F);
* ``mtl`` — MTL §4 Lemma 1, MTL and ANIL networks of one width against the infinite-width predictions
  (:func:`.mtl.finite_width_study` on MTL §5.1's synthetic tasks);
* ``faf_surface`` — the closed forms of FaF §3 at one (method, γ, θ, σ, λ) (:mod:`.deep_linear.record`): the
  paper's and gradient flow's risks and transferabilities (cheap, but the same path: its row has status ``exact``).

Each takes the integer ``seed`` the caller gives (the sweep engine derives it from the point's hash,
:func:`.seeding.derive_seed`) and returns the simulator's table with the shared convergence columns.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .. import _registry
from .. import params as P
from .._validation import Interval
from ..theory import merlin as MERLIN
from ..theory import mtl as MTL
from .convergence import convergence_columns
from .deep_linear.record import FAF_LINEAR, FAF_SURFACE
from .integrator import SCHEMES, SETTING_RANGES
from .merlin.algorithms import MERLIN_RIDGE, MERLIN_SPLITS, merlin_restarts
from .merlin.training import FLOW_SETTINGS as MERLIN_FLOW
from .mtl.experiment import STUDY_RTOL as MTL_RTOL
from .records import Experiment, Field
from .relu_teacher.record import FAF_RELU
from .seeding import generator
from .tdr import TRAINING_FLOW as TDR_FLOW

__all__ = ["experiments", "get_experiment", "register_experiment", "unregister_experiment"]


def _positive(name, description=""):
    return P.Param(name, Interval(0, np.inf, "neither"), description=description)


def _count(name, low=1, description=""):
    return P.Param(name, Interval(low, np.inf, "left"), integer=True, description=description)


# the integrator's settings: their ranges are the integrator's (SETTING_RANGES), their defaults the simulators'
_MAX_TIME, _RTOL, _GTOL = SETTING_RANGES["max_time"], SETTING_RANGES["rtol"], SETTING_RANGES["gtol"]


# --------------------------------------------------------------------------- MeRLin §5


def _merlin(p, seed, backend):
    from .merlin import run_comparison

    table = run_comparison(p["d"], p["m"], p["k"], [p["n_t"]], p["lam"], p["seeds"], algorithms=p["algorithms"],
                           alpha=p["alpha"], rho=p["rho"], ridge=p["ridge"], splits=p["splits"],
                           restarts=p["restarts"], seed=seed, backend=backend, rtol=p["rtol"], gtol=p["gtol"])
    return table.rename(columns={"seed": "instance"})


MERLIN = Experiment(
    name="merlin", paper="MeRLin §5", version=3, draws="seeds",
    description="quadratic network: fine-tuning, joint training, target-only and MeRLin at one target size n_t",
    fields=(Field("d", 12, P.D), Field("m", 2, _count("m")), Field("k", 3, _count("k", 2)), Field("n_t", 8, P.N),
            Field("lam", 0.1, _positive("lam")), Field("seeds", 8, P.SEEDS),
            Field("algorithms", ("finetune", "joint", "target_only", "merlin"),
                  choices=("finetune", "finetune_full", "joint", "target_only", "merlin"), sequence=True),
            Field("alpha", 0.5, MERLIN.ALPHA_JOINT), Field("rho", 1.0, _positive("rho")),
            Field("ridge", MERLIN_RIDGE, _positive("ridge")), Field("splits", MERLIN_SPLITS, _count("splits")),
            Field("restarts", merlin_restarts(3), _count("restarts")), Field("rtol", MERLIN_FLOW.rtol, _RTOL),
            Field("gtol", MERLIN_FLOW.gtol, _GTOL)),
    example=dict(d=4, m=1, k=2, n_t=4, seeds=1, restarts=1, splits=1),
    simulate=_merlin)


# --------------------------------------------------------------------------- TDR §6


def _tdr_rows(run) -> pd.DataFrame:
    """One row per (stage, instance) of a :class:`~.tdr.WidthRun`."""
    frames = []
    for stage, distance in (("pretrain", np.nan), ("finetune", run.finetune_distance),
                            ("scratch", run.scratch_distance)):
        flow = getattr(run, stage)
        seeds = len(flow.status)
        frames.append(pd.DataFrame({
            "stage": stage, "instance": np.arange(seeds), "distance": np.broadcast_to(distance, (seeds,)),
            "gradient_norm_init": run.gradient_norm_init, "gradient_norm_pretrained": run.gradient_norm_pretrained,
            "loss": flow.loss,
            **convergence_columns(flow.convergence)}))
    return pd.concat(frames, ignore_index=True)


def _tdr(p, seed, backend):
    from .tdr import simulate_transfer, task_pair

    data = task_pair(p["family"], p["angle"], n=p["n"], d=p["d"], seed=p["data_seed"])
    (run,) = simulate_transfer(*data, [p["width"]], seeds=p["seeds"], kappa=p["kappa"], seed=seed,
                               scheme=p["scheme"], gtol=p["gtol"], max_time=p["max_time"],
                               max_steps=p["max_steps"], backend=backend)
    return _tdr_rows(run)


TDR = Experiment(
    name="tdr", paper="TDR §6", version=2, draws="seeds",
    description="wide two-layer ReLU networks of one width: pretraining, fine-tuning and scratch on a §5.1 task pair",
    fields=(Field("family", "shared-inputs", choices=("shared-inputs", "shared-labels")),
            Field("angle", 1.0, P.THETA.with_range(high=np.pi)), Field("n", 8, P.N), Field("d", 5, P.D),
            Field("data_seed", 3, P.SEED), Field("width", 1000, P.WIDTH.with_range(low=2)), Field("seeds", 8, P.SEEDS),
            Field("kappa", 1.0, _positive("kappa")), Field("scheme", TDR_FLOW.scheme, choices=tuple(SCHEMES)),
            Field("gtol", TDR_FLOW.gtol, _GTOL), Field("max_time", TDR_FLOW.max_time, _MAX_TIME),
            Field("max_steps", TDR_FLOW.max_steps, SETTING_RANGES["max_steps"])),
    example=dict(width=100, seeds=2),
    simulate=_tdr)


# --------------------------------------------------------------------------- MTL §4


def _mtl(p, seed, backend):
    from .mtl import finite_width_study

    problem = MTL.synthetic_problem(generator(p["data_seed"]), tasks=p["tasks"], n=p["n"], test_tasks=1,
                                    n_support=p["n_support"], n_query=p["n_query"], d=p["d"])
    return finite_width_study(problem, MTL.ReluNetwork(p["depth"]), [p["width"]], p["networks"],
                              lam_tau=p["lam_tau"], lam_tau_hat=p["lam_tau_hat"], seed=seed, rtol=p["rtol"],
                              backend=backend)


MTL_NETWORKS = Experiment(
    name="mtl", paper="MTL §4 (Lemma 1)", version=2, draws="networks",
    description="finite-width ReLU networks trained by MTL and ANIL against the infinite-width predictions",
    fields=(Field("depth", 1, _count("depth")), Field("width", 256, P.WIDTH),
            Field("networks", 6, _count("networks")), Field("lam_tau", 0.1, MTL.LAM_TAU),
            Field("lam_tau_hat", 0.3, MTL.LAM_TAU), Field("tasks", 4, _count("tasks")), Field("n", 5, P.N),
            Field("n_support", 5, _count("n_support")), Field("n_query", 5, _count("n_query")), Field("d", 10, P.D),
            Field("data_seed", 5, P.SEED), Field("rtol", MTL_RTOL, _RTOL)),
    example=dict(width=16, networks=1, tasks=2, n=3, n_support=3, n_query=3, d=4),
    simulate=_mtl)


_REGISTRY = {e.name: e for e in (FAF_LINEAR, FAF_RELU, MERLIN, TDR, MTL_NETWORKS, FAF_SURFACE)}


def register_experiment(experiment: Experiment) -> Experiment:
    """Add a simulator's record (ValueError if another record has its name); returns it."""
    return _registry.add(_REGISTRY, experiment.name, experiment, "experiment")


def unregister_experiment(name) -> None:
    """Remove the record called ``name`` (one registered for a while, e.g. by a test)."""
    _registry.remove(_REGISTRY, name, "experiment")


def experiments() -> dict:
    """Every registered :class:`~.records.Experiment`, by name."""
    return dict(_REGISTRY)


def get_experiment(name) -> Experiment:
    """The experiment called ``name``, or a ValueError listing the known names."""
    if name not in _REGISTRY:
        raise ValueError(f"experiment: unknown experiment {name!r} (known: {', '.join(_REGISTRY)})")
    return _REGISTRY[name]
