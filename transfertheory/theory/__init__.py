"""Closed-form predictions of the transfer-learning papers (pure, vectorized NumPy).

* :mod:`.linear` — FaF §3, deep linear networks (imported here), built from
  :mod:`.scratch` (FaF Thms 3.5–3.6) and :mod:`.fine_tuning` (FaF Thm 3.9 and
  its gradient-flow correction);
* :mod:`.methods` — one record per transfer method (:class:`TransferMethod`,
  :data:`METHODS`, :func:`get_method`; imported here);
* :mod:`.transfer` — transferability on the (γ, θ) plane and its boundary angles (imported here);
* :mod:`.distances` — FaF §2.1, task distances (``from transfertheory.theory import distances``;
  not imported eagerly because it loads POT);
* :mod:`.relu` — FaF §4, two-layer ReLU student–teacher networks (arc-cosine kernel, projections);
* :mod:`.merlin` — MeRLin §5, the two-layer quadratic network;
* :mod:`.tdr` — TDR §6, NTK Gram quantities of fine-tuning;
* :mod:`.ntk` — exact NNGP/NTK of deep ReLU networks, and :mod:`.mtl` — MTL §4, the MTL and ANIL kernels
  (each imported on demand: ``from transfertheory.theory import relu``).
"""
from . import linear, methods, transfer
from .linear import *  # noqa: F401,F403  (the public API: the three modules' __all__)
from .methods import *  # noqa: F401,F403
from .transfer import *  # noqa: F401,F403

__all__ = [*linear.__all__, *methods.__all__, *transfer.__all__]
