"""Simulators of the training processes the papers analyse (NumPy or CuPy backend).

All simulators share one integrator (:mod:`.integrator`, batched adaptive
Runge–Kutta–Chebyshev gradient flow) and return tidy pandas DataFrames.
"""
from .deep_linear import run_transfer_experiment
from .integrator import FlowResult, integrate_gradient_flow

__all__ = ["run_transfer_experiment", "integrate_gradient_flow", "FlowResult"]
