r"""Batched gradient-flow integrator: adaptive Runge–Kutta–Chebyshev (RKC2).

Gradient flow dθ/dt = −∇L(θ) has a symmetric Jacobian −∇²L, so near a
minimum its spectrum lies on the negative real axis and is *stiff*: for the
least-squares problems of FaF §3 the ratio of the largest to the smallest
Hessian eigenvalue grows like 1/(1 − √γ)⁴ and is ~d² at γ = 1. An explicit
method with error control then needs ~κ steps; the damped second-order
Runge–Kutta–Chebyshev method (Sommeijer, Shampine & Verwer 1998, *J. Comput.
Appl. Math.* 88:315; tables in :mod:`.rkc`) stretches its real stability
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
  :func:`.kernels.dense_stages` for any ``gradient``, or a model's own. A
  kernel returns a :class:`.kernels.StepOutcome`, may carry its
  representation of ∇L from one step to the next (first same as last) and
  estimates the spectral radius; step control, statuses and accounting are
  shared.
* Instances stop individually: ``converged`` when ‖∇L‖ ≤ gtol (and an
  optional ``residual`` ≤ gtol, which rules out saddles), ``max_time`` /
  ``max_steps`` when the budget ends first, ``diverged`` on a non-finite or
  exploding loss, ``step_underflow`` when h collapses, and, with
  ``loss_tol`` > 0, ``loss_tol`` once L ≤ loss_tol (a stopping rule by
  value, e.g. FaF App. D.2's "until the loss reaches 1e−6"), and ``unreachable``
  when the stage kernel certifies that the instance cannot converge before
  ``max_time`` (an optional ``unreachable`` method of the kernel, checked every
  :data:`VERDICT_EVERY` accepted steps; the deep linear networks' certificate
  is :mod:`transfertheory.sim.deep_linear.verdict`). Finished instances
  are recorded (:class:`.state.FlowRecord`) and the working set
  (:class:`.state.FlowState`) is compacted, so slow instances (γ ≈ 1) do not
  make the whole batch pay.
* ``scheme="euler"`` replaces RKC by fixed-step explicit Euler at the
  per-instance step h = c/ρ̂ (c = ``step_fraction``): batched gradient
  descent with learning rate c/λ_max(∇²L), one evaluation per step and no
  error control. Near a steady state the error control of RKC lets h grow
  without bound once the remaining displacement is below the tolerance, so
  the stage count grows like √(hρ) while each step contracts every mode by
  no more than the damping |P_s| ≈ 0.59: the approach to the minimum becomes
  algebraic in t and costs hundreds of evaluations even for a
  well-conditioned Hessian, which gradient descent resolves in ~κ·log(1/gtol)
  steps (docs/simulator.md).
* Any explicit RK combination of gradients keeps the invariant subspaces of
  the flow exactly (e.g. components of W₁ orthogonal to row(X)); quadratic
  invariants such as FaF Eq. 35 drift at the level of the tolerance, which
  the models report.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from ..._memory import FLOAT_BYTES
from ..._validation import Interval
from ...backend import to_host
from ...params import Param
from ..convergence import Convergence, ReportsConvergence
from .kernels import StageKernel, StepRequest, dense_stages
from .ragged import RaggedBatch, array_module, batch_size, put, row_norms, subtract_scaled, take
from .rkc import tables
from .settings import SCHEMES, FlowSettings
from .state import FlowRecord, FlowState

__all__ = ["FlowResult", "integrate_gradient_flow", "STATUSES", "CONVERGED_STATUSES", "SCHEMES",
           "PEAK_STATE_COPIES", "flow_state_bytes"]

STATUSES = ("converged", "loss_tol", "max_time", "max_steps", "diverged", "step_underflow", "unreachable")
#: the statuses of a convergence criterion: ‖∇L‖ ≤ gtol (``converged``) or L ≤ loss_tol (``loss_tol``)
CONVERGED_STATUSES = ("converged", "loss_tol")
#: accepted steps between two checks of a stage kernel's ``unreachable`` certificate (per instance)
VERDICT_EVERY = 4
_ATOL = Param("atol", Interval(0, np.inf, "neither"))
#: (B, P) arrays the integrator holds at its peak, per scheme, besides what the gradient callable allocates: the
#: initial states, the record, the working set, the carried gradient, the stage buffers, the error estimate and
#: the compaction copies (measured with tracemalloc on a dense least-squares batch: 18 and 12; the simulators'
#: memory estimates multiply by it, tests/test_memory.py)
PEAK_STATE_COPIES = {"rkc": 18, "euler": 12}


def flow_state_bytes(instances: int, parameters: int, scheme: str = "rkc") -> int:
    """Bytes of the float64 states of a flow of ``instances`` × ``parameters`` at its peak: the integrator's
    :data:`PEAK_STATE_COPIES` plus the caller's start and result (the simulators' memory estimates)."""
    return FLOAT_BYTES * instances * parameters * (PEAK_STATE_COPIES[scheme] + 2)


_SAFETY = 1.2  # multiplies the power-iteration estimate of ρ
_RHO_REFRESH = 25  # accepted steps between spectral-radius refreshes


@dataclass
class FlowResult(ReportsConvergence):
    """Outcome of :func:`integrate_gradient_flow` for a batch of B instances.

    Attributes
    ----------
    y : array (B, P) or :class:`~.ragged.RaggedBatch`
        Final states (backend arrays), in the layout of ``y0``.
    convergence : :class:`~transfertheory.sim.convergence.Convergence`
        How each instance stopped: ``converged`` (status in :data:`CONVERGED_STATUSES`), ``status`` (one of
        :data:`STATUSES`; ``unreachable``, the kernel's certificate that the instance cannot converge before
        max_time, is not converged, like ``max_time``), ``t_final`` (flow time reached), ``steps`` (accepted
        steps), ``grad_norm`` (final ‖∇L‖); host arrays (B,), also read as ``result.status`` etc.
    loss : numpy array (B,)
        Final loss per instance.
    evaluations : int
        Instance-gradient evaluations spent (summed over instances).
    rejected : int
        Rejected steps.
    max_stages : int
        Largest RKC stage count used.
    residual : numpy array (B,)
        Final value of the ``residual`` stationarity measure (NaN without one).
    """

    y: object
    convergence: Convergence
    loss: np.ndarray
    evaluations: int = 0
    rejected: int = 0
    max_stages: int = 0
    residual: np.ndarray = None

    @property
    def diverged(self) -> np.ndarray:
        return self.status == "diverged"


class _Integration:
    """One call of :func:`integrate_gradient_flow`: the kernel, the budget, the record and the counters."""

    def __init__(self, kernel: StageKernel, residual, budget: FlowSettings, y0, progress):
        self.kernel, self.residual, self.budget, self.progress = kernel, residual, budget, progress
        self.tables = tables(budget.max_stages)
        self.record = FlowRecord(y0)
        self.batch_size = batch_size(y0)
        self.evaluations = self.rejected = self.max_stages_used = 0

    def radius(self, y, carried, rows, warm, iterations):
        """ρ(∇²L)·safety per instance (1 where the estimate is not a positive number) and its warm start."""
        xp = array_module(y)
        rho, warm, n = self.kernel.spectral_radius(y, carried, rows, warm, iterations)
        self.evaluations += n
        return _SAFETY * xp.where(xp.isfinite(rho) & (rho > 0), rho, 1.0), warm

    def initial_carried(self, gradient):
        """What the first step receives as ``carried``: nothing for an RKC stage kernel."""
        return None

    def start(self, y0, gradient, atol_host) -> FlowState:
        """The working set at t = 0: gradient, loss and spectral radius of every instance."""
        xp = array_module(y0)
        B = batch_size(y0)
        rows = np.arange(B)
        y = y0.copy()
        G, loss = gradient(y, rows)
        self.evaluations += B
        rho, eigvec = self.radius(y, G, rows, None, 8)
        state = FlowState(
            rows=rows, since_rho=np.zeros(B, dtype=np.int64), y=y,
            carried=self.initial_carried(G),
            grad_norm=row_norms(G), loss=loss, loss_limit=xp.maximum(loss, 1.0) * self.budget.divergence_factor,
            t=xp.zeros(B, dtype=y.dtype), steps=xp.zeros(B, dtype=xp.int64),
            h=xp.minimum(0.5 / rho, xp.asarray(self.budget.max_time, dtype=y.dtype)),
            rho=rho, eigvec=eigvec, atol=xp.asarray(atol_host, dtype=y.dtype),
        )
        return self.classify(state)

    def classify(self, state: FlowState) -> FlowState:
        """Finish the instances that diverged, converged or ran out of budget; returns the rest."""
        budget = self.budget
        gn, ls = to_host(state.grad_norm), to_host(state.loss)
        bad = ~np.isfinite(gn) | ~np.isfinite(ls) | (ls > to_host(state.loss_limit))
        state = self.record.finish(state, bad, "diverged", self.residual)
        small = gn[~bad] <= budget.gtol
        if self.residual is not None and small.any():  # a saddle (e.g. W = 0) has a small ‖∇L‖, a large residual
            cand = np.flatnonzero(small)
            small[cand] = to_host(self.residual(take(state.y, cand), state.rows[cand])) <= budget.gtol
        state = self.record.finish(state, small, "converged", self.residual)
        if budget.loss_tol > 0:
            state = self.record.finish(state, to_host(state.loss) <= budget.loss_tol, "loss_tol", self.residual)
        state = self.record.finish(state, to_host(state.t) >= budget.max_time * (1 - 1e-12), "max_time",
                                   self.residual)
        state = self.record.finish(state, to_host(state.steps) >= budget.max_steps, "max_steps", self.residual)
        return self._verdict(state)

    def _verdict(self, state: FlowState) -> FlowState:
        """Finish, as ``unreachable``, the instances due for a check (every :data:`VERDICT_EVERY` accepted
        steps) that the stage kernel's ``unreachable`` certificate proves cannot converge before max_time."""
        certificate = getattr(self.kernel, "unreachable", None)
        if certificate is None or state.size == 0:
            return state
        due = np.flatnonzero(to_host(state.steps) % VERDICT_EVERY == 0)
        if due.size == 0:
            return state
        remaining = self.budget.max_time - to_host(state.t)[due]
        hopeless = np.zeros(state.size, dtype=bool)
        states = state.y if due.size == state.size else take(state.y, due)  # no copy when all are due
        hopeless[due] = certificate(states, state.rows[due], remaining, self.budget.gtol)
        return self.record.finish(state, hopeless, "unreachable", self.residual)

    def step(self, state: FlowState) -> FlowState:
        """One RKC2 step of every working instance: accept or reject, adapt h, refresh ρ where due."""
        xp, tabs = array_module(state.y), self.tables
        h = xp.minimum(xp.minimum(state.h, self.budget.max_time - state.t), tabs.beta[-1] / state.rho)
        s_row = tabs.stages(to_host(h * state.rho))
        self.max_stages_used = max(self.max_stages_used, int(s_row.max()))
        out = self.kernel(StepRequest(
            y=state.y, carried=state.carried, order=np.argsort(-s_row, kind="stable"), h=to_host(h), stages=s_row,
            rows=state.rows, coefficients=tabs.table(int(s_row.max())), rtol=self.budget.rtol, atol=state.atol))
        self.evaluations += out.evaluations
        before, source = state.y, None
        if out.order is not None:  # the kernel returned its batch in its own order: the working set follows it
            source, h = out.order, h[xp.asarray(out.order)]
            state = state.reordered(source, out.y)
        accept = out.error <= 1.0
        rejected_host = ~to_host(accept)
        y, carried, loss, grad_norm = self._keep_rejected(state, out, np.flatnonzero(rejected_host), before, source)
        t = state.t + xp.where(accept, h, 0.0)
        factor = xp.where(out.error > 0, 0.8 * out.error ** (-1.0 / 3.0), 10.0)
        h = h * xp.clip(factor, 0.1, 10.0)
        underflow = to_host(h < 1e-13 * xp.maximum(t, 1.0))
        state = state.with_(y=y, carried=carried, loss=loss, grad_norm=grad_norm, t=t, h=h,
                            steps=state.steps + accept.astype(state.steps.dtype), since_rho=state.since_rho + 1)
        state = self._refresh_radius(state, np.flatnonzero(rejected_host | (state.since_rho >= _RHO_REFRESH)))
        if self.progress is not None:
            self.progress(1.0 - state.size / self.batch_size)
        return self.classify(self.record.finish(state, underflow, "step_underflow", self.residual))

    def _keep_rejected(self, state: FlowState, out, rej: np.ndarray, before, source):
        """The step's results, with the rejected instances (host indices ``rej``) keeping their state: their
        rows ``source[rej]`` of the states ``before`` the step (``rej`` itself when ``source`` is None)."""
        y, carried, loss, grad_norm = out.y, out.grad, out.loss, out.grad_norm
        self.rejected += int(rej.size)
        if rej.size:
            dev_rej = array_module(y).asarray(rej)
            put(y, rej, take(before, rej if source is None else source[rej]))
            loss[dev_rej], grad_norm[dev_rej] = state.loss[dev_rej], state.grad_norm[dev_rej]
            if state.carried is None:  # nothing carried for the rejected rows (first step): the kernel recomputes
                carried = None
            elif carried is not None:
                put(carried, rej, take(state.carried, rej))
        return y, carried, loss, grad_norm

    def _refresh_radius(self, state: FlowState, refresh: np.ndarray) -> FlowState:
        """New spectral-radius estimates (3 warm-started iterations) for the host indices ``refresh``."""
        if refresh.size == 0:
            return state
        sub = array_module(state.y).asarray(refresh)
        rho, eigvec, since_rho = state.rho, state.eigvec, state.since_rho.copy()
        rho[sub], new_eigvec = self.radius(take(state.y, refresh),
                                           None if state.carried is None else take(state.carried, refresh),
                                           state.rows[refresh], None if eigvec is None else take(eigvec, refresh), 3)
        if eigvec is not None:
            put(eigvec, refresh, new_eigvec)
        since_rho[refresh] = 0
        return state.with_(rho=rho, eigvec=eigvec, since_rho=since_rho)

    def result(self) -> FlowResult:
        record = self.record
        diverged = int((record.status == "diverged").sum())
        if diverged:
            warnings.warn(
                f"{diverged} of {self.batch_size} instances diverged (non-finite or exploding loss); "
                "hint: check the data scale and initialization, or tighten rtol.",
                RuntimeWarning,
                stacklevel=3,
            )
        status = record.status.astype(str)
        convergence = Convergence(np.isin(status, CONVERGED_STATUSES), status, record.t, record.steps,
                                  record.grad_norm)
        return FlowResult(y=record.y, convergence=convergence, loss=record.loss, evaluations=self.evaluations,
                          rejected=self.rejected, max_stages=self.max_stages_used, residual=record.residual)


def _einsum_squares(g):
    """Squared row norms of a (b, P) gradient by one einsum (the Euler step's; no (b, P) temporary)."""
    return array_module(g).einsum("ij,ij->i", g, g)


class _EulerIntegration(_Integration):
    """``scheme="euler"``: y ← y − h∇L(y) with the fixed per-instance step h = step_fraction/ρ̂.

    ρ̂ is the stage kernel's spectral-radius estimate (refreshed every ``_RHO_REFRESH`` steps; the step undoes
    the RKC safety factor, so an exact ρ̂ gives learning rate exactly step_fraction/λ_max(∇²L)): batched
    full-batch gradient descent. On a quadratic it is stable iff step_fraction·ρ/ρ̂ < 2. A model kernel with an
    exact or upper-bound ρ̂ (e.g. the TDR tangent kernel) may use any step_fraction < 2; the dense kernel's power
    iteration approaches ρ from below, so keep step_fraction ≤ 1 there (an unstable step is still detected and
    reported as ``diverged``). One gradient evaluation per step, every step accepted, no error estimate: the
    trajectory follows the flow to O(h) (the time reached is the sum of the steps).
    """

    def __init__(self, gradient, step_fraction, *args):
        super().__init__(*args)
        self.gradient, self.step_fraction = gradient, step_fraction

    def initial_carried(self, gradient):
        return gradient  # the dense gradient at y, reused by the next step

    def step(self, state: FlowState) -> FlowState:
        """Euler steps of the working set until one of its instances is due for a spectral-radius refresh or
        may finish (:meth:`_may_finish`), then the refresh and :meth:`classify`: the arithmetic and the step at
        which each instance stops are those of one step per call, without the per-step bookkeeping (one step
        per call when the kernel has an ``unreachable`` certificate, checked at every step)."""
        xp, budget = array_module(state.y), self.budget
        y, G, t = state.y, state.carried, state.t
        fixed = budget.learning_rate is not None  # gradient descent at a given rate: no spectral radius needed
        rate = xp.full_like(t, budget.learning_rate) if fixed else self.step_fraction * _SAFETY / state.rho
        certified = getattr(self.kernel, "unreachable", None) is not None
        count = 1 if certified else _RHO_REFRESH if fixed else max(1, _RHO_REFRESH - int(state.since_rho.max()))
        # far from the budget, h = min(rate, max_time − t) is rate itself and no instance can reach
        # max_time or max_steps within these steps (the margin covers the rounding of the summed times)
        far = (float(to_host((t + count * rate).max())) < budget.max_time * (1 - 1e-12) * (1 - 1e-9)
               and int(to_host(state.steps.max())) + count < budget.max_steps)
        column = rate[:, None] if far and not isinstance(y, RaggedBatch) else None
        limit = float(to_host(state.loss_limit.min()))
        descend = getattr(self.kernel, "descend", None)
        done = 0
        while done < count:
            h = rate if far else xp.minimum(rate, budget.max_time - t)
            if descend is not None:  # the kernel's fused step (y and G updated in place; StageKernel docstring)
                G, loss, squares = descend(y, G, h, state.rows)
            else:
                if column is None:
                    subtract_scaled(y, h, G)  # y is updated in place (the record keeps copies); G is not modified
                else:
                    y -= column * G
                G, loss = self.gradient(y, state.rows)
                squares = row_norms(G, _einsum_squares)
            self.evaluations += state.size
            t, done = t + h, done + 1
            if self.progress is not None:
                self.progress(1.0 - state.size / self.batch_size)
            if self._may_finish(squares, loss, limit, None if far else t, None if far else state.steps + done):
                break
        state = state.with_(y=y, carried=G, loss=loss, grad_norm=xp.sqrt(squares), t=t, h=h,
                            steps=state.steps + done, since_rho=0 * state.since_rho if fixed else state.since_rho + done)
        return self.classify(self._refresh_radius(state, np.flatnonzero(state.since_rho >= _RHO_REFRESH)))

    def _may_finish(self, squares, loss, limit, t, steps) -> bool:
        """Whether :meth:`classify` might finish an instance: a superset of its criteria, from the squared
        gradient norms and the smallest divergence limit ``limit`` (a non-finite gradient or loss, |L| above
        the limit, ‖∇L‖ ≤ gtol, L ≤ loss_tol, or — unless ``t`` and ``steps`` are None, known to be far from
        it — the budget reached). On host lists: a few array reductions cost more than the step's arithmetic
        at small sizes (NaN fails every comparison, so it counts as finishing)."""
        budget = self.budget
        low, losses = budget.gtol**2 * (1 + 1e-9), to_host(loss).tolist()
        going = (all(low < v < math.inf for v in to_host(squares).tolist())
                 and all(abs(v) <= limit for v in losses)
                 and (budget.loss_tol == 0 or all(v > budget.loss_tol for v in losses)))
        if going and t is not None:
            going = bool(to_host(((t < budget.max_time * (1 - 1e-12)) & (steps < budget.max_steps)).all()))
        return not going


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
    settings : :class:`~.settings.FlowSettings` or None
        Tolerances, budget, scheme and stage cap, validated when the record was
        built (None: the defaults, ``FlowSettings()``). Keyword ``changes``
        (``rtol=…``, ``max_time=…``, any field of the record) override it:
        ``integrate_gradient_flow(g, y0, gtol=1e-6)`` is
        ``integrate_gradient_flow(g, y0, FlowSettings(gtol=1e-6))``.

        * ``gtol``: an instance has converged when ‖∇L‖₂ ≤ gtol (and
          ``residual`` ≤ gtol); ``loss_tol`` > 0 stops it with status
          ``loss_tol`` once its loss is ≤ loss_tol (checked after every step,
          after the gradient criterion; counts as converged).
        * ``max_time``, ``max_steps``: per-instance budget of flow time and
          accepted steps; ``divergence_factor``: a loss above
          ``divergence_factor · max(1, L(y0))`` counts as divergence.
        * ``scheme="rkc"`` (default): adaptive RKC2 with error control at
          ``rtol`` (module docstring), at most ``max_stages`` stages per step
          (h·ρ ≤ β(max_stages)). ``scheme="euler"``: fixed-step explicit Euler
          at the per-instance step h = step_fraction/ρ̂, ρ̂ the stage kernel's
          spectral-radius estimate — batched gradient descent with learning
          rate step_fraction/λ_max. For losses that are (piecewise) quadratic
          with a well-conditioned Hessian and an exact ρ̂ it reaches a steady
          state in fewer gradient evaluations than the error-controlled flow;
          ``rtol``, ``atol`` and ``max_stages`` are not used, the stage kernel
          supplies only ``spectral_radius`` (which then receives the dense
          gradient as ``carried``). Statuses and accounting are the same.
          Euler is stable on a quadratic iff step_fraction·ρ/ρ̂ < 2: values
          near 2 need a kernel whose ρ̂ bounds ρ from above; with the dense
          power iteration keep step_fraction ≤ 1. With ``learning_rate`` set,
          Euler steps at that fixed h instead (gradient descent at a given
          rate, as papers train; no spectral-radius refreshes, an unstable
          rate ends as ``diverged``).
    atol : float or array (B,)
        Absolute local error tolerance, one per instance if an array (so that
        an instance's integration never depends on the rest of its batch).
    progress : callable or None
        Called as ``progress(done_fraction)`` after each step (e.g. tqdm).
    stage_kernel : :class:`~.kernels.StageKernel` or None
        Computes the RKC stages of one step and estimates the spectral radius.
        Default: :func:`~.kernels.dense_stages` on ``gradient``. A model whose
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
    budget = (FlowSettings() if settings is None else settings).updated(**changes)
    atol_host = np.broadcast_to(_ATOL.check(atol), (batch_size(y0),))
    if isinstance(y0, RaggedBatch) and stage_kernel is None:
        raise ValueError("ragged states (RaggedBatch) need a stage_kernel that handles them, e.g. BlockwiseStages "
                         "of one dense_stages kernel per block")
    kernel = dense_stages(gradient) if stage_kernel is None else stage_kernel
    setup = (kernel, residual, budget, y0, progress)
    run = _Integration(*setup) if budget.scheme == "rkc" else _EulerIntegration(gradient, budget.step_fraction,
                                                                                  *setup)
    state = run.start(y0, gradient, atol_host)
    while state.size:
        state = run.step(state)
    return run.result()
