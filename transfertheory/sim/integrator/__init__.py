"""Batched adaptive Runge–Kutta–Chebyshev integrator of gradient flows.

* :mod:`.kernels` — the stage-kernel contract (:class:`StageKernel`, :class:`StepRequest`, :class:`StepOutcome`),
  the dense kernel and the RKC2 tables (coefficients, stability bound, Butcher rows);
* :mod:`.ragged` — batches of instances of different sizes (:class:`RaggedBatch`, one dense block per
  size), the stage kernel that runs one dense kernel per block (:class:`BlockwiseStages`), the batched flow
  state and the record of finished instances;
* :mod:`.solvers` — the schemes as objects behind one protocol (:class:`Solver`): :class:`RKC2` and
  :class:`GradientDescent` (fixed-step explicit Euler, ``scheme="euler"``), each with its own parameters; the
  step-size controller of the error-controlled solvers (:class:`ErrorController`); and :class:`FlowSettings`, the
  integrator's settings (solver, controller, tolerances, budget) as one frozen record validated when built, and
  their ranges (:data:`SETTING_RANGES`);
* :mod:`.flow` — :func:`integrate_gradient_flow` and :class:`FlowResult`, which carries the convergence record
  (:class:`~transfertheory.sim.convergence.Convergence`), per-instance statistics (:class:`FlowStats`) and a
  message per status (:data:`STATUS_MESSAGES`).

How a new simulator plugs in is described in docs/simulator.md.
"""
from ..convergence import Convergence
from .flow import (CONVERGED_STATUSES, STATUS_MESSAGES, STATUSES, FlowResult, FlowStats, flow_state_bytes,
                   integrate_gradient_flow)
from .kernels import (DenseStages, FusedDescent, StageKernel, StepOutcome, StepRequest, UnreachableCertificate,
                      dense_spectral_radius, rkc_butcher_rows, rkc_coefficients,
                      rkc_stability_bound, row_norms, tables)
from .ragged import BlockwiseStages, RaggedBatch
from .solvers import (RKC2, SCHEMES, SETTING_RANGES, SOLVERS, ErrorController, FlowSettings, GradientDescent, Solver,
                      count, positive)

__all__ = ["FlowResult", "FlowSettings", "FlowStats", "Solver", "RKC2", "GradientDescent", "SOLVERS", "ErrorController",
           "Convergence", "integrate_gradient_flow", "STATUSES", "STATUS_MESSAGES", "CONVERGED_STATUSES", "SCHEMES",
           "SETTING_RANGES", "flow_state_bytes", "StageKernel", "UnreachableCertificate", "FusedDescent",
           "StepRequest", "StepOutcome", "DenseStages", "dense_spectral_radius", "row_norms",
           "RaggedBatch", "BlockwiseStages", "rkc_coefficients", "rkc_stability_bound", "rkc_butcher_rows",
           "tables", "positive", "count"]
