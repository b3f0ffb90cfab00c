r"""Batched gradient-flow integrator: adaptive Runge–Kutta–Chebyshev (RKC2).

Gradient flow dθ/dt = −∇L(θ) has a symmetric Jacobian −∇²L, so near a
minimum its spectrum lies on the negative real axis and is *stiff*: for the
least-squares problems of FaF §3 the ratio of the largest to the smallest
Hessian eigenvalue grows like 1/(1 − √γ)⁴ and is ~d² at γ = 1. An explicit
method with error control then needs ~κ steps; the damped second-order
Runge–Kutta–Chebyshev method (Sommeijer, Shampine & Verwer 1998, *J. Comput.
Appl. Math.* 88:315; tables in :mod:`.kernels`) stretches its real stability
interval to β(s) ∝ s² with s stages (≈ 0.54 s² with the strong damping used
here), so it needs only ~√κ gradient evaluations, while remaining an accurate
second-order method through the non-stiff small-α plateau.

Design
------
* Every instance of a batch has its own time t, step h, absolute tolerance,
  spectral-radius estimate ρ (power iteration, refreshed on its own
  schedule), stage count s and error control, so an instance's result never
  depends on the rest of its batch. Instances are sorted by s each step, so
  those still in stage k are a prefix and a batch costs Σᵢ sᵢ evaluations.
  Arrays live on any backend (inferred from ``y0``).
* The stages are computed by a *stage kernel* (:class:`.kernels.StageKernel`):
  :class:`.kernels.DenseStages` for any ``gradient``, or a model's own. A
  kernel returns a :class:`.kernels.StepOutcome`, may carry its
  representation of ∇L from one step to the next (first same as last) and
  estimates the spectral radius; step control, statuses and accounting are
  shared.
* Instances stop individually (:data:`STATUS_MESSAGES`): ``converged`` when
  ‖∇L‖ ≤ gtol (and an optional ``residual`` ≤ gtol, which rules out saddles),
  ``max_time`` / ``max_steps`` when the budget ends first, ``diverged`` on a
  non-finite or exploding loss, ``step_underflow`` when h collapses, and, with
  ``loss_tol`` > 0, ``loss_tol`` once L ≤ loss_tol (a stopping rule by value,
  e.g. FaF App. D.2's "until the loss reaches 1e−6"), and ``unreachable`` when
  the stage kernel certifies that the instance cannot converge before
  ``max_time`` (:class:`.kernels.UnreachableCertificate`, checked every
  :data:`VERDICT_EVERY` accepted steps; the deep linear networks' certificate
  is :func:`transfertheory.sim.deep_linear.training.unreachable`). Finished instances are
  recorded (:class:`.ragged.FlowRecord`) and the working set
  (:class:`.ragged.FlowState`) is compacted, so slow instances (γ ≈ 1) do not
  make the whole batch pay.
* The scheme is a solver object (:mod:`.solvers`: :class:`.solvers.RKC2`, or
  :class:`.solvers.GradientDescent`, fixed-step explicit Euler at the
  per-instance step h = c/ρ̂ — batched gradient descent with learning rate
  c/λ_max(∇²L), one evaluation per step and no error control). Near a steady
  state the error control of RKC lets h grow without bound once the remaining
  displacement is below the tolerance, so the stage count grows like √(hρ)
  while each step contracts every mode by no more than the damping
  |P_s| ≈ 0.59: the approach to the minimum becomes algebraic in t and costs
  hundreds of evaluations even for a well-conditioned Hessian, which gradient
  descent resolves in ~κ·log(1/gtol) steps (docs/simulator.md). The step-size
  rule of RKC is an object too (:class:`.solvers.ErrorController`).
* Any explicit RK combination of gradients keeps the invariant subspaces of
  the flow exactly (e.g. components of W₁ orthogonal to row(X)); quadratic
  invariants such as FaF Eq. 35 drift at the level of the tolerance, which
  the models report.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from types import MappingProxyType
from typing import NamedTuple

import numpy as np

from ..._memory import FLOAT_BYTES
from ...backend import to_host
from ..convergence import Convergence, ReportsConvergence
from .kernels import DenseStages, StageKernel, UnreachableCertificate
from .ragged import FlowRecord, FlowState, RaggedBatch, array_module, batch_size, put, row_norms, take
from .solvers import SAFETY, SCHEMES, SOLVERS, FlowSettings, positive

__all__ = ["FlowResult", "FlowStats", "integrate_gradient_flow", "STATUSES", "STATUS_MESSAGES",
           "CONVERGED_STATUSES", "SCHEMES", "flow_state_bytes"]

#: what each status means (:attr:`FlowResult.message`)
STATUS_MESSAGES = MappingProxyType({
    "converged": "converged: ‖∇L‖ ≤ gtol (and the residual ≤ gtol)",
    "loss_tol": "converged: the loss fell to loss_tol or below",
    "max_time": "stopped: the flow-time budget max_time ran out",
    "max_steps": "stopped: the accepted-step budget max_steps ran out",
    "diverged": "diverged: a non-finite gradient or loss, or a loss above divergence_factor·max(1, L(y0))",
    "step_underflow": "stopped: the step size underflowed (h < 1e-13·max(t, 1))",
    "unreachable": "stopped: the stage kernel proved that ‖∇L‖ ≤ gtol cannot be reached before max_time",
})
STATUSES = tuple(STATUS_MESSAGES)
#: the statuses of a convergence criterion: ‖∇L‖ ≤ gtol (``converged``) or L ≤ loss_tol (``loss_tol``)
CONVERGED_STATUSES = ("converged", "loss_tol")
#: accepted steps between two checks of a stage kernel's ``unreachable`` certificate (per instance)
VERDICT_EVERY = 4
_ATOL = positive("atol")


def flow_state_bytes(instances: int, parameters: int, scheme: str = "rkc") -> int:
    """Bytes of the float64 states of a flow of ``instances`` × ``parameters`` at its peak: the solver's
    :attr:`~.solvers.Solver.peak_state_copies` plus the caller's start and result (the simulators' memory
    estimates)."""
    return FLOAT_BYTES * instances * parameters * (SOLVERS[scheme].peak_state_copies + 2)


class FlowStats(NamedTuple):
    """Per-instance statistics of a flow: host int arrays (B,) of gradient evaluations (stages, spectral-radius
    products and the start's gradient; every kernel call's evaluations are those of its instances), accepted
    and rejected steps."""

    evaluations: np.ndarray
    accepted: np.ndarray
    rejected: np.ndarray

    @classmethod
    def concatenate(cls, stats) -> "FlowStats":
        """The statistics of consecutive batches as one."""
        return cls(*(np.concatenate(column) for column in zip(*stats)))


@dataclass
class FlowResult(ReportsConvergence):
    """Outcome of :func:`integrate_gradient_flow` for a batch of B instances.

    Attributes
    ----------
    y : array (B, P) or :class:`~.ragged.RaggedBatch`
        Final states (backend arrays), in the layout of ``y0``.
    convergence : :class:`~transfertheory.sim.convergence.Convergence`
        How each instance stopped: ``converged`` (status in :data:`CONVERGED_STATUSES`), ``status`` (one of
        :data:`STATUSES`, explained by :attr:`message`), ``t_final`` (flow time reached), ``steps`` (accepted
        steps), ``grad_norm`` (final ‖∇L‖); host arrays (B,), also read as ``result.status`` etc.
    loss : numpy array (B,)
        Final loss per instance.
    evaluations : int
        Instance-gradient evaluations spent (summed over instances, as the stage kernel counts them).
    rejected : int
        Rejected steps.
    max_stages : int
        Largest RKC stage count used (0 for a solver without stages).
    residual : numpy array (B,)
        Final value of the ``residual`` stationarity measure (NaN without one).
    stats : :class:`FlowStats`
        Per instance: gradient evaluations, accepted and rejected steps.
    """

    y: object
    convergence: Convergence
    loss: np.ndarray
    evaluations: int = 0
    rejected: int = 0
    max_stages: int = 0
    residual: np.ndarray = None
    stats: FlowStats = None

    @property
    def diverged(self) -> np.ndarray:
        return self.status == "diverged"

    @property
    def message(self) -> np.ndarray:
        """Why each instance stopped, in words (:data:`STATUS_MESSAGES`), a host str array (B,)."""
        return np.array([STATUS_MESSAGES[status] for status in self.status])


class Integration:
    """One call of :func:`integrate_gradient_flow`: what every solver's step shares — the settings, the stage
    kernel, the record of finished instances, the counters — and the steps around it: the start, the
    spectral-radius refresh, the classification of finished instances and the result."""

    def __init__(self, settings: FlowSettings, kernel: StageKernel, gradient, residual, y0, progress):
        self.settings, self.kernel, self.gradient, self.residual = settings, kernel, gradient, residual
        self.certificate = kernel.unreachable if isinstance(kernel, UnreachableCertificate) else None
        self.progress, self.record, self.batch_size = progress, FlowRecord(y0), batch_size(y0)
        self.evaluations = self.max_stages_used = 0

    def radius(self, y, carried, rows, warm, iterations):
        """ρ(∇²L)·safety per instance (1 where the estimate is not a positive number), its warm start and the
        evaluations spent on each instance."""
        xp = array_module(y)
        rho, warm, n = self.kernel.spectral_radius(y, carried, rows, warm, iterations)
        self.evaluations += n
        return SAFETY * xp.where(xp.isfinite(rho) & (rho > 0), rho, 1.0), warm, n // rows.size

    def start(self, y0, atol_host) -> FlowState:
        """The working set at t = 0: gradient, loss and spectral radius of every instance."""
        xp = array_module(y0)
        B = batch_size(y0)
        rows = np.arange(B)
        y = y0.copy()
        G, loss = self.gradient(y, rows)
        self.evaluations += B
        rho, eigvec, each = self.radius(y, G, rows, None, 8)
        state = FlowState(
            rows=rows, since_rho=np.zeros(B, dtype=np.int64), evaluations=np.full(B, 1 + each, dtype=np.int64),
            rejected=np.zeros(B, dtype=np.int64), y=y, carried=self.settings.solver.initial_carried(G),
            grad_norm=row_norms(G), loss=loss, loss_limit=xp.maximum(loss, 1.0) * self.settings.divergence_factor,
            t=xp.zeros(B, dtype=y.dtype), steps=xp.zeros(B, dtype=xp.int64),
            h=xp.minimum(0.5 / rho, xp.asarray(self.settings.max_time, dtype=y.dtype)),
            rho=rho, eigvec=eigvec, atol=xp.asarray(atol_host, dtype=y.dtype),
        )
        return self.classify(state)

    def classify(self, state: FlowState) -> FlowState:
        """Finish the instances that diverged, converged or ran out of budget; returns the rest."""
        budget, finish = self.settings, self.record.finish
        gn, ls = to_host(state.grad_norm), to_host(state.loss)
        bad = ~np.isfinite(gn) | ~np.isfinite(ls) | (ls > to_host(state.loss_limit))
        state = finish(state, bad, "diverged", self.residual)
        small = gn[~bad] <= budget.gtol
        if self.residual is not None and small.any():  # a saddle (e.g. W = 0) has a small ‖∇L‖, a large residual
            cand = np.flatnonzero(small)
            small[cand] = to_host(self.residual(take(state.y, cand), state.rows[cand])) <= budget.gtol
        state = finish(state, small, "converged", self.residual)
        if budget.loss_tol > 0:
            state = finish(state, to_host(state.loss) <= budget.loss_tol, "loss_tol", self.residual)
        state = finish(state, to_host(state.t) >= budget.max_time * (1 - 1e-12), "max_time", self.residual)
        state = finish(state, to_host(state.steps) >= budget.max_steps, "max_steps", self.residual)
        return self._verdict(state)

    def _verdict(self, state: FlowState) -> FlowState:
        """Finish, as ``unreachable``, the instances due for a check (every :data:`VERDICT_EVERY` accepted
        steps) that the stage kernel's certificate (:class:`~.kernels.UnreachableCertificate`) proves cannot
        converge before max_time."""
        if self.certificate is None or state.size == 0:
            return state
        due = np.flatnonzero(to_host(state.steps) % VERDICT_EVERY == 0)
        if due.size == 0:
            return state
        remaining = self.settings.max_time - to_host(state.t)[due]
        hopeless = np.zeros(state.size, dtype=bool)
        states = state.y if due.size == state.size else take(state.y, due)  # no copy when all are due
        hopeless[due] = self.certificate(states, state.rows[due], remaining, self.settings.gtol)
        return self.record.finish(state, hopeless, "unreachable", self.residual)

    def refresh_radius(self, state: FlowState, refresh: np.ndarray) -> FlowState:
        """New spectral-radius estimates (3 warm-started iterations) for the host indices ``refresh``."""
        if refresh.size == 0:
            return state
        sub = array_module(state.y).asarray(refresh)
        rho, eigvec, since_rho, evaluations = state.rho, state.eigvec, state.since_rho.copy(), state.evaluations.copy()
        rho[sub], new_eigvec, each = self.radius(
            take(state.y, refresh), None if state.carried is None else take(state.carried, refresh),
            state.rows[refresh], None if eigvec is None else take(eigvec, refresh), 3)
        if eigvec is not None:
            put(eigvec, refresh, new_eigvec)
        since_rho[refresh] = 0
        evaluations[refresh] += each
        return state.with_(rho=rho, eigvec=eigvec, since_rho=since_rho, evaluations=evaluations)

    def report_progress(self, state: FlowState) -> None:
        """Call ``progress`` with the fraction of instances finished, if given."""
        if self.progress is not None:
            self.progress(1.0 - state.size / self.batch_size)

    def result(self) -> FlowResult:
        record = self.record
        diverged = int((record.status == "diverged").sum())
        if diverged:
            warnings.warn(
                f"{diverged} of {self.batch_size} instances diverged (non-finite or exploding loss); "
                f"hint: check the data scale and initialization, or {self.settings.solver.divergence_hint}.",
                RuntimeWarning,
                stacklevel=3,
            )
        status = record.status.astype(str)
        convergence = Convergence(np.isin(status, CONVERGED_STATUSES), status, record.t, record.steps,
                                  record.grad_norm)
        return FlowResult(y=record.y, convergence=convergence, loss=record.loss, evaluations=self.evaluations,
                          rejected=int(record.rejected.sum()), max_stages=self.max_stages_used,
                          residual=record.residual, stats=FlowStats(record.evaluations, record.steps, record.rejected))


@np.errstate(over="ignore", invalid="ignore", divide="ignore")
def integrate_gradient_flow(gradient, y0, settings: FlowSettings | None = None, *, atol=1e-12, progress=None,
                            stage_kernel: StageKernel | None = None, residual=None, **changes) -> FlowResult:
    r"""Integrate dy/dt = −∇L(y) for a batch of independent instances.

    Parameters
    ----------
    gradient : callable ``(y, rows) -> (grad, loss)``
        Gradient (b, P) and loss (b,) of the instances ``rows`` (a NumPy int
        array of indices into the batch) at states ``y`` (b, P).
    y0 : array (B, P) or :class:`~.ragged.RaggedBatch`
        Initial states on the backend (NumPy, CuPy, …: inferred from ``y0``).
        Instances of different sizes come as a ``RaggedBatch`` (one dense
        block per size, :mod:`.ragged`) with a ``stage_kernel`` that handles
        it (:class:`~.ragged.BlockwiseStages`); ``gradient`` then returns a
        ragged gradient. Statuses, budgets and step control are per instance
        as for (B, P) states.
    settings : :class:`~.solvers.FlowSettings` or None
        The solver, step-size controller, tolerances and budget, validated
        when the record was built (None: the defaults, ``FlowSettings()``).
        Keyword ``changes`` override it by name (:meth:`~.solvers.FlowSettings.updated`:
        a field, ``scheme=``, or a parameter of the solver or the controller):
        ``integrate_gradient_flow(g, y0, gtol=1e-6)`` is
        ``integrate_gradient_flow(g, y0, FlowSettings(gtol=1e-6))``.

        * ``gtol``: an instance has converged when ‖∇L‖₂ ≤ gtol (and
          ``residual`` ≤ gtol); ``loss_tol`` > 0 stops it with status
          ``loss_tol`` once its loss is ≤ loss_tol (checked after every step,
          after the gradient criterion; counts as converged).
        * ``max_time``, ``max_steps``: per-instance budget of flow time and
          accepted steps; ``divergence_factor``: a loss above
          ``divergence_factor · max(1, L(y0))`` counts as divergence.
        * ``solver``: :class:`~.solvers.RKC2` (default, ``scheme="rkc"``):
          adaptive RKC2 (module docstring) with the error control of
          ``controller`` (:class:`~.solvers.ErrorController`, ``rtol``),
          at most ``max_stages`` stages per step.
          :class:`~.solvers.GradientDescent` (``scheme="euler"``): fixed-step
          explicit Euler at h = step_fraction/ρ̂, batched gradient descent
          with learning rate step_fraction/λ_max; the controller, ``atol``
          and the kernel's ``__call__`` are not used (the kernel's
          ``spectral_radius`` receives the dense gradient as ``carried``);
          ``GradientDescent(learning_rate=h)`` steps at the fixed h instead
          (gradient descent at a given rate, as papers train).
    atol : float or array (B,)
        Absolute local error tolerance, one per instance if an array (so that
        an instance's integration never depends on the rest of its batch).
    progress : callable or None
        Called as ``progress(done_fraction)`` after each step (e.g. tqdm).
    stage_kernel : :class:`~.kernels.StageKernel` or None
        Computes the RKC stages of one step and estimates the spectral radius
        (optional hooks: :class:`~.kernels.UnreachableCertificate`,
        :class:`~.kernels.FusedDescent`).
        Default: :class:`~.kernels.DenseStages` on ``gradient``. A model whose
        gradients have structure supplies its own, e.g. the deep linear
        networks' rank-one layer gradients
        (:class:`~transfertheory.sim.deep_linear.LowRankStages`); step control,
        statuses and accounting are the same for every kernel.
    residual : callable or None
        ``residual(y, rows) -> (b,)``, a second stationarity measure that must
        also be ≤ gtol for convergence, evaluated only where ‖∇L‖ ≤ gtol. It
        guards against saddles with a small gradient: for a deep linear net at
        W ≈ 0 (initialization scale α) ‖∇L‖ = O(α) while ‖∇_βL‖ = O(1).
        Its final value is reported in :attr:`FlowResult.residual`. With
        ragged states it receives a ``RaggedBatch`` and rows of the whole
        batch.

    Notes
    -----
    Floating-point overflow inside a trial step is expected (an unstable trial is
    rejected and the step shrunk) and is not warned about; a non-finite accepted
    state is reported as ``diverged`` with a :class:`RuntimeWarning` and a hint.
    """
    settings = (FlowSettings() if settings is None else settings).updated(**changes)
    atol_host = np.broadcast_to(_ATOL.check(atol), (batch_size(y0),))
    if isinstance(y0, RaggedBatch) and stage_kernel is None:
        raise ValueError("ragged states (RaggedBatch) need a stage_kernel that handles them, e.g. BlockwiseStages "
                         "of one DenseStages kernel per block")
    kernel = DenseStages(gradient) if stage_kernel is None else stage_kernel
    run, solver = Integration(settings, kernel, gradient, residual, y0, progress), settings.solver
    state = run.start(y0, atol_host)
    while state.size:
        state = solver.step(run, state)
    return run.result()
