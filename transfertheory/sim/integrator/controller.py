"""The step-size controller of the error-controlled solvers: :class:`ErrorController`.

A solver with an embedded error estimate (:class:`~.solvers.RKC2`) hands the controller each instance's local
error ``err`` in the stage kernel's norm (tolerance ``atol`` per instance plus ``rtol`` times the state's scale;
err ≤ 1 accepts the step) and multiplies the step by :meth:`ErrorController.factor`: the classical rule
safety·err^(−1/(order + 1)) clipped to [min_factor, max_factor] (Hairer, Nørsett & Wanner, *Solving ODEs I*,
§II.4; scipy's ``solve_ivp`` and diffrax's ``PIDController`` with only the integral term use the same rule).
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from ..._validation import Interval
from ...backend import get_backend
from ...params import Param

__all__ = ["ErrorController", "positive", "count", "validate_fields"]


def positive(name: str, description: str = "") -> Param:
    """A setting that must be a finite number > 0."""
    return Param(name, Interval(0, np.inf, "neither"), description=description)


def count(name: str, description: str = "", low: int = 1) -> Param:
    """A setting that must be an integer >= ``low``."""
    return Param(name, Interval(low, np.inf, "left"), integer=True, description=description)


def validate_fields(record, ranges, optional=()) -> None:
    """Check every field of the frozen dataclass ``record`` named in ``ranges`` (name → Param) against its range,
    storing the checked Python number (a ValueError names the field and its range); a field named in
    ``optional`` may be None (not set)."""
    for name, param in ranges.items():
        if getattr(record, name) is not None or name not in optional:
            object.__setattr__(record, name, param.scalar(getattr(record, name)))


@dataclass(frozen=True)
class ErrorController:
    """Step-size control from the local error estimate, validated when built (ranges: :attr:`ranges`).

    ``rtol``: relative local-error tolerance (the kernels' error norm, see :class:`~.kernels.StepRequest`).
    The next step of an instance is h·:meth:`factor`\\ (err), whether the step was accepted (err ≤ 1) or not.
    """

    rtol: float = 1e-5
    safety: float = 0.8
    order: int = 2
    min_factor: float = 0.1
    max_factor: float = 10.0

    ranges = MappingProxyType({
        "rtol": positive("rtol", "relative local-error tolerance of the error control"),
        "safety": Param("safety", Interval(0, 1, "right"), description="safety factor of the step-size rule"),
        "order": count("order", "order of the solution; the error of a step scales like h^(order + 1)"),
        "min_factor": Param("min_factor", Interval(0, 1, "right"), description="smallest step-size factor"),
        "max_factor": Param("max_factor", Interval(1, np.inf, "left"), description="largest step-size factor"),
    })

    def __post_init__(self):
        validate_fields(self, self.ranges)

    @np.errstate(divide="ignore")
    def factor(self, error):
        """The factor of each instance's next step from its error ``error`` (b,) on the backend:
        safety·err^(−1/(order + 1)) clipped to [min_factor, max_factor] (max_factor where err = 0)."""
        xp = get_backend(error)
        factor = xp.where(error > 0, self.safety * error ** (-1.0 / (self.order + 1)), self.max_factor)
        return xp.clip(factor, self.min_factor, self.max_factor)
