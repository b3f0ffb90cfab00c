"""The experiment records of FaF §3: ``faf_linear`` (the simulator at one (γ, θ),
:func:`~transfertheory.sim.deep_linear.experiment.run_transfer_experiment`) and ``faf_surface`` (the closed forms
at one (method, γ, θ, σ, λ)).

The fields of ``faf_linear`` are :data:`~transfertheory.sim.deep_linear.fields.FIELDS`, where each parameter's range and default is declared once;
the entry point validates its arguments through them (a grid argument through its scalar field's range), so a bad
value is the same ValueError from a sweep file and from a call.
"""
from __future__ import annotations

import numpy as np

from ... import params as P
from ...theory.methods import METHODS as METHOD_RECORDS
from ...theory.methods import get_method
from ..convergence import Convergence, convergence_columns
from ..records import Experiment, Field, flow_arguments
from .experiment import run_transfer_experiment
from .fields import FIELDS, METHODS

__all__ = ["FAF_LINEAR", "FAF_SURFACE", "METHODS"]


def _faf_linear(p, seed, backend):
    return run_transfer_experiment(p["d"], [p["gamma"]], [p["theta"]], p["sigma"], p["draws"], depth=p["depth"],
                                   alpha=p["alpha"], methods=p["methods"], ridge=(p["lam"],), seed=seed,
                                   backend=backend, progress=False, spectrum=p["spectrum"],
                                   teacher=None if p["teacher"] == "random" else p["teacher"],
                                   **flow_arguments(p))


FAF_LINEAR = Experiment(
    name="faf_linear", paper="FaF §3", version=1,
    description="deep linear network: scratch, linear transfer and fine-tuning at one (γ, θ)",
    fields=tuple(FIELDS.values()),
    example=dict(d=8, gamma=0.5, theta=0.5, draws=2, methods=("scratch", "linear", "finetune")),
    renamed={"instances": "draws", "tol": "gtol", "instance": "draw"},
    simulate=_faf_linear)


def _faf_surface(p, seed, backend):
    import pandas as pd

    record = get_method(p["method"])
    record.check_lam(p["lam"])
    args = (p["gamma"], p["theta"], p["sigma"], p["lam"])
    row = {"paper_risk": record.paper_risk(*args), "flow_risk": record.flow_risk(*args),
           "paper_transferability": record.paper_transferability(*args),
           "flow_transferability": record.flow_transferability(*args)}
    return pd.DataFrame({**{k: [float(v)] for k, v in row.items()},
                         **convergence_columns(Convergence(True, "exact", np.nan, 0, np.nan))})


FAF_SURFACE = Experiment(
    name="faf_surface", paper="FaF §3 (Eqs. 10–17)", version=1,
    description="closed forms: the paper's and gradient flow's n, d → ∞ risk and transferability at one point",
    fields=(Field("method", "linear", choices=tuple(METHOD_RECORDS)), Field("gamma", 0.5, P.GAMMA),
            Field("theta", 0.5, P.THETA), Field("sigma", 0.2, P.SIGMA), Field("lam", 0.0, P.LAM)),
    example=dict(method="finetune", gamma=1.5, theta=0.7),
    simulate=_faf_surface)
