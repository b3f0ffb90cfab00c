r"""Stage kernels: the model-specific part of an RKC2 step.

The integrator (:func:`~transfertheory.sim.integrator.integrate_gradient_flow`)
owns step-size control, stage counts, statuses and accounting; a *stage
kernel* computes the stages of one step for a batch and returns the result,
its local error in the kernel's norm and the gradient representation it wants
back at the next step (first same as last). It also estimates the spectral
radius ρ(∇²L) that sets the stage count. :class:`StageKernel` is the contract, with two optional hooks
(:class:`UnreachableCertificate`, :class:`FusedDescent`);
:class:`DenseStages` is the kernel for any gradient callable (dense states,
componentwise error norm), and a model with structured gradients supplies its
own (the deep linear networks' :class:`~transfertheory.sim.deep_linear.LowRankStages`).
Arrays live on any backend; the module is inferred from the states.

The tables of the damped second-order Runge–Kutta–Chebyshev method (RKC2) the stages apply: Sommeijer, Shampine &
Verwer (1998), *J. Comput. Appl. Math.* 88:315: an s-stage explicit method whose stability polynomial P_s(z) = a_s +
b_sT_s(w₀ + w₁z) (T_s the Chebyshev polynomial of the first kind, w₀ = 1 + ε/s²) is bounded by one on a real
interval [−β(s), 0] of length ∝ s², so a stiff gradient flow needs only ~√κ gradient evaluations. The pure functions
of s: the recursion coefficients (:func:`rkc_coefficients`), β(s) (:func:`rkc_stability_bound`), the stage-count
rule and the coefficient table shared by all integrations (:class:`RKCTables`), and the Butcher rows that factored
stage kernels use, arranged by stage for every stage count at once (:func:`rkc_butcher_rows`).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import NamedTuple, Protocol, runtime_checkable

import numpy as np

from ...backend import get_backend

__all__ = ["StepRequest", "StepOutcome", "StageKernel", "UnreachableCertificate", "FusedDescent", "DenseStages",
           "dense_spectral_radius", "row_norms", "EPS_DAMPING", "rkc_coefficients",
           "rkc_stability_bound", "RKCTables", "tables", "rkc_butcher_rows"]


@dataclass(frozen=True)
class StepRequest:
    """One RKC2 step of a batch of b instances, in the caller's order.

    ``y`` (b, P) the states; ``carried`` what the kernel returned as
    :attr:`StepOutcome.grad` for these states at the previous step (None when
    nothing is carried, e.g. at the first step); ``h``, ``stages`` (s per
    instance) and ``rows`` (the instances' indices in the whole batch, for
    the gradient callable) are host arrays (b,); ``order`` (host) sorts the
    batch by decreasing stage count, so the instances still in stage j are a
    prefix; ``coefficients`` the host table [μ, ν, μ̃, γ̃][s, j]
    (:meth:`RKCTables.table`); the error
    tolerance is ``atol`` (b,) on the backend plus ``rtol`` times the state's
    scale.
    """

    y: object
    carried: object
    order: np.ndarray
    h: np.ndarray
    stages: np.ndarray
    rows: np.ndarray
    coefficients: np.ndarray
    rtol: float
    atol: object


class StepOutcome(NamedTuple):
    """What a stage kernel returns for one RKC2 step of a batch (caller's order).

    ``y`` (b, P) the step's result; ``grad`` the kernel's representation of
    ∇L(y) (one row per instance: the dense gradient for :class:`DenseStages`,
    factors for :class:`~transfertheory.sim.deep_linear.LowRankStages`, or
    None), handed back as :attr:`StepRequest.carried` at the next step of an
    accepted instance; ``evaluations`` instance-gradient evaluations spent;
    ``error`` (b,) the local error estimate in the kernel's norm (≤ 1:
    accept; +inf where not finite); ``loss`` and ``grad_norm`` (b,) at ``y``.
    ``order`` (host, optional, plain (b, P) states only): the outcome's row i is
    the request's instance ``order[i]`` (e.g. :attr:`StepRequest.order`); the
    integrator then keeps its working set in that order, so a kernel that sorts
    its batch spares the copies of the states that the sort and its inverse
    cost. None: the request's order.
    """

    y: object
    grad: object
    evaluations: int
    error: object
    loss: object
    grad_norm: object
    order: object = None


class StageKernel(Protocol):
    """The contract of a stage kernel (see the module docstring). Optional hooks: :class:`UnreachableCertificate`
    and :class:`FusedDescent`; the integration uses a hook when the kernel has the method."""

    def __call__(self, step: StepRequest) -> StepOutcome:
        """Compute the RKC2 stages of one step (Sommeijer et al. 1998, Eq. 2.4) and its error estimate."""

    def spectral_radius(self, y, carried, rows, state, iterations: int):
        """Estimate ρ(∇²L) at states ``y`` (b, P) of instances ``rows``.

        ``carried`` is the kernel's gradient representation at ``y`` or None;
        ``state`` a per-instance warm start from the previous call (an array
        whose first axis is the batch) or None. Returns ``(ρ (b,), state,
        evaluations)``, the evaluations spent equally on every instance; each
        instance's estimate must depend on that instance alone.
        """


@runtime_checkable
class UnreachableCertificate(Protocol):
    """Optional hook of a stage kernel: a proof that an instance cannot converge in the time left to it."""

    def unreachable(self, y, rows, t_remaining, gtol: float) -> np.ndarray:
        """Host bool (b,): True for the instances ``rows`` at ``y`` that provably cannot reach ‖∇L‖ ≤ gtol within
        the flow time ``t_remaining`` (b,) left to them. The integration checks it every
        :data:`~.flow.VERDICT_EVERY` accepted steps (every step of :class:`~.solvers.GradientDescent`) and stops
        those instances with status ``unreachable`` (never counted as converged). It must be conservative: an
        instance that would converge in time must never be flagged."""


@runtime_checkable
class FusedDescent(Protocol):
    """Optional hook of a stage kernel: the whole step of :class:`~.solvers.GradientDescent` in one call."""

    def descend(self, y, G, h, rows):
        """y −= h·G in place (h (b,) per instance), then the gradient at the new y written over G (which the
        integration no longer needs), its loss and its squared row norms (b,): returns ``(G, L, ‖∇L‖²)``. It must
        give what the separate update, the gradient callable and the squared norms give (e.g. the TDR networks'
        cache-blocked step, :class:`~transfertheory.sim.tdr_kernel.TwoLayerStages`)."""


def row_norms(x):
    """Euclidean norm of every row of a (b, P) array."""
    xp = get_backend(x)
    return xp.sqrt(xp.sum(x * x, axis=1))


def row_squares(x):
    """Σⱼ xᵢⱼ² of every row of a (b, P) array, each row's sum independent of the rest of the batch.

    NumPy's einsum sums the rows of a 2-D operand whose rows are longer than its buffer (``numpy.getbufsize()``
    elements) in buffer-sized pieces, except for a lone row, so that the same row summed in batches of different
    sizes would round differently; such rows are summed one at a time (the lone row's sum).
    """
    xp = get_backend(x)
    if xp is np and x.shape[1] > np.getbufsize():
        return np.array([np.einsum("j,j->", row, row) for row in x], dtype=x.dtype)
    return xp.einsum("ij,ij->i", x, x)


def _error_norm(y, y_new, G, G_new, h, rtol, atol, work):
    r"""RMS of the RKC2 local error estimate, est = 0.8(y − y_new) − 0.4h(∇L(y) + ∇L(y_new))
    (Sommeijer et al. Eq. 2.9), componentwise relative to atol + rtol·max(|y|, |y_new|)
    (``atol`` per instance, shape (b,)).

    Written in place into ``work`` (2, b, P), the dense kernel's free stage
    buffers. Non-finite estimates give +inf.
    """
    xp = get_backend(y)
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
    err = xp.sqrt(row_squares(est) / est.shape[1])
    return xp.where(xp.isfinite(err), err, xp.asarray(np.inf, dtype=err.dtype))


# slots of the dense stage buffer: Y₀, ∇L(Y₀), three rotating stage vectors, ∇L(Y_{j−1})
_Y0, _F0, _ROT, _FJ = 0, 1, (2, 3, 4), 5


class DenseStages:
    """The default stage kernel: RKC2 stages on dense (b, P) states, for any ``gradient``.

    ``gradient(y, rows) -> (∇L (b, P), L (b,))``. With F = −∇L:
    Y₁ = Y₀ + μ̃₁hF(Y₀),
    Y_j = (1−μ_j−ν_j)Y₀ + μ_jY_{j−1} + ν_jY_{j−2} + μ̃_jhF(Y_{j−1}) + γ̃_jhF(Y₀)
    (Sommeijer et al. Eq. 2.4); the result is Y_{s_i}, so a batch costs
    Σ_i s_i gradient evaluations (the one at the result is carried to the
    next step), not B·max s_i. Each stage's five-term combination is one
    batched (b,1,6)@(b,6,P) product over a stage buffer (one pass over memory
    instead of nine). Error norm: componentwise RMS. Spectral radius:
    :func:`dense_spectral_radius`.
    """

    def __init__(self, gradient):
        self.gradient = gradient
        self.spectral_radius = dense_spectral_radius(gradient)
        self._buffer = None

    def _stage_buffer(self, y):
        b, P = y.shape
        buf = self._buffer
        if buf is None or buf.shape[0] < b or buf.shape[2] != P or buf.dtype != y.dtype:
            buf = self._buffer = get_backend(y).zeros((b, 6, P), dtype=y.dtype)
        return buf

    def __call__(self, step: StepRequest) -> StepOutcome:
        gradient, y, order = self.gradient, step.y, step.order
        xp = get_backend(y)
        mu, nu, mu_t, gam_t = step.coefficients
        b = y.shape[0]
        h_s, s_s, rows_s = step.h[order], step.stages[order], step.rows[order]
        buf = self._stage_buffer(y)
        evals = b  # ∇L(y_new) at the end; one more per instance when nothing was carried
        G = step.carried
        if G is None:
            G, _ = gradient(y, step.rows)
            evals += b
        dev_order = xp.asarray(order)
        buf[:b, _Y0] = y[dev_order]
        buf[:b, _F0] = G[dev_order]
        prev2, prev1, free = _Y0, _ROT[0], _ROT[1]  # Y_{j−2} = Y₀ at j = 2
        buf[:b, prev1] = buf[:b, _Y0] - xp.asarray(mu_t[s_s, 1] * h_s)[:, None] * buf[:b, _F0]
        counts = np.append(np.bincount(s_s)[::-1].cumsum()[::-1], 0)  # counts[j] = #(s ≥ j)
        # stage-combination weights for every (stage, instance), one transfer to the device:
        # columns Y₀, ∇L(Y₀), Y_{j−1}, Y_{j−2}, ∇L(Y_{j−1}); rows past an instance's s are unused. Only the
        # step's own s_max + 1 columns of the shared table, which grows to the largest s ever used.
        used = int(s_s[0]) + 1
        mu_, nu_, mu_t_, gam_t_ = mu[s_s, :used], nu[s_s, :used], mu_t[s_s, :used], gam_t[s_s, :used]
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
        G_new, loss_new = gradient(y_new, step.rows)
        err = _error_norm(y, y_new, G, G_new, xp.asarray(step.h, dtype=y.dtype), step.rtol, step.atol,
                          buf[:b, :2].transpose(1, 0, 2))
        return StepOutcome(y_new, G_new, evals, err, loss_new, row_norms(G_new))


def dense_spectral_radius(gradient):
    """Default spectral-radius estimator: nonlinear power iteration (RKC's ``spcrad``).

    Returns ``estimate(y, carried, rows, state, iterations) -> (ρ, state, evaluations)``
    (the :meth:`StageKernel.spectral_radius` contract). Differences of the
    gradient along a unit direction v, with a relative perturbation 10⁻⁷‖y‖,
    approximate the Hessian–vector product; v is the state. ``iterations``
    evaluations, one more when the gradient ``carried`` at ``y`` is not given.
    """

    def estimate(y, carried, rows, state, iterations):
        xp = get_backend(y)
        b, P = y.shape
        evals = iterations * b
        G = carried
        if G is None:
            G, _ = gradient(y, rows)
            evals += b
        if state is None:  # start from the gradient direction, nudged off it by a fixed row-independent vector
            nudge = xp.asarray(np.cos(np.arange(P) * 0.7548776662), dtype=y.dtype)[None, :]
            v = G / xp.maximum(row_norms(G), 1e-300)[:, None] + 1e-2 * nudge / math.sqrt(P)
        else:
            v = state
        v = v / xp.maximum(row_norms(v), 1e-300)[:, None]
        delta = (1e-7 * xp.maximum(row_norms(y), 1e-8))[:, None]
        rho = xp.zeros(b, dtype=y.dtype)
        for _ in range(iterations):
            g1, _ = gradient(y + delta * v, rows)
            w = (g1 - G) / delta
            rho = row_norms(w)
            v = w / xp.maximum(rho, 1e-300)[:, None]
        return rho, v, evals

    return estimate


# RKC damping ε (w₀ = 1 + ε/s²). Sommeijer et al. use ε = 2/13 (β(s) ≈ 0.653s², |P_s| ≤ 0.95 on the
# stiff part of the interval), tuned for transients. A gradient flow is integrated to its steady state:
# ε = 2 keeps β(s) ≈ 0.537s² but damps every stiff mode by |P_s| ≤ 0.59 per step, so the residue of
# the local errors in stiff modes decays instead of stalling ‖∇L‖ near gtol (docs/simulator.md)
EPS_DAMPING = 2.0


def rkc_coefficients(s: int):
    """Coefficients (μ, ν, μ̃, γ̃) of the s-stage damped RKC2 method, s ≥ 2.

    Chebyshev recursion of Sommeijer et al. (1998), Eqs. 2.4–2.8, with
    w₀ = 1 + ε/s², w₁ = T_s'(w₀)/T_s''(w₀), b_j = T_j''(w₀)/T_j'(w₀)²
    (b₀ = b₁ = b₂). Returns four arrays of length s + 1 (index j).
    """
    if s < 2:
        raise ValueError(f"s must be an integer >= 2, got {s}")
    return tuple(_coefficient_rows(np.array([s]))[:, 0])


def _chebyshev(s: np.ndarray):
    """w₀ = 1 + ε/s² (n,) and T_j(w₀), T_j'(w₀), T_j''(w₀) (n, s_max + 1) of the ascending stage counts ``s``,
    row i zero past j = s[i]: the Chebyshev recursion run once for all counts, step j advancing the counts s ≥ j (a
    suffix) with the floating-point operations of one s's recursion, in its order."""
    n, top = s.size, int(s[-1])
    w0 = 1.0 + EPS_DAMPING / s**2
    T, dT, ddT = np.zeros((3, top + 1, n))  # [j, i]: each step of the recursion reads and writes rows
    T[0], T[1], dT[1] = 1.0, w0, 1.0
    for j in range(2, top + 1):
        a = int(np.searchsorted(s, j))  # the counts s ≥ j
        w = w0[a:]
        T[j, a:] = 2 * w * T[j - 1, a:] - T[j - 2, a:]
        dT[j, a:] = 2 * T[j - 1, a:] + 2 * w * dT[j - 1, a:] - dT[j - 2, a:]
        ddT[j, a:] = 4 * dT[j - 1, a:] + 2 * w * ddT[j - 1, a:] - ddT[j - 2, a:]
    return w0, T.T, dT.T, ddT.T


def _coefficient_rows(stage_counts: np.ndarray) -> np.ndarray:
    """[μ, ν, μ̃, γ̃] of every stage count in ``stage_counts`` (ascending integers ≥ 2): array (4, n, s_max + 1),
    row i zero past j = stage_counts[i].

    The recursion of :func:`rkc_coefficients` run once for all stage counts: step j advances the counts s ≥ j
    (a suffix of the sorted counts) with the same floating-point operations in the same order as the recursion
    of one s, so every row is bitwise that of its own s (tested), at O(s_max) vector operations instead of
    O(s_max²) Python steps for a table of every s ≤ s_max.
    """
    s = np.asarray(stage_counts)
    n, top = s.size, int(s[-1])
    w0, T, dT, ddT = _chebyshev(s)
    rows = np.arange(n)
    w1 = (dT[rows, s] / ddT[rows, s])[:, None]
    inside = np.arange(top + 1) <= s[:, None]  # j ≤ s
    b = np.ones((n, top + 1))  # past s: 1, unused (keeps the quotients below finite)
    np.divide(ddT[:, 2:], dT[:, 2:] ** 2, out=b[:, 2:], where=inside[:, 2:])
    b[:, 0] = b[:, 1] = b[:, 2]
    out = np.zeros((4, n, top + 1))
    mu, nu, mu_t, gam_t = out
    mu_t[:, 1] = b[:, 1] * w1[:, 0]
    mu[:, 2:] = 2 * b[:, 2:] * w0[:, None] / b[:, 1:-1]
    nu[:, 2:] = -b[:, 2:] / b[:, :-2]
    mu_t[:, 2:] = 2 * b[:, 2:] * w1 / b[:, 1:-1]
    gam_t[:, 2:] = -(1 - b[:, 1:-1] * T[:, 1:-1]) * mu_t[:, 2:]
    out[:, ~inside] = 0.0
    return out


def rkc_stability_bound(s):
    """Length β(s) of the real stability interval [−β(s), 0] of s-stage RKC2.

    β(s) = (1 + w₀)·T_s''(w₀)/T_s'(w₀) (≈ 0.537 s² for ε = 2, 0.653 s² for ε = 2/13).
    ``s`` an integer ≥ 2 (returns a float) or an array of them (one recursion for all).
    """
    s_arr = np.asarray(s)
    order = np.argsort(s_arr, axis=None, kind="stable")
    counts = s_arr.reshape(-1)[order]
    w0, _, dT, ddT = _chebyshev(counts)
    rows = np.arange(counts.size)
    beta = np.empty(counts.size)
    beta[order] = (1 + w0) * ddT[rows, counts] / dT[rows, counts]
    return float(beta[0]) if s_arr.ndim == 0 else beta.reshape(s_arr.shape)


class RKCTables:
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
            first = max(2, old)
            tab[:, first:size, :size] = _coefficient_rows(np.arange(first, size))
            self.coeffs = tab
        return self.coeffs


@functools.lru_cache(maxsize=4)
def tables(max_stages: int) -> RKCTables:
    """One table per stage cap, shared by every integration (they are pure functions of s)."""
    return RKCTables(max_stages)


def rkc_butcher_rows(coefficients: np.ndarray, s_max: int) -> list:
    r"""Row k of the Butcher matrix of every stage count s ≥ k, for k = 0 … ``s_max``: a list R of host arrays
    with R[k][s − k] = A_s[k, :k] (R[0] is empty), from the coefficient table [μ, ν, μ̃, γ̃][s, j] of
    :meth:`RKCTables.table` (at least ``s_max`` + 1 rows).

    The recursion of :class:`~transfertheory.sim.integrator.DenseStages` is affine in the stage gradients, so the
    stages of an s-stage step are Y_k = Y₀ + h Σ_{m<k} A_s[k, m] F(Y_m) with A_s[1] = μ̃₁e₀ and
    A_s[k] = μ_k A_s[k−1] + ν_k A_s[k−2] + μ̃_k e_{k−1} + γ̃_k e₀ (row 0 is zero, A_s[k, m] = 0 for m ≥ k); the
    entries stay O(1) (Chebyshev recursion with w₀ ≈ 1). That recursion is run here for every s at once, with the
    operations of one s's in their order, so the rows are bitwise those of each s alone (tested). A kernel that
    stores the F(Y_m) in factored form and whose batch mixes stage counts reads the rows of stage k of all its
    instances with one gather (Σ_k (s_max − k + 1)·k ≈ s_max³/6 numbers).
    """
    mu, nu, mu_t, gam_t = coefficients
    rows = [np.zeros((s_max + 1, 0)), mu_t[1: s_max + 1, 1:2].copy()]  # R[1][s − 1] = μ̃₁(s)
    for k in range(2, s_max + 1):
        s = np.arange(k, s_max + 1)
        new = np.zeros((s.size, k))
        new[:, : k - 1] = mu[s, k, None] * rows[k - 1][1:]
        new[:, : k - 2] += nu[s, k, None] * rows[k - 2][2:, : k - 2]
        new[:, k - 1] += mu_t[s, k]
        new[:, 0] += gam_t[s, k]
        rows.append(new)
    return rows
