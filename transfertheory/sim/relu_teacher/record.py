"""The experiment record ``faf_relu``: FaF §4's ablated ReLU student–teacher transfer at the fractions ``mus`` over
the sample sizes ``ns`` (:func:`~transfertheory.sim.relu_teacher.experiment.run_transfer_experiment`; the
pretrained students are shared by the ``ns``, the scratch flows by the ``mus``). A point may be a chunk of a run's
teachers and data sets (``teacher_start``, ``draw_start``, the run's ``draw_seed``), which gives the run's rows bit
for bit.

Its fields are :data:`~transfertheory.sim.relu_teacher.fields.FIELDS`, where each parameter's range and default is declared once (the entry point
validates its arguments through them).
"""
from __future__ import annotations

from ..records import Experiment, flow_arguments
from .experiment import run_transfer_experiment
from .fields import FIELDS, METHODS

__all__ = ["FAF_RELU", "METHODS"]


def _faf_relu(p, seed, backend):
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
    fields=tuple(FIELDS.values()),
    example=dict(d=4, m=8, m_star=4, mus=(0.5,), ns=(8,), max_time=20.0, pretrain_max_time=20.0),
    renamed={"instances": "draws", "instance_start": "draw_start", "instance": "draw"},
    simulate=_faf_relu)
