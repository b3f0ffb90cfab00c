"""The experiment record of FaF §3's closed forms, ``faf_surface``: the paper's and gradient flow's risks and
transferabilities at one (method, γ, θ, σ, λ) (cheap, but the path of every simulator: its row has status
``exact``). The simulator's record, ``faf_linear``, is defined next to its entry point
(:data:`~transfertheory.sim.deep_linear.experiment.FAF_LINEAR`).
"""
from __future__ import annotations

import numpy as np

from ... import params as P
from ...theory.methods import METHODS as METHOD_RECORDS
from ...theory.methods import get_method
from ..convergence import Convergence, convergence_columns
from ..records import Experiment, Field

__all__ = ["FAF_SURFACE"]


def _faf_surface(p, seed, backend):
    import pandas as pd

    record = get_method(p["method"])  # its forms check that only ridge takes a λ
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
