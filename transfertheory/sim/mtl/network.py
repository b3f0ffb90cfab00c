r"""MTL §4: random finite-width deep ReLU networks, batched — forward pass, backpropagation, empirical kernels.

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
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..._memory import FLOAT_BYTES, check_memory
from ..._validation import Interval, as_generator
from ...backend import get_backend
from ...params import D, WIDTH, Param
from ...theory.mtl import ReluNetwork

__all__ = ["WIDTH", "NETWORKS", "NetworkShape", "Forward", "init_parameters", "forward", "backpropagate", "body_gram",
           "empirical_kernels", "random_network_kernels"]

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
