r"""TDR §6: training the wide two-layer ReLU network — pretraining, fine-tuning, scratch — and TDR §5.1's task families.

Model (TDR §6.1, "Towards understanding the transferability of deep representations"):
f(x) = (1/√m) aᵀσ(Wᵀx), σ = ReLU, W = (w₁, …, w_m) ∈ ℝ^{d×m}, a_r ∈ {±1} fixed, only W trained,
w_r(0) ~ N(0, κ²I), loss L(W) = ½‖y − f(X)‖² on unit-norm inputs, with the analytic gradient

    ∂L/∂w_r = (1/√m) a_r Σ_i (u_i − y_i) 1{w_rᵀx_i > 0} x_i,   u_i = f(x_i)          (TDR Eq. 3)

(no automatic differentiation; O(n·m·d) per evaluation, :meth:`~.tdr_kernel.TwoLayerStages.gradient` of the
network's stage kernel, which also fuses a gradient-descent step: :mod:`transfertheory.sim.tdr_kernel`).
Training goes through the package's integrator (:func:`~transfertheory.sim.integrator.integrate_gradient_flow`):
by default full-batch gradient descent W ← W − η∇L, the paper's algorithm, with the per-network step
η = 1/λ_max of its empirical tangent kernel (``scheme="euler"``); ``scheme="rkc"`` integrates the gradient
flow dW/dt = −∇L (the small-step limit) by error-controlled RKC2. For each width m and each draw:

1. W(P): training on (X_P, y_P) from W(0) to ‖∇L‖ ≤ gtol (pretraining);
2. W(Q): training on (X_Q, y_Q) from W(P) (fine-tuning);
3. W_s(Q): training on (X_Q, y_Q) from the same W(0) (training from scratch);

and :func:`simulate_transfer`'s table records ‖W(Q) − W(P)‖_F (TDR Thm 2), ‖W_s(Q) − W(0)‖_F, the gradient
norms ‖∂L/∂X¹‖²_F of TDR Thm 1 at W(0) and W(P) — from the explicit m × n_Q matrix ∂L/∂X¹ of the loss with
respect to the hidden activations X¹ = σ(WᵀX_Q) (:func:`hidden_activation_gradient`) — and, per stage, the
integrator's status, time, steps, final ‖∇L‖, loss and convergence; its ``attrs`` hold the pretrained outputs
u_Q(P) on X_Q (TDR's transformed labels y_{P→Q} in the limit).

Batching over draws and widths: the state of one instance is vec(W) ∈ ℝ^{m·d}; every network of every
width is trained in one integration per stage — pretraining one batch of widths × draws instances,
fine-tuning and scratch (which share X_Q) one batch of 2 × widths × draws — held as a
:class:`~transfertheory.sim.integrator.RaggedBatch` with one dense block per width (no padding
to the largest width: a block's gradient is one batched computation on its own units), each network with
its own step, ρ̂ and status. On a device that is one integration; on the host, consecutive networks are
integrated in groups of at most :data:`HOST_GROUP_BYTES` of states that stay in the cache from step to
step. A network's result does not depend on the batch or group it is trained in.

Initialization: ``symmetric=True`` (default) draws m/2 units and duplicates each with the opposite a_r, so
f(·; W(0)) = 0 (to rounding) (the κ → 0 limit of the paper, where u(0) = O(κ) is dropped) while the Gram
matrices are those of m Gaussian units. ``symmetric=False`` is the paper's i.i.d. draw, a_r uniform.
κ enters only through the lazy-training scale: a unit moves by O(1/√m) against its norm κ√d, so the
activation patterns change little when κ√m ≫ 1 (κ = 1 by default; the limit m → ∞ is what is studied).

:func:`task_pair` builds the two task families of TDR §5.1 (shared inputs with rotated
teachers, one labeling function on rotated inputs). Draws (:func:`transfertheory.sim.seeding.generator`):
network s of width m has key ``(m, s)`` of the run's seed, a task pair the empty key of its own seed. The
ranges and defaults of :func:`simulate_transfer`'s arguments are declared once, in :data:`FIELDS` (fields of
the ``tdr`` experiment, :data:`TDR`, defined at the end: a thin wrapper over :func:`simulate_transfer` on one
task pair, with the trainer's ``scheme``, ``gtol``, ``max_time`` and ``max_steps``).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .. import params as P
from .._memory import FLOAT_BYTES, check_memory, guarded_entry_point
from .._validation import Interval, one_of, root_seed
from ..backend import backend_name, get_backend, resolve_backend, to_device, to_host
from ..theory.tdr import gram_solve, transfer_summary
from .convergence import Convergence, convergence_columns
from .integrator import (SOLVERS, ErrorController, FlowResult, FlowSettings, FlowStats, GradientDescent, RaggedBatch,
                         integrate_gradient_flow, positive, rkc_stability_bound)
from .records import Experiment, Field, checked, flow_arguments, flow_fields
from .seeding import generator
from .tdr_kernel import TwoLayerStages, WidthBlockStages, tangent_kernel_radius

__all__ = ["FIELDS", "STAGES", "initial_weights", "two_layer_outputs", "hidden_activation_gradient",
           "tangent_kernel_radius", "train_two_layer", "simulate_transfer", "width_rate",
           "TASK_FAMILIES", "task_pair", "TRAINING_FLOW", "TDR"]

#: the arguments of :func:`simulate_transfer` (a grid of ``width``: a two-layer network of width 1 has no kernel
#: regime) and fields of the ``tdr`` experiment by name
FIELDS = {f.name: f for f in (Field("width", 1000, P.WIDTH.with_range(low=2)), Field("draws", 8, P.DRAWS),
                              Field("kappa", 1.0, positive("kappa")))}
#: the training stages of a network, in the order of :func:`simulate_transfer`'s rows
STAGES = ("pretrain", "finetune", "scratch")
#: the trainer's settings (:func:`train_two_layer`): gradient descent at η = 1/λ_max (``scheme="euler"``, TDR §6.1's
#: algorithm; ``rtol`` 1e-3 is the RKC flow's) to ‖∇L‖ ≤ 1e-5, within flow time 1e6 and 2·10⁵ steps
TRAINING_FLOW = FlowSettings(GradientDescent(step_fraction=1.0), ErrorController(rtol=1e-3), gtol=1e-5,
                             max_time=1e6, max_steps=200_000)


def initial_weights(width, d, draws, *, kappa=FIELDS["kappa"].default, symmetric=True, seed=0, max_memory=None):
    """W(0) (draws, m, d) with rows w_r ~ N(0, κ²I) and a (draws, m) ∈ {±1} on the host (module docstring).

    ``symmetric``: rows m/2.. repeat rows ..m/2 with a_r negated (f(·; W(0)) = 0; m must be even).
    Draw s at width m depends on (seed, m, s) only; ``seed`` is an integer ≥ 0, or a Generator or
    SeedSequence that gives one (:func:`~transfertheory._validation.root_seed`). ``max_memory``: the memory
    guard's limit (:mod:`transfertheory._memory`); the draws·m·(d + 1) floats are refused before drawing when they
    exceed it.
    """
    width, draws, kappa = checked(FIELDS, width=width, draws=draws, kappa=kappa).values()
    d, seed = P.D.scalar(d), root_seed(seed)
    if symmetric and width % 2:
        raise ValueError(f"width must be even with symmetric=True, got {width}")
    check_memory(FLOAT_BYTES * draws * width * (d + 1), what="initial_weights", max_memory=max_memory,
                 params={"width": width, "d": d, "draws": draws})
    return _initial_weights(width, d, draws, kappa, symmetric, seed)


def _initial_weights(width, d, draws, kappa, symmetric, seed):
    """:func:`initial_weights` of validated arguments."""
    weights, signs = np.empty((draws, width, d)), np.empty((draws, width))
    for s in range(draws):
        rng = generator(seed, width, s)
        if symmetric:
            half = kappa * rng.standard_normal((width // 2, d))
            weights[s] = np.vstack([half, half])
            signs[s] = np.repeat([1.0, -1.0], width // 2)
        else:
            weights[s] = kappa * rng.standard_normal((width, d))
            signs[s] = rng.choice([-1.0, 1.0], width)
    return weights, signs


_ANGLE = P.Param("angle", Interval(-np.inf, np.inf), description="angle between the two tasks (radians, finite)")
#: the task families use the coordinates e₁ and e₂
_TASK_D = P.D.with_range(low=2)

#: the two task families of TDR §5.1 (:func:`task_pair`)
TASK_FAMILIES = ("shared-inputs", "shared-labels")


def _unit_rows(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _task_pair_bytes(n, d) -> float:
    """Peak bytes of :func:`task_pair`: five (n, d) arrays (two draws, their unit rows, the rotated inputs)."""
    return FLOAT_BYTES * 5 * n * d


def task_pair(family, angle, n=8, d=5, seed=3):
    """(X_P, y_P, X_Q, y_Q) of one member of a TDR §5.1 task family at similarity cos(angle), on the host (the data
    of :func:`simulate_transfer`).

    ``"shared-inputs"``: X_Q = X_P, y_P = e₁ᵀx, y_Q = (cos θ e₁ + sin θ e₂)ᵀx (labels vary, inputs do not).
    ``"shared-labels"``: one labeling function e₁ᵀx, X_Q = rows of cos φ·X_P + sin φ·X' normalized (X'
    independent unit rows; inputs vary, the labeling function does not). n ≥ 1 points uniform on S^{d−1}
    (d ≥ 2) from ``seed`` (an integer ≥ 0, a numpy Generator or a SeedSequence; the empty key of its own seed,
    :func:`transfertheory.sim.seeding.generator`); at angle 0 both families are the source task itself. Sizes whose
    :func:`_task_pair_bytes` exceed the memory guard's limit are refused before drawing.
    """
    one_of(family, "family", TASK_FAMILIES)
    angle, n, d = _ANGLE.scalar(angle), P.N.scalar(n), _TASK_D.scalar(d)
    check_memory(_task_pair_bytes(n, d), what="task_pair", params={"n": n, "d": d})
    rng = generator(root_seed(seed, "seed"))
    x_p, other = _unit_rows(rng.standard_normal((n, d))), _unit_rows(rng.standard_normal((n, d)))
    if family == "shared-inputs":
        return x_p, x_p[:, 0], x_p, math.cos(angle) * x_p[:, 0] + math.sin(angle) * x_p[:, 1]
    x_q = _unit_rows(math.cos(angle) * x_p + math.sin(angle) * other)
    return x_p, x_p[:, 0], x_q, x_q[:, 0]


def two_layer_outputs(weights, signs, x):
    """f(X) = (1/√m) aᵀσ(WᵀX) per instance: weights (b, m, d), signs (b, m), x (n, d) → (b, n)."""
    pre = weights @ x.T
    return (signs[:, None, :] @ (pre * (pre > 0)))[:, 0, :] / math.sqrt(weights.shape[1])


def hidden_activation_gradient(weights, signs, x, y):
    """∂L/∂X¹ (b, m, n) of L = ½‖y − aᵀX¹/√m‖² with respect to the hidden activations X¹ = σ(WᵀX) (TDR Thm 1).

    L depends on W only through X¹ (m × n), so ∂L/∂X¹_ri = a_r(u_i − y_i)/√m with u = aᵀX¹/√m (TDR App. C.1,
    Eq. 21): built here entry by entry from the network's outputs, its squared Frobenius norm is Thm 1's
    ‖∂L/∂X¹‖² (equal to ‖u − y‖² because aᵀa = m for a_r = ±1).
    """
    residual = two_layer_outputs(weights, signs, x) - y[None, :]
    return signs[:, :, None] * residual[:, None, :] / math.sqrt(weights.shape[1])


def width_rate(widths, values):
    """(rate, intercept) of the least-squares line log(values) ≈ intercept + rate·log m over the widths: the
    power of m at which a gap closes (the one log–log fit of the TDR claims and figure). ``widths`` and
    ``values``: sequences of positive numbers of one length, at least two distinct widths."""
    widths = positive("widths").sequence(widths)
    values = positive("values").sequence(values)
    if values.shape != widths.shape or np.unique(widths).size < 2:
        raise ValueError(f"widths and values must have one length and at least two distinct widths, got "
                         f"{widths.size} widths ({np.unique(widths).size} distinct) and {values.size} values")
    rate, intercept = np.polyfit(np.log(widths), np.log(values), 1)
    return float(rate), float(intercept)


def _rkc_stage_cap(x):
    """Largest s with β(s) ≤ 1.2·λ_max/λ_min of H∞(X) (at least 2): the RKC stage cap of :func:`train_two_layer`.

    Integrated to the steady state, RKC contracts a mode z = −hλ by ≈ e^z only while |z| is moderate and by the
    damping factor (≈ 0.59) once hλ ≫ 1; capping hρ ≤ β(s) keeps the slowest mode at hλ_min ≲ 1, where a stage
    buys the most decay (docs/tdr.md, "Trainer"). From the data's Gram matrix, so the same for every instance.
    """
    condition = gram_solve(to_host(x)).condition_number
    s = 2
    while s < 400 and rkc_stability_bound(s + 1) <= 1.2 * condition:
        s += 1
    return s


#: on the host, instances are trained in groups whose states fit this many bytes (one core's L2 cache): a group's
#: weights and gradients stay in the cache from one step to the next, as a single network's do in a per-network
#: loop (docs/benchmarks.md, "Cache-sized blocks")
HOST_GROUP_BYTES = 2**20


def _host_groups(blocks):
    """Consecutive runs of instances, [(block, start, stop), …] per group, each group's states at most
    :data:`HOST_GROUP_BYTES` (an instance larger than that is a group of its own)."""
    groups, current, used = [], [], 0
    for g, block in enumerate(blocks):
        size = block[0].nbytes
        for i in range(block.shape[0]):
            if current and used + size > HOST_GROUP_BYTES:
                groups.append(current)
                current, used = [], 0
            if current and current[-1][0] == g:
                current[-1] = (g, current[-1][1], i + 1)
            else:
                current.append((g, i, i + 1))
            used += size
    return groups + [current]


def _joined(results, y):
    """One :class:`~transfertheory.sim.integrator.FlowResult` with final states ``y`` from those of consecutive
    groups of instances."""
    return FlowResult(y=y, convergence=Convergence.concatenate([r.convergence for r in results]),
                      loss=np.concatenate([r.loss for r in results]),
                      residual=np.concatenate([r.residual for r in results]),
                      evaluations=sum(r.evaluations for r in results), rejected=sum(r.rejected for r in results),
                      max_stages=max(r.max_stages for r in results),
                      stats=FlowStats.concatenate([r.stats for r in results]))


@guarded_entry_point
def train_two_layer(weights, signs, x, y, *, flow: FlowSettings = TRAINING_FLOW, max_memory=None, **settings):
    """Train every instance on one set (x, y) to ‖∇L‖ ≤ gtol, networks of several widths in one integration, at
    the integrator settings ``flow`` (:data:`TRAINING_FLOW` unless given; keyword ``settings`` — ``scheme``,
    ``step_fraction``, ``rtol``, ``gtol``, ``max_time``, ``max_steps`` — override it).

    ``weights`` (b, m, d) and ``signs`` (b, m) on the backend, or lists of such blocks of different widths
    (b_g, m_g, d) and (b_g, m_g): instances are numbered block after block, and all of them are integrated as one
    :class:`~transfertheory.sim.integrator.RaggedBatch` (no padding to the largest width; each block's gradient
    is one batched computation). ``scheme="euler"`` (default): gradient descent W ← W − η∇L with the
    per-instance step η = step_fraction/λ_max of the instance's empirical tangent kernel, refreshed every 25
    steps (TDR §6.1 trains by gradient descent). ``scheme="rkc"``: the gradient flow by error-controlled RKC2
    (``rtol``), its stage count capped by :func:`_rkc_stage_cap` (and ``max_stages``). On a device everything is one integration;
    on the host, consecutive instances are integrated in groups of at most :data:`HOST_GROUP_BYTES` of states
    (an instance's result does not depend on its batch or group). Returns (final weights in the layout of
    ``weights``, :class:`~transfertheory.sim.integrator.FlowResult` over all instances in order, its states
    (b, m·d) for one block and a ``RaggedBatch`` for a list). ``max_memory``: the memory guard's limit (bytes or
    ``"64G"``); training whose working set (the final weights and :func:`_trainer_bytes`) exceeds it is refused.
    """
    single = not isinstance(weights, (list, tuple))
    blocks, sign_blocks = ([weights], [signs]) if single else (list(weights), list(signs))
    if not blocks or len(sign_blocks) != len(blocks) or any(b.shape[0] == 0 for b in blocks):
        raise ValueError("weights and signs must be non-empty blocks of networks, one signs block per weights block")
    flow = flow.updated(**settings)
    units, largest = sum(b.shape[0] * b.shape[1] for b in blocks), max(b.shape[1] for b in blocks)
    xp = get_backend(*blocks)
    check_memory(FLOAT_BYTES * units * x.shape[1] + _trainer_bytes(units, largest, x.shape[1], x.shape[0],
                                                                    flow.scheme, xp is not np),
                 what="train_two_layer", xp=xp, max_memory=max_memory,
                 params={"networks": sum(b.shape[0] for b in blocks), "largest width": largest, "n": x.shape[0]})
    if flow.scheme == "rkc":
        flow = flow.updated(max_stages=min(flow.solver.max_stages, _rkc_stage_cap(x)))
    groups = _host_groups(blocks) if xp is np else [[(g, 0, b.shape[0]) for g, b in enumerate(blocks)]]
    finals, results = [xp.empty_like(b) for b in blocks], []
    for group in groups:
        parts = tuple(blocks[g][i:j].reshape(j - i, -1) for g, i, j in group)
        kernels = [TwoLayerStages(x, y, sign_blocks[g][i:j]) for g, i, j in group]
        if len(group) == 1:  # one width: its dense block as it is (ragged bookkeeping would only cost time)
            states, kernel = parts[0], kernels[0]
        else:
            states, kernel = RaggedBatch(parts), WidthBlockStages(kernels, [j - i for _, i, j in group])
        tolerance = {}  # RKC's absolute tolerance: rtol × the RMS weight (weights crossing 0 would set the scale)
        if flow.scheme == "rkc":
            tolerance["atol"] = flow.rtol * np.concatenate([to_host((s**2).mean(axis=1)) for s in parts]) ** 0.5
        result = integrate_gradient_flow(kernel.gradient, states, flow, stage_kernel=kernel, **tolerance)
        for (g, i, j), state in zip(group, result.y.blocks if len(group) > 1 else (result.y,)):
            finals[g][i:j] = state.reshape(j - i, *blocks[g].shape[1:])
        results.append(result)
    states = [f.reshape(f.shape[0], f.shape[1] * f.shape[2]) for f in finals]
    result = _joined(results, states[0] if single else RaggedBatch(tuple(states)))
    return (finals[0] if single else finals), result


def _gradient_norm(weights, signs, x, y):
    """Thm 1's ‖∂L/∂X¹‖²_F per instance, from the explicit gradient matrix."""
    return (hidden_activation_gradient(weights, signs, x, y) ** 2).sum(axis=(1, 2))


def _frobenius(difference):
    return (difference**2).sum(axis=(1, 2)) ** 0.5


def _stage_rows(width, stage, draws, distance, norms, result, rows) -> pd.DataFrame:
    """One stage's rows of one width: draws ``rows`` of the integration ``result``."""
    return pd.DataFrame({"width": width, "stage": stage, "draw": np.arange(draws),
                         "distance": np.broadcast_to(distance, (draws,)), **norms, "loss": result.loss[rows],
                         **convergence_columns(result.convergence[rows])})


def _table(widths, data, draws, kappa, symmetric, seed, xp, flow) -> pd.DataFrame:
    """Pretrain every network of every width as one batch, then fine-tune and train from scratch as another;
    the rows of :func:`simulate_transfer`."""
    x_p, y_p, x_q, y_q = data
    starts = [_initial_weights(m, x_p.shape[1], draws, kappa, symmetric, seed) for m in widths]
    w0 = [to_device(w, xp) for w, _ in starts]
    a = [to_device(signs, xp) for _, signs in starts]
    w_p, pretrain = train_two_layer(w0, a, x_p, y_p, flow=flow)
    # one block per width: its fine-tuning networks (from W(P)) then its scratch networks (from W(0))
    target_weights, target = train_two_layer([xp.concatenate(pair) for pair in zip(w_p, w0)],
                                             [xp.concatenate([signs, signs]) for signs in a], x_q, y_q, flow=flow)
    frames, outputs = [], {}
    for k, width in enumerate(widths):
        w_q, w_s = target_weights[k][:draws], target_weights[k][draws:]
        norms = {"gradient_norm_init": to_host(_gradient_norm(w0[k], a[k], x_q, y_q)),
                 "gradient_norm_pretrained": to_host(_gradient_norm(w_p[k], a[k], x_q, y_q))}
        outputs[width] = to_host(two_layer_outputs(w_p[k], a[k], x_q))
        frames += [_stage_rows(width, "pretrain", draws, np.nan, norms, pretrain, slice(k * draws, (k + 1) * draws)),
                   _stage_rows(width, "finetune", draws, to_host(_frobenius(w_q - w_p[k])), norms, target,
                               slice(2 * k * draws, (2 * k + 1) * draws)),
                   _stage_rows(width, "scratch", draws, to_host(_frobenius(w_s - w0[k])), norms, target,
                               slice((2 * k + 1) * draws, (2 * k + 2) * draws))]
    table = pd.concat(frames, ignore_index=True)
    table.attrs.update(kappa=kappa, symmetric=symmetric, seed=seed, backend=backend_name(xp), flow=flow.as_dict(),
                       pretrained_outputs=outputs)
    return table


def _trainer_bytes(units, largest, d, n, scheme, on_device) -> float:
    """Peak bytes :func:`train_two_layer` adds to the weights of networks of ``units`` hidden units in all (the
    largest ``largest`` wide) on n samples: the integrator holds its solver's ``peak_state_copies`` copies of the states
    it integrates at once (on a device all of them; on the host one group of :data:`HOST_GROUP_BYTES`, or one
    network if larger), the stage kernel's two state-sized buffers (the signs repeated along d, the scaled
    gradient of a step) and three (instances, m, n) activation patterns of them (the tangent-kernel radius, the
    gradient's pre-activations and activation pattern)."""
    if on_device:
        flow_states, patterns = units * d, units * n
    else:
        flow_states = min(units * d, max(HOST_GROUP_BYTES // FLOAT_BYTES, largest * d))
        patterns = flow_states // d * n
    return FLOAT_BYTES * ((SOLVERS[scheme].peak_state_copies + 2) * flow_states + 3 * patterns)


def _memory_estimate(widths, d, n, draws, scheme, on_device) -> float:
    """Peak bytes of :func:`simulate_transfer` from the arrays it allocates.

    With S = draws·Σm·d the floats of all networks' weights: six copies stay allocated (W(0), W(P), the
    fine-tuning + scratch batch and its final weights, two each); the trainer's working set of the target stage
    (2·draws·Σm units, :func:`_trainer_bytes`); Thm 1's gradients ∂L/∂X¹ take three (draws, m, n) arrays at the
    largest width (pre-activations, activations, the gradient; then the gradient and its square). n = the larger
    sample size.
    """
    units = draws * sum(widths)
    return (FLOAT_BYTES * (6 * units * d + 3 * draws * max(widths) * n)
            + _trainer_bytes(2 * units, max(widths), d, n, scheme, on_device))


@guarded_entry_point
def simulate_transfer(X_P, y_P, X_Q, y_Q, widths, *, draws=FIELDS["draws"].default, kappa=FIELDS["kappa"].default,
                      symmetric=True, seed=0, backend=None, max_memory=None, flow=None) -> pd.DataFrame:
    """Train ``draws`` networks per width on P, fine-tune on Q, and train on Q from scratch (module docstring).

    All widths and draws of a stage are trained in one integration (module docstring, "Batching"); each
    network's result is the one a call with its width alone gives.

    Parameters
    ----------
    X_P, y_P, X_Q, y_Q : array-likes
        Unit-norm inputs (n, d) and labels (n,) in [−1, 1] (validated as in
        :mod:`transfertheory.theory.tdr`; λ_min of both Grams must be positive for convergence).
    widths : non-empty sequence of int ≥ 2 (even with ``symmetric``)
    draws : int ≥ 1
        Networks per width (independent initial draws).
    kappa : float > 0
        Initialization scale κ.
    seed : int ≥ 0, numpy Generator or SeedSequence
        Root of the initial draws (:func:`initial_weights`).
    flow : None, :class:`~transfertheory.sim.integrator.FlowSettings` or a mapping of its settings by name
        Trainer settings (:func:`train_two_layer`; None: :data:`TRAINING_FLOW`; a mapping: its changes, e.g.
        ``{"scheme": "rkc", "rtol": 1e-4}``): gradient descent at η = step_fraction/λ_max (``scheme="euler"``,
        default) or the RKC gradient flow at ``rtol`` (``"rkc"``); ``converged`` when ‖∇L‖ ≤ gtol; the
        per-stage status is reported.
    backend : "auto" | "numpy" | "cupy" | None
    max_memory : int, str or None
        Memory limit (bytes or ``"64G"``; None: ``TRANSFERTHEORY_MAX_MEMORY``, else the memory available, on
        the device for CuPy): a run whose estimated peak (:func:`_memory_estimate`, ~6·draws·Σm·d floats plus
        the integrator's working set) exceeds it is refused with a ValueError before any work.

    Returns
    -------
    pandas.DataFrame
        One row per (width, stage, draw), widths in the given order, stages :data:`STAGES`: ``width``,
        ``stage``, ``draw``; ``distance`` = ‖W(Q) − W(P)‖_F (finetune), ‖W_s(Q) − W(0)‖_F (scratch), NaN
        (pretrain); the draw's ``gradient_norm_init`` = ‖∂L(W(0))/∂X¹‖² and ``gradient_norm_pretrained`` =
        ‖∂L(W(P))/∂X¹‖² on the target set (TDR Thm 1, on every stage's row); the stage's final ``loss`` and
        convergence columns (:func:`~.convergence.convergence_columns`). ``attrs``: ``kappa``, ``symmetric``,
        ``seed`` (the integer root), ``backend``, ``flow`` (the settings by name) and ``pretrained_outputs`` ({width: (draws, n_Q) array of
        u_Q(P), the pretrained networks' outputs on X_Q}).
    """
    transfer_summary(X_P, y_P, X_Q, y_Q)  # validates the data (ValueError naming the argument)
    widths = [int(m) for m in FIELDS["width"].param.sequence(widths, "widths", distinct=True)]
    draws, kappa = checked(FIELDS, draws=draws, kappa=kappa).values()
    seed, flow = root_seed(seed), TRAINING_FLOW.overridden(flow, "flow")
    if symmetric and any(m % 2 for m in widths):
        raise ValueError(f"widths must be even with symmetric=True, got {widths}")
    xp = resolve_backend(backend)
    d, n = np.shape(X_P)[1], max(np.shape(X_P)[0], np.shape(X_Q)[0])
    check_memory(_memory_estimate(widths, d, n, draws, flow.scheme, xp is not np), what="simulate_transfer", xp=xp,
                 max_memory=max_memory, params={"widths": widths, "draws": draws, "d": d, "n": n})
    data = tuple(to_device(np.asarray(v, dtype=float), xp) for v in map(to_host, (X_P, y_P, X_Q, y_Q)))
    return _table(widths, data, draws, kappa, symmetric, seed, xp, flow)


def _tdr_memory(p, on_device) -> tuple:
    """Peak bytes of the ``tdr`` experiment at point ``p``: its task pair (:func:`_task_pair_bytes`), then the larger
    of the Gram decompositions that validate it (about six (n, n) arrays) and :func:`simulate_transfer`'s run."""
    n, d = p["n"], p["d"]
    run = _memory_estimate([p["width"]], d, n, p["draws"], p["scheme"], on_device)
    return (_task_pair_bytes(n, d) + max(FLOAT_BYTES * 6 * n * n, run),
            {"n": n, "d": d, "width": p["width"], "draws": p["draws"]})


def _tdr(p, seed, backend):
    data = task_pair(p["family"], p["angle"], n=p["n"], d=p["d"], seed=p["data_seed"])
    return simulate_transfer(*data, [p["width"]], draws=p["draws"], kappa=p["kappa"], seed=seed, backend=backend,
                             **flow_arguments(p))


#: the ``tdr`` experiment: networks of one width on one §5.1 task pair (:func:`task_pair`'s parameters), its
#: :data:`FIELDS` and the trainer's ``scheme``, ``gtol``, ``max_time`` and ``max_steps``; one row per (stage, draw)
TDR = Experiment(
    name="tdr", paper="TDR §6", version=2,
    description="wide two-layer ReLU networks of one width: pretraining, fine-tuning and scratch on a §5.1 task pair",
    fields=(Field("family", "shared-inputs", choices=TASK_FAMILIES), Field("angle", 1.0, P.THETA.with_range(high=np.pi)),
            Field("n", 8, P.N), Field("d", 5, P.D), Field("data_seed", 3, P.SEED), *FIELDS.values(),
            *flow_fields(TRAINING_FLOW, "scheme", "gtol", "max_time", "max_steps")),
    example=dict(width=100, draws=2),
    renamed={"seeds": "draws", "instance": "draw"},
    simulate=_tdr, memory=_tdr_memory)
