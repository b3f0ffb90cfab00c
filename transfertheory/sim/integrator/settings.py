"""The integrator's settings as one frozen record, :class:`FlowSettings`, validated once when it is built.

A gradient flow (:func:`.flow.integrate_gradient_flow`) is set by its tolerances (``rtol`` of the RKC error
control, ``gtol`` on ‖∇L‖, ``loss_tol`` on L), its per-instance budget (``max_time`` of flow time,
``max_steps`` accepted steps), its scheme (``"rkc"`` or ``"euler"``), the RKC stage cap ``max_stages``, the
Euler ``step_fraction`` and the ``divergence_factor``. Each numeric setting has one valid range
(:data:`SETTING_RANGES`, a :class:`~transfertheory.params.Param`; ``gtol`` and ``loss_tol`` are the shared
ones of :mod:`transfertheory.params`); building a :class:`FlowSettings` checks every field against it, so a bad
setting is a ValueError naming it and its range before any work, and nothing downstream checks it again.

A simulator keeps its defaults as a module-level :class:`FlowSettings` constant and takes overrides with
:meth:`FlowSettings.updated` (or :func:`dataclasses.replace`): e.g. MeRLin's ``FLOW_SETTINGS`` (gtol 1e-7,
at most 80 stages per step) and ``run_comparison(..., rtol=1e-4)``.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from ..._validation import Interval
from ...params import GTOL, LOSS_TOL, Param

__all__ = ["FlowSettings", "SETTING_RANGES", "SCHEMES"]

#: the integration schemes: adaptive RKC2 with error control, or fixed-step explicit Euler (gradient descent)
SCHEMES = ("rkc", "euler")


def _positive(name: str, description: str) -> Param:
    """A setting that must be a finite number > 0."""
    return Param(name, Interval(0, np.inf, "neither"), description=description)


#: the valid range of each numeric setting of :class:`FlowSettings`
SETTING_RANGES = MappingProxyType({
    "rtol": _positive("rtol", "relative local-error tolerance of the RKC error control"),
    "gtol": GTOL,
    "loss_tol": LOSS_TOL,
    "max_time": _positive("max_time", "gradient-flow time budget per instance"),
    "max_steps": Param("max_steps", Interval(1, np.inf, "left"), integer=True,
                       description="accepted-step budget per instance"),
    "max_stages": Param("max_stages", Interval(2, np.inf, "left"), integer=True,
                        description="cap on RKC stages per step"),
    "step_fraction": Param("step_fraction", Interval(0, 2, "neither"),
                           description="Euler step in units of 1/ρ̂"),
    "learning_rate": _positive("learning_rate", "fixed Euler step (gradient descent's learning rate, flow time per "
                                                "step); None: step_fraction/ρ̂"),
    "divergence_factor": _positive("divergence_factor",
                                   "loss above divergence_factor·max(1, L(y0)) counts as divergence"),
})


@dataclass(frozen=True)
class FlowSettings:
    """Settings of one gradient-flow integration (module docstring), validated when built.

    ``rtol``: relative local-error tolerance of the RKC error estimate (RMS norm). ``gtol``: an instance has
    converged when ‖∇L‖₂ ≤ gtol (and the integrator's ``residual`` ≤ gtol). ``loss_tol`` ≥ 0: stop with status
    ``loss_tol`` once L ≤ loss_tol (0 disables the rule). ``max_time``, ``max_steps``: per-instance budget of
    flow time and accepted steps. ``scheme``: ``"rkc"`` or ``"euler"`` (:data:`SCHEMES`). ``max_stages``: cap on
    RKC stages per step. ``step_fraction`` in (0, 2): the Euler step in units of 1/ρ̂ (ignored by RKC).
    ``divergence_factor``: a loss above divergence_factor·max(1, L(y0)) counts as divergence. ``learning_rate``:
    a fixed Euler step h for every instance and step (plain gradient descent at that rate; None: step_fraction/ρ̂).
    Euler uses neither ``rtol`` nor ``max_stages``; RKC uses neither ``step_fraction`` nor ``learning_rate``.
    """

    rtol: float = 1e-5
    gtol: float = 1e-8
    loss_tol: float = 0.0
    max_time: float = 1e5
    max_steps: int = 200_000
    scheme: str = "rkc"
    max_stages: int = 400
    step_fraction: float = 1.0
    divergence_factor: float = 1e8
    learning_rate: float | None = None

    def __post_init__(self):
        if self.scheme not in SCHEMES:
            raise ValueError(f"scheme must be one of {SCHEMES}, got {self.scheme!r}")
        for name, param in SETTING_RANGES.items():
            if getattr(self, name) is not None or name != "learning_rate":  # learning_rate None: not fixed
                object.__setattr__(self, name, param.scalar(getattr(self, name)))

    def updated(self, names=None, **changes) -> "FlowSettings":
        """These settings with ``changes`` that are not None (an entry point's keyword arguments, None meaning
        "the default"): a new record, validated; ``self`` when nothing changes. ``names`` maps a setting to the
        name its caller's users know it by (``{"gtol": "tol"}``), which a ValueError then uses; a name that is
        not a setting is a TypeError listing them."""
        unknown = sorted(set(changes) - set(SETTING_RANGES) - {"scheme"})
        if unknown:
            raise TypeError(f"{', '.join(map(repr, unknown))}: not an integrator setting (one of scheme, "
                            f"{', '.join(SETTING_RANGES)})")
        changes = {name: value for name, value in changes.items() if value is not None}
        if not changes:
            return self
        try:
            return dataclasses.replace(self, **changes)
        except ValueError:  # on this path only: name a bad setting as the caller's users know it
            for name, label in (names or {}).items():
                if name in changes:
                    SETTING_RANGES[name].scalar(changes[name], label)
            raise

    def as_dict(self) -> dict:
        """The settings by name (a table's ``attrs``, a figure's metadata)."""
        return dataclasses.asdict(self)
