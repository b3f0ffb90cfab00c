"""The integrator's settings as one frozen record, :class:`FlowSettings`, validated once when it is built.

A gradient flow (:func:`.flow.integrate_gradient_flow`) is set by its solver (:class:`~.solvers.RKC2` or
:class:`~.solvers.GradientDescent`, each with its own parameters), its step-size controller
(:class:`~.controller.ErrorController`, ``rtol`` among its parameters), its stopping tolerances (``gtol`` on
‖∇L‖, ``loss_tol`` on L), its per-instance budget (``max_time`` of flow time, ``max_steps`` accepted steps) and
its ``divergence_factor``. Each numeric setting has one valid range (:data:`SETTING_RANGES`, a
:class:`~transfertheory.params.Param`; ``gtol`` and ``loss_tol`` are the shared ones of
:mod:`transfertheory.params`); building a record — the settings, a solver, a controller — checks every field
against it, so a bad setting is a ValueError naming it and its range before any work, and nothing downstream
checks it again.

A simulator keeps its defaults as a module-level :class:`FlowSettings` constant and takes one ``flow=``
argument per training stage (``flow=``, and ``pretrain_flow=`` where it pretrains): a record, or the changes by
name (:meth:`FlowSettings.overridden`), e.g. MeRLin's ``FLOW_SETTINGS`` (gtol 1e-7, at most 80 stages per step)
and ``run_comparison(..., flow={"rtol": 1e-4})``.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from ...params import GTOL, LOSS_TOL
from .controller import ErrorController, count, positive, validate_fields
from .solvers import SCHEMES, SOLVERS, RKC2, Solver

__all__ = ["FlowSettings", "SETTING_RANGES", "SCHEMES"]

#: the valid range of each numeric setting of :class:`FlowSettings`
_LIMITS = MappingProxyType({
    "gtol": GTOL,
    "loss_tol": LOSS_TOL,
    "max_time": positive("max_time", "gradient-flow time budget per instance"),
    "max_steps": count("max_steps", "accepted-step budget per instance"),
    "divergence_factor": positive("divergence_factor",
                                  "loss above divergence_factor·max(1, L(y0)) counts as divergence"),
})


def _ranges() -> dict:
    """The valid range of every numeric setting by name: the limits of :class:`FlowSettings`, the controller's
    and every registered solver's parameters (the names :meth:`FlowSettings.updated` takes)."""
    return {**ErrorController.ranges, **_LIMITS, **{k: v for cls in SOLVERS.values() for k, v in cls.ranges.items()}}


#: :func:`_ranges` of the built-in solvers
SETTING_RANGES = MappingProxyType(_ranges())


def _with_params(part, changes: dict):
    """The solver or controller ``part`` with the changes of its parameters, taken out of ``changes``."""
    params = {name: changes.pop(name) for name in part.ranges if name in changes}
    return dataclasses.replace(part, **params) if params else part


@dataclass(frozen=True)
class FlowSettings:
    """Settings of one gradient-flow integration (module docstring), validated when built.

    ``solver``: the scheme and its parameters (:class:`~.solvers.Solver`; default ``RKC2()``). ``controller``:
    the step-size control of the error-controlled solvers (default ``ErrorController()``, rtol 1e-5).
    ``gtol``: an instance has converged when ‖∇L‖₂ ≤ gtol (and the integrator's ``residual`` ≤ gtol).
    ``loss_tol`` ≥ 0: stop with status ``loss_tol`` once L ≤ loss_tol (0 disables the rule). ``max_time``,
    ``max_steps``: per-instance budget of flow time and accepted steps. ``divergence_factor``: a loss above
    divergence_factor·max(1, L(y0)) counts as divergence.
    """

    solver: Solver = RKC2()
    controller: ErrorController = ErrorController()
    gtol: float = 1e-8
    loss_tol: float = 0.0
    max_time: float = 1e5
    max_steps: int = 200_000
    divergence_factor: float = 1e8

    def __post_init__(self):
        for name, kind in (("solver", Solver), ("controller", ErrorController)):
            if not isinstance(getattr(self, name), kind):
                raise TypeError(f"{name} must be a {kind.__name__}, got {getattr(self, name)!r}")
        validate_fields(self, _LIMITS)

    @property
    def scheme(self) -> str:
        """The solver's name (:data:`~.solvers.SCHEMES`)."""
        return self.solver.name

    @property
    def rtol(self) -> float:
        """The controller's relative tolerance (simulators scale their ``atol`` by it)."""
        return self.controller.rtol

    def updated(self, **changes) -> "FlowSettings":
        """These settings with ``changes`` that are not None (None meaning "the default"): a new record, validated;
        ``self`` when nothing changes. A change is a field of the record (``solver=``, ``controller=``, ``gtol=``,
        …), ``scheme=`` (a solver of that name with its default parameters, unless the solver already is one), or
        a parameter of the solver or the controller by name (``max_stages=``, ``step_fraction=``, ``rtol=``, …); a
        name that is not a setting, or a parameter of another solver than the one used, is a TypeError."""
        unknown = sorted(set(changes) - set(_ranges()) - {"scheme", "solver", "controller"})
        if unknown:
            raise TypeError(f"{', '.join(map(repr, unknown))}: not an integrator setting (one of scheme, solver, "
                            f"controller, {', '.join(_ranges())})")
        changes = {name: value for name, value in changes.items() if value is not None}
        return self._replaced(changes) if changes else self

    def overridden(self, override, label="flow") -> "FlowSettings":
        """The settings a simulator's ``flow=`` (or ``pretrain_flow=``…) argument asks for, these being its
        defaults: ``None`` → these; a :class:`FlowSettings` → that record; a mapping of changes by name →
        :meth:`updated` with them (e.g. ``flow={"gtol": 1e-6, "max_time": 50}``). Anything else is a TypeError
        naming ``label``."""
        if override is None:
            return self
        if isinstance(override, FlowSettings):
            return override
        if isinstance(override, Mapping):
            return self.updated(**override)
        raise TypeError(f"{label} must be a FlowSettings, a mapping of its settings by name, or None; got "
                        f"{type(override).__name__}")

    def _replaced(self, changes: dict) -> "FlowSettings":
        """A new record with ``changes`` (by name, none None) applied to the solver, the controller and the rest."""
        solver = changes.pop("solver", self.solver)
        scheme = changes.pop("scheme", solver.name)
        if scheme not in SOLVERS:
            raise ValueError(f"scheme must be one of {SCHEMES}, got {scheme!r}")
        if scheme != solver.name:
            solver = SOLVERS[scheme]()
        solver = _with_params(solver, changes)
        controller = _with_params(changes.pop("controller", self.controller), changes)
        stray = sorted(set(changes) - set(_LIMITS))
        if stray:
            raise TypeError(f"{', '.join(map(repr, stray))}: not a parameter of the solver "
                            f"{type(solver).__name__} (scheme {solver.name!r})")
        return dataclasses.replace(self, solver=solver, controller=controller, **changes)

    def as_dict(self) -> dict:
        """The settings by name, the solver's and the controller's parameters inline (a table's ``attrs``, a
        figure's metadata)."""
        common = {name: getattr(self, name) for name in _LIMITS}
        return {"scheme": self.scheme, **dataclasses.asdict(self.solver), **dataclasses.asdict(self.controller), **common}
