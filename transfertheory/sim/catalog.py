"""The registered experiments: one :class:`~.records.Experiment` per simulator, thin wrappers over its entry point.

* ``faf_linear`` — FaF §3 deep linear transfer at one (γ, θ) (:func:`.deep_linear.run_transfer_experiment`), with
  isotropic inputs by default or a ``spectrum`` and ``teacher`` family (docs/anisotropic.md);
* ``faf_relu`` — FaF §4 ablated ReLU student–teacher transfer at the fractions ``mus`` over the sample sizes ``ns``
  (:func:`.relu_teacher.run_transfer_experiment`; the pretrained students are shared by the ``ns``, the scratch
  flows by the ``mus``); a point may be a chunk of a run's teachers and data sets (``teacher_start``,
  ``instance_start``, the run's ``draw_seed``), which gives the run's rows bit for bit;
* ``merlin`` — MeRLin §5, every algorithm at one target size n_t (:func:`.merlin.run_comparison`, record
  :mod:`.merlin.record`; the per-draw index is the column ``draw``);
* ``tdr`` — TDR §6 wide two-layer networks of one width on one §5.1 task pair
  (:func:`.tdr.simulate_transfer`, record :mod:`.tdr_record`; one row per (stage, draw), stage pretrain /
  finetune / scratch, ``distance`` = ‖W(Q) − W(P)‖_F or ‖W_s(Q) − W(0)‖_F);
* ``mtl`` — MTL §4 Lemma 1, MTL and ANIL networks of one width against the infinite-width predictions
  (:func:`.mtl.finite_width_study` on MTL §5.1's synthetic tasks, record :mod:`.mtl.record`);
* ``faf_surface`` — the closed forms of FaF §3 at one (method, γ, θ, σ, λ): the paper's and gradient flow's
  risks and transferabilities (cheap, but the same path: its row has status ``exact``).

Each takes the integer ``seed`` the caller gives (the sweep engine derives it from the point's hash,
:func:`.seeding.derive_seed`) and returns the simulator's table with the shared convergence columns.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .. import _registry
from .. import params as P
from .._validation import Interval
from ..theory.methods import METHODS as METHOD_RECORDS
from ..theory.methods import get_method
from ..theory.relu import MU, M_STAR, TEACHER_OUTPUTS
from ..theory.spectra import SPECTRUM_SYNTAX, TEACHER_SYNTAX, check_spectrum_text, check_teacher_text
from .convergence import Convergence, convergence_columns
from .deep_linear.training import TARGET_FLOW as FAF_LINEAR_FLOW
from .integrator import SETTING_RANGES
from .merlin.record import MERLIN
from .mtl.record import MTL_NETWORKS
from .records import Experiment, Field
from .relu_teacher.pretraining import PRETRAIN_FLOW as FAF_RELU_PRETRAIN_FLOW
from .relu_teacher.target_training import TARGET_FLOW as FAF_RELU_FLOW
from .tdr_record import TDR

__all__ = ["experiments", "get_experiment", "register_experiment", "unregister_experiment"]


def _count(name, low=1, description=""):
    return P.Param(name, Interval(low, np.inf, "left"), integer=True, description=description)


# the integrator's settings: their ranges are the integrator's (SETTING_RANGES), their defaults the simulators'
_MAX_TIME, _RTOL, _GTOL = SETTING_RANGES["max_time"], SETTING_RANGES["rtol"], SETTING_RANGES["gtol"]


# --------------------------------------------------------------------------- FaF §3 deep linear


def _teacher_text(text):
    return text if text == "random" else check_teacher_text(text)


def _faf_linear(p, seed, backend):
    from .deep_linear import run_transfer_experiment

    return run_transfer_experiment(p["d"], [p["gamma"]], [p["theta"]], p["sigma"], p["instances"], depth=p["depth"],
                                   alpha=p["alpha"], methods=p["methods"], ridge=(p["lam"],), seed=seed,
                                   backend=backend, tol=p["tol"], max_time=p["max_time"], rtol=p["rtol"],
                                   progress=False, spectrum=p["spectrum"],
                                   teacher=None if p["teacher"] == "random" else p["teacher"])


FAF_LINEAR = Experiment(
    name="faf_linear", paper="FaF §3", version=1, draws="instances",
    description="deep linear network: scratch, linear transfer and fine-tuning at one (γ, θ)",
    fields=(Field("d", 64, P.D.with_range(low=2)), Field("gamma", 0.5, P.GAMMA), Field("theta", 0.5, P.THETA),
            Field("sigma", 0.2, P.SIGMA), Field("instances", 4, P.INSTANCES), Field("depth", 2, P.DEPTH),
            Field("alpha", 1e-5, P.ALPHA), Field("methods", ("scratch", "linear"), choices=("scratch", "linear",
                                                                                            "finetune"), sequence=True),
            Field("lam", 0.0, P.LAM), Field("tol", FAF_LINEAR_FLOW.gtol, _GTOL),
            Field("max_time", FAF_LINEAR_FLOW.max_time, _MAX_TIME), Field("rtol", FAF_LINEAR_FLOW.rtol, _RTOL),
            Field("spectrum", "isotropic", text=check_spectrum_text, syntax=SPECTRUM_SYNTAX, added=True,
                  description="input covariance spectrum (docs/anisotropic.md); isotropic: FaF's x ~ N(0, I)"),
            Field("teacher", "random", text=_teacher_text, syntax="random | " + TEACHER_SYNTAX, added=True,
                  description="where β_s, β_t sit on the spectrum; random: the isotropic draw, Σ-normalised")),
    example=dict(d=8, gamma=0.5, theta=0.5, instances=2, methods=("scratch", "linear", "finetune")),
    simulate=_faf_linear)


# --------------------------------------------------------------------------- FaF §4 ReLU student–teacher


def _faf_relu(p, seed, backend):
    from .relu_teacher import run_transfer_experiment

    return run_transfer_experiment(p["d"], p["m"], p["m_star"], p["mus"], p["ns"], teachers=p["teachers"],
                                   instances=p["instances"], methods=p["methods"],
                                   seed=seed if p["draw_seed"] < 0 else p["draw_seed"], output=p["output"],
                                   max_time=p["max_time"], pretrain_max_time=p["pretrain_max_time"],
                                   loss_tol=p["loss_tol"], linear_max_time=p["linear_max_time"], backend=backend,
                                   teacher_start=p["teacher_start"], instance_start=p["instance_start"])


FAF_RELU = Experiment(
    name="faf_relu", paper="FaF §4", version=3, draws="instances",
    description="two-layer ReLU students transferred from ablated teachers at the fractions mus, over the sample "
                "sizes ns (the scratch flows shared by every μ); a chunk of a larger run's teachers and data sets",
    fields=(Field("d", 8, P.D), Field("m", 40, _count("m")), Field("m_star", 8, M_STAR),
            Field("mus", (0.5,), MU, sequence=True),
            Field("ns", (16, 64), P.N, sequence=True), Field("teachers", 1, _count("teachers")),
            Field("instances", 1, P.INSTANCES),
            Field("teacher_start", 0, _count("teacher_start", 0), description="index of the chunk's first teacher"),
            Field("instance_start", 0, _count("instance_start", 0),
                  description="index of the chunk's first data set per teacher"),
            Field("draw_seed", -1, P.Param("draw_seed", Interval(-1, np.inf, "left"), integer=True),
                  description="root seed of every draw, shared by the chunks of one run (-1: the point's own seed "
                              "from the sweep engine)"),
            Field("methods", ("scratch", "linear"), choices=("scratch", "linear", "linear_minnorm", "finetune"),
                  sequence=True),
            Field("output", "ones", choices=tuple(TEACHER_OUTPUTS)),
            Field("max_time", FAF_RELU_FLOW.max_time, _MAX_TIME),
            Field("pretrain_max_time", FAF_RELU_PRETRAIN_FLOW.max_time, _MAX_TIME),
            Field("loss_tol", FAF_RELU_FLOW.loss_tol, SETTING_RANGES["loss_tol"]),
            Field("linear_max_time", FAF_RELU_FLOW.max_time, _MAX_TIME,
                  description="flow-time budget of the closed-form linear-transfer flow (1e30: run to convergence)")),
    example=dict(d=4, m=8, m_star=4, mus=(0.5,), ns=(8,), max_time=20.0, pretrain_max_time=20.0),
    simulate=_faf_relu)


# --------------------------------------------------------------------------- FaF §3 closed forms


def _faf_surface(p, seed, backend):
    record = get_method(p["method"])
    record.check_lam(p["lam"])
    args = (p["gamma"], p["theta"], p["sigma"], p["lam"])
    row = {"paper_risk": record.paper_risk(*args), "flow_risk": record.flow_risk(*args),
           "paper_transferability": record.paper_transferability(*args),
           "flow_transferability": record.flow_transferability(*args)}
    return pd.DataFrame({**{k: [float(v)] for k, v in row.items()},
                         **convergence_columns(Convergence(True, "exact", np.nan, 0, np.nan))})


FAF_SURFACE = Experiment(
    name="faf_surface", paper="FaF §3 (Eqs. 10–17)", version=1,
    description="closed forms: the paper's and gradient flow's n, d → ∞ risk and transferability at one point",
    fields=(Field("method", "linear", choices=tuple(METHOD_RECORDS)), Field("gamma", 0.5, P.GAMMA),
            Field("theta", 0.5, P.THETA), Field("sigma", 0.2, P.SIGMA), Field("lam", 0.0, P.LAM)),
    example=dict(method="finetune", gamma=1.5, theta=0.7),
    simulate=_faf_surface)


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
