"""The experiment records of FaF §3: ``faf_linear`` (the simulator at one (γ, θ),
:func:`~transfertheory.sim.deep_linear.experiment.run_transfer_experiment`) and ``faf_surface`` (the closed forms
at one (method, γ, θ, σ, λ)).

Each parameter's range and default is declared here once, in the record's fields; the entry point validates its
arguments through them (:meth:`~transfertheory.sim.records.Experiment.check`, a grid argument through its
scalar field's range), so a bad value is the same ValueError from a sweep file and from a call.
"""
from __future__ import annotations

import numpy as np

from ... import params as P
from ...theory.methods import METHODS as METHOD_RECORDS
from ...theory.methods import get_method
from ...theory.spectra import SPECTRUM_SYNTAX, TEACHER_SYNTAX, check_spectrum_text, check_teacher_text
from ..convergence import Convergence, convergence_columns
from ..records import Experiment, Field, flow_arguments, flow_fields
from .training import TARGET_FLOW

__all__ = ["FAF_LINEAR", "FAF_SURFACE", "METHODS"]

METHODS = ("scratch", "linear", "finetune")


def _teacher_text(text):
    return text if text == "random" else check_teacher_text(text)


def _faf_linear(p, seed, backend):
    from .experiment import run_transfer_experiment

    return run_transfer_experiment(p["d"], [p["gamma"]], [p["theta"]], p["sigma"], p["draws"], depth=p["depth"],
                                   alpha=p["alpha"], methods=p["methods"], ridge=(p["lam"],), seed=seed,
                                   backend=backend, progress=False, spectrum=p["spectrum"],
                                   teacher=None if p["teacher"] == "random" else p["teacher"],
                                   **flow_arguments(p))


FAF_LINEAR = Experiment(
    name="faf_linear", paper="FaF §3", version=1,
    description="deep linear network: scratch, linear transfer and fine-tuning at one (γ, θ)",
    fields=(Field("d", 64, P.D.with_range(low=2)), Field("gamma", 0.5, P.GAMMA), Field("theta", 0.5, P.THETA),
            Field("sigma", 0.2, P.SIGMA), Field("draws", 4, P.DRAWS, description="target draws per γ"),
            Field("depth", 2, P.DEPTH), Field("alpha", 1e-5, P.ALPHA),
            Field("methods", ("scratch", "linear"), choices=METHODS, sequence=True), Field("lam", 0.0, P.LAM),
            *flow_fields(TARGET_FLOW, "gtol", "max_time", "rtol"),
            Field("spectrum", "isotropic", text=check_spectrum_text, syntax=SPECTRUM_SYNTAX, added=True,
                  description="input covariance spectrum (docs/anisotropic.md); isotropic: FaF's x ~ N(0, I)"),
            Field("teacher", "random", text=_teacher_text, syntax="random | " + TEACHER_SYNTAX, added=True,
                  description="where β_s, β_t sit on the spectrum; random: the isotropic draw, Σ-normalised")),
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
