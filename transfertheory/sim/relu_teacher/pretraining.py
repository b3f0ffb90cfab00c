r"""FaF §4 source pretraining: gradient flow of students on the exact population loss against the source teacher.

L = ½ E_x (f − f_s*)², x ~ N(0, I_d), is exact through the arc-cosine kernel
(:func:`transfertheory.theory.relu.population_loss_and_gradients`; O((m + m*)²d) per gradient, no data).
The flow runs on the sphere with time rescaled by m and FaF's stopping rule (:func:`.network.sphere_flow`);
FaF App. D.2: rows uniform on the sphere, output weights 1e−7, 1e5 iterations at learning rate 0.01·m
(flow time 1e3) or until the loss reaches 1e−6.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...backend import get_backend, to_host
from ...theory.relu import population_loss, population_loss_and_gradients
from .network import FlowReport, M, paper_init, sphere_flow

__all__ = ["PretrainResult", "pretrain_source"]


@dataclass(frozen=True)
class PretrainResult(FlowReport):
    """Pretrained students (a :class:`~.network.FlowReport`, ``loss`` the exact population loss) and their
    population loss at initialization."""

    initial_loss: np.ndarray


def pretrain_source(W_star, c_star, m, rng, *, max_time=1e3, gtol=1e-8, loss_tol=1e-6, rtol=1e-3, atol=1e-6):
    """Students (B, m) from FaF's initialization trained on the exact population loss against teachers (B, m*, d).

    Stops per instance at ‖m∇L‖ ≤ gtol (status ``converged``), loss ≤ ``loss_tol`` (``loss_tol``, FaF's
    rule) or t = ``max_time`` (flow time; the paper's iterations × 0.01). ``rtol``, ``atol``: the
    integrator's local error tolerances (at d = 20, m = 200, μ = 0.5, rtol = 1e-3 gives the losses and
    kernel distances of an rtol = 1e-5, atol = 1e-12 run to 1e-3 relative, with 4× fewer evaluations).
    """
    xp = get_backend(W_star)
    B, _, d = W_star.shape
    W0, c0 = paper_init(M.scalar(m), d, rng, batch=(B,), xp=xp)

    def loss_and_gradients(W, c, rows):
        g = population_loss_and_gradients(W, c, W_star[rows], c_star[rows])
        return g.loss, g.grad_W_sphere, g.grad_c

    flow = sphere_flow(loss_and_gradients, W0, c0, max_time=max_time, gtol=gtol, loss_tol=loss_tol, rtol=rtol,
                       atol=atol)
    initial = np.asarray(to_host(population_loss(W0, c0, W_star, c_star)))
    return PretrainResult(**{**flow.__dict__, "loss": np.asarray(to_host(population_loss(flow.W, flow.c, W_star,
                                                                                             c_star)))},
                          initial_loss=initial)
