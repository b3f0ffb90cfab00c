"""Batched adaptive Runge–Kutta–Chebyshev integrator of gradient flows.

* :mod:`.rkc` — the RKC2 tables (coefficients, stability bound, Butcher rows);
* :mod:`.kernels` — the stage-kernel contract (:class:`StageKernel`,
  :class:`StepRequest`, :class:`StepOutcome`) and the dense kernel;
* :mod:`.state` — the batched flow state and the record of finished instances;
* :mod:`.ragged` — batches of instances of different sizes (:class:`RaggedBatch`, one dense block per
  size) and the stage kernel that runs one dense kernel per block (:class:`BlockwiseStages`);
* :mod:`.flow` — :func:`integrate_gradient_flow` (RKC2, or fixed-step explicit Euler = batched
  gradient descent with ``scheme="euler"``) and :class:`FlowResult`.

How a new simulator plugs in is described in docs/simulator.md.
"""
from .flow import (PEAK_STATE_COPIES, SCHEMES, STATUSES, FlowResult, check_settings, flow_state_bytes,
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
from .rkc import rkc_butcher_matrix, rkc_coefficients, rkc_stability_bound, tables

__all__ = [
    "FlowResult",
    "integrate_gradient_flow",
    "STATUSES",
    "SCHEMES",
    "PEAK_STATE_COPIES",
    "flow_state_bytes",
    "check_settings",
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
    "tables",
]
