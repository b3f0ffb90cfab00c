r"""MTL Lemma 1 against trained finite-width networks: which infinite-width prediction each training and test
protocol follows as the width grows (docs/mtl.md, "Finite-width training").

For every width h, ``draws`` random networks (:mod:`~transfertheory.sim.mtl.network`) are trained with MTL and with
ANIL from the same draw (:func:`~transfertheory.sim.mtl.network.train`), and their test predictions on one test task
(:func:`~transfertheory.sim.mtl.network.adapted_predictions`) are compared with the four infinite-width predictions
of :mod:`transfertheory.theory.mtl`:

* ``"mtl"``: F_MTL of Lemma 1 (MTL Eq. 15);
* ``"derivation"`` / ``"statement"``: F_ANIL of Lemma 1 (Eq. 16) with Φ′_ANIL from App. Eqs. 61/66 or from the
  text of Lemmas 1 and 3;
* ``"adaptation"``: G_τ̂(X, X′, Y′) alone (the test head's adaptation with the body's training invisible).

The derivation in docs/mtl.md predicts the match (:data:`MATCHES`): the test head started from the shared
initial draw w₀ sees the body's training through the body gradients of the same head (Θ − K, App. Eq. 62) —
MTL → Eq. 15, ANIL → the derivation's Φ′_ANIL; ANIL's test head started from its outer-loop-trained head adds the
head's own training (Θ) — the statement's Φ′_ANIL; an independently drawn head's body gradients are uncorrelated
with the training head's, so only G_τ̂ remains.

Draws come from the package's seeding rule, :func:`transfertheory.sim.seeding.generator` (``SeedSequence(seed,
spawn_key=key)``): key ``(0, h)`` draws the ``draws`` initial networks of width h (shared by MTL and ANIL:
paired), key ``(1, h)`` the independently drawn test head at width h; a width's draws do not depend on the
other widths. Each argument's range and default is declared once, in :data:`FIELDS` (fields of the ``mtl``
experiment, :data:`MTL_NETWORKS`, defined at the end).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..._memory import FLOAT_BYTES, check_memory, guarded_entry_point
from ..._validation import root_seed
from ... import params as P
from ...backend import backend_name, resolve_backend, to_device, to_host
from ...theory import mtl as MTL
from ..integrator import count, flow_state_bytes
from ..records import Experiment, Field, checked, flow_arguments, flow_fields
from ..seeding import generator
from .network import TRAINING_FLOW, NetworkShape, adapted_predictions, init_parameters, train, training_flow

__all__ = ["REFERENCES", "MATCHES", "ROW_KEYS", "FIELDS", "STUDY_FLOW", "kernel_predictions", "finite_width_study",
           "MTL_NETWORKS"]

REFERENCES = ("mtl", "derivation", "statement", "adaptation")
#: (method, test head) → the infinite-width prediction it should approach (module docstring)
MATCHES = {("mtl", "initial"): "mtl", ("mtl", "fresh"): "adaptation", ("anil", "initial"): "derivation",
           ("anil", "trained"): "statement", ("anil", "fresh"): "adaptation"}
#: the integrator's settings of :func:`finite_width_study`: :data:`.network.TRAINING_FLOW` at a 10× looser rtol
#: (its gtol is replaced by 10⁻⁵·‖𝒴‖ unless ``flow`` is a record, :func:`.network.training_flow`)
STUDY_FLOW = TRAINING_FLOW.updated(rtol=1e-3)
#: the arguments of :func:`finite_width_study` (a grid of ``width``) and fields of the ``mtl`` experiment by name
FIELDS = {f.name: f for f in (Field("width", 256, P.WIDTH), Field("draws", 6, P.DRAWS),
                              Field("lam_tau", 0.1, MTL.LAM_TAU), Field("lam_tau_hat", 0.3, MTL.LAM_TAU))}
#: columns of :func:`finite_width_study`'s table
ROW_KEYS = ("width", "depth", "method", "test_head", "draw", "reference", "matched", "distance", "converged",
            "status", "t_final", "steps", "grad_norm", "loss")


def kernel_predictions(problem: MTL.FewShotProblem, network: MTL.ReluNetwork, lam_tau, lam_tau_hat, test=0):
    """{reference: (n_query,) infinite-width prediction} on test task ``test``, in the order of :data:`REFERENCES`
    (module docstring)."""
    tk = MTL.task_kernels(network, problem.tasks, problem.support[test], problem.query[test])
    y_support = problem.support_labels[test]
    g = MTL.adapted_outputs(tk.block("nngp", "query", "support"), tk.block("nngp", "support", "support"), y_support,
                            lam_tau_hat)
    out = {"mtl": MTL.mtl_predictions(tk, problem.labels, y_support, lam_tau_hat), "adaptation": g}
    for variant in MTL.ANIL_VARIANTS:
        out[variant] = MTL.anil_predictions(tk, problem.labels, y_support, lam_tau, lam_tau_hat, variant)
    return {k: np.asarray(out[k])[:, 0] for k in REFERENCES}


def _rows(width, network, method, trained, predictions, references):
    for head, values in predictions.items():
        for reference, exact in references.items():
            scale = max(float(np.linalg.norm(exact)), float(np.linalg.norm(references["mtl"])))
            distances = np.linalg.norm(values - exact[None, :], axis=1) / scale
            for i, distance in enumerate(distances):
                yield dict(width=width, depth=network.depth, method=method, test_head=head, draw=i,
                           reference=reference, matched=MATCHES[(method, head)] == reference, distance=distance,
                           **trained.convergence.row(i), loss=float(trained.loss[i]))


def _memory_estimate(d, points, heads, depth, width, networks) -> float:
    """Peak bytes of training ``networks`` networks of one width on ``heads`` tasks of ``points`` points in all.

    The state of MTL (the larger: one head per task) has P = h(d + 1) + (L − 1)h(h + 1) + N(h + 1) parameters,
    held by the integrator (:func:`~..integrator.flow_state_bytes`) and once more as the gradient's layer parts
    before their concatenation; a gradient evaluation holds per hidden layer the activations, the
    ReLU masks and the backpropagated deltas on all Nn training points ((R, Nn, h) each), and the radius the
    (R, Nn, Nn) tangent-kernel Grams (three). Nn = the training points of all N tasks.
    """
    n_params = width * (d + 1) + (depth - 1) * width * (width + 1) + heads * (width + 1)
    arrays = n_params + 3 * depth * points * width + 3 * points * points
    return flow_state_bytes(networks, n_params) + FLOAT_BYTES * networks * arrays


@guarded_entry_point
def finite_width_study(problem: MTL.FewShotProblem, network: MTL.ReluNetwork, widths, draws, *,
                       lam_tau=FIELDS["lam_tau"].default, lam_tau_hat=FIELDS["lam_tau_hat"].default, test=0, seed=0,
                       backend=None, max_memory=None, flow=None) -> pd.DataFrame:
    """Train ``draws`` networks per width with MTL and ANIL (ANIL's inner loop λτ = ``lam_tau``) and compare
    their test predictions (adaptation λτ̂ = ``lam_tau_hat``) with the infinite-width ones (module docstring).

    Returns a tidy DataFrame, one row per (width, method, test head, draw, reference) (:data:`ROW_KEYS`):
    ``distance`` = ‖F_network − F_reference‖₂ over the query points divided by max(‖F_reference‖, ‖F_MTL‖)
    (G_τ̂ can be 0), ``matched`` whether the reference is the one :data:`MATCHES` predicts, and the network's
    convergence (integrator status, time, steps, final ‖∇L‖, final training loss); ``df.attrs``: ``seed`` (the
    integer root), ``backend`` and ``flow`` (the integrator's settings by name). The networks of a width are drawn
    with key (0, width) of ``seed`` and shared by both methods (paired); the fresh test head with key (1, width)
    (module docstring; ``seed``: an integer ≥ 0, or a numpy Generator or SeedSequence that gives one).
    ``widths`` is a non-empty sequence of integers ≥ 1. ``flow``: the integrator's settings of every network's
    training — None (:data:`STUDY_FLOW` with gtol = 10⁻⁵·‖𝒴‖, :func:`.network.training_flow`), the changes
    of those by name (e.g. ``{"rtol": 1e-4}``) or a :class:`~..integrator.FlowSettings` taken as it is.

    ``max_memory`` (bytes or ``"64G"``; None: ``TRANSFERTHEORY_MAX_MEMORY``, else the memory available): the
    peak memory of the largest width's networks is estimated (:func:`_memory_estimate`, O(R·L·h²)) and a study
    above the limit is refused with a ValueError before any work.
    """
    widths = [int(h) for h in FIELDS["width"].param.sequence(widths, "widths", distinct=True)]
    draws, lam_tau, lam_tau_hat = checked(FIELDS, draws=draws, lam_tau=lam_tau, lam_tau_hat=lam_tau_hat).values()
    flow = training_flow(problem.labels, None, rtol=STUDY_FLOW.rtol).overridden(flow, "flow")
    seed = root_seed(seed)
    if test not in range(len(problem.support)):
        raise ValueError(f"test must be the index of a test task, in [0, {len(problem.support) - 1}], got {test!r}")
    xp = resolve_backend(backend)
    points = sum(len(x) for x in problem.tasks)
    estimate = _memory_estimate(problem.tasks[0].shape[1], points, len(problem.tasks), network.depth, max(widths),
                                draws)
    check_memory(estimate, what="finite_width_study", xp=xp, max_memory=max_memory,
                 params={"widths": widths, "draws": draws, "depth": network.depth, "training points": points})
    references = kernel_predictions(problem, network, lam_tau, lam_tau_hat, test)
    support, query = problem.support[test], problem.query[test]
    rows = []
    for width in widths:
        shape = NetworkShape(problem.tasks[0].shape[1], width, network)
        body0, head0 = (to_device(a, xp) for a in init_parameters(shape, draws, generator(seed, 0, width)))
        for method in ("mtl", "anil"):
            trained = train(method, shape, problem.tasks, problem.labels, body0, head0,
                            lam_tau=lam_tau if method == "anil" else 0.0, flow=flow)
            heads = [h for (m, h) in MATCHES if m == method]
            predictions = {h: to_host(adapted_predictions(trained, support, problem.support_labels[test], query,
                                                          lam_tau_hat, h, generator(seed, 1, width)))
                           for h in heads}
            rows.extend(_rows(width, network, method, trained, predictions, references))
    df = pd.DataFrame(rows, columns=list(ROW_KEYS))
    df.attrs.update(seed=seed, backend=backend_name(xp), flow=flow.as_dict())
    return df


def _mtl_memory(p, on_device) -> tuple:
    """Peak bytes of the ``mtl`` experiment at point ``p``: its synthetic problem (one test task) and the study."""
    sizes = {name: p[name] for name in ("tasks", "n", "n_support", "n_query", "d", "depth", "width", "draws")}
    data = MTL._problem_bytes(p["tasks"], p["n"], 1, p["n_support"], p["n_query"], p["d"])
    return data + _memory_estimate(p["d"], p["tasks"] * p["n"], p["tasks"], p["depth"], p["width"], p["draws"]), sizes


def _mtl(p, seed, backend):
    problem = MTL.synthetic_problem(generator(p["data_seed"]), tasks=p["tasks"], n=p["n"], test_tasks=1,
                                    n_support=p["n_support"], n_query=p["n_query"], d=p["d"])
    return finite_width_study(problem, MTL.ReluNetwork(p["depth"]), [p["width"]], p["draws"], lam_tau=p["lam_tau"],
                              lam_tau_hat=p["lam_tau_hat"], seed=seed, backend=backend, **flow_arguments(p))


#: the ``mtl`` experiment (MTL §4, Lemma 1): MTL and ANIL networks of one width on MTL §5.1's synthetic tasks
#: against the infinite-width predictions, a thin wrapper over :func:`finite_width_study` (its :data:`FIELDS`, the
#: problem's sizes and the integrator's ``rtol``)
MTL_NETWORKS = Experiment(
    name="mtl", paper="MTL §4 (Lemma 1)", version=2,
    description="finite-width ReLU networks trained by MTL and ANIL against the infinite-width predictions",
    fields=(Field("depth", 1, count("depth")), *FIELDS.values(), Field("tasks", 4, count("tasks")),
            Field("n", 5, P.N), Field("n_support", 5, count("n_support")), Field("n_query", 5, count("n_query")),
            Field("d", 10, P.D), Field("data_seed", 5, P.SEED), *flow_fields(STUDY_FLOW, "rtol")),
    example=dict(width=16, draws=1, tasks=2, n=3, n_support=3, n_query=3, d=4),
    renamed={"networks": "draws", "network": "draw"},
    simulate=_mtl, memory=_mtl_memory)
