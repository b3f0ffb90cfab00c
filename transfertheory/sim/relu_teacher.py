r"""FaF §4 ReLU student–teacher simulator: source pretraining on the exact population loss.

Model (FaF Eq. 18): a mean-field two-layer network f(x) = (1/m) Σᵢ cᵢ σ(wᵢᵀx), σ = ReLU, with each
hidden row wᵢ on the unit sphere, trained against a teacher f*(x) = (1/m*) Σⱼ c*ⱼ σ(w*ⱼᵀx) (FaF Eq. 20)
on the population loss L = ½ E_x (f − f*)², x ~ N(0, I_d), which is exact through the arc-cosine
kernel (:func:`transfertheory.theory.relu.population_loss_and_gradients`; O(m²d) per gradient, no data).

Sphere constraint: wᵢ = vᵢ/‖vᵢ‖ and the flow runs on (c, v). The gradient w.r.t. vᵢ is
(1/‖vᵢ‖)(I − ŵᵢŵᵢᵀ)∇_{wᵢ}L, orthogonal to vᵢ, so the exact flow conserves ‖vᵢ‖; with ‖vᵢ(0)‖ = 1 it
is Riemannian gradient flow on the product of spheres. The integrator's norm drift max|‖vᵢ‖ − 1| is
reported as a diagnostic.

Time: the gradients carry a factor 1/m (mean-field scaling), which FaF App. D.2 compensates with the
learning rate 0.01·m. We integrate dθ/dt = −m∇L, so flow time t corresponds to the paper's
iterations × 0.01 (its 1e5 iterations are t = 1e3).

Initialization (FaF App. D.2): rows uniform on S^{d−1}, output weights 1e−7.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from transfertheory.backend import array_module_of, to_host
from transfertheory.sim.integrator import integrate_gradient_flow
from transfertheory.theory.relu import population_loss, population_loss_and_gradients
from transfertheory.theory.relu.teachers import random_teacher

INIT_OUTPUT_SCALE = 1e-7  #: FaF App. D.2 output-weight initialization


def paper_init(m, d, rng, batch=(), xp=np):
    """Student at FaF's initialization: rows uniform on S^{d−1} and c = 1e−7 (shapes batch+(m, d), batch+(m,))."""
    W, c = random_teacher(m, d, rng, batch=batch, xp=xp)
    return W, INIT_OUTPUT_SCALE * c


def _pack(W, c, xp):
    return xp.concatenate([c, W.reshape(W.shape[0], -1)], axis=1)


def _unpack(y, m, d):
    c = y[:, :m]
    V = y[:, m:].reshape(y.shape[0], m, d)
    return V, c


@dataclass(frozen=True)
class PretrainResult:
    """Pretrained students (batch B) and the flow's convergence report.

    W (B, m, d) rows on the unit sphere, c (B, m); loss is the exact final population loss;
    converged, status, t_final, steps, grad_norm per instance (numpy); norm_drift is max|‖vᵢ‖ − 1|.
    """

    W: object
    c: object
    loss: np.ndarray
    initial_loss: np.ndarray
    converged: np.ndarray
    status: np.ndarray
    t_final: np.ndarray
    steps: np.ndarray
    grad_norm: np.ndarray
    norm_drift: np.ndarray


def pretrain_source(W_star, c_star, m, rng, *, max_time=1e3, gtol=1e-8, loss_tol=1e-6, rtol=1e-5):
    """Gradient flow dθ/dt = −m∇L of students (B, m) on the exact population loss against source teachers.

    W_star (B, m*, d), c_star (B, m*). Stops per instance at ‖m∇L‖ ≤ gtol or t = max_time
    (``loss_tol`` is reported through the ``converged`` flag together with the integrator's status:
    an instance counts as converged when the integrator converged or its loss is ≤ loss_tol, FaF's
    stopping rule "loss < 1e−6").
    """
    xp = array_module_of(W_star)
    B, _, d = W_star.shape
    W0, c0 = paper_init(m, d, rng, batch=(B,), xp=xp)

    def gradient(y, rows):
        V, c = _unpack(y, m, d)
        norms = xp.linalg.norm(V, axis=-1, keepdims=True)
        g = population_loss_and_gradients(V / norms, c, W_star[rows], c_star[rows])
        grad_v = g.grad_W_sphere / norms
        return m * _pack(grad_v, g.grad_c, xp), g.loss

    result = integrate_gradient_flow(gradient, _pack(W0, c0, xp), rtol=rtol, gtol=gtol, max_time=max_time)
    V, c = _unpack(result.y, m, d)
    norms = xp.linalg.norm(V, axis=-1)
    W = V / norms[..., None]
    loss = np.asarray(to_host(population_loss(W, c, W_star, c_star)))
    initial = np.asarray(to_host(population_loss(W0, c0, W_star, c_star)))
    drift = np.asarray(to_host(xp.max(xp.abs(norms - 1.0), axis=-1)))
    converged = result.converged | (loss <= loss_tol)
    return PretrainResult(W, c, loss, initial, converged, result.status, result.t, result.steps,
                          result.grad_norm, drift)



def feature_kernel(W, X):
    """Feature Gram matrix K(x, x') = (1/m) Σᵢ σ(wᵢᵀx) σ(wᵢᵀx') of hidden rows W (..., m, d) on probes X (p, d)."""
    xp = array_module_of(W)
    features = xp.maximum(xp.asarray(X) @ xp.swapaxes(W, -1, -2), 0.0)  # (..., p, m)
    return features @ xp.swapaxes(features, -1, -2) / W.shape[-2]


def kernel_distance(W, W_star, X):
    """Relative Frobenius distance ‖K_W − K_W*‖_F / ‖K_W*‖_F of the feature kernels on probes X (per instance).

    The alignment criterion of FaF Fig. 4a–b: a student whose rows have moved onto the teacher's
    directions has a feature kernel close to the teacher's; at initialization (random rows) the
    distance is O(1).
    """
    xp = array_module_of(W)
    K, K_star = feature_kernel(W, X), feature_kernel(W_star, X)
    return np.asarray(to_host(xp.linalg.norm(K - K_star, axis=(-2, -1)) / xp.linalg.norm(K_star, axis=(-2, -1))))


def teacher_samples(W_star, c_star, n, rng):
    """n noiseless samples (σ = 0, FaF App. D.2) of teachers (B, m*, d): X (B, n, d), y (B, n)."""
    xp = array_module_of(W_star)
    generator = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    X = xp.asarray(generator.standard_normal(W_star.shape[:-2] + (n, W_star.shape[-1])))
    y = xp.maximum(X @ xp.swapaxes(W_star, -1, -2), 0.0) @ c_star[..., None] / W_star.shape[-2]
    return X, y[..., 0]


def linear_transfer(W, X, y):
    """Output weights retrained on frozen features: minimum-norm least squares of y on σ(XWᵀ)/m (per instance).

    Returns c (B, m) with f(x) = (1/m) Σᵢ cᵢ σ(wᵢᵀx); its population risk is exact through
    :func:`transfertheory.theory.relu.population_loss`. As n → ∞ the fit becomes the L² projection of
    the target on span{σ(wᵢᵀx)}, so 2·L → ‖P⊥ f_t*‖² (FaF Eq. 21).
    """
    xp = array_module_of(W)
    m = W.shape[-2]
    features = xp.maximum(X @ xp.swapaxes(W, -1, -2), 0.0) / m  # (B, n, m)
    return xp.stack([xp.linalg.lstsq(F, t, rcond=None)[0] for F, t in zip(features, y)])
