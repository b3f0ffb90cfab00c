r"""FaF §4 target training on n samples: scratch training, linear transfer and fine-tuning.

The target loss is the empirical loss of FaF's deep-linear setting (FaF Eq. 5) for the ReLU network:

    L̂ = (1/2n) Σₖ (f(xₖ) − yₖ)²,   f(x) = (1/m) Σᵢ cᵢ σ(wᵢᵀx)   (FaF Eq. 18),

on noiseless samples yₖ = f_t*(xₖ) (FaF App. D.2: σ = 0). With the features Φ = σ(XWᵀ) (n, m) and the
residual r = Φc/m − y, its gradients are

    ∂L̂/∂c = Φᵀr/(nm),   ∇_{wᵢ}L̂ = (cᵢ/(nm)) Σₖ rₖ 1[wᵢᵀxₖ > 0] xₖ,

evaluated for a batch of instances by batched matrix products ((b, n, m) features, no autograd).
Methods:

* **scratch** — gradient flow from FaF's initialization (:func:`.network.paper_init`);
* **fine-tuning** — the same flow from the pretrained student;
* **linear transfer** — the output weights retrained on the frozen pretrained features: minimum-norm
  least squares (the limit of gradient flow on c from c = 0; from the pretrained c it differs by the
  pretrained c's component in the null space of Φ, which is 0 for n ≥ m).

The flows run on the sphere with time rescaled by m and FaF's stopping rule (loss ≤ 1e−6, or flow time
1e3 = the paper's 1e5 iterations at learning rate 0.01·m): :func:`.network.sphere_flow`.
"""
from __future__ import annotations

from ...backend import array_module_of
from .network import FlowReport, M, features, paper_init, sphere_flow

__all__ = ["empirical_loss_and_gradients", "train_on_samples", "scratch_training", "fine_tuning", "linear_transfer"]


def empirical_loss_and_gradients(W, c, X, y):
    r"""(L̂, Riemannian ∇_W L̂, ∂L̂/∂c) of L̂ = (1/2n)Σₖ(f(xₖ) − yₖ)² for W (b, m, d) on the sphere, X (b, n, d), y (b, n).

    ∇_W is projected on the tangent space of each row, (I − wᵢwᵢᵀ)∇_{wᵢ}L̂ (rows of unit norm).
    """
    xp = array_module_of(W, X)
    n, m = X.shape[-2], W.shape[-2]
    pre = X @ xp.swapaxes(W, -1, -2)  # (b, n, m)
    phi = xp.maximum(pre, 0.0)
    residual = (phi @ c[..., None])[..., 0] / m - y  # (b, n)
    loss = 0.5 * (residual * residual).mean(axis=-1)
    grad_c = (xp.swapaxes(phi, -1, -2) @ residual[..., None])[..., 0] / (n * m)
    active_residual = (pre > 0) * residual[..., None]  # (b, n, m)
    grad_W = c[..., None] * (xp.swapaxes(active_residual, -1, -2) @ X) / (n * m)
    grad_W = grad_W - (grad_W * W).sum(axis=-1, keepdims=True) * W
    return loss, grad_W, grad_c


def train_on_samples(W0, c0, X, y, *, max_time=1e3, gtol=1e-8, loss_tol=1e-6, rtol=1e-2, atol=1e-5) -> FlowReport:
    """Gradient flow on L̂ of networks (W0 (B, m, d) on the sphere, c0 (B, m)) on their samples X (B, n, d), y (B, n).

    Stops per instance at ‖m∇L̂‖ ≤ gtol, L̂ ≤ ``loss_tol`` (FaF's rule) or flow time ``max_time``;
    ``FlowReport.loss`` is the final L̂. ``rtol``, ``atol``: the integrator's local error tolerances. The
    empirical loss has kinks (a ReLU switching at a sample), which limit the steps by accuracy: at d = 20,
    m = 200 (n = 100, 400) rtol = 1e-2 needs 13× fewer evaluations than rtol = 1e-3 and moves the
    population risk by 0.2% (docs/relu.md).
    """
    def loss_and_gradients(W, c, rows):
        index = array_module_of(X).asarray(rows)
        return empirical_loss_and_gradients(W, c, X[index], y[index])

    return sphere_flow(loss_and_gradients, W0, c0, max_time=max_time, gtol=gtol, loss_tol=loss_tol, rtol=rtol,
                       atol=atol)


def scratch_training(X, y, m, rng, **flow) -> FlowReport:
    """Students of width m trained on (X, y) from FaF's initialization (rows on the sphere, c = 1e−7)."""
    W0, c0 = paper_init(M.scalar(m), X.shape[-1], rng, batch=(X.shape[0],), xp=array_module_of(X))
    return train_on_samples(W0, c0, X, y, **flow)


def fine_tuning(W, c, X, y, **flow) -> FlowReport:
    """Pretrained students (W, c) trained further, all weights, on (X, y)."""
    return train_on_samples(W, c, X, y, **flow)


def linear_transfer(W, X, y):
    """Output weights retrained on frozen features: minimum-norm least squares of y on σ(XWᵀ)/m (per instance).

    Returns c (B, m) with f(x) = (1/m) Σᵢ cᵢ σ(wᵢᵀx); its population risk is exact through
    :func:`transfertheory.theory.relu.population_loss`. As n → ∞ the fit becomes the L² projection of
    the target on span{σ(wᵢᵀx)}, so 2·L → ‖P⊥ f_t*‖² (FaF Eq. 21).
    """
    xp = array_module_of(W)
    phi = features(W, X) / W.shape[-2]  # (B, n, m)
    return xp.stack([xp.linalg.lstsq(F, t, rcond=None)[0] for F, t in zip(phi, y)])
