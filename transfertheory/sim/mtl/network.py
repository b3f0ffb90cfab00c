r"""MTL §3–4: random finite-width deep ReLU networks, batched — forward pass, backpropagation, empirical kernels —
and their MTL and ANIL training.

Model (MTL §4.3, App. A.3; the network of :mod:`transfertheory.theory.ntk`): ``depth`` hidden ReLU layers of
width h in the NTK parameterization, z¹ = (w_std/√d)W¹x + b_std·b¹, z^{l+1} = (w_std/√h)W^{l+1}a^l + b_std·b^{l+1},
a^l = relu(z^l), and a readout ("head") f(x) = (w_std/√h)wᵀa^L + b_std·b₀; every weight and bias N(0, 1).
A batch of R networks is a (R, P) array of the body parameters (hidden layers, packed W¹, b¹, W², b², …) and
heads (R, h + 1) = (w, b₀). No automatic differentiation: backpropagation is explicit per layer,
δ^l = ∂/∂z^l, δ^{l−1} = (w_std/√h)(δ^l W^l) ⊙ 1{z^{l−1} > 0}, and a dense layer's parameter gradient is
c_l δ^lᵀa^{l−1} (weights, c_l its w_std/√fan_in) and b_std Σ δ^l (bias).

Empirical kernels of one network (MTL App. B.3 Eqs. 55–56): the readout (head) Gram
K̂(x, x′) = c²a^L(x)·a^L(x′) + b_std², and the NTK
Θ̂(x, x′) = K̂(x, x′) + Σ_l (c_l²(δ^l(x)·δ^l(x′))(a^{l−1}(x)·a^{l−1}(x′)) + b_std²δ^l(x)·δ^l(x′)) — the body's
share Θ̂ − K̂ summed layer by layer from the backpropagated δ^l of the scalar output, O(depth·n²·h) per
network once the δ^l are known, no per-parameter Jacobian. As h → ∞, K̂ → K (the NNGP kernel) and Θ̂ → Θ with
O(h^{−1/2}) fluctuations (claims ``mtl.ntk.*``).

Training: multi-task learning (MTL) and ANIL training of these networks by gradient flow, and their test-time head
adaptation (MTL Eqs. 2–9, 14).

Networks (above): a shared body and heads (w, b₀). Every head starts from the *same* random draw w₀
(MTL's N task heads, ANIL's head and the test head): Lemma 3's kernels assume it — with independent head draws
the body gradients of different heads are uncorrelated and Φ_MTL would lose its off-diagonal blocks (the sum
Σ_k w_k w′_k/h → 0). Outputs are centered at initialization, f̃(x; θ) = f(x; θ) − f(x; θ₀): the exact form of the
paper's assumption f_θ₀ ≈ 0 (App. B.3.1), with unchanged gradients and kernels.

* **MTL** (Eq. 2, squared loss): L = ½Σᵢ‖f̃(Xᵢ; body, headᵢ) − Yᵢ‖², trained over the body and the N heads.
* **ANIL** (Eqs. 3–4): the inner loop adapts the head on task i by gradient flow for time λτ (the λ → 0 limit of
  τ steps of rate λ, as Lemma 1's e^{−λτK}): the head's features are linear, so the adapted outputs are exactly
  Fᵢ = Yᵢ − Eᵢ(Yᵢ − f̃(Xᵢ)), Eᵢ = e^{−λτK̂ᵢ}, K̂ᵢ = c²AᵢAᵢᵀ + b_std² the head Gram of the last hidden layer Aᵢ.
  L = ½Σᵢ‖Eᵢuᵢ‖², uᵢ = f̃(Xᵢ) − Yᵢ, trained over the body and the head (second order: the gradient includes
  the derivative of Eᵢ through K̂ᵢ — Daleckii–Krein, K̂ = VΛVᵀ, ∂⟨r, E u⟩/∂K̂ = V(Γ ∘ Vᵀruᵀ V)Vᵀ with
  Γ_ab = (e^{−λτλ_a} − e^{−λτλ_b})/(λ_a − λ_b), Γ_aa = −λτe^{−λτλ_a}; it is O(h^{−1/2}) in the NTK regime).
* **Test** (Eqs. 6–9): a head on the trained body is adapted on the support set (X′, Y′) for time λτ̂:
  F = f̃(X) + K̂(X, X′)T̂(X′)(Y′ − f̃(X′)), T̂ = K̂(X′,X′)⁻¹(I − e^{−λτ̂K̂(X′,X′)}). The test head starts from
  ``"initial"``: w₀ (the shared initial draw); ``"trained"``: ANIL's outer-loop-trained head (MAML-style
  adaptation from the meta-learned head); ``"fresh"``: an independent draw (centered by its own initial output).

Gradient flow dθ/dt = −∇L (MTL Eq. 14 with η absorbed into t) runs to ‖∇L‖ ≤ gtol through the package's
integrator (:func:`~transfertheory.sim.integrator.integrate_gradient_flow`) with analytic gradients and the
Gauss–Newton spectral radius λ_max(JJᵀ) of the empirical tangent kernel (a finite-difference power iteration
would see the ReLU kinks). Batched over networks; the array module follows the inputs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..._memory import FLOAT_BYTES, check_memory, guarded_entry_point
from ..._validation import Interval, as_generator, one_of
from ...backend import get_backend, stacked_eigh, stacked_eigvalsh, to_host
from ...params import D, WIDTH, Param
from ...theory.mtl import LAM_TAU, ReluNetwork, adaptation_operator, symmetric_exp
from ..convergence import Convergence, ReportsConvergence
from ..integrator import DenseStages, ErrorController, FlowSettings, flow_state_bytes, integrate_gradient_flow

__all__ = ["WIDTH", "NETWORKS", "NetworkShape", "Forward", "init_parameters", "forward", "backpropagate", "body_gram",
           "empirical_kernels", "random_network_kernels", "METHODS", "TEST_HEADS", "TaskData", "TrainedNetworks",
           "train", "training_flow", "adapted_predictions", "TRAINING_FLOW", "GTOL_SCALE"]

NETWORKS = Param("networks", Interval(1, np.inf, "left"), integer=True, description="random networks per width")


@dataclass(frozen=True)
class NetworkShape:
    """Architecture of the finite network: input dimension ``d``, ``width`` h and the :class:`ReluNetwork`
    (depth, w_std, b_std) whose infinite-width kernels it approximates."""

    d: int
    width: int
    network: ReluNetwork

    def __post_init__(self):
        D.scalar(self.d)
        WIDTH.scalar(self.width)
        if self.network.depth < 1:
            raise ValueError(f"depth must be >= 1 for a finite-width network, got {self.network.depth}")

    @property
    def depth(self) -> int:
        return self.network.depth

    @property
    def fan_ins(self) -> tuple:
        return tuple([self.d] + [self.width] * (self.depth - 1))

    @property
    def body_size(self) -> int:
        """Parameters of the hidden layers (weights and biases)."""
        return sum(self.width * (fan + 1) for fan in self.fan_ins)

    @property
    def head_size(self) -> int:
        """Parameters of one head: h readout weights and a bias."""
        return self.width + 1

    @property
    def readout_scale(self) -> float:
        """c = w_std/√(fan-in of the head)."""
        return self.network.w_std / math.sqrt(self.width)

    def layers(self, body):
        """[(W (R, h, fan_in), b (R, h), c)] per hidden layer: views into the packed body (R, P_body)."""
        out, start, h = [], 0, self.width
        for fan in self.fan_ins:
            w = body[:, start:start + h * fan].reshape(body.shape[0], h, fan)
            b = body[:, start + h * fan:start + h * (fan + 1)]
            out.append((w, b, self.network.w_std / math.sqrt(fan)))
            start += h * (fan + 1)
        return out


def init_parameters(shape: NetworkShape, networks: int, rng) -> tuple:
    """(body (R, P_body), head (R, h + 1)) of ``networks`` random networks, all entries N(0, 1), on the host, drawn
    from ``rng`` (an integer seed ≥ 0, a numpy Generator or a SeedSequence)."""
    networks, rng = NETWORKS.scalar(networks), as_generator(rng)
    return rng.standard_normal((networks, shape.body_size)), rng.standard_normal((networks, shape.head_size))


@dataclass(frozen=True)
class Forward:
    """The forward pass of R networks on n inputs: ``activations`` [x, a¹, …, a^L] ((n, d) then (R, n, h)) and
    the ReLU ``masks`` 1{z^l > 0} (R, n, h)."""

    activations: list
    masks: list

    @property
    def features(self):
        """a^L (R, n, h): the last hidden layer, the head's input."""
        return self.activations[-1]


def forward(shape: NetworkShape, body, x) -> Forward:
    """The hidden layers of every network of ``body`` (R, P_body) on the rows of ``x`` (n, d)."""
    xp = get_backend(body, x)
    acts, masks, a, b_std = [x], [], x, shape.network.b_std
    for w, b, c in shape.layers(body):
        z = (c * a) @ w.transpose(0, 2, 1)  # the scale on the smaller factor; the inputs (n, d) broadcast over R
        if b_std:
            z += b_std * b[:, None, :]
        masks.append(z > 0)
        a = xp.maximum(z, 0.0, out=z)
        acts.append(a)
    return Forward(acts, masks)


def outputs(shape: NetworkShape, features, head):
    """f = c·a^L w + b_std·b₀ per network: features (R, n, h), head (R, h + 1) → (R, n); or stacks of k heads,
    features (R, k, n, h) and heads (R, k, h + 1) → (R, k, n)."""
    return shape.readout_scale * (features @ head[..., :-1, None])[..., 0] + shape.network.b_std * head[..., -1:]


def _deltas(shape: NetworkShape, body, fwd: Forward, top, overwrite=False):
    """[δ¹, …, δ^L] (each (R, n, h)) backpropagated from δ^L = ``top`` ⊙ 1{z^L > 0}; ``top`` = ∂/∂a^L (δ^L
    written over it when ``overwrite``)."""
    layers = shape.layers(body)
    delta = get_backend(top).multiply(top, fwd.masks[-1], out=top) if overwrite else top * fwd.masks[-1]
    deltas = [delta]
    for layer in range(shape.depth - 1, 0, -1):
        w, _, c = layers[layer]
        delta = c * (delta @ w) * fwd.masks[layer - 1]
        deltas.append(delta)
    return deltas[::-1]


def backpropagate(shape: NetworkShape, body, fwd: Forward, feature_cotangent, out=None, overwrite=False):
    """Gradient (R, P_body) of Σ ⟨feature_cotangent, a^L⟩ with respect to the body parameters, written into
    ``out`` (a (R, P_body) array or view, e.g. the body's columns of a whole gradient) when given;
    ``overwrite``: the cotangent may be overwritten (spares a copy)."""
    xp = get_backend(body)
    grad = xp.empty(body.shape, dtype=body.dtype) if out is None else out
    start, b_std = 0, shape.network.b_std
    for (w, _, c), delta, a in zip(shape.layers(body), _deltas(shape, body, fwd, feature_cotangent, overwrite),
                                  fwd.activations):
        size = w.shape[1] * w.shape[2]
        weights = delta.transpose(0, 2, 1) @ (c * a)  # (R, h, n) @ ((R,) n, fan_in): the scale on the smaller factor
        grad[:, start:start + size] = weights.reshape(body.shape[0], size)
        grad[:, start + size:start + size + w.shape[1]] = b_std * delta.sum(axis=1) if b_std else 0.0
        start += size + w.shape[1]
    return grad


def body_gram(shape: NetworkShape, body, fwd: Forward, top, fwd_right=None, top_right=None):
    """Σ_l ⟨∂f/∂θ_l(x), ∂f′/∂θ_l(x′)⟩ over the hidden layers (R, n, m): f's ∂/∂a^L is ``top`` (R, n, h) on
    ``fwd``'s inputs, f′'s is ``top_right`` on ``fwd_right``'s (default: the same)."""
    left = _deltas(shape, body, fwd, top)
    right = left if fwd_right is None else _deltas(shape, body, fwd_right, top_right)
    acts_right = fwd.activations if fwd_right is None else fwd_right.activations
    gram = 0.0
    for (_, _, c), dl, dr, al, ar in zip(shape.layers(body), left, right, fwd.activations, acts_right):
        dd = dl @ dr.transpose(0, 2, 1)
        aa = al @ ar.T if al.ndim == 2 else al @ ar.transpose(0, 2, 1)
        gram = gram + (c**2 * aa + shape.network.b_std**2) * dd
    return gram


def empirical_kernels(shape: NetworkShape, body, head, x, y=None):
    """(K̂, Θ̂) of every network (R, n, m) on the rows of ``x`` and ``y`` (default ``x``) (module docstring)."""
    fx = forward(shape, body, x)
    fy = fx if y is None else forward(shape, body, y)
    c, b_var = shape.readout_scale, shape.network.b_std**2
    readout = c**2 * (fx.features @ fy.features.transpose(0, 2, 1)) + b_var
    top = c * head[:, None, :-1]
    ntk = readout + body_gram(shape, body, fx, top, None if y is None else fy, None if y is None else top)
    return readout, ntk


def random_network_kernels(network: ReluNetwork, x, width, networks, rng, chunk=16, max_memory=None):
    """(K̂, Θ̂) (R, n, n) of ``networks`` random networks of width ``width`` on ``x`` (host NumPy), drawn in
    chunks of ``chunk`` networks from ``rng`` (the memory of a chunk is ~chunk·depth·h² numbers). Refused (memory
    guard, :mod:`transfertheory._memory`) when a chunk's bodies (twice: the draw and the gradients), its
    activations, masks and deltas (four (n, h) arrays per layer), its Grams and the two (R, n, n) results exceed
    ``max_memory`` (bytes or ``"64G"``; None: ``TRANSFERTHEORY_MAX_MEMORY``, else the memory available)."""
    x = np.asarray(x, dtype=float)
    shape = NetworkShape(x.shape[1], WIDTH.scalar(width), network)
    networks, rng = NETWORKS.scalar(networks), as_generator(rng)
    n, batch = x.shape[0], min(chunk, networks)
    check_memory(FLOAT_BYTES * (batch * (2 * shape.body_size + 4 * shape.depth * n * shape.width + 3 * n * n)
                                + 2 * networks * n * n), what="random_network_kernels", max_memory=max_memory,
                 params={"width": shape.width, "depth": shape.depth, "networks": networks, "len(x)": n})
    parts = []
    for start in range(0, networks, chunk):
        body, head = init_parameters(shape, min(chunk, networks - start), rng)
        parts.append(empirical_kernels(shape, body, head, x))
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


METHODS = ("mtl", "anil")
TEST_HEADS = ("initial", "trained", "fresh")
#: the integrator settings of MTL and ANIL training; :func:`training_flow` sets its gtol from the labels
TRAINING_FLOW = FlowSettings(controller=ErrorController(rtol=1e-4), max_time=1e6, max_steps=100_000)
#: the convergence threshold relative to the labels: gtol = GTOL_SCALE·‖𝒴‖ unless given
GTOL_SCALE = 1e-5


def _single_output(labels, sizes, name):
    """The labels of point sets of the given sizes as one host vector; a ValueError naming ``name`` unless every
    array is (n,) or (n, 1) with n its set's size (the networks have one output)."""
    arrays = [np.asarray(a, dtype=float) for a in labels]
    if len(arrays) != len(sizes):
        raise ValueError(f"{name} must hold one label array per task ({len(sizes)}), got {len(arrays)}")
    for i, (a, n) in enumerate(zip(arrays, sizes)):
        if a.shape not in ((n,), (n, 1)):
            raise ValueError(f"{name}[{i}] must have shape ({n},) or ({n}, 1) (one output per point), got {a.shape}")
    return np.concatenate([a.reshape(-1) for a in arrays])


@dataclass(frozen=True)
class TaskData:
    """Training tasks on the networks' backend: ``x`` (Nn, d) stacked inputs, ``y`` (Nn,) labels, ``task`` (Nn,)
    host task index of every point, ``slices`` the host slices of the tasks."""

    x: object
    y: object
    task: np.ndarray
    slices: tuple

    @classmethod
    def from_tasks(cls, tasks, labels, xp):
        sizes = [len(t) for t in tasks]
        starts = np.cumsum([0] + sizes)
        return cls(xp.asarray(np.vstack(tasks), dtype=float), xp.asarray(_single_output(labels, sizes, "labels")),
                   np.repeat(np.arange(len(tasks)), sizes), tuple(slice(a, b) for a, b in zip(starts[:-1], starts[1:])))


def _exp_and_divided_differences(k, s):
    """Eigen-decomposition of the batched symmetric k (…, n, n): (μ, V, e^{−sμ}, Γ) with Γ the divided differences
    of e^{−s·} at the eigenvalues μ (module docstring)."""
    xp = get_backend(k)
    bad = ~xp.isfinite(k).all(axis=(-1, -2))  # a diverging trial step: NaN results, rejected by the integrator
    k = xp.where(bad[..., None, None], xp.eye(k.shape[-1]), k)
    mu, v = stacked_eigh((k + k.swapaxes(-1, -2)) / 2)
    mu = xp.where(bad[..., None], xp.nan, mu)
    decay = xp.exp(-s * mu)
    gap = mu[..., :, None] - mu[..., None, :]
    small = xp.abs(s * gap) < 1e-8
    ratio = xp.where(small, -s, xp.expm1(-s * gap) / xp.where(small, 1.0, gap))
    return mu, v, decay, decay[..., None, :] * ratio  # (e^{−sμ_a} − e^{−sμ_b})/(μ_a − μ_b) = e^{−sμ_b}·expm1(−sΔ)/Δ


def _head_gram(shape, a, b=None):
    c = shape.readout_scale
    return c**2 * (a @ (a if b is None else b).swapaxes(-1, -2)) + shape.network.b_std**2


class _Objective:
    """Loss, gradient and Gauss–Newton spectral radius of MTL or ANIL on ``data`` for states (b, P)."""

    def __init__(self, method, shape: NetworkShape, data: TaskData, lam_tau, offset):
        self.method, self.shape, self.data, self.lam_tau, self.offset = method, shape, data, lam_tau, offset
        self.n_heads = len(data.slices) if method == "mtl" else 1
        xp = get_backend(offset)
        # (Nn, Nn): whether two points share a head (on the device, once)
        self.same_head = xp.asarray((data.task[:, None] == data.task[None, :]).astype(float))
        # [(slice of the points, number of tasks)]: runs of consecutive tasks of one size (one run if all equal)
        sizes = [sl.stop - sl.start for sl in data.slices]
        starts = [i for i in range(len(sizes)) if i == 0 or sizes[i] != sizes[i - 1]] + [len(sizes)]
        self.equal_size_runs = [(slice(data.slices[i].start, data.slices[j - 1].stop), j - i)
                                for i, j in zip(starts[:-1], starts[1:])]
        # [(slice of the points, slice of the heads, number of heads)]: MTL's heads i… on a run of tasks i… of one
        # size, ANIL's one head on all points
        self.head_runs = ([(s, slice(i, i + n), n) for (s, n), i in zip(self.equal_size_runs, starts)]
                          if method == "mtl" else [(slice(0, len(data.task)), slice(0, 1), 1)])

    def split(self, state):
        pb, hs = self.shape.body_size, self.shape.head_size
        return state[:, :pb], state[:, pb:].reshape(state.shape[0], self.n_heads, hs)

    def point_heads(self, heads):
        return heads[:, self.data.task, :] if self.method == "mtl" else heads[:, [0] * len(self.data.task), :]

    def head_stacks(self, features, heads):
        """[(point slice, head slice, features (R, k, n, h), heads (R, k, h + 1))] over :attr:`head_runs`: the k
        heads of a run and the features of their points, stacked (views)."""
        b = features.shape[0]
        return [(s, hs, features[:, s].reshape(b, k, -1, features.shape[-1]), heads[:, hs])
                for s, hs, k in self.head_runs]

    def residuals(self, state, rows):
        """(body, heads, forward pass, residuals u = f̃ − y (R, Nn)) at the states (R, P)."""
        xp = get_backend(state)
        body, heads = self.split(state)
        fwd = forward(self.shape, body, self.data.x)
        f = xp.empty((state.shape[0], len(self.data.task)), dtype=state.dtype)
        for s, _, a, w in self.head_stacks(fwd.features, heads):
            f[:, s] = outputs(self.shape, a, w).reshape(state.shape[0], -1)
        f -= self.offset[rows]
        f -= self.data.y[None, :]
        return body, heads, fwd, f

    def __call__(self, state, rows):
        """The integrator's gradient callable: (∇L (b, P), L (b,))."""
        xp = get_backend(state)
        body, heads, fwd, u = self.residuals(state, rows)
        c, b_std, pb = self.shape.readout_scale, self.shape.network.b_std, self.shape.body_size
        out_cot, feat_cot, loss = u, None, 0.5 * (u**2).sum(axis=1)
        if self.method == "anil" and self.lam_tau > 0:
            out_cot, feat_cot, loss = self._anil_cotangents(fwd.features, u)
        k_derivative = feat_cot is not None  # ANIL's K̂-derivative's cotangent on the features, added to in place
        if not k_derivative:
            feat_cot = xp.empty_like(fwd.features)
        grad = xp.empty_like(state)
        grad_heads = grad[:, pb:].reshape(heads.shape)
        for s, hs, a, w in self.head_stacks(fwd.features, heads):
            cot, part = out_cot[:, s].reshape(a.shape[:-1]), c * w[..., None, :-1]
            target = feat_cot[:, s].reshape(a.shape)  # a view: ∂/∂a^L of the run's points
            if k_derivative:
                target += cot[..., None] * part  # the readout's share
            else:
                xp.multiply(cot[..., None], part, out=target)
            grad_heads[:, hs, :-1] = c * (cot[..., None, :] @ a)[..., 0, :]
            grad_heads[:, hs, -1] = b_std * cot.sum(axis=-1)
        backpropagate(self.shape, body, fwd, feat_cot, out=grad[:, :pb], overwrite=True)
        return grad, loss

    def _anil_cotangents(self, features, u):
        """ANIL's output cotangent Eᵢ²uᵢ, the K̂-derivative's cotangent on the features and the loss ½Σ‖Eᵢuᵢ‖²,
        the tasks of one size at a time as one stack (R, tasks, nᵢ, ·)."""
        xp = get_backend(u)
        out_cot, feat_extra, loss = xp.empty_like(u), xp.empty_like(features), 0.0
        c2, b = self.shape.readout_scale**2, u.shape[0]
        for s, tasks in self.equal_size_runs:
            a = features[:, s].reshape(b, tasks, -1, features.shape[-1])
            ui = u[:, s].reshape(b, tasks, -1)
            _, v, decay, gamma = _exp_and_divided_differences(_head_gram(self.shape, a), self.lam_tau)
            vt, v_decay = v.swapaxes(-1, -2), v * decay[..., None, :]
            r = v_decay @ (vt @ ui[..., None])  # Eᵢuᵢ (b, tasks, nᵢ, 1)
            out_cot[:, s] = (v_decay @ (vt @ r)).reshape(b, -1)
            g = v @ (gamma * (vt @ r @ ui[..., None, :] @ v)) @ vt
            xp.matmul(c2 * (g + g.swapaxes(-1, -2)), a, out=feat_extra[:, s].reshape(a.shape))
            loss = loss + 0.5 * (r[..., 0] ** 2).sum(axis=(1, 2))
        return out_cot, feat_extra, loss

    def spectral_radius(self, state, carried, rows, warm, iterations):
        """λ_max(JJᵀ) of the loss's empirical tangent kernel (the integrator's stage-kernel contract)."""
        xp = get_backend(state)
        body, heads, fwd, _ = self.residuals(state, rows)
        gram = body_gram(self.shape, body, fwd, self.shape.readout_scale * self.point_heads(heads)[..., :-1])
        readout = _head_gram(self.shape, fwd.features)
        if self.method == "mtl":
            gram = gram + readout * self.same_head
        else:
            decay = xp.zeros_like(gram)
            for s in self.data.slices:
                decay[:, s, s] = symmetric_exp(_head_gram(self.shape, fwd.features[:, s]), self.lam_tau)
            gram = decay @ (gram + readout) @ decay
        return stacked_eigvalsh(gram)[:, -1], xp.zeros((state.shape[0], 1), dtype=state.dtype), 0


@dataclass(frozen=True)
class TrainedNetworks(ReportsConvergence):
    """Result of :func:`train`: the final states (b, P) on the backend, the initial body and head draw w₀, the
    flow's convergence record (status, t_final, steps, ‖∇L‖ per network) and final training loss per network."""

    method: str
    shape: NetworkShape
    lam_tau: float
    state: object
    body0: object
    head0: object
    convergence: Convergence
    loss: np.ndarray

    @property
    def body(self):
        return self.state[:, :self.shape.body_size]

    @property
    def heads(self):
        """The trained heads (b, N, h + 1): MTL's N task heads, ANIL's one outer-loop head."""
        return self.state[:, self.shape.body_size:].reshape(self.state.shape[0], -1, self.shape.head_size)


def training_flow(labels, flow: FlowSettings | None = None, **settings) -> FlowSettings:
    """The integrator settings of training on ``labels`` (a list of label arrays): ``flow``, or when None
    :data:`TRAINING_FLOW` with gtol = :data:`GTOL_SCALE`·‖𝒴‖ (convergence relative to the labels' scale); keyword
    ``settings`` (``rtol``, ``gtol``, ``max_time``, ``max_steps``, …) override it."""
    if flow is None:
        flow, settings = TRAINING_FLOW, {"gtol": GTOL_SCALE * float(np.linalg.norm(np.vstack(labels))), **settings}
    return flow.updated(**settings)


@guarded_entry_point
def train(method, shape: NetworkShape, tasks, labels, body0, head0, *, lam_tau=0.0, flow: FlowSettings | None = None,
          max_memory=None, **settings) -> TrainedNetworks:
    """Gradient flow of MTL or ANIL (module docstring) for every network of ``body0`` (R, P_body) / ``head0``
    (R, h + 1) (backend arrays) on the training tasks (lists of host arrays (nᵢ, d), (nᵢ, 1)).

    ``flow``, ``settings``: the integrator's settings (:func:`training_flow`: by default :data:`TRAINING_FLOW`
    with gtol = 10⁻⁵·‖𝒴‖); convergence when ‖∇L‖ ≤ gtol, the status of every network is in ``convergence``.
    ``max_memory``: the memory guard's limit (bytes or ``"64G"``); a flow whose states
    (:func:`~..integrator.flow_state_bytes`, with MTL's one head per task) exceed it is refused.
    """
    one_of(method, "method", METHODS)
    lam_tau = LAM_TAU.scalar(lam_tau)
    heads = len(tasks) if method == "mtl" else 1
    check_memory(flow_state_bytes(body0.shape[0], shape.body_size + heads * shape.head_size), what="train",
                 max_memory=max_memory, params={"networks": body0.shape[0], "width": shape.width,
                                                "depth": shape.depth, "heads": heads})
    xp = get_backend(body0, head0)
    data = TaskData.from_tasks(tasks, labels, xp)  # validates the labels
    flow = training_flow(labels, flow, **settings)
    offset = outputs(shape, forward(shape, body0, data.x).features, head0)
    objective = _Objective(method, shape, data, lam_tau, offset)
    heads = xp.concatenate([head0] * objective.n_heads, axis=1)
    state = xp.concatenate([body0, heads], axis=1)
    kernel = DenseStages(objective)
    kernel.spectral_radius = objective.spectral_radius
    atol = flow.rtol * to_host((state**2).mean(axis=1)) ** 0.5
    result = integrate_gradient_flow(objective, state, flow, atol=atol, stage_kernel=kernel)
    return TrainedNetworks(method, shape, lam_tau, result.y, body0, head0, result.convergence, result.loss)


def adapted_predictions(trained: TrainedNetworks, support, support_labels, query, lam_tau_hat, test_head="initial",
                        rng=None):
    """F (R, n_query): the test head adapted for time λτ̂ on (X′, Y′) on the trained body, seen on the query set
    (module docstring); ``test_head`` in :data:`TEST_HEADS` (``"fresh"`` draws from ``rng``, required: an integer
    seed ≥ 0, a numpy Generator or a SeedSequence); ``support_labels`` (n′,) or (n′, 1)."""
    one_of(test_head, "test_head", TEST_HEADS)
    if test_head == "trained" and trained.method != "anil":
        raise ValueError("test_head='trained' needs ANIL's outer-loop head (MTL's heads belong to its tasks)")
    lam_tau_hat = LAM_TAU.scalar(lam_tau_hat, "lam_tau_hat")
    y_support = _single_output([support_labels], [len(support)], "support_labels")
    shape, xp = trained.shape, get_backend(trained.state)
    start = trained.head0
    if test_head == "fresh":
        start = xp.asarray(as_generator(rng).standard_normal(trained.head0.shape))
    head = trained.heads[:, 0] if test_head == "trained" else start
    points = xp.asarray(np.vstack([support, query]), dtype=float)
    n_s = len(support)
    initial = outputs(shape, forward(shape, trained.body0, points).features, start)
    features = forward(shape, trained.body, points).features
    f = outputs(shape, features, head) - initial
    a_s, a_q = features[:, :n_s], features[:, n_s:]
    residual = xp.asarray(y_support)[None, :] - f[:, :n_s]
    adapted = adaptation_operator(_head_gram(shape, a_s), lam_tau_hat) @ residual[..., None]  # T̂ (MTL Eq. 17)
    return f[:, n_s:] + (_head_gram(shape, a_q, a_s) @ adapted)[..., 0]
