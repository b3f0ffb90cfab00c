"""Batched adaptive Runge–Kutta–Chebyshev integrator of gradient flows.

* :mod:`.rkc` — the RKC2 tables (coefficients, stability bound, Butcher rows);
* :mod:`.kernels` — the stage-kernel contract (:class:`StageKernel`,
  :class:`StepRequest`, :class:`StepOutcome`) and the dense kernel;
* :mod:`.state` — the batched flow state and the record of finished instances;
* :mod:`.ragged` — batches of instances of different sizes (:class:`RaggedBatch`, one dense block per
  size) and the stage kernel that runs one dense kernel per block (:class:`BlockwiseStages`);
* :mod:`.settings` — :class:`FlowSettings`, the integrator's settings (tolerances, budget, scheme, stage cap) as
  one frozen record validated when built, and their ranges (:data:`SETTING_RANGES`);
* :mod:`.flow` — :func:`integrate_gradient_flow` (RKC2, or fixed-step explicit Euler = batched
  gradient descent with ``scheme="euler"``) and :class:`FlowResult`, which carries the convergence record
  (:class:`~transfertheory.sim.convergence.Convergence`).

How a new simulator plugs in is described in docs/simulator.md.
"""
from ..convergence import Convergence
from .flow import (CONVERGED_STATUSES, PEAK_STATE_COPIES, STATUSES, FlowResult, flow_state_bytes,
                   integrate_gradient_flow)
from .kernels import (
    DenseStages,
    StageKernel,
    StepOutcome,
    StepRequest,
    dense_spectral_radius,
    dense_stages,
    row_norms,
)
from .ragged import BlockwiseStages, RaggedBatch
from .rkc import rkc_butcher_matrix, rkc_butcher_rows, rkc_coefficients, rkc_stability_bound, tables
from .settings import SCHEMES, SETTING_RANGES, FlowSettings

__all__ = [
    "FlowResult",
    "FlowSettings",
    "Convergence",
    "integrate_gradient_flow",
    "STATUSES",
    "CONVERGED_STATUSES",
    "SCHEMES",
    "SETTING_RANGES",
    "PEAK_STATE_COPIES",
    "flow_state_bytes",
    "StageKernel",
    "StepRequest",
    "StepOutcome",
    "DenseStages",
    "dense_stages",
    "dense_spectral_radius",
    "row_norms",
    "RaggedBatch",
    "BlockwiseStages",
    "rkc_coefficients",
    "rkc_stability_bound",
    "rkc_butcher_matrix",
    "rkc_butcher_rows",
    "tables",
]
