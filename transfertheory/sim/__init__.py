"""Simulators of the training processes the papers analyse (NumPy, CuPy, or any registered backend).

One package per paper's training process: :mod:`.deep_linear` (FaF §3),
:mod:`.relu_teacher` (FaF §4), :mod:`.quadratic` (MeRLin §5),
:mod:`.ntk_two_layer` (TDR §6) and :mod:`.mtl` (MTL §4). All share one
integrator (:mod:`.integrator`: batched adaptive Runge–Kutta–Chebyshev
gradient flow, or fixed-step explicit Euler = batched gradient descent; a new
simulator supplies a gradient callable and optionally a
:class:`~.integrator.StageKernel` and a residual guard, see docs/simulator.md)
and return tidy pandas DataFrames. The array module is inferred from the
arrays; entry points take a backend name
(:func:`transfertheory.backend.resolve_backend`). :func:`experiments` returns
one :class:`Experiment` record per simulator (:mod:`.catalog`): its
parameter schema with ranges, a small example point and ``run(**point)``
returning one row per instance with the shared convergence columns
(:mod:`.convergence`); :mod:`.seeding` is the one seeding rule.

``run_transfer_experiment`` (FaF §3) and the catalog are imported on first use: their modules load pandas, which a
command line's ``--help`` or a simulator of another paper does not need.
"""
from .integrator import FlowResult, StageKernel, StepOutcome, StepRequest, integrate_gradient_flow

__all__ = ["run_transfer_experiment", "integrate_gradient_flow", "FlowResult", "StageKernel", "StepRequest",
           "StepOutcome", "Experiment", "Field", "experiments", "get_experiment"]

#: the names imported on first use, and their modules
_LAZY = {"run_transfer_experiment": ".deep_linear", "experiments": ".catalog", "get_experiment": ".catalog",
         "Experiment": ".records", "Field": ".records"}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
