"""The ``mtl`` experiment (MTL §4, Lemma 1): MTL and ANIL networks of one width on MTL §5.1's synthetic tasks
against the infinite-width predictions, a thin wrapper over :func:`~transfertheory.sim.mtl.experiment.finite_width_study` (its
:data:`~transfertheory.sim.mtl.experiment.FIELDS`, the problem's sizes and the integrator's ``rtol``)."""
from __future__ import annotations

import numpy as np

from ... import params as P
from ..._validation import Interval
from ...theory import mtl as MTL
from ..records import Experiment, Field, flow_arguments, flow_fields
from ..seeding import generator
from .experiment import FIELDS, STUDY_FLOW, finite_width_study

__all__ = ["MTL_NETWORKS"]


def _count(name):
    return P.Param(name, Interval(1, np.inf, "left"), integer=True)


def _mtl(p, seed, backend):
    problem = MTL.synthetic_problem(generator(p["data_seed"]), tasks=p["tasks"], n=p["n"], test_tasks=1,
                                    n_support=p["n_support"], n_query=p["n_query"], d=p["d"])
    return finite_width_study(problem, MTL.ReluNetwork(p["depth"]), [p["width"]], p["draws"], lam_tau=p["lam_tau"],
                              lam_tau_hat=p["lam_tau_hat"], seed=seed, backend=backend, **flow_arguments(p))


MTL_NETWORKS = Experiment(
    name="mtl", paper="MTL §4 (Lemma 1)", version=2,
    description="finite-width ReLU networks trained by MTL and ANIL against the infinite-width predictions",
    fields=(Field("depth", 1, _count("depth")), *FIELDS.values(), Field("tasks", 4, _count("tasks")),
            Field("n", 5, P.N), Field("n_support", 5, _count("n_support")), Field("n_query", 5, _count("n_query")),
            Field("d", 10, P.D), Field("data_seed", 5, P.SEED), *flow_fields(STUDY_FLOW, "rtol")),
    example=dict(width=16, draws=1, tasks=2, n=3, n_support=3, n_query=3, d=4),
    renamed={"networks": "draws", "network": "draw"},
    simulate=_mtl)
