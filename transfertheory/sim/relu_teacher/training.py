r"""FaF §4 training: source pretraining (:func:`pretrain_source`), and target training on n samples — scratch
training, linear transfer and fine-tuning.

Source pretraining: gradient flow of students on the exact population loss against the source teacher.

L = ½ E_x (f − f_s*)², x ~ N(0, I_d), is exact through the arc-cosine kernel
(:func:`transfertheory.theory.relu.population_loss_and_gradients`; O((m + m*)²d) per gradient, no data).
The flow runs on the sphere with time rescaled by m and FaF's stopping rule (:func:`.network.sphere_flow`);
FaF App. D.2: rows uniform on the sphere, output weights 1e−7, 1e5 iterations at learning rate 0.01·m
(flow time 2e3 in the package's units: FaF's losses have no ½) or until the loss reaches 1e−6.

Target training. The target loss is the empirical loss of FaF's deep-linear setting (FaF Eq. 5) for the ReLU network:

    L̂ = (1/2n) Σₖ (f(xₖ) − yₖ)²,   f(x) = (1/m) Σᵢ cᵢ σ(wᵢᵀx)   (FaF Eq. 18),

on noiseless samples yₖ = f_t*(xₖ) (FaF App. D.2: σ = 0). With the features Φ = σ(XWᵀ) (n, m) and the
residual r = Φc/m − y, its gradients are

    ∂L̂/∂c = Φᵀr/(nm),   ∇_{wᵢ}L̂ = (cᵢ/(nm)) Σₖ rₖ 1[wᵢᵀxₖ > 0] xₖ,

evaluated for a batch of instances by batched matrix products ((b, n, m) features, no autograd).
Methods:

* **scratch** — gradient flow from FaF's initialization (:func:`.network.paper_init`);
* **fine-tuning** — the same flow from the pretrained student;
* **linear transfer** — the output weights retrained on the frozen pretrained features by the same
  time-rescaled gradient flow dc/dt = −m∂L̂/∂c from the pretrained c, solved exactly
  (:func:`linear_transfer_flow`: the loss is quadratic in c, so every component along a right singular
  vector of Φ relaxes exponentially), with FaF's stopping rule; and its t → ∞ limit
  from c = 0, minimum-norm least squares (:func:`linear_transfer`). After pretraining the features are
  nearly collinear (neurons gather on the teacher's directions), so ΦᵀΦ has tiny eigenvalues: the
  minimum-norm solution amplifies the sampling noise along them by 1/sₖ² (its risk spikes near n ≈ m and
  stays large well beyond), while the flow leaves them at their pretrained values — FaF's procedure
  (gradient descent for a finite time) and the experiment's ``linear`` method.

The flows run on the sphere with time rescaled by m and FaF's stopping rule (loss ≤ 1e−6, or flow time
1e3, half the paper's 1e5 iterations at learning rate 0.01·m, which are t = 2e3 since its losses have no ½):
:func:`.network.sphere_flow`. The paper's gradient descent itself: :mod:`transfertheory.sim.gradient_descent`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..._memory import FLOAT_BYTES, check_memory, guarded_entry_point
from ..._validation import as_generator
from ...backend import get_backend, to_device, to_host
from ...theory.relu import population_loss, population_loss_and_gradients
from ..convergence import Convergence, ReportsConvergence
from ..integrator import ErrorController, FlowSettings, flow_state_bytes
from .network import FlowReport, M, features, paper_init, sphere_flow

__all__ = ["PretrainResult", "pretrain_source", "pretraining_memory", "PRETRAIN_FLOW", "training_memory",
           "empirical_loss_and_gradients", "train_on_samples", "scratch_training", "linear_transfer",
           "linear_transfer_flow", "LinearFlow", "TARGET_FLOW"]

#: the integrator settings of target training: FaF's budget (flow time 1e3) and stopping rule (loss ≤ 1e-6),
#: ‖m∇L̂‖ ≤ 1e-8, and rtol 3e-2: the empirical loss has kinks (a ReLU switching at a sample), which limit the
#: steps by accuracy. Against rtol = 1e-3 at FaF Fig. 4's quick size (d = 8, m = 16, n = 16–64) and the
#: finite-n claim's (d = 16, m = 32, n = 36–160), 12 flows per n, the mean population risk per n moves by
#: ≤ 0.7 % at rtol 3e-2 and ≤ 2.3 % at 1e-2 (single flows by up to 16 % and 25 %: the flow's path through the
#: kinks), with 10× and 4× fewer steps than rtol = 1e-3 (docs/relu.md)
TARGET_FLOW = FlowSettings(controller=ErrorController(rtol=3e-2), gtol=1e-8, loss_tol=1e-6, max_time=1e3)


def empirical_loss_and_gradients(W, c, X, y, sizes=None):
    r"""(L̂, Riemannian ∇_W L̂, ∂L̂/∂c) of L̂ = (1/2n)Σₖ(f(xₖ) − yₖ)² for W (b, m, d) on the sphere, X (b, n, d), y (b, n).

    ∇_W is projected on the tangent space of each row, (I − wᵢwᵢᵀ)∇_{wᵢ}L̂ (rows of unit norm).
    ``sizes`` (b,), optional: instance i has ``sizes[i]`` samples, the first rows of X[i]; the rest are zero rows
    (x = 0, y = 0), whose features σ(0) = 0 and residual 0 add nothing, so L̂ and its gradients divide by
    ``sizes[i]`` instead of n — instances of different n in one batch.
    """
    xp = get_backend(W, X)
    n, m = X.shape[-2], W.shape[-2]
    if sizes is not None:
        n = xp.asarray(sizes, dtype=X.dtype)[:, None]  # (b, 1): broadcasts against the per-instance sums
    # one (b, n, m) array, reused in place: the pre-activations, then the features σ(XWᵀ), then the active residuals
    # 1[wᵢᵀxₖ > 0]·rₖ (σ(u) > 0 ⟺ u > 0); a fresh array of this size per evaluation costs page faults that took
    # 3/4 of the time at b = 12, n = 256, m = 32
    phi = X @ W.swapaxes(-1, -2)
    xp.maximum(phi, 0.0, out=phi)
    residual = (phi @ c[..., None])[..., 0]  # (b, n), then in place: Φc/m − y
    residual /= m
    residual -= y
    loss = 0.5 * (residual * residual).sum(axis=-1) / (n if sizes is None else n[:, 0])
    nm = n * m
    grad_c = (phi.swapaxes(-1, -2) @ residual[..., None])[..., 0] / nm
    active_residual = xp.multiply(phi > 0, residual[..., None], out=phi)
    grad_W = c[..., None] * (active_residual.swapaxes(-1, -2) @ X)
    grad_W /= nm if sizes is None else nm[..., None]
    grad_W -= (grad_W * W).sum(axis=-1, keepdims=True) * W
    return loss, grad_W, grad_c


def training_memory(networks, m, d, n) -> float:
    """Peak bytes of training ``networks`` networks of width m on n samples in dimension d: the flow of the
    m(d + 1) parameters (:func:`~..integrator.flow_state_bytes`), the samples X (n, d)
    and six (n, m) arrays (pre-activations, features, active residuals, and linear transfer's SVD)."""
    return flow_state_bytes(networks, m * (d + 1)) + FLOAT_BYTES * networks * (n * d + 6 * n * m)


def _check_training_memory(what, networks, m, d, n, max_memory):
    check_memory(training_memory(networks, m, d, n), what=what, max_memory=max_memory,
                 params={"networks": networks, "m": m, "d": d, "n": n})


@guarded_entry_point
def train_on_samples(W0, c0, X, y, *, flow: FlowSettings = TARGET_FLOW, atol=1e-5, max_memory=None, sizes=None,
                     **settings) -> FlowReport:
    """Gradient flow on L̂ of networks (W0 (B, m, d) on the sphere, c0 (B, m)) on their samples X (B, n, d), y (B, n).

    ``flow``: the integrator's settings, :data:`TARGET_FLOW` unless given; keyword ``settings`` (``max_time``,
    ``gtol``, ``loss_tol``, ``rtol``, …) override it. Stops per instance at ‖m∇L̂‖ ≤ gtol, L̂ ≤ ``loss_tol``
    (FaF's rule) or flow time ``max_time``; ``FlowReport.loss`` is the final L̂. ``sizes`` (B,), optional: the
    sample count of each instance, its data the first ``sizes[i]`` rows of X[i] and zero rows after them
    (:func:`empirical_loss_and_gradients`), so that flows of several n share one batch; every instance has its own
    step control, so its flow is that of a batch of its n alone up to rounding. ``atol``: the integrator's
    absolute local error tolerance. ``max_memory``: the memory guard's limit (bytes or ``"64G"``,
    :mod:`transfertheory._memory`); a flow whose peak (:func:`training_memory`) exceeds it is refused.
    """
    flow = flow.updated(**settings)
    if sizes is not None:
        sizes = np.asarray(sizes)
        if sizes.shape != (X.shape[0],) or not np.all((sizes >= 1) & (sizes <= X.shape[-2]) & (sizes % 1 == 0)):
            raise ValueError(f"sizes must hold one integer in [1, {X.shape[-2]}] (the rows of X) per instance "
                             f"({X.shape[0]}), got {sizes!r}")
    _check_training_memory("train_on_samples", W0.shape[0], W0.shape[-2], W0.shape[-1], X.shape[-2], max_memory)

    return sphere_flow(_PaddedSamples(X, y, sizes, W0.shape[-2]).loss_and_gradients, W0, c0, flow, atol=atol)


#: below this many instances the samples are gathered at every evaluation (cheaper than comparing the rows)
_GATHER_DIRECTLY = 16
#: instances of several n are evaluated block by block on their own n when the padding to the largest n would cost
#: more than this many flops of the (n, m) products per instance and evaluation (the mean over the distinct n): a
#: block's ≈ 20 array operations cost ≈ 20–40 µs on the 2-core CPU, the products run at 10–20 Gflop/s, and a batch
#: holds tens to thousands of instances; FaF Fig. 4's quick size (m = 16, d = 8, n = 16–64) pads, its mid and paper
#: sizes evaluate by blocks (docs/benchmarks.md#relu-chunks)
_PADDING_FLOPS = 1e5


class _PaddedSamples:
    """The loss and gradients of a flow's instances ``rows`` on their samples (X, y, ``sizes``: the first sizes[i]
    rows of X[i] and zero rows after them), at the cost of their own n rather than the batch's largest.

    Gathering: an RKC step evaluates its stages on prefixes of one ordering of the working set (the instances still
    in stage j, :class:`~..integrator.kernels.DenseStages`), so the samples are gathered once per ordering and the
    prefixes are views of them; the whole batch in its own order is the arrays themselves. Padding: the zero rows
    add nothing to L̂ and its gradients. Where the padding to the batch's largest n costs more arithmetic than
    the blocks' operations (:data:`_PADDING_FLOPS`, judged from the distinct n, m and d only) the instances are
    evaluated in blocks of equal n, each on its own n (sorted by n first when they do not come in such blocks),
    else all padded to the largest n. Either way an instance's arithmetic does not depend on the rest of the batch
    (the products are per instance), so a chunk of a run's draws flows bit for bit as in the whole run. (This
    replaced a rule that chose per evaluation from the instances then evaluated, which a chunk could choose
    differently; docs/benchmarks.md#relu-chunks.)
    """

    def __init__(self, X, y, sizes, m):
        self.X, self.y, self.xp = X, y, get_backend(X)
        self.sizes = None if sizes is None else np.asarray(sizes)
        distinct = np.unique(self.sizes) if sizes is not None else None
        #: whether to evaluate by blocks of equal n (else every instance padded to the batch's largest n): decided
        #: from the distinct n, m and d alone, so that any chunk of the batch's draws decides the same
        self.blocks = sizes is not None and 4 * m * X.shape[-1] * (distinct.max() - distinct.mean()) > _PADDING_FLOPS
        self.divisors = None if sizes is None else self.xp.asarray(sizes, dtype=X.dtype)  # of L̂, on the device
        self.rows = self.gathered = None

    def loss_and_gradients(self, W, c, rows):
        if self.sizes is None:
            return empirical_loss_and_gradients(W, c, *self._gathered(rows)[:2])
        # every instance on its own n, or every one padded to the batch's largest, whatever else is being evaluated:
        # its sums then do not depend on the batch (the products are per instance), so a chunk of a run's instances
        # flows as in the whole run, bit for bit
        X, y, divisors = self._gathered(rows)
        if not self.blocks:
            return empirical_loss_and_gradients(W, c, X, y, divisors)
        sizes = self.sizes[rows]
        order = None
        if np.any(np.diff(sizes) < 0):  # not in blocks of equal n: evaluate sorted, return in the caller's order
            order = np.argsort(sizes, kind="stable")
            index = self.xp.asarray(order)
            sizes, W, c, X, y, divisors = (sizes[order], W[index], c[index], X[index], y[index], divisors[index])
        blocks = np.flatnonzero(np.diff(sizes)) + 1
        parts = [empirical_loss_and_gradients(W[a:b], c[a:b], X[a:b, :sizes[a]], y[a:b, :sizes[a]], divisors[a:b])
                 for a, b in zip(np.r_[0, blocks], np.r_[blocks, len(rows)])]
        out = parts[0] if len(parts) == 1 else tuple(self.xp.concatenate(arrays) for arrays in zip(*parts))
        if order is None:
            return out
        inverse = self.xp.asarray(np.argsort(order))
        return tuple(a[inverse] for a in out)

    def _gathered(self, rows):
        """X[rows], y[rows] and the divisors of the instances ``rows`` (padded to the batch's largest n)."""
        k, cached = len(rows), self.rows
        divisors = self.divisors
        if k < _GATHER_DIRECTLY:
            index = self.xp.asarray(rows)
            return self.X[index], self.y[index], None if divisors is None else divisors[index]
        if cached is None or k > len(cached) or not np.array_equal(cached[:k], rows):
            self.rows = np.array(rows)
            if k == self.X.shape[0] and np.array_equal(rows, np.arange(k)):
                self.gathered = (self.X, self.y, divisors)
            else:
                index = self.xp.asarray(rows)
                self.gathered = (self.X[index], self.y[index], None if divisors is None else divisors[index])
        X, y, divisors = self.gathered
        return X[:k], y[:k], None if divisors is None else divisors[:k]


@guarded_entry_point
def scratch_training(X, y, m, rng, **options) -> FlowReport:
    """Students of width m trained on (X, y) from FaF's initialization (rows on the sphere, c = 1e−7) by
    :func:`train_on_samples` with ``options``; refused before drawing them when the flow does not fit in memory
    (``options["max_memory"]``, :func:`training_memory`)."""
    m = M.scalar(m)
    _check_training_memory("scratch_training", X.shape[0], m, X.shape[-1], X.shape[-2], options.get("max_memory"))
    W0, c0 = (to_device(a, X) for a in paper_init(m, X.shape[-1], rng, batch=(X.shape[0],)))
    return train_on_samples(W0, c0, X, y, **options)


def linear_transfer(W, X, y):
    """Output weights retrained on frozen features: minimum-norm least squares of y on σ(XWᵀ)/m (per instance).

    Returns c (B, m) with f(x) = (1/m) Σᵢ cᵢ σ(wᵢᵀx); its population risk is exact through
    :func:`transfertheory.theory.relu.population_loss`. As n → ∞ the fit becomes the L² projection of
    the target on span{σ(wᵢᵀx)}, so 2·L → ‖P⊥ f_t*‖² (FaF Eq. 21).
    """
    xp = get_backend(W)
    phi = features(W, X) / W.shape[-2]  # (B, n, m)
    return xp.stack([xp.linalg.lstsq(F, t, rcond=None)[0] for F, t in zip(phi, y)])


@dataclass(frozen=True)
class LinearFlow(ReportsConvergence):
    """Output weights c (B, m) after the exact gradient flow on them, its loss and its convergence record (numpy
    arrays (B,)): status ``loss_tol`` (L̂ − L̂_min ≤ loss_tol; FaF's rule where L̂_min = 0) or ``max_time``,
    ``grad_norm`` ‖m ∂L̂/∂c‖ at ``t_final``, ``steps`` 0 (a closed-form solve)."""

    c: object
    loss: np.ndarray
    convergence: Convergence
    #: (B, m) minimum-norm least squares on the same features from the same SVD (:func:`linear_transfer`'s limit;
    #: None unless asked for)
    minnorm: object = None


_BISECTIONS = 60  # on log t: the stopping time to a relative 2^(−60)·log range


def linear_transfer_flow(W, c0, X, y, *, flow: FlowSettings = TARGET_FLOW, minnorm=False, **settings) -> LinearFlow:
    r"""Exact time-rescaled gradient flow of the output weights on L̂ = (1/2n)‖Φc − y‖², from c0 (per instance).

    Φ = σ(XWᵀ)/m (B, n, m), so f = Φc. The flow dc/dt = −m∂L̂/∂c = −(m/n)Φᵀr, r = Φc − y, is linear: with
    the thin SVD Φ = Q diag(s) Vᵀ, the residual's components ρₖ = Qₖᵀr decay as e^{−λₖt}, λₖ = m sₖ²/n, the
    part of r outside range(Φ) stays, and c(t) = c0 − V diag((1 − e^{−λₖt})/sₖ) ρ(0). The flow stops at
    the first t with L̂(t) − L̂_min ≤ ``loss_tol`` (bisection on log t, L̂(t) is decreasing) or at ``max_time``,
    the budget and rule of ``flow`` (:data:`TARGET_FLOW` unless given; keyword ``settings`` override it; its
    tolerances of a numerical flow are not used).
    Singular values sₖ ≤ eps·max(n, m)·s_max (the cutoff of :func:`linear_transfer`'s least squares) are rounding
    noise of Φ and count as 0: the flow does not move along them (after pretraining, rows that gathered on one
    teacher neuron make such directions, and fitting them would multiply rounding errors by 1/sₖ).
    L̂_min = ½‖r outside range(Φ)‖²/n is the least-squares minimum, the flow's limit: 0 when Φ has rank n
    (n ≤ m, generically), so the rule is then FaF's loss ≤ ``loss_tol``; for n > m the loss cannot fall below
    L̂_min ≈ ½‖P⊥ f_t*‖²(1 − m/n) ≫ 1e−6, and the rule asks for the part of the loss the flow can remove. It
    bounds the gradient: ‖m∇L̂‖² = (m/n)² Σₖ sₖ²ρₖ²e^{−2λₖt} ≤ 2(m²/n) s_max² (L̂ − L̂_min). The solution is
    closed-form, so its cost does not depend on ``max_time``. As t → ∞ from c0 = 0 this is
    :func:`linear_transfer`; ``minnorm`` True also returns that limit, Σₖ Vₖ(Qₖᵀy)/sₖ over the resolved sₖ, from
    the same SVD (``LinearFlow.minnorm``: one SVD for both methods, the larger part of their cost at FaF's size;
    equal to :func:`linear_transfer`'s LAPACK least squares to rounding, docs/relu.md).
    """
    flow = flow.updated(**settings)
    max_time, loss_tol = flow.max_time, flow.loss_tol
    xp = get_backend(W, X)
    n, m = X.shape[-2], W.shape[-2]
    phi = features(W, X) / m  # f = Φc with Φ (B, n, m) including the 1/m
    Q, s, Vt = xp.linalg.svd(phi, full_matrices=False)  # Φ = Q diag(s) Vᵀ
    residual0 = (phi @ c0[..., None])[..., 0] - y
    rho = (xp.swapaxes(Q, -1, -2) @ residual0[..., None])[..., 0]  # residual along Qₖ
    # singular values at the rounding level of Φ (lstsq's cutoff) are null directions: the flow along them is noise
    resolved = s > np.finfo(float).eps * max(n, m) * s.max(axis=-1, keepdims=True)
    rate = to_host(xp.where(resolved, s * s, 0.0)) * m / n  # H = mΦᵀΦ/n has eigenvalues m sₖ²/n
    rho_h = to_host(xp.where(resolved, rho, 0.0))

    def excess_loss_at(t):  # L̂(t) − L̂_min
        decay = np.exp(-rate * t[:, None])
        return 0.5 * ((decay * rho_h) ** 2).sum(-1) / n

    t = np.full(rate.shape[0], max_time)
    stopped = excess_loss_at(t) <= loss_tol
    # from a time at which no mode has relaxed (λ_max t ≤ 1e−6) to the budget
    earliest = np.minimum(np.log(max_time) - 60.0, np.log(1e-6 / np.maximum(rate.max(-1), np.finfo(float).tiny)))
    low, high = earliest, np.full_like(t, np.log(max_time))
    for _ in range(_BISECTIONS):
        mid = 0.5 * (low + high)
        below = excess_loss_at(np.exp(mid)) <= loss_tol
        high, low = np.where(below, mid, high), np.where(below, low, mid)
    t = np.where(stopped, np.exp(high), max_time)
    decay = to_device(np.exp(-rate * t[:, None]), xp)
    # c(t) − c0 = −V diag((1 − e^{−λt})/sₖ) ρ: moves the residual along Qₖ from ρₖ to e^{−λt}ρₖ
    shift = xp.where(resolved, (1.0 - decay) * rho / xp.where(resolved, s, 1.0), 0.0)
    c = c0 - (xp.swapaxes(Vt, -1, -2) @ shift[..., None])[..., 0]
    residual = (phi @ c[..., None])[..., 0] - y
    grad = m * (xp.swapaxes(phi, -1, -2) @ residual[..., None])[..., 0] / n
    if minnorm:
        along = (xp.swapaxes(Q, -1, -2) @ y[..., None])[..., 0]  # y along Qₖ
        minnorm = (xp.swapaxes(Vt, -1, -2) @ xp.where(resolved, along / xp.where(resolved, s, 1.0), 0.0)[..., None])
        minnorm = minnorm[..., 0]
    return LinearFlow(c=c, loss=to_host(0.5 * (residual * residual).mean(-1)),
                      convergence=Convergence(stopped, np.where(stopped, "loss_tol", "max_time"), t, 0,
                                              to_host(xp.linalg.norm(grad, axis=-1))),
                      minnorm=minnorm if minnorm is not False else None)


#: the integrator settings of :func:`pretrain_source`: flow time 1e3 (half FaF's budget of 1e5 iterations at rate
#: 0.01·m, which is t = 2e3: FaF's losses have no ½) and the stopping rule loss ≤ 1e-6 (of the package's loss), ‖m∇L‖ ≤
#: 1e-8, and rtol 1e-3 (at d = 20, m = 200, μ = 0.5 it gives the losses and kernel distances of an rtol = 1e-5, atol =
#: 1e-12 run to 1e-3 relative, with 4× fewer evaluations)
PRETRAIN_FLOW = FlowSettings(controller=ErrorController(rtol=1e-3), gtol=1e-8, loss_tol=1e-6, max_time=1e3)


@dataclass(frozen=True)
class PretrainResult(FlowReport):
    """Pretrained students (a :class:`~.network.FlowReport`, ``loss`` the exact population loss) and their
    population loss at initialization."""

    initial_loss: np.ndarray


def pretraining_memory(teachers, m, m_star, d) -> float:
    """Peak bytes of pretraining one student of width m per teacher of width m* in dimension d: the flow of the
    m(d + 1) parameters (:func:`~..integrator.flow_state_bytes`), and the exact loss's arc-cosine Grams of the
    m + m* units take six (m + m*)² arrays (norms, cosines, kernel, its gradient terms)."""
    units = m + m_star
    return flow_state_bytes(teachers, m * (d + 1)) + FLOAT_BYTES * teachers * 6 * units * units


#: normal draws skipped per call of the generator by :func:`_skip_normals` (8 MiB of floats)
_SKIP_CHUNK = 2**20


def _skip_normals(rng, count: int) -> None:
    """Advance ``rng`` past ``count`` standard normal draws, in chunks of :data:`_SKIP_CHUNK` (bounded memory).

    A Generator's normals are drawn one after another (the ziggurat: a varying number of raw bits each), so the
    stream after ``count`` of them is the same in chunks as in one call, and there is no shortcut: the time grows
    with ``count``."""
    buffer = np.empty(min(count, _SKIP_CHUNK))
    for start in range(0, count, _SKIP_CHUNK):
        rng.standard_normal(out=buffer[:min(_SKIP_CHUNK, count - start)])


@guarded_entry_point
def pretrain_source(W_star, c_star, m, rng, *, flow: FlowSettings = PRETRAIN_FLOW, atol=1e-6, max_memory=None,
                    first=0, **settings):
    """Students (B, m) from FaF's initialization trained on the exact population loss against teachers (B, m*, d).

    ``flow``: the integrator's settings, :data:`PRETRAIN_FLOW` unless given; keyword ``settings`` (``max_time``,
    ``gtol``, ``loss_tol``, ``rtol``, …) override it. Stops per instance at ‖m∇L‖ ≤ gtol (status ``converged``),
    loss ≤ ``loss_tol`` (``loss_tol``, FaF's rule) or t = ``max_time`` (flow time; the paper's iterations ×
    0.02, :mod:`transfertheory.sim.gradient_descent`). ``atol``: the integrator's absolute local error tolerance.
    ``first``: the initializations are those of students ``first`` … ``first + B − 1`` of one draw from ``rng`` (the
    students of a chunk of a larger batch start where they would in the whole batch; the first·m·d normal draws
    before them are skipped in bounded memory, at a time in proportion to ``first``).
    ``max_memory``: the memory guard's limit (bytes or ``"64G"``, :mod:`transfertheory._memory`); pretraining
    whose peak (:func:`pretraining_memory`, O(B·(m + m*)²)) exceeds it is refused before drawing the students.
    """
    flow = flow.updated(**settings)
    xp = get_backend(W_star)
    B, m_star, d = W_star.shape
    m = M.scalar(m)
    check_memory(pretraining_memory(B, m, m_star, d), what="pretrain_source", xp=xp, max_memory=max_memory,
                 params={"teachers": B, "m": m, "m_star": m_star, "d": d})
    rng = as_generator(rng)
    _skip_normals(rng, first * m * d)  # the students before ``first`` of the one draw, not kept
    W0, c0 = (to_device(a, xp) for a in paper_init(m, d, rng, batch=(B,)))

    def loss_and_gradients(W, c, rows):
        g = population_loss_and_gradients(W, c, W_star[rows], c_star[rows])
        return g.loss, g.grad_W_sphere, g.grad_c

    report = sphere_flow(loss_and_gradients, W0, c0, flow, atol=atol)
    initial = np.asarray(to_host(population_loss(W0, c0, W_star, c_star)))
    loss = np.asarray(to_host(population_loss(report.W, report.c, W_star, c_star)))
    return PretrainResult(**{**report.__dict__, "loss": loss}, initial_loss=initial)
