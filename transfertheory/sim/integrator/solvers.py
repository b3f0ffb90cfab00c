r"""The integration schemes as objects (the :class:`Solver` protocol, :class:`RKC2` and :class:`GradientDescent`),
the step-size controller of the error-controlled ones (:class:`ErrorController`) and the settings that bundle
them with the tolerances and the budget (:class:`FlowSettings`).

A solver carries its own parameters (a frozen dataclass validated when built, ranges in :attr:`Solver.ranges`)
and advances the working set of an integration by one step (:meth:`Solver.step`); everything around the step —
the budget, statuses, the spectral-radius schedule, the record of finished instances, the accounting — is the
integration's (:mod:`.flow`). Defining a subclass with a new ``name`` registers it (:data:`SOLVERS`), so
``FlowSettings().updated(scheme=name)`` and the simulators' ``scheme=`` choices know it; docs/simulator.md walks
through adding one.

* :class:`RKC2` — adaptive damped second-order Runge–Kutta–Chebyshev (tables in :mod:`.kernels`) with the error
  control of :class:`ErrorController`: for stiff flows, ~√κ evaluations per unit of stiffness.
* :class:`GradientDescent` — fixed-step explicit Euler at the per-instance step h = step_fraction/ρ̂: batched
  gradient descent with learning rate step_fraction/λ_max(∇²L), one evaluation per step, no error control.

The step-size controller: a solver with an embedded error estimate (:class:`RKC2`) hands the controller each
instance's local error ``err`` in the stage kernel's norm (tolerance ``atol`` per instance plus ``rtol`` times the
state's scale; err ≤ 1 accepts the step) and multiplies the step by :meth:`ErrorController.factor`: the classical rule
safety·err^(−1/(order + 1)) clipped to [min_factor, max_factor] (Hairer, Nørsett & Wanner, *Solving ODEs I*,
§II.4; scipy's ``solve_ivp`` and diffrax's ``PIDController`` with only the integral term use the same rule).

The settings: one frozen record, :class:`FlowSettings`, validated once when it is built. A gradient flow
(:func:`.flow.integrate_gradient_flow`) is set by its solver (:class:`RKC2` or :class:`GradientDescent`, each with
its own parameters), its step-size controller (:class:`ErrorController`, ``rtol`` among its parameters), its
stopping tolerances (``gtol`` on ‖∇L‖, ``loss_tol`` on L), its per-instance budget (``max_time`` of flow time,
``max_steps`` accepted steps) and its ``divergence_factor``. Each numeric setting has one valid range (:data:`SETTING_RANGES`, a
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
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar, Mapping

import numpy as np

from ..._validation import Interval, one_of
from ...backend import get_backend, to_host
from ...params import GTOL, LOSS_TOL, Param
from .kernels import FusedDescent, StepRequest, row_squares, tables
from .ragged import FlowState, RaggedBatch, array_module, put, row_norms, subtract_scaled, take

__all__ = ["Solver", "RKC2", "GradientDescent", "SOLVERS", "SCHEMES", "SAFETY", "RHO_REFRESH", "ErrorController",
           "positive", "count", "validate_fields", "FlowSettings", "SETTING_RANGES"]


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


#: every solver class by its scheme name (filled by subclassing :class:`Solver`)
SOLVERS: dict = {}
#: multiplies the stage kernel's spectral-radius estimate
SAFETY = 1.2
#: accepted steps between two spectral-radius refreshes of an instance
RHO_REFRESH = 25


class Solver(ABC):
    """What an integration scheme provides (subclasses are frozen dataclasses of their parameters).

    ``name``: the scheme's name (``scheme=`` of the settings and simulators); ``peak_state_copies``: the (B, P)
    arrays the integration holds at its peak with this scheme, besides what the gradient callable allocates (the
    simulators' memory estimates multiply by it, :func:`~.flow.flow_state_bytes`, which tests/foundation/test_memory.py holds
    against the peak that tracemalloc traces); ``ranges``: each numeric parameter's valid range.
    """

    name: ClassVar[str]
    peak_state_copies: ClassVar[int]
    ranges: ClassVar = MappingProxyType({})
    optional: ClassVar = frozenset()  # parameters that may be None (not set)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        SOLVERS[cls.name] = cls

    def __post_init__(self):
        validate_fields(self, self.ranges, self.optional)

    def initial_carried(self, gradient):
        """What the first step receives as the working set's ``carried``, given the dense gradient at y0."""
        return None

    @property
    def divergence_hint(self) -> str:
        """The setting to change when instances diverge (the integrator's warning): an error-controlled scheme's
        tolerance."""
        return "tighten rtol"

    @abstractmethod
    def step(self, run, state: FlowState) -> FlowState:
        """Advance the working set ``state`` of the integration ``run`` (:class:`~.flow.Integration`) by one
        step (or several, when no instance can finish in between) and return what is left of it after
        ``run.classify``. Add each instance's gradient evaluations to ``state.evaluations`` and its rejected
        steps to ``state.rejected``, the batch's to ``run.evaluations``."""


@dataclass(frozen=True)
class RKC2(Solver):
    """Adaptive RKC2 (:mod:`.flow` docstring), at most ``max_stages`` stages per step (h·ρ̂ ≤ β(max_stages)).

    Each step asks the stage kernel for the stages and the local error, accepts the instances with error ≤ 1,
    scales every instance's h by the settings' :class:`ErrorController` and re-estimates ρ̂ after a
    rejection or every :data:`RHO_REFRESH` steps; ``step_underflow`` when h < 1e-13·max(t, 1).
    """

    name: ClassVar[str] = "rkc"
    peak_state_copies: ClassVar[int] = 18
    ranges: ClassVar = MappingProxyType({
        "max_stages": count("max_stages", "cap on RKC stages per step", low=2)})
    max_stages: int = 400

    def step(self, run, state: FlowState) -> FlowState:
        xp, tabs, controller = array_module(state.y), tables(self.max_stages), run.settings.controller
        h = xp.minimum(xp.minimum(state.h, run.settings.max_time - state.t), tabs.beta[-1] / state.rho)
        s_row = tabs.stages(to_host(h * state.rho))
        run.max_stages_used = max(run.max_stages_used, int(s_row.max()))
        out = run.kernel(StepRequest(
            y=state.y, carried=state.carried, order=np.argsort(-s_row, kind="stable"), h=to_host(h), stages=s_row,
            rows=state.rows, coefficients=tabs.table(int(s_row.max())), rtol=controller.rtol, atol=state.atol))
        run.evaluations += out.evaluations
        state = state.with_(evaluations=state.evaluations + s_row + (state.carried is None))
        before, source = state.y, None
        if out.order is not None:  # the kernel returned its batch in its own order: the working set follows it
            source, h = out.order, h[xp.asarray(out.order)]
            state = state.reordered(source, out.y)
        accept = out.error <= 1.0
        rejected = ~to_host(accept)
        y, carried, loss, grad_norm = self._keep_rejected(state, out, np.flatnonzero(rejected), before, source)
        t = state.t + xp.where(accept, h, 0.0)
        h = h * controller.factor(out.error)
        underflow = to_host(h < 1e-13 * xp.maximum(t, 1.0))
        state = state.with_(y=y, carried=carried, loss=loss, grad_norm=grad_norm, t=t, h=h,
                            steps=state.steps + accept.astype(state.steps.dtype), since_rho=state.since_rho + 1,
                            rejected=state.rejected + rejected)
        state = run.refresh_radius(state, np.flatnonzero(rejected | (state.since_rho >= RHO_REFRESH)))
        run.report_progress(state)
        return run.classify(run.record.finish(state, underflow, "step_underflow", run.residual))

    @staticmethod
    def _keep_rejected(state: FlowState, out, rej: np.ndarray, before, source):
        """The step's results, with the rejected instances (host indices ``rej``) keeping their state: their
        rows ``source[rej]`` of the states ``before`` the step (``rej`` itself when ``source`` is None)."""
        y, carried, loss, grad_norm = out.y, out.grad, out.loss, out.grad_norm
        if rej.size:
            dev_rej = array_module(y).asarray(rej)
            put(y, rej, take(before, rej if source is None else source[rej]))
            loss[dev_rej], grad_norm[dev_rej] = state.loss[dev_rej], state.grad_norm[dev_rej]
            if state.carried is None:  # nothing carried for the rejected rows (first step): the kernel recomputes
                carried = None
            elif carried is not None:
                put(carried, rej, take(state.carried, rej))
        return y, carried, loss, grad_norm


@dataclass(frozen=True)
class GradientDescent(Solver):
    """Fixed-step explicit Euler, y ← y − h∇L(y) at the per-instance step h = ``step_fraction``/ρ̂.

    ρ̂ is the stage kernel's spectral-radius estimate (refreshed every :data:`RHO_REFRESH` steps; the step
    undoes the :data:`SAFETY` factor, so an exact ρ̂ gives learning rate exactly step_fraction/λ_max(∇²L)):
    batched full-batch gradient descent. On a quadratic it is stable iff step_fraction·ρ/ρ̂ < 2. A kernel with an
    exact or upper-bound ρ̂ (e.g. the TDR tangent kernel) may use any step_fraction < 2; the dense kernel's power
    iteration approaches ρ from below, so keep step_fraction ≤ 1 there (an unstable step is still detected and
    reported as ``diverged``). One gradient evaluation per step, every step accepted, no error estimate (the
    controller, ``atol`` and the stage kernel's ``__call__`` are not used): the trajectory follows the flow to
    O(h). A kernel that implements :class:`~.kernels.FusedDescent` computes the whole step.

    ``learning_rate``: a fixed step h (flow time per step) for every instance and step instead — plain gradient
    descent at a given rate, as papers train (:mod:`transfertheory.sim.gradient_descent`); no spectral-radius
    refreshes, an unstable rate ends as ``diverged``.
    """

    name: ClassVar[str] = "euler"
    peak_state_copies: ClassVar[int] = 12
    ranges: ClassVar = MappingProxyType({
        "step_fraction": Param("step_fraction", Interval(0, 2, "neither"),
                               description="Euler step in units of 1/ρ̂"),
        "learning_rate": positive("learning_rate", "fixed Euler step (gradient descent's rate, flow time per step); "
                                                   "None: step_fraction/ρ̂")})
    optional: ClassVar = frozenset({"learning_rate"})
    step_fraction: float = 1.0
    learning_rate: float | None = None

    @property
    def divergence_hint(self) -> str:
        """No error control: the step itself (rtol does not enter)."""
        return "lower learning_rate" if self.learning_rate is not None else "lower step_fraction"

    def initial_carried(self, gradient):
        return gradient  # the dense gradient at y, reused by the next step

    def step(self, run, state: FlowState) -> FlowState:
        """Euler steps of the working set until one of its instances is due for a spectral-radius refresh or
        may finish (:meth:`_may_finish`), then the refresh and ``run.classify``: the arithmetic and the step at
        which each instance stops are those of one step per call, without the per-step bookkeeping (one step
        per call when the kernel certifies unreachable instances, checked at every step)."""
        xp, budget = array_module(state.y), run.settings
        y, G, t = state.y, state.carried, state.t
        fixed = self.learning_rate is not None  # gradient descent at a given rate: no spectral radius needed
        rate = xp.full_like(t, self.learning_rate) if fixed else self.step_fraction * SAFETY / state.rho
        count = (1 if run.certificate is not None else RHO_REFRESH if fixed
                 else max(1, RHO_REFRESH - int(state.since_rho.max())))
        # far from the budget, h = min(rate, max_time − t) is rate itself and no instance can reach
        # max_time or max_steps within these steps (the margin covers the rounding of the summed times)
        far = (float(to_host((t + count * rate).max())) < budget.max_time * (1 - 1e-12) * (1 - 1e-9)
               and int(to_host(state.steps.max())) + count < budget.max_steps)
        column = rate[:, None] if far and not isinstance(y, RaggedBatch) else None
        limit = float(to_host(state.loss_limit.min()))
        descend = run.kernel.descend if isinstance(run.kernel, FusedDescent) else None
        done = 0
        while done < count:
            h = rate if far else xp.minimum(rate, budget.max_time - t)
            if descend is not None:  # y and G updated in place (FusedDescent)
                G, loss, squares = descend(y, G, h, state.rows)
            else:
                if column is None:
                    subtract_scaled(y, h, G)  # y is updated in place (the record keeps copies); G is not modified
                else:
                    y -= column * G
                G, loss = run.gradient(y, state.rows)
                squares = row_norms(G, row_squares)
            run.evaluations += state.size
            t, done = t + h, done + 1
            run.report_progress(state)
            if self._may_finish(budget, squares, loss, limit, None if far else t,
                                None if far else state.steps + done):
                break
        state = state.with_(y=y, carried=G, loss=loss, grad_norm=xp.sqrt(squares), t=t, h=h,
                            steps=state.steps + done,
                            since_rho=0 * state.since_rho if fixed else state.since_rho + done,
                            evaluations=state.evaluations + done)
        return run.classify(run.refresh_radius(state, np.flatnonzero(state.since_rho >= RHO_REFRESH)))

    @staticmethod
    def _may_finish(budget, squares, loss, limit, t, steps) -> bool:
        """Whether ``run.classify`` might finish an instance: a superset of its criteria, from the squared
        gradient norms and the smallest divergence limit ``limit`` (a non-finite gradient or loss, |L| above
        the limit, ‖∇L‖ ≤ gtol, L ≤ loss_tol, or — unless ``t`` and ``steps`` are None, known to be far from
        it — the budget reached). On host lists: a few array reductions cost more than the step's arithmetic
        at small sizes (NaN fails every comparison, so it counts as finishing)."""
        low, losses = budget.gtol**2 * (1 + 1e-9), to_host(loss).tolist()
        going = (all(low < v < math.inf for v in to_host(squares).tolist())
                 and all(abs(v) <= limit for v in losses)
                 and (budget.loss_tol == 0 or all(v > budget.loss_tol for v in losses)))
        if going and t is not None:
            going = bool(to_host(((t < budget.max_time * (1 - 1e-12)) & (steps < budget.max_steps)).all()))
        return not going


#: the registered schemes' names
SCHEMES = tuple(SOLVERS)


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

    ``solver``: the scheme and its parameters (:class:`Solver`; default ``RKC2()``). ``controller``:
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
        """The solver's name (:data:`SCHEMES`)."""
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
        if one_of(scheme, "scheme", tuple(SOLVERS)) != solver.name:  # the live registry: a new Solver subclass counts
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
        return {"scheme": self.scheme, **dataclasses.asdict(self.solver), **dataclasses.asdict(self.controller),
                **common}
