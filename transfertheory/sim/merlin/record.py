"""The ``merlin`` experiment (MeRLin §5): every algorithm at one target size n_t, a thin wrapper over
:func:`~transfertheory.sim.merlin.experiment.run_comparison` whose fields are its :data:`~transfertheory.sim.merlin.experiment.FIELDS` (one n_t) and the integrator's
``rtol`` and ``gtol``."""
from __future__ import annotations

from ..records import Experiment, flow_arguments, flow_fields
from .experiment import FIELDS, run_comparison
from .training import FLOW_SETTINGS

__all__ = ["MERLIN"]


def _merlin(p, seed, backend):
    return run_comparison(p["d"], p["m"], p["k"], [p["n_t"]], p["lam"], p["draws"], algorithms=p["algorithms"],
                          alpha=p["alpha"], rho=p["rho"], ridge=p["ridge"], splits=p["splits"],
                          restarts=p["restarts"], seed=seed, backend=backend, **flow_arguments(p))


MERLIN = Experiment(
    name="merlin", paper="MeRLin §5", version=3,
    description="quadratic network: fine-tuning, joint training, target-only and MeRLin at one target size n_t",
    fields=(*FIELDS.values(), *flow_fields(FLOW_SETTINGS, "rtol", "gtol")),
    example=dict(d=4, m=1, k=2, n_t=4, draws=1, restarts=1, splits=1),
    renamed={"seeds": "draws", "instance": "draw"},
    simulate=_merlin)
