"""The experiment record ``faf_relu``: FaF §4's ablated ReLU student–teacher transfer at the fractions ``mus`` over
the sample sizes ``ns`` (:func:`~transfertheory.sim.relu_teacher.experiment.run_transfer_experiment`; the
pretrained students are shared by the ``ns``, the scratch flows by the ``mus``). A point may be a chunk of a run's
teachers and data sets (``teacher_start``, ``draw_start``, the run's ``draw_seed``), which gives the run's rows bit
for bit.

Each parameter's range and default is declared here once, in the record's fields; the entry point validates its
arguments through them.
"""
from __future__ import annotations

import numpy as np

from ... import params as P
from ..._validation import Interval
from ...theory.relu import MU, M_STAR, TEACHER_OUTPUTS
from ..records import Experiment, Field, flow_arguments, flow_fields
from .network import M
from .pretraining import PRETRAIN_FLOW
from .target_training import TARGET_FLOW

__all__ = ["FAF_RELU", "METHODS"]

METHODS = ("scratch", "linear", "linear_minnorm", "finetune")


def _count(name, low, description):
    return P.Param(name, Interval(low, np.inf, "left"), integer=True, description=description)


def _faf_relu(p, seed, backend):
    from .experiment import run_transfer_experiment

    return run_transfer_experiment(p["d"], p["m"], p["m_star"], p["mus"], p["ns"], teachers=p["teachers"],
                                   draws=p["draws"], methods=p["methods"],
                                   seed=seed if p["draw_seed"] < 0 else p["draw_seed"], output=p["output"],
                                   backend=backend, teacher_start=p["teacher_start"], draw_start=p["draw_start"],
                                   **flow_arguments(p, "pretrain", "linear"))


# version 4: loss_tol no longer sets the pretraining's rule too (pretrain_loss_tol does), so a stored point of
# version 3 with another loss_tol than the default had other pretraining flows
FAF_RELU = Experiment(
    name="faf_relu", paper="FaF §4", version=4,
    description="two-layer ReLU students transferred from ablated teachers at the fractions mus, over the sample "
                "sizes ns (the scratch flows shared by every μ); a chunk of a larger run's teachers and data sets",
    fields=(Field("d", 8, P.D), Field("m", 40, M), Field("m_star", 8, M_STAR),
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
            *flow_fields(TARGET_FLOW, "max_time", stage="linear")),
    example=dict(d=4, m=8, m_star=4, mus=(0.5,), ns=(8,), max_time=20.0, pretrain_max_time=20.0),
    renamed={"instances": "draws", "instance_start": "draw_start", "instance": "draw"},
    simulate=_faf_relu)
