"""Simulators of the training processes the papers analyse (NumPy, CuPy, or any registered backend).

One package or module per paper's training process, each described by an :class:`Experiment` record
(:mod:`.catalog`). A paper's files, layer by layer (docs/architecture.md keeps the same table)::

    paper                  theory                              sim (Experiment)               claims                           figures
    FaF §2.1 distances     theory/distances, distance_study    —                              faf_distances                    faf_fig5
    FaF §3 deep linear     theory/linear, scratch, fine_tuning, sim/deep_linear/               faf_linear, faf_linear_sim             faf_fig1, 2, 3, 6, 7,
                           transfer, methods                   (faf_linear, faf_surface)                                        faf_finetune_depth
    FaF §4 ReLU teacher    theory/relu/                        sim/relu_teacher/ (faf_relu)   faf_relu, faf_relu_sim           faf_fig4
    MeRLin §5 quadratic    theory/merlin                       sim/merlin/ (merlin)        merlin, merlin_sim               merlin_fig
    TDR §6 wide two-layer  theory/tdr                sim/tdr (tdr)        tdr                         tdr_fig
    MTL §4–5 MTL and ANIL  theory/ntk, theory/mtl              sim/mtl/ (mtl)                 mtl, mtl_sim                mtl_fig1

All share one integrator (:mod:`.integrator`: batched adaptive Runge–Kutta–Chebyshev gradient flow, or
fixed-step explicit Euler = batched gradient descent; a new simulator supplies a gradient callable and optionally
a :class:`~.integrator.StageKernel` and a residual guard, see docs/simulator.md). Its settings are one validated
record, :class:`~.integrator.FlowSettings` (each simulator keeps its defaults as a module constant), and it reports
how every instance ended as one :class:`~.convergence.Convergence` record, which every simulator's result carries. The array module is inferred
from the arrays; entry points take a backend name (:func:`transfertheory.backend.resolve_backend`).
:func:`experiments` returns one :class:`Experiment` per simulator: its parameter schema with ranges, a small
example point and ``run(**point)`` returning one row per instance with the shared convergence columns
(:mod:`.convergence`); :mod:`.seeding` is the one seeding rule; :func:`register_experiment` adds a record.

``run_transfer_experiment`` (FaF §3) and the catalog are imported on first use: their modules load pandas, which a
command line's ``--help`` or a simulator of another paper does not need.
"""
from .convergence import Convergence
from .integrator import FlowResult, FlowSettings, StageKernel, StepOutcome, StepRequest, integrate_gradient_flow

#: the names imported on first use, and their modules
_LAZY = {"run_transfer_experiment": ".deep_linear", "experiments": ".catalog", "get_experiment": ".catalog",
         "register_experiment": ".catalog", "unregister_experiment": ".catalog", "Experiment": ".records",
         "Field": ".records"}
__all__ = ["integrate_gradient_flow", "FlowResult", "FlowSettings", "Convergence", "StageKernel", "StepRequest",
           "StepOutcome", *_LAZY]


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
