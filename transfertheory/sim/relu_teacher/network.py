r"""The two-layer ReLU network of FaF §4 and its gradient flow on the product of spheres.

f(x) = (1/m) Σᵢ cᵢ σ(wᵢᵀx) (FaF Eq. 18), σ = ReLU, every hidden row on the unit sphere ‖wᵢ‖ = 1.

Parametrization: wᵢ = vᵢ/‖vᵢ‖ and the flow runs on (c, v). The gradient w.r.t. vᵢ is
(1/‖vᵢ‖)(I − ŵᵢŵᵢᵀ)∇_{wᵢ}L, orthogonal to vᵢ, so the exact flow conserves ‖vᵢ‖; with ‖vᵢ(0)‖ = 1 it
is Riemannian gradient flow on the product of spheres. The integrator's norm drift max|‖vᵢ‖ − 1| is
reported as a diagnostic.

Time: the gradients carry a factor 1/m (mean-field scaling), which FaF App. D.2 compensates with the
learning rate 0.01·m. :func:`sphere_flow` integrates dθ/dt = −m∇L of the package's loss L = ½E(f − y)², twice
FaF's step in time per iteration (FaF's loss has no ½): flow time t = the paper's iterations × 0.02 (its 1e5
iterations are t = 2e3; :mod:`transfertheory.sim.gradient_descent` runs that gradient descent itself).

Stopping (FaF App. D.2: "until the loss reaches 1e−6"): the package integrator stops an instance at
‖m∇L‖ ≤ gtol (status ``converged``), at L ≤ ``loss_tol`` after any step (status ``loss_tol``, FaF's rule) or
at its time budget.

Initialization (FaF App. D.2): rows uniform on S^{d−1}, output weights 1e−7.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ... import params as P
from ..._validation import as_generator
from ...backend import get_backend, to_host
from ...theory.relu import population_loss
from ...theory.relu.teachers import random_teacher
from ..convergence import Convergence, ReportsConvergence
from ..integrator import SETTING_RANGES, FlowSettings, integrate_gradient_flow

__all__ = ["INIT_OUTPUT_SCALE", "FlowReport", "paper_init", "sphere_flow", "features", "network_output",
           "feature_kernel", "kernel_distance", "teacher_samples", "target_norm_sq", "target_variance", "M",
           "MAX_TIME"]

INIT_OUTPUT_SCALE = 1e-7  #: FaF App. D.2 output-weight initialization

#: the student width m: the shared network-width range (params.WIDTH) under FaF's name
M = replace(P.WIDTH, name="m", description="width m of the student")
#: the range of a flow-time budget: the integrator's (:data:`~..integrator.SETTING_RANGES`), for command-line flags
MAX_TIME = SETTING_RANGES["max_time"]


def paper_init(m, d, rng, batch=()):
    """Student at FaF's initialization: rows uniform on S^{d−1} and c = 1e−7 (shapes batch+(m, d), batch+(m,)),
    NumPy arrays (drawn on the host; :func:`transfertheory.backend.to_device` moves them)."""
    W, c = random_teacher(m, d, rng, batch=batch)
    return W, INIT_OUTPUT_SCALE * c


def _pack(W, c, xp):
    return xp.concatenate([c, W.reshape(W.shape[0], -1)], axis=1)


def _unpack(y, m, d):
    return y[:, m:].reshape(y.shape[0], m, d), y[:, :m]


@dataclass(frozen=True)
class FlowReport(ReportsConvergence):
    """Trained networks (batch B) and the flow's convergence record (numpy arrays of shape (B,)).

    ``convergence`` (also read as ``report.converged``, ``.status``, ``.t_final``, ``.steps``, ``.grad_norm``):
    converged is status ``converged`` (‖m∇L‖ ≤ gtol) or ``loss_tol`` (FaF's rule); ``loss`` is the trained loss
    at the end (the callable's); ``norm_drift`` is max|‖vᵢ‖ − 1| (integration error).
    """

    W: object  #: (B, m, d) rows on the unit sphere
    c: object  #: (B, m)
    loss: np.ndarray
    convergence: Convergence
    norm_drift: np.ndarray
    evaluations: int


def sphere_flow(loss_and_gradients, W0, c0, flow: FlowSettings, *, atol=1e-12):
    r"""Gradient flow dθ/dt = −m∇L of networks (B, m, d) with rows on the sphere (module docstring), at the
    integrator settings ``flow`` (its ``gtol`` bounds ‖m∇L‖, its ``loss_tol`` is FaF's stopping rule).

    ``loss_and_gradients(W, c, rows) -> (loss (b,), grad_W_sphere (b, m, d), grad_c (b, m))`` evaluates
    the trained loss of the instances ``rows`` (an int array into the batch) at rows W on the sphere;
    ``grad_W_sphere`` is the Riemannian gradient (I − ŵᵢŵᵢᵀ)∇_{wᵢ}L.
    """
    xp = get_backend(W0)
    m, d = W0.shape[1:]

    def gradient(y, rows):
        # few, whole-array operations: at the small batches of a flow's last steps their count, not their
        # arithmetic, is the cost (the values are those of linalg.norm, V/‖V‖ and m·[∂L/∂c, ∇_W L/‖V‖])
        V, c = _unpack(y, m, d)
        norms = xp.sqrt((V * V).sum(axis=-1, keepdims=True))
        loss, grad_w, grad_c = loss_and_gradients(V / norms, c, rows)
        out = xp.empty_like(y)
        xp.multiply(grad_c, m, out=out[:, :m])
        scaled = grad_w / norms
        scaled *= m
        out[:, m:] = scaled.reshape(y.shape[0], -1)
        return out, loss

    result = integrate_gradient_flow(gradient, _pack(W0, c0, xp), flow, atol=atol)
    V, c = _unpack(result.y, m, d)
    norms = xp.linalg.norm(V, axis=-1)
    return FlowReport(W=V / norms[..., None], c=c, loss=result.loss, convergence=result.convergence,
                      norm_drift=np.asarray(to_host(xp.max(xp.abs(norms - 1.0), axis=-1))),
                      evaluations=result.evaluations)


def features(W, X):
    """σ(XWᵀ): features of inputs X (..., n, d) under hidden rows W (..., m, d), shape (..., n, m)."""
    xp = get_backend(W, X)
    return xp.maximum(X @ xp.swapaxes(W, -1, -2), 0.0)


def network_output(W, c, X):
    """f(x) = (1/m) Σᵢ cᵢ σ(wᵢᵀx) on the rows of X (..., n, d): shape (..., n) (FaF Eq. 18)."""
    return (features(W, X) @ c[..., None])[..., 0] / W.shape[-2]


def feature_kernel(W, X):
    """Feature Gram matrix K(x, x') = (1/m) Σᵢ σ(wᵢᵀx) σ(wᵢᵀx') of hidden rows W (..., m, d) on probes X (p, d)."""
    xp = get_backend(W)
    phi = features(W, xp.asarray(X))  # (..., p, m)
    return phi @ xp.swapaxes(phi, -1, -2) / W.shape[-2]


def kernel_distance(W, W_star, X):
    """Relative Frobenius distance ‖K_W − K_W*‖_F / ‖K_W*‖_F of the feature kernels on probes X (per instance).

    The alignment criterion of FaF Fig. 4a–b: a student whose rows have moved onto the teacher's
    directions has a feature kernel close to the teacher's; at initialization (random rows) the
    distance is O(1).
    """
    xp = get_backend(W)
    K, K_star = feature_kernel(W, X), feature_kernel(W_star, X)
    return np.asarray(to_host(xp.linalg.norm(K - K_star, axis=(-2, -1)) / xp.linalg.norm(K_star, axis=(-2, -1))))


def teacher_samples(W_star, c_star, n, rng):
    """n noiseless samples (σ = 0, FaF App. D.2) of teachers (B, m*, d): X (B, n, d), y (B, n); ``rng`` an integer
    seed ≥ 0, a numpy Generator or a SeedSequence."""
    xp, n, generator = get_backend(W_star), P.N.scalar(n), as_generator(rng)
    X = xp.asarray(generator.standard_normal(W_star.shape[:-2] + (n, W_star.shape[-1])))
    return X, network_output(W_star, c_star, X)


def target_norm_sq(W_star, c_star):
    """‖f*‖² = E f*(x)², x ~ N(0, I_d), exactly: twice the population loss of the zero network (arc-cosine kernel)."""
    xp = get_backend(W_star, c_star)
    zero = xp.zeros(W_star.shape[:-2] + (1,), dtype=W_star.dtype)
    return 2 * population_loss(xp.ones_like(W_star[..., :1, :]), zero, W_star, c_star)


def target_variance(W_star, c_star):
    r"""Var f*(x), x ~ N(0, I_d), exactly: ‖f*‖² − (E f*)² with E σ(wᵀx) = ‖w‖/√(2π).

    FaF Fig. 4e normalizes the transferability by this "variance in the target data".
    """
    xp = get_backend(W_star, c_star)
    mean = (xp.linalg.norm(W_star, axis=-1) * c_star).sum(axis=-1) / (W_star.shape[-2] * np.sqrt(2 * np.pi))
    return target_norm_sq(W_star, c_star) - mean * mean
