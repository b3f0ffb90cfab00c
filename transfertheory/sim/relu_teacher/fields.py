"""The parameters of FaF §4's simulator (:func:`~transfertheory.sim.relu_teacher.experiment.run_transfer_experiment`), declared once: each one's
default and valid range, which the entry point validates its arguments through and which are the fields of the
experiment record ``faf_relu`` (:mod:`transfertheory.sim.relu_teacher.record`)."""
from __future__ import annotations

import numpy as np

from ... import params as P
from ..._validation import Interval
from ...theory.relu import MU, M_STAR, TEACHER_OUTPUTS
from ..records import Field, flow_fields
from .network import M
from .pretraining import PRETRAIN_FLOW
from .target_training import TARGET_FLOW

__all__ = ["FIELDS", "METHODS"]

METHODS = ("scratch", "linear", "linear_minnorm", "finetune")


def _count(name, low, description):
    return P.Param(name, Interval(low, np.inf, "left"), integer=True, description=description)


#: by name, in the record's order
FIELDS = {f.name: f for f in (
    Field("d", 8, P.D), Field("m", 40, M), Field("m_star", 8, M_STAR),
    Field("mus", (0.5,), MU, sequence=True), Field("ns", (16, 64), P.N, sequence=True),
    Field("teachers", 1, _count("teachers", 1, "target teachers drawn")),
    Field("draws", 1, P.DRAWS, description="data sets (with scratch initializations) per teacher and n"),
    Field("teacher_start", 0, _count("teacher_start", 0, "index of the chunk's first teacher")),
    Field("draw_start", 0, _count("draw_start", 0, "index of the chunk's first data set per teacher")),
    Field("draw_seed", -1, P.Param("draw_seed", Interval(-1, np.inf, "left"), integer=True),
          description="root seed of every draw, shared by the chunks of one run (-1: the point's own seed "
                      "from the sweep engine)"),
    Field("methods", ("scratch", "linear"), choices=METHODS, sequence=True),
    Field("output", "ones", choices=tuple(TEACHER_OUTPUTS)),
    *flow_fields(TARGET_FLOW, "max_time", "loss_tol"),
    *flow_fields(PRETRAIN_FLOW, "max_time", "loss_tol", stage="pretrain"),
    *flow_fields(TARGET_FLOW, "max_time", stage="linear"))}
