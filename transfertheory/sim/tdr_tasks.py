"""TDR §5.1: the two task families of the transfer experiments — a source task P and a target task Q on the unit
sphere whose similarity is set by one angle (the data of :func:`transfertheory.sim.tdr.simulate_transfer`).

A pair is drawn from the empty key of its own seed (:func:`transfertheory.sim.seeding.generator`), on the host.
"""
from __future__ import annotations

import math

import numpy as np

from .. import params as P
from .._validation import Interval, root_seed
from .seeding import generator

__all__ = ["TASK_FAMILIES", "task_pair"]

_ANGLE = P.Param("angle", Interval(-np.inf, np.inf), description="angle between the two tasks (radians, finite)")
#: the task families use the coordinates e₁ and e₂
_TASK_D = P.D.with_range(low=2)

#: the two task families of TDR §5.1 (:func:`task_pair`)
TASK_FAMILIES = ("shared-inputs", "shared-labels")


def _unit_rows(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def task_pair(family, angle, n=8, d=5, seed=3):
    """(X_P, y_P, X_Q, y_Q) of one member of a TDR §5.1 task family at similarity cos(angle), on the host.

    ``"shared-inputs"``: X_Q = X_P, y_P = e₁ᵀx, y_Q = (cos θ e₁ + sin θ e₂)ᵀx (labels vary, inputs do not).
    ``"shared-labels"``: one labeling function e₁ᵀx, X_Q = rows of cos φ·X_P + sin φ·X' normalized (X'
    independent unit rows; inputs vary, the labeling function does not). n ≥ 1 points uniform on S^{d−1}
    (d ≥ 2) from ``seed`` (an integer ≥ 0, a numpy Generator or a SeedSequence); at angle 0 both families are
    the source task itself.
    """
    if family not in TASK_FAMILIES:
        raise ValueError(f"family must be one of {TASK_FAMILIES}, got {family!r}")
    angle, n, d = _ANGLE.scalar(angle), P.N.scalar(n), _TASK_D.scalar(d)
    rng = generator(root_seed(seed, "seed"))
    x_p, other = _unit_rows(rng.standard_normal((n, d))), _unit_rows(rng.standard_normal((n, d)))
    if family == "shared-inputs":
        return x_p, x_p[:, 0], x_p, math.cos(angle) * x_p[:, 0] + math.sin(angle) * x_p[:, 1]
    x_q = _unit_rows(math.cos(angle) * x_p + math.sin(angle) * other)
    return x_p, x_p[:, 0], x_q, x_q[:, 0]
