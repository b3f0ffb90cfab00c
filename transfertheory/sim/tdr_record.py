"""The ``tdr`` experiment (TDR §6): wide two-layer networks of one width on one §5.1 task pair — pretraining,
fine-tuning and scratch — a thin wrapper over :func:`.tdr.simulate_transfer` (its :data:`~.tdr.FIELDS`, the
task pair's parameters and the trainer's ``scheme``, ``gtol``, ``max_time`` and ``max_steps``)."""
from __future__ import annotations

import numpy as np

from .. import params as P
from .records import Experiment, Field, flow_arguments, flow_fields
from .tdr import FIELDS, TRAINING_FLOW, simulate_transfer
from .tdr_tasks import TASK_FAMILIES, task_pair

__all__ = ["TDR"]


def _tdr(p, seed, backend):
    data = task_pair(p["family"], p["angle"], n=p["n"], d=p["d"], seed=p["data_seed"])
    return simulate_transfer(*data, [p["width"]], draws=p["draws"], kappa=p["kappa"], seed=seed, backend=backend,
                             **flow_arguments(p))


TDR = Experiment(
    name="tdr", paper="TDR §6", version=2,
    description="wide two-layer ReLU networks of one width: pretraining, fine-tuning and scratch on a §5.1 task pair",
    fields=(Field("family", "shared-inputs", choices=TASK_FAMILIES), Field("angle", 1.0, P.THETA.with_range(high=np.pi)),
            Field("n", 8, P.N), Field("d", 5, P.D), Field("data_seed", 3, P.SEED), *FIELDS.values(),
            *flow_fields(TRAINING_FLOW, "scheme", "gtol", "max_time", "max_steps")),
    example=dict(width=100, draws=2),
    renamed={"seeds": "draws", "instance": "draw"},
    simulate=_tdr)
