"""The parameters of FaF §3's simulator (:func:`~transfertheory.sim.deep_linear.experiment.run_transfer_experiment`), declared once: each one's
default and valid range, which the entry point validates its arguments through and which are the fields of the
experiment record ``faf_linear`` (:mod:`transfertheory.sim.deep_linear.record`)."""
from __future__ import annotations

from ... import params as P
from ...theory.spectra import SPECTRUM_SYNTAX, TEACHER_SYNTAX, check_spectrum_text, check_teacher_text
from ..records import Field, flow_fields
from .training import TARGET_FLOW

__all__ = ["FIELDS", "METHODS"]

METHODS = ("scratch", "linear", "finetune")


def _teacher_text(text):
    return text if text == "random" else check_teacher_text(text)


#: by name, in the record's order
FIELDS = {f.name: f for f in (
    Field("d", 64, P.D.with_range(low=2)), Field("gamma", 0.5, P.GAMMA), Field("theta", 0.5, P.THETA),
    Field("sigma", 0.2, P.SIGMA), Field("draws", 4, P.DRAWS, description="target draws per γ"),
    Field("depth", 2, P.DEPTH), Field("alpha", 1e-5, P.ALPHA),
    Field("methods", ("scratch", "linear"), choices=METHODS, sequence=True), Field("lam", 0.0, P.LAM),
    *flow_fields(TARGET_FLOW, "gtol", "max_time", "rtol"),
    Field("spectrum", "isotropic", text=check_spectrum_text, syntax=SPECTRUM_SYNTAX, added=True,
          description="input covariance spectrum (docs/anisotropic.md); isotropic: FaF's x ~ N(0, I)"),
    Field("teacher", "random", text=_teacher_text, syntax="random | " + TEACHER_SYNTAX, added=True,
          description="where β_s, β_t sit on the spectrum; random: the isotropic draw, Σ-normalised"))}
