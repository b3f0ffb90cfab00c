r"""Batched gradient-flow integrator: adaptive Runge–Kutta–Chebyshev (RKC2).

Gradient flow dθ/dt = −∇L(θ) has a symmetric Jacobian −∇²L, so near a
minimum its spectrum lies on the negative real axis and is *stiff*: for the
least-squares problems of FaF §3 the ratio of the largest to the smallest
Hessian eigenvalue grows like 1/(1 − √γ)⁴ and is ~d² at γ = 1. An explicit
method with error control then needs ~κ steps; the damped second-order
Runge–Kutta–Chebyshev method (Sommeijer, Shampine & Verwer 1998, *J. Comput.
Appl. Math.* 88:315) stretches its real stability interval to β(s) ∝ s² with
s stages (≈ 0.54 s² with the strong damping used here), so it needs only ~√κ
gradient evaluations, while remaining an accurate second-order method through
the non-stiff small-α plateau.

Design
------
* Every instance of a batch has its own time t, step h, absolute tolerance,
  spectral-radius estimate ρ (power iteration, refreshed on its own
  schedule), stage count s and error control, so an instance's result never
  depends on the rest of its batch. Instances are sorted by s each step, so
  those still in stage k are a prefix and a batch costs Σᵢ sᵢ evaluations.
  Arrays live on any backend (NumPy or CuPy).
* The stages are computed by a *stage kernel*: :func:`dense_stages` for any
  ``gradient`` (dense states, componentwise error norm), or a model's own
  (:class:`~transfertheory.sim.deep_linear.LowRankStages` keeps rank-one
  layer gradients factored, :func:`rkc_butcher_rows`). A kernel returns a
  :class:`StepOutcome` and may carry its representation of ∇L from one step
  to the next (first same as last) and provide its own spectral-radius
  estimator; step control, statuses and accounting are shared.
* Strong damping (ε = 2) suits integration to a steady state.
* Instances stop individually: ``converged`` when ‖∇L‖ ≤ gtol (and an
  optional ``residual`` ≤ gtol, which rules out saddles), ``max_time`` /
  ``max_steps`` when the budget ends first, ``diverged`` on a non-finite or
  exploding loss, ``step_underflow`` when h collapses. Finished instances
  are frozen and the working set is compacted, so slow instances (γ ≈ 1) do
  not make the whole batch pay.
* Any explicit RK combination of gradients keeps the invariant subspaces of
  the flow exactly (e.g. components of W₁ orthogonal to row(X)); quadratic
  invariants such as FaF Eq. 35 drift at the level of the tolerance, which
  the models report.
"""
from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..backend import array_module_of, to_host

__all__ = [
    "FlowResult",
    "integrate_gradient_flow",
    "rkc_coefficients",
    "rkc_stability_bound",
    "rkc_butcher_rows",
    "dense_stages",
    "dense_spectral_radius",
    "StepOutcome",
    "STATUSES",
]

STATUSES = ("converged", "max_time", "max_steps", "diverged", "step_underflow")
# RKC damping ε (w₀ = 1 + ε/s²). Sommeijer et al. use ε = 2/13 (β(s) ≈ 0.653s², |P_s| ≤ 0.95 on the
# stiff part of the interval), tuned for transients. A gradient flow is integrated to its steady state:
# ε = 2 keeps β(s) ≈ 0.537s² but damps every stiff mode by |P_s| ≤ 0.59 per step, so the residue of
# the local errors in stiff modes decays instead of stalling ‖∇L‖ near gtol (docs/simulator.md)
_EPS_DAMPING = 2.0
_SAFETY = 1.2  # multiplies the power-iteration estimate of ρ
_RHO_REFRESH = 25  # accepted steps between spectral-radius refreshes


def rkc_coefficients(s: int):
    """Coefficients (μ, ν, μ̃, γ̃) of the s-stage damped RKC2 method, s ≥ 2.

    Chebyshev recursion of Sommeijer et al. (1998), Eqs. 2.4–2.8, with
    w₀ = 1 + ε/s², w₁ = T_s'(w₀)/T_s''(w₀), b_j = T_j''(w₀)/T_j'(w₀)²
    (b₀ = b₁ = b₂). Returns four arrays of length s + 1 (index j).
    """
    if s < 2:
        raise ValueError(f"s must be an integer >= 2, got {s}")
    w0 = 1.0 + _EPS_DAMPING / s**2
    T, dT, ddT = np.zeros(s + 1), np.zeros(s + 1), np.zeros(s + 1)
    T[0], T[1], dT[1] = 1.0, w0, 1.0
    for j in range(2, s + 1):
        T[j] = 2 * w0 * T[j - 1] - T[j - 2]
        dT[j] = 2 * T[j - 1] + 2 * w0 * dT[j - 1] - dT[j - 2]
        ddT[j] = 4 * dT[j - 1] + 2 * w0 * ddT[j - 1] - ddT[j - 2]
    w1 = dT[s] / ddT[s]
    b = np.empty(s + 1)
    b[2:] = ddT[2:] / dT[2:] ** 2
    b[0] = b[1] = b[2]
    mu, nu, mu_t, gam_t = (np.zeros(s + 1) for _ in range(4))
    mu_t[1] = b[1] * w1
    for j in range(2, s + 1):
        mu[j] = 2 * b[j] * w0 / b[j - 1]
        nu[j] = -b[j] / b[j - 2]
        mu_t[j] = 2 * b[j] * w1 / b[j - 1]
        gam_t[j] = -(1 - b[j - 1] * T[j - 1]) * mu_t[j]
    return mu, nu, mu_t, gam_t


def rkc_stability_bound(s):
    """Length β(s) of the real stability interval [−β(s), 0] of s-stage RKC2.

    β(s) = (1 + w₀)·T_s''(w₀)/T_s'(w₀) (≈ 0.537 s² for ε = 2, 0.653 s² for ε = 2/13).
    ``s`` an integer ≥ 2 (returns a float) or an array of them (one recursion for all).
    """
    s_arr = np.asarray(s)
    w0 = 1.0 + _EPS_DAMPING / s_arr.astype(float) ** 2
    T0, T1 = np.ones_like(w0), w0  # T_j(w₀), T_j'(w₀), T_j''(w₀) for j = 0, 1
    d0, d1 = np.zeros_like(w0), np.ones_like(w0)
    dd0, dd1 = np.zeros_like(w0), np.zeros_like(w0)
    for j in range(2, int(s_arr.max()) + 1):
        new = (T1, 2 * w0 * T1 - T0, d1, 2 * T1 + 2 * w0 * d1 - d0, dd1, 4 * d1 + 2 * w0 * dd1 - dd0)
        active = j <= s_arr
        T0, T1, d0, d1, dd0, dd1 = (np.where(active, n, o) for n, o in zip(new, (T0, T1, d0, d1, dd0, dd1)))
    beta = (1 + w0) * dd1 / d1
    return float(beta) if beta.ndim == 0 else beta


class _RKCTables:
    """Coefficients and stability bounds of RKC2 for s = 2 … s_max, grown on demand."""

    def __init__(self, max_stages: int):
        self.max_stages = max_stages
        self.beta = np.concatenate([[0.0, 0.0], rkc_stability_bound(np.arange(2, max_stages + 1))])
        self.beta_per_stage2 = rkc_stability_bound(1000) / 1000**2
        self.coeffs = np.zeros((4, 1, 1))

    def stages(self, h_rho: np.ndarray) -> np.ndarray:
        """Stages per instance: RKC's rule s = 1 + ⌈√(1 + hρ/β₁)⌉ with β₁ = lim β(s)/s²
        (one stage of margin for an underestimated ρ), at least the smallest s with
        β(s) ≥ hρ, capped at ``max_stages`` (the caller caps h accordingly)."""
        rule = 1 + np.ceil(np.sqrt(1.0 + h_rho / self.beta_per_stage2)).astype(int)
        needed = np.searchsorted(self.beta, h_rho, side="left")
        return np.clip(np.maximum(rule, needed), 2, self.max_stages)

    def table(self, s_max: int) -> np.ndarray:
        """Array (4, S, S), S > s_max: [μ, ν, μ̃, γ̃][s, j]; rows are computed once and kept."""
        old = self.coeffs.shape[1]
        if old <= s_max:
            size = max(s_max + 1, 2 * old)
            tab = np.zeros((4, size, size))
            tab[:, :old, :old] = self.coeffs
            for k in range(max(2, old), size):
                tab[:, k, : k + 1] = rkc_coefficients(k)
            self.coeffs = tab
        return self.coeffs


@functools.lru_cache(maxsize=4)
def _tables(max_stages: int) -> _RKCTables:
    """One table per stage cap, shared by every integration (they are pure functions of s)."""
    return _RKCTables(max_stages)


@dataclass
class FlowResult:
    """Outcome of :func:`integrate_gradient_flow` for a batch of B instances.

    Attributes
    ----------
    y : array (B, P)
        Final states (backend array).
    t, steps, grad_norm, loss : numpy arrays (B,)
        Time reached, accepted steps, final ‖∇L‖ and loss per instance.
    status : numpy array of str (B,)
        One of :data:`STATUSES`.
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
    t: np.ndarray
    steps: np.ndarray
    grad_norm: np.ndarray
    loss: np.ndarray
    status: np.ndarray
    evaluations: int = 0
    rejected: int = 0
    max_stages: int = 0
    residual: np.ndarray = None

    @property
    def converged(self) -> np.ndarray:
        return self.status == "converged"

    @property
    def diverged(self) -> np.ndarray:
        return self.status == "diverged"


class StepOutcome(NamedTuple):
    """What a stage kernel returns for one RKC2 step of a batch (caller's order).

    ``y`` (b, P) the step's result; ``grad`` the kernel's representation of
    ∇L(y) (one row per instance: the dense gradient for :func:`dense_stages`,
    factors for :class:`~transfertheory.sim.deep_linear.LowRankStages`, or
    None), handed back to the kernel as ``G`` at the next step of an accepted
    instance (first same as last); ``evaluations`` instance-gradient
    evaluations spent; ``error`` the local error estimate in the kernel's
    norm (≤ 1: accept); ``loss`` and ``grad_norm`` (b,) at ``y``.
    """

    y: object
    grad: object
    evaluations: int
    error: object
    loss: object
    grad_norm: object


def _norm(x, xp):
    return xp.sqrt(xp.sum(x * x, axis=1))


def _error_norm(y, y_new, G, G_new, h, rtol, atol, work, xp):
    r"""RMS of the RKC2 local error estimate, est = 0.8(y − y_new) − 0.4h(∇L(y) + ∇L(y_new))
    (Sommeijer et al. Eq. 2.9), componentwise relative to atol + rtol·max(|y|, |y_new|)
    (``atol`` per instance, shape (b,)).

    Written in place into ``work`` (2, b, P), the dense kernel's free stage
    buffers. Non-finite estimates give +inf.
    """
    est, scale = work[0], work[1]
    xp.add(G, G_new, out=est)
    est *= (-0.5 * h)[:, None]
    est += y
    est -= y_new
    est *= 0.8
    xp.abs(y, out=scale)
    xp.maximum(scale, xp.abs(y_new), out=scale)
    scale *= rtol
    scale += atol[:, None]
    est /= scale
    err = xp.sqrt(xp.einsum("ij,ij->i", est, est) / est.shape[1])
    return xp.where(xp.isfinite(err), err, xp.asarray(np.inf, dtype=err.dtype))


@np.errstate(over="ignore", invalid="ignore", divide="ignore")
def integrate_gradient_flow(
    gradient,
    y0,
    *,
    rtol: float = 1e-5,
    atol=1e-12,
    gtol: float = 1e-8,
    max_time: float = 1e5,
    max_steps: int = 200_000,
    max_stages: int = 400,
    divergence_factor: float = 1e8,
    progress=None,
    stage_kernel=None,
    residual=None,
) -> FlowResult:
    r"""Integrate dy/dt = −∇L(y) for a batch of independent instances.

    Parameters
    ----------
    gradient : callable ``(y, rows) -> (grad, loss)``
        Gradient (b, P) and loss (b,) of the instances ``rows`` (a NumPy int
        array of indices into the batch) at states ``y`` (b, P).
    y0 : array (B, P)
        Initial states on the backend.
    rtol : float
        Relative local error tolerance of the RKC error estimate (RMS norm).
    atol : float or array (B,)
        Absolute local error tolerance, one per instance if an array (so that
        an instance's integration never depends on the rest of its batch).
    gtol : float
        An instance has converged when ‖∇L‖₂ ≤ gtol (and ``residual`` ≤ gtol).
    max_time, max_steps : float, int
        Per-instance budget of flow time and accepted steps.
    max_stages : int
        Cap on RKC stages per step (bounds h·ρ ≤ β(max_stages)).
    divergence_factor : float
        Loss above ``divergence_factor · max(1, L(y0))`` counts as divergence.

    Floating-point overflow inside a trial step is expected (an unstable trial is
    rejected and the step shrunk) and is not warned about; a non-finite accepted
    state is reported as ``diverged`` with a :class:`RuntimeWarning` and a hint.
    progress : callable or None
        Called as ``progress(done_fraction)`` after each step (e.g. tqdm).
    stage_kernel : callable or None
        Computes the RKC stages of one step (see :func:`dense_stages` for the
        contract). Default: dense stages on ``gradient``. A model whose
        gradients have structure supplies its own, e.g. the deep linear
        networks' rank-one layer gradients (:class:`~transfertheory.sim.deep_linear.LowRankStages`,
        built on :func:`rkc_butcher_rows`); step control, error estimate,
        spectral radius and statuses are the same for every kernel.
    residual : callable or None
        ``residual(y, rows) -> (b,)``, a second stationarity measure that must
        also be ≤ gtol for convergence, evaluated only where ‖∇L‖ ≤ gtol. It
        guards against saddles with a small gradient: for a deep linear net at
        W ≈ 0 (initialization scale α) ‖∇L‖ = O(α) while ‖∇_βL‖ = O(1).
        Its final value is reported in :attr:`FlowResult.residual`.
    """
    atol_host = np.broadcast_to(np.asarray(atol, dtype=float), (y0.shape[0],))
    for name, val in (("rtol", rtol), ("atol", atol_host.min(initial=1.0)), ("gtol", gtol), ("max_time", max_time)):
        if not (val > 0 and math.isfinite(val)):
            raise ValueError(f"{name} must be a finite number > 0, got {val}")
    if max_steps < 1 or max_stages < 2:
        raise ValueError("max_steps must be >= 1 and max_stages >= 2")
    xp = array_module_of(y0)
    B = y0.shape[0]
    y_out = y0.copy()
    t_out, steps_out = np.zeros(B), np.zeros(B, dtype=np.int64)
    gnorm_out, loss_out, resid_out = np.full(B, np.nan), np.full(B, np.nan), np.full(B, np.nan)
    status_out = np.full(B, "", dtype=object)
    tables = _tables(max_stages)
    beta_cap = tables.beta[-1]

    rows = np.arange(B)
    y = y0.copy()
    G, loss = gradient(y, rows)
    gnorm = _norm(G, xp)
    evals = B
    loss_ref = xp.maximum(loss, 1.0) * divergence_factor
    t = xp.zeros(B, dtype=y.dtype)
    steps = xp.zeros(B, dtype=xp.int64)
    kernel = dense_stages(gradient) if stage_kernel is None else stage_kernel
    estimate = getattr(kernel, "spectral_radius", None) or dense_spectral_radius(gradient)

    def radius(y, G, rows, state, iterations):
        """ρ(∇²L)·safety per instance (1 where the estimate is not a positive number), warm state, evaluations."""
        rho, state, n = estimate(y, G, rows, state, iterations, xp)
        return _SAFETY * xp.where(xp.isfinite(rho) & (rho > 0), rho, 1.0), state, n

    rho, eigvec, n = radius(y, G, rows, None, 8)
    evals += n
    G = None  # what the kernel carries from one step to the next (first same as last): none before the first step
    h = xp.minimum(0.5 / rho, xp.asarray(max_time, dtype=y.dtype))
    atol = xp.asarray(atol_host, dtype=y.dtype)
    since_rho = np.zeros(B, dtype=np.int64)  # per instance: no instance's steps depend on its batch
    rejected = 0
    s_max_used = 0

    def finish(mask_host, label):
        nonlocal y, G, gnorm, loss, loss_ref, t, steps, h, rho, eigvec, atol, rows, since_rho
        idx = np.flatnonzero(mask_host)
        if idx.size == 0:
            return
        out_rows = rows[idx]
        dev_idx = xp.asarray(idx)
        y_out[xp.asarray(out_rows)] = y[dev_idx]
        t_out[out_rows] = to_host(t[dev_idx])
        steps_out[out_rows] = to_host(steps[dev_idx])
        gnorm_out[out_rows] = to_host(gnorm[dev_idx])
        loss_out[out_rows] = to_host(loss[dev_idx])
        if residual is not None:
            resid_out[out_rows] = to_host(residual(y[dev_idx], out_rows))
        status_out[out_rows] = label
        keep = xp.asarray(np.flatnonzero(~mask_host))
        y, gnorm, loss, loss_ref, t, steps, h, rho, eigvec, atol = (
            a[keep] for a in (y, gnorm, loss, loss_ref, t, steps, h, rho, eigvec, atol)
        )
        G = None if G is None else G[keep]
        rows, since_rho = rows[~mask_host], since_rho[~mask_host]

    def classify():
        gn = to_host(gnorm)
        ls = to_host(loss)
        bad = ~np.isfinite(gn) | ~np.isfinite(ls) | (ls > to_host(loss_ref))
        finish(bad, "diverged")
        small = gn[~bad] <= gtol
        if residual is not None and small.any():  # a saddle (e.g. W = 0) has a small ‖∇L‖ but a large residual
            cand = np.flatnonzero(small)
            small[cand] = to_host(residual(y[xp.asarray(cand)], rows[cand])) <= gtol
        finish(small, "converged")
        finish(to_host(t) >= max_time * (1 - 1e-12), "max_time")
        finish(to_host(steps) >= max_steps, "max_steps")

    classify()
    while rows.size:
        b = rows.size
        h = xp.minimum(xp.minimum(h, max_time - t), beta_cap / rho)
        s_row = tables.stages(to_host(h * rho))
        s_max_used = max(s_max_used, int(s_row.max()))
        order = np.argsort(-s_row, kind="stable")  # kernels see stage j's instances as a prefix
        out = kernel(y, G, order, to_host(h), s_row, rows, tables.table(int(s_row.max())), (rtol, atol), xp)
        evals += out.evaluations
        err = out.error
        accept = err <= 1.0
        rejected_host = ~to_host(accept)
        rej = np.flatnonzero(rejected_host)
        y_new, G_new, loss_new, gnorm_new = out.y, out.grad, out.loss, out.grad_norm
        if rej.size:  # rejected instances keep their state
            dev_rej = xp.asarray(rej)
            y_new[dev_rej], loss_new[dev_rej], gnorm_new[dev_rej] = y[dev_rej], loss[dev_rej], gnorm[dev_rej]
            if G is None:  # nothing carried for the rejected rows (first step): the kernel recomputes
                G_new = None
            elif G_new is not None:
                G_new[dev_rej] = G[dev_rej]
        y, G, loss, gnorm = y_new, G_new, loss_new, gnorm_new
        t = t + xp.where(accept, h, 0.0)
        steps = steps + accept.astype(steps.dtype)
        rejected += int(rej.size)
        fac = xp.where(err > 0, 0.8 * err ** (-1.0 / 3.0), 10.0)
        h = h * xp.clip(fac, 0.1, 10.0)
        underflow = to_host(h < 1e-13 * xp.maximum(t, 1.0))
        since_rho += 1
        refresh = np.flatnonzero(rejected_host | (since_rho >= _RHO_REFRESH))
        if refresh.size:
            sub = xp.asarray(refresh)
            rho[sub], eigvec[sub], n = radius(y[sub], None if G is None else G[sub], rows[refresh], eigvec[sub], 3)
            evals += n
            since_rho[refresh] = 0
        if progress is not None:
            progress(1.0 - b / B)
        finish(underflow, "step_underflow")
        classify()
    if (status_out == "diverged").any():
        warnings.warn(
            f"{int((status_out == 'diverged').sum())} of {B} instances diverged (non-finite or exploding loss); "
            "hint: check the data scale and initialization, or tighten rtol.",
            RuntimeWarning,
            stacklevel=2,
        )
    return FlowResult(
        y=y_out, t=t_out, steps=steps_out, grad_norm=gnorm_out, loss=loss_out,
        status=status_out.astype(str), evaluations=evals, rejected=rejected, max_stages=s_max_used,
        residual=resid_out,
    )


def rkc_butcher_rows(coef, s_row):
    r"""Stage rows of the RKC2 Butcher tableau for a batch, one stage at a time.

    The recursion of :func:`dense_stages` is affine in the stage gradients, so
    Y_k = Y₀ + h Σ_{m<k} A_k[m] F(Y_m) with A₁ = μ̃₁e₀ and
    A_k = μ_k A_{k−1} + ν_k A_{k−2} + μ̃_k e_{k−1} + γ̃_k e₀, each instance
    with the coefficients of its own stage count. ``s_row`` must be sorted in
    decreasing order; yields ``(k, A_k)`` for k = 1 … max s, A_k a host array
    (#(s ≥ k), k): one row per instance still in stage k (a prefix of the
    batch). A kernel that stores the F(Y_m) in factored form evaluates any
    stage from these rows; the entries stay O(1) (Chebyshev recursion with
    w₀ ≈ 1).
    """
    mu, nu, mu_t, gam_t = coef
    if np.any(np.diff(s_row) > 0):
        raise ValueError("s_row must be sorted in decreasing order")
    active = np.searchsorted(-s_row, -np.arange(int(s_row[0]) + 1), side="right")  # active[k] = #(s ≥ k)
    prev2, prev1 = np.zeros((s_row.size, 0)), mu_t[s_row, 1][:, None]
    yield 1, prev1
    for k in range(2, int(s_row[0]) + 1):
        kb = active[k]
        s = s_row[:kb]
        cur = np.zeros((kb, k))
        cur[:, : k - 1] = mu[s, k][:, None] * prev1[:kb]
        cur[:, : k - 2] += nu[s, k][:, None] * prev2[:kb]
        cur[:, k - 1] += mu_t[s, k]
        cur[:, 0] += gam_t[s, k]
        prev2, prev1 = prev1, cur
        yield k, cur


# slots of the dense stage buffer: Y₀, ∇L(Y₀), three rotating stage vectors, ∇L(Y_{j−1})
_Y0, _F0, _ROT, _FJ = 0, 1, (2, 3, 4), 5


def dense_stages(gradient):
    """The default stage kernel: RKC2 stages on dense (b, P) states, any ``gradient``.

    Returns ``kernel(y, G, order, h, s_row, rows, coef, tol, xp) -> StepOutcome``,
    the contract of every stage kernel: ``y``, ``G`` (what the kernel returned
    as :attr:`StepOutcome.grad` for these states, or None at the first step),
    ``h``, ``s_row`` (host) and ``rows`` in the caller's
    order; ``order`` (host) sorts the batch by decreasing stage count, so
    that the instances still in stage j are a prefix; ``coef`` is the
    (μ, ν, μ̃, γ̃)[s, j] table and ``tol`` = (rtol, atol (b,)). With F = −∇L:
    Y₁ = Y₀ + μ̃₁hF(Y₀),
    Y_j = (1−μ_j−ν_j)Y₀ + μ_jY_{j−1} + ν_jY_{j−2} + μ̃_jhF(Y_{j−1}) + γ̃_jhF(Y₀)
    (Sommeijer et al. Eq. 2.4); the result is Y_{s_i}, so a batch costs
    Σ_i s_i gradient evaluations (the one at the result is reused by the next
    step), not B·max s_i. Each stage's five-term combination is one batched
    (b,1,6)@(b,6,P) product over the buffer (one pass over memory instead of
    nine). Error norm: componentwise, :func:`_error_norm`.
    """
    workspace = {}

    def kernel(y, G, order, h, s_row, rows, coef, tol, xp):
        mu, nu, mu_t, gam_t = coef
        b, P = y.shape
        h_s, s_s, rows_s = h[order], s_row[order], rows[order]
        buf = workspace.get("buf")
        if buf is None or buf.shape[0] < b or buf.shape[2] != P or buf.dtype != y.dtype:
            buf = workspace["buf"] = xp.zeros((b, 6, P), dtype=y.dtype)
        evals = b  # ∇L(y_new) at the end; one more per instance when nothing was carried (first step)
        if G is None:
            G, _ = gradient(y, rows)
            evals += b
        dev_order = xp.asarray(order)
        buf[:b, _Y0] = y[dev_order]
        buf[:b, _F0] = G[dev_order]
        prev2, prev1, free = _Y0, _ROT[0], _ROT[1]  # Y_{j−2} = Y₀ at j = 2
        buf[:b, prev1] = buf[:b, _Y0] - xp.asarray(mu_t[s_s, 1] * h_s)[:, None] * buf[:b, _F0]
        counts = np.append(np.bincount(s_s)[::-1].cumsum()[::-1], 0)  # counts[j] = #(s ≥ j)
        # stage-combination weights for every (stage, instance), one transfer to the device:
        # columns Y₀, ∇L(Y₀), Y_{j−1}, Y_{j−2}, ∇L(Y_{j−1}); rows past an instance's s are unused
        mu_, nu_, mu_t_, gam_t_ = mu[s_s], nu[s_s], mu_t[s_s], gam_t[s_s]  # (b, s_max + 1)
        weights = np.stack([1 - mu_ - nu_, -gam_t_ * h_s[:, None], mu_, nu_, -mu_t_ * h_s[:, None]], axis=-1)
        weights = xp.asarray(np.ascontiguousarray(weights.transpose(1, 0, 2)))  # (s_max + 1, b, 5)
        y_sorted = xp.empty_like(y)
        coeffs = xp.zeros((b, 1, 6), dtype=y.dtype)
        for j in range(2, int(s_s[0]) + 1):
            k = int(counts[j])
            evals += k
            g_j, _ = gradient(buf[:k, prev1], rows_s[:k])
            buf[:k, _FJ] = g_j
            w = weights[j, :k]
            c = coeffs[:k, 0]
            c[:] = 0.0
            c[:, _Y0] = w[:, 0]
            c[:, _F0] = w[:, 1]
            c[:, prev1] = w[:, 2]
            c[:, prev2] += w[:, 3]
            c[:, _FJ] = w[:, 4]
            buf[:k, free] = xp.matmul(coeffs[:k], buf[:k])[:, 0, :]
            done = slice(int(counts[j + 1]), k)  # rows whose last stage is j
            y_sorted[done] = buf[done, free]
            prev2, prev1 = prev1, free
            free = next(slot for slot in _ROT if slot not in (prev1, prev2))
        y_new = xp.empty_like(y)
        y_new[dev_order] = y_sorted
        G_new, loss_new = gradient(y_new, rows)
        err = _error_norm(y, y_new, G, G_new, xp.asarray(h, dtype=y.dtype), *tol, buf[:b, :2].transpose(1, 0, 2), xp)
        return StepOutcome(y_new, G_new, evals, err, loss_new, _norm(G_new, xp))

    return kernel


def dense_spectral_radius(gradient):
    """Default spectral-radius estimator: nonlinear power iteration (RKC's ``spcrad``).

    Returns ``estimate(y, G, rows, state, iterations, xp) -> (ρ, state, evaluations)``,
    the contract of every estimator (a stage kernel may provide its own as a
    ``spectral_radius`` attribute): ρ (b,) an estimate of ρ(∇²L) per instance,
    ``state`` a per-instance warm start (an array whose first axis is the
    batch, or None). Here differences of the gradient along a unit direction
    v, with a relative perturbation 10⁻⁷‖y‖, approximate the Hessian–vector
    product; v is the state. Every instance's estimate depends on that
    instance alone. ``iterations`` evaluations, one more when the gradient
    ``G`` at ``y`` is not given.
    """

    def estimate(y, G, rows, state, iterations, xp):
        b, P = y.shape
        evals = iterations * b
        if G is None:
            G, _ = gradient(y, rows)
            evals += b
        if state is None:  # start from the gradient direction, nudged off it by a fixed row-independent vector
            nudge = xp.asarray(np.cos(np.arange(P) * 0.7548776662), dtype=y.dtype)[None, :]
            v = G / xp.maximum(_norm(G, xp), 1e-300)[:, None] + 1e-2 * nudge / math.sqrt(P)
        else:
            v = state
        v = v / xp.maximum(_norm(v, xp), 1e-300)[:, None]
        delta = (1e-7 * xp.maximum(_norm(y, xp), 1e-8))[:, None]
        rho = xp.zeros(b, dtype=y.dtype)
        for _ in range(iterations):
            g1, _ = gradient(y + delta * v, rows)
            w = (g1 - G) / delta
            rho = _norm(w, xp)
            v = w / xp.maximum(rho, 1e-300)[:, None]
        return rho, v, evals

    return estimate
