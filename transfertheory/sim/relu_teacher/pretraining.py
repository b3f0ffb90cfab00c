r"""FaF §4 source pretraining: gradient flow of students on the exact population loss against the source teacher.

L = ½ E_x (f − f_s*)², x ~ N(0, I_d), is exact through the arc-cosine kernel
(:func:`transfertheory.theory.relu.population_loss_and_gradients`; O((m + m*)²d) per gradient, no data).
The flow runs on the sphere with time rescaled by m and FaF's stopping rule (:func:`.network.sphere_flow`);
FaF App. D.2: rows uniform on the sphere, output weights 1e−7, 1e5 iterations at learning rate 0.01·m
(flow time 2e3 in the package's units: FaF's losses have no ½) or until the loss reaches 1e−6.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..._memory import FLOAT_BYTES, check_memory, guarded_entry_point
from ..._validation import as_generator
from ...backend import get_backend, to_device, to_host
from ...theory.relu import population_loss, population_loss_and_gradients
from ..integrator import ErrorController, FlowSettings, flow_state_bytes
from .network import FlowReport, M, paper_init, sphere_flow

__all__ = ["PretrainResult", "pretrain_source", "pretraining_memory", "PRETRAIN_FLOW"]

#: the integrator settings of :func:`pretrain_source`: flow time 1e3 (half FaF's budget of 1e5 iterations at rate
#: 0.01·m, which is t = 2e3: FaF's losses have no ½) and the stopping rule loss ≤ 1e-6 (of the package's loss), ‖m∇L‖ ≤ 1e-8, and rtol 1e-3 (at d = 20, m = 200, μ = 0.5 it gives the
#: losses and kernel distances of an rtol = 1e-5, atol = 1e-12 run to 1e-3 relative, with 4× fewer evaluations)
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
    0.02, :mod:`transfertheory.sim.gradient_descent`). ``atol``: the integrator's absolute local error tolerance. ``first``: the initializations are those
    of students ``first`` … ``first + B − 1`` of one draw from ``rng`` (the students of a chunk of a larger batch
    start where they would in the whole batch; the first·m·d normal draws before them are skipped in bounded
    memory, at a time in proportion to ``first``).
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
    return PretrainResult(**{**report.__dict__, "loss": np.asarray(to_host(population_loss(report.W, report.c, W_star,
                                                                                               c_star)))},
                          initial_loss=initial)
