"""The registered experiments: one :class:`~.records.Experiment` per simulator, each defined next to its entry point.

* ``faf_linear`` — FaF §3 deep linear transfer at one (γ, θ) (:data:`.deep_linear.experiment.FAF_LINEAR`), with
  isotropic inputs by default or a ``spectrum`` and ``teacher`` family (docs/anisotropic.md);
* ``faf_relu`` — FaF §4 ablated ReLU student–teacher transfer at the fractions ``mus`` over the sample sizes ``ns``
  (:data:`.relu_teacher.experiment.FAF_RELU`); a point may be a chunk of a run's teachers and data sets;
* ``merlin`` — MeRLin §5, every algorithm at one target size n_t (:func:`.merlin.run_comparison`, record
  :data:`.merlin.experiment.MERLIN`);
* ``tdr`` — TDR §6 wide two-layer networks of one width on one §5.1 task pair
  (:func:`.tdr.simulate_transfer`, record :data:`.tdr.TDR`; one row per (stage, draw), stage pretrain /
  finetune / scratch, ``distance`` = ‖W(Q) − W(P)‖_F or ‖W_s(Q) − W(0)‖_F);
* ``mtl`` — MTL §4 Lemma 1, MTL and ANIL networks of one width against the infinite-width predictions
  (:func:`.mtl.finite_width_study` on MTL §5.1's synthetic tasks, record :data:`.mtl.experiment.MTL_NETWORKS`);
* ``faf_surface`` — the closed forms of FaF §3 at one (method, γ, θ, σ, λ) (:mod:`.deep_linear.record`): the
  paper's and gradient flow's risks and transferabilities (cheap, but the same path: its row has status ``exact``).

Each takes the integer ``seed`` the caller gives (the sweep engine derives it from the point's hash,
:func:`.seeding.derive_seed`) and returns the simulator's table with the shared convergence columns; each
counts its independent draws with the field ``draws`` (one row per draw, column ``draw``).
"""
from __future__ import annotations

from .. import _registry
from .deep_linear.experiment import FAF_LINEAR
from .deep_linear.record import FAF_SURFACE
from .merlin.experiment import MERLIN
from .mtl.experiment import MTL_NETWORKS
from .records import Experiment
from .relu_teacher.experiment import FAF_RELU
from .tdr import TDR

__all__ = ["experiments", "get_experiment", "register_experiment", "unregister_experiment"]

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
