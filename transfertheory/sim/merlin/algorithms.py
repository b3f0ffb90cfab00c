r"""The algorithms of MeRLin §5 by gradient flow, batched over seeds, with random restarts.

Each algorithm is trained for every seed (and restart) at once — by its function (:func:`pretrain`,
:func:`finetune_head`, :func:`finetune_full`) or as a :class:`Problem` that :func:`solve` trains (target-only,
joint training, MeRLin) — into an :class:`Outcome`:
the parameters of the restart kept for each seed, the target population loss of its predictor (exact,
:func:`transfertheory.theory.merlin.target_loss`), its objective and the convergence report.

Restarts. The losses are non-convex and a flow can stop at a poor stationary point (e.g. the zero network,
a local minimum of every regularized objective because the loss decreases only cubically away from it).
Where the theorems speak of global minimizers (Lemma 4, Theorem 1 joint training, Theorem 2), each seed
runs R restarts from independent Gaussian starts and keeps the **first restart whose objective is within**
``OBJECTIVE_TOL`` **of the best**; ``restarts_needed`` is that restart's index + 1. Keeping the first (not the
argmin, which among exactly tied minimizers would be decided by rounding) keeps the choice exchangeable over
the restarts, so symmetric minimizers (e.g. the k source features of Lemma 4) are chosen uniformly.

The training: the regularized objectives of MeRLin §5 as one batched objective, and gradient-flow training of it.

Every algorithm of MeRLin §5 minimizes a sum of the same terms over some of the blocks (θ_s, θ_t, φ):

    w_s·L_Ds(θ_s, φ) + w_t·L_D̂t(θ_t, φ) + ρ·L_val(φ) + λ(‖θ_s‖² + ‖θ_t‖² + ‖φ‖²_F)   (trained blocks only)

* pre-training (Lemma 4): w_s = 1, blocks (θ_s, φ), L_Ds the exact population loss;
* head-only fine-tuning: w_t = 1, block θ_t, φ fixed to the pre-trained features;
* full fine-tuning and target-only training: w_t = 1, blocks (θ_t, φ) (from the pre-trained resp. a random φ);
* joint training (Lemma 1): w_s = 1 − α, w_t = α, blocks (θ_s, θ_t, φ);
* MeRLin (Eq. 70): w_s = 1, ρ > 0, blocks (θ_s, φ); L_val is the validation loss of the ridge inner head
  averaged over S fixed random train/validation splits (:class:`.losses.ValidationSplits`).

:func:`train` integrates the gradient flow of an :class:`Objective` with the package's integrator (dense RKC
stages); every instance (a row of the batch: one seed and restart) has its own data and stops on its own.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cached_property
from operator import itemgetter

import numpy as np

from ..._memory import FLOAT_BYTES, check_memory, guarded_entry_point
from ..._validation import as_generator
from ...backend import get_backend, resolve_backend, to_device, to_host
from ...theory import merlin as M
from ..convergence import Convergence, ReportsConvergence
from ..integrator import RKC2, ErrorController, FlowSettings, flow_state_bytes, integrate_gradient_flow, positive
from .losses import ValidationSplits, empirical_loss_and_grad, features, pad_orders, ridge_head, seed_split_orders

__all__ = ["Outcome", "OBJECTIVE_TOL", "Problem", "solve", "pretrain", "finetune_head", "finetune_full",
           "joint_problem", "merlin_problem", "feature_usage", "MERLIN_RIDGE", "MERLIN_SPLITS",
           "merlin_restarts", "Objective", "Trained", "train", "random_init", "stack_objectives", "FLOW_SETTINGS",
           "STUDY_TOLERANCES", "INIT_SCALE", "instance_memory", "check_flow_memory"]

#: MeRLin's settings, the defaults of :func:`merlin_problem` and :func:`.experiment.run_comparison`, used by the
#: figure and the claims: inner ridge λ_h and the number of validation splits S (docs/merlin.md, "What the success
#: frequency depends on")
MERLIN_RIDGE = 1e-2
MERLIN_SPLITS = 10


def merlin_restarts(k):
    """Restarts per seed of MeRLin's studies: 3k (a restart reaches e₁ with probability ≈ 1/k)."""
    return 3 * k


#: two restarts reach the same minimum when their objectives differ by at most this (flows stop at ‖∇‖ ≤ 1e-7)
OBJECTIVE_TOL = 1e-6


@dataclass(frozen=True)
class Outcome(ReportsConvergence):
    """One algorithm's result per seed (arrays of length ``seeds``; ``params`` and ``head`` on the backend).

    ``head`` is the target head θ_t the predictor uses with ``params["phi"]`` (for MeRLin the ridge head fit
    on all n_t target samples); ``convergence`` the kept flow's record. ``restarts_needed``: index + 1 of the
    restart kept (see module docstring).
    """

    params: dict
    head: object
    target_loss: np.ndarray
    objective: np.ndarray
    convergence: Convergence
    restarts_needed: np.ndarray
    restarts_at_best: np.ndarray


def _outcome(trained: Trained, seeds: int, restarts: int, head_of, fixed_phi=None) -> Outcome:
    """Keep one restart per seed, the first within :data:`OBJECTIVE_TOL` of the seed's best objective (its index + 1
    is ``restarts_needed``); ``head_of(params)`` gives the target head of the kept networks, ``fixed_phi`` the
    features of a flow that did not train them (one restart per seed)."""
    objective = trained.objective.reshape(seeds, restarts)
    finite = np.where(np.isfinite(objective), objective, np.inf)
    at_best = finite <= finite.min(axis=1, keepdims=True) + OBJECTIVE_TOL
    first = at_best.argmax(axis=1)
    kept = trained.rows(np.arange(seeds) * restarts + first)
    params = kept.params if fixed_phi is None else {**kept.params, "phi": fixed_phi}
    head = head_of(params)
    loss = np.asarray(to_host(M.target_loss(head, params["phi"])))
    return Outcome(params, head, loss, kept.objective, kept.convergence, first + 1, at_best.sum(axis=1))


#: the target head θ_t of the kept networks (every algorithm but pre-training and MeRLin)
_target_head = itemgetter("theta_t")


def _zero_head(params):
    """The target head of joint training at α = 0: θ_t enters the objective only through λ‖θ_t‖², so its
    minimizer is θ_t = 0 (the flow does not carry it)."""
    phi = params["phi"]
    return get_backend(phi).zeros(phi.shape[:1] + phi.shape[-1:])


def _repeat(array, times):
    """Each row of ``array`` repeated ``times`` times (seed-major order, as the restarts are laid out)."""
    return get_backend(array).repeat(array, times, axis=0)


@guarded_entry_point
def pretrain(d, m, k, lam, seeds, restarts, rng, backend="numpy", init_scale=0.5, **flow) -> Outcome:
    """Pre-training on the exact source population loss + λ(‖θ_s‖² + ‖φ‖²_F) (Lemma 4), R restarts per seed.

    ``head`` is θ_s (the outcome's ``target_loss`` is then that of the source predictor on the target law).
    The source loss is exact (no data array to infer the array module from): ``backend`` names it (default
    ``"numpy"``, the host; None: ``TRANSFERTHEORY_BACKEND``). Refused before drawing the starts when the flow does not fit in
    memory (``flow["max_memory"]``, O(B·d²)).
    """
    check_flow_memory("pretrain", seeds * restarts, d, m, source=True, max_memory=flow.get("max_memory"))
    xp = resolve_backend(backend)
    objective = Objective(d=d, m=m, lam=lam, k=k, source_weight=1.0)
    start = {name: to_device(block, xp) for name, block in random_init(objective, seeds * restarts, rng,
                                                                          init_scale).items()}
    trained = train(objective, start, **flow)
    return _outcome(trained, seeds, restarts, itemgetter("theta_s"))


def finetune_head(phi, X, y, lam, **flow) -> Outcome:
    """Head-only fine-tuning: θ_t from 0 by gradient flow on L_D̂t(θ_t, φ) + λ‖θ_t‖² with φ fixed (convex)."""
    xp = get_backend(phi, X)
    objective = Objective(d=phi.shape[-2], m=phi.shape[-1], lam=lam, target_weight=1.0, X=X, y=y, fixed_phi=phi)
    trained = train(objective, {"theta_t": xp.zeros(phi.shape[:1] + phi.shape[-1:])}, **flow)
    return _outcome(trained, phi.shape[0], 1, _target_head, fixed_phi=phi)


def finetune_full(theta_t, phi, X, y, lam, **flow) -> Outcome:
    """Full fine-tuning: (θ_t, φ) by gradient flow on L_D̂t + λ(‖θ_t‖² + ‖φ‖²_F) from the fine-tuned head and φ_pre."""
    objective = Objective(d=phi.shape[-2], m=phi.shape[-1], lam=lam, target_weight=1.0, X=X, y=y)
    trained = train(objective, {"theta_t": theta_t, "phi": phi}, **flow)
    return _outcome(trained, phi.shape[0], 1, _target_head)


@dataclass(frozen=True)
class Problem:
    """One algorithm's flows for a batch of seeds, before training: the objective (R restarts per seed, seed-major),
    the start, and ``head_of(params)``, the target head of the kept networks. :func:`solve` trains
    problems of the same algorithm together."""

    objective: Objective
    start: dict
    seeds: int
    restarts: int
    head_of: object


def solve(problems, **flow) -> list:
    """Train problems of one algorithm (same terms and settings; their target sets may differ in size, and MeRLin's
    their number of validation splits) in one integrator call and keep one restart per seed of each: an
    :class:`Outcome` per problem, in order.

    The objectives are stacked (:func:`stack_objectives`: target sets padded with zero samples, MeRLin's
    splits with masked-out ones). The integrator's arithmetic is per instance, so each problem's flows are those it
    would have alone; one call of many instances pays the per-step overheads once (docs/merlin.md, "Cost").
    """
    objective = stack_objectives([p.objective for p in problems])
    xp = get_backend(*problems[0].start.values())
    start = {name: xp.concatenate([q.start[name] for q in problems]) for name in problems[0].start}
    trained = train(objective, start, **flow)
    outcomes, offset = [], 0
    for problem in problems:
        size = problem.seeds * problem.restarts
        part = trained.rows(slice(offset, offset + size))
        outcomes.append(_outcome(part, problem.seeds, problem.restarts, problem.head_of))
        offset += size
    return outcomes


def joint_problem(X, y, k, lam, alpha, m, restarts, rng, init_scale=0.5) -> Problem:
    """Joint training: (1 − α)L_Ds(θ_s, φ) + αL_D̂t(θ_t, φ) + λ(‖θ_s‖² + ‖θ_t‖² + ‖φ‖²_F), R restarts per seed.
    At α = 1 this is target-only training, (θ_t, φ) on L_D̂t + λ(‖θ_t‖² + ‖φ‖²_F) (no source term, no θ_s)."""
    seeds, d = X.shape[0], X.shape[-1]
    objective = Objective(d=d, m=m, lam=lam, k=k, source_weight=1 - alpha, target_weight=alpha,
                          X=_repeat(X, restarts), y=_repeat(y, restarts))
    start = random_init(objective, seeds * restarts, rng, init_scale)
    return Problem(objective, start, seeds, restarts, _target_head if alpha > 0 else _zero_head)


def merlin_problem(X, y, k, lam, m, restarts, rng, rho=1.0, ridge=MERLIN_RIDGE, splits=MERLIN_SPLITS,
                   init_scale=0.5) -> Problem:
    """MeRLin (Eq. 70, Algorithm 2): L_Ds + λ(‖θ_s‖² + ‖φ‖²_F) + ρ·(1/S)Σ_s L_val,s with the ridge inner head;
    R restarts per seed. The splits (:func:`.losses.seed_split_orders`: all balanced splits when there are at
    most S, else S random ones) are drawn once per seed and shared by its restarts, so that every restart
    minimizes the same objective and the restart kept is the best on it. The reported head is the ridge head
    (same λ_h = ``ridge``) fit on all n_t target samples."""
    seeds, n, d = X.shape
    if n < 2:
        raise ValueError(f"n_t must be an integer >= 2 for MeRLin (a train and a validation half), got {n}")
    rng = as_generator(rng)  # one stream for the splits and the start
    Xr, yr = _repeat(X, restarts), _repeat(y, restarts)
    objective = Objective(d=d, m=m, lam=lam, k=k, source_weight=1.0, meta_weight=rho, ridge=ridge, X=Xr, y=yr,
                          splits=np.repeat(seed_split_orders(seeds, n, splits, rng), restarts, axis=0))
    start = random_init(objective, seeds * restarts, rng, init_scale)

    def head_of(params):
        return ridge_head(features(X, params["phi"])[1], y, ridge)

    return Problem(objective, start, seeds, restarts, head_of)


def feature_usage(phi, threshold=0.01):
    """Which input coordinates the features φ (B, d, m) use: (top coordinate (1-based), its share of ‖φ‖²_F,
    the 1-based coordinates with share > ``threshold`` as "1;3"; "" for φ = 0)."""
    weight = np.asarray(to_host((phi * phi).sum(axis=-1)))
    total = weight.sum(axis=1, keepdims=True)
    share = np.divide(weight, total, out=np.zeros_like(weight), where=total > 0)
    coords = [";".join(str(j + 1) for j in np.flatnonzero(row > threshold)) for row in share]
    return share.argmax(axis=1) + 1, share.max(axis=1), coords


#: the scale of the Gaussian start (:func:`random_init`)
INIT_SCALE = positive("init_scale", "scale of the random start")

#: integrator settings of every flow: rtol of the RKC error control, gtol on ‖∇‖, time and step budget, and at
#: most 80 RKC stages per step (near a minimum h and the stage count grow without bound). A step of a batch costs
#: as many gradient calls as its largest stage count: a higher cap makes the steps of the bulk dearer, a lower one
#: leaves a flow held by stability (near a saddle) many capped steps alone (the cap's choice: docs/merlin.md
#: "The stage cap")
FLOW_SETTINGS = FlowSettings(RKC2(max_stages=80), ErrorController(rtol=1e-5), gtol=1e-7, max_time=2e4, max_steps=20_000)
#: the tolerances of the package's MeRLin studies (figure ``merlin_fig`` and the ``merlin.sim`` claims), overrides
#: of :data:`FLOW_SETTINGS`: rtol 1000×, gtol 10× looser; their results do not move when both are tightened 10×
#: (docs/merlin.md, "What the success frequency depends on"; rtol 1e-4 → 1e-3 → 1e-2 each cut the accepted steps
#: and moved no success frequency, recovered fraction or kept restart of the figure and no claim status,
#: docs/merlin.md "Cost")
STUDY_TOLERANCES = {"rtol": 1e-2, "gtol": 1e-6}


@dataclass(frozen=True)
class Objective:
    """One of the regularized objectives above for a batch of B instances (arrays on one backend).

    ``X, y`` (B, n, d), (B, n): each instance's target data (needed when ``target_weight`` or ``meta_weight`` > 0);
    ``splits`` (B, S, n) for MeRLin (``meta_weight`` > 0): S orderings of each instance's n target samples, the
    first ⌊n/2⌋ of each the training half (:func:`.losses.split_orders`);
    ``fixed_phi`` (B, d, m): features kept fixed (head-only fine-tuning);
    ``samples`` (B,): each instance's number of target samples when target sets of several sizes share the
    batch, padded with zero samples (:func:`stack_objectives`); None: all n.
    """

    d: int
    m: int
    lam: float
    k: int = 2
    source_weight: float = 0.0
    target_weight: float = 0.0
    meta_weight: float = 0.0
    ridge: float = 0.0
    X: object = None
    y: object = None
    splits: object = None
    fixed_phi: object = None
    samples: object = None

    @property
    def blocks(self) -> tuple:
        """The trained blocks as (name, shape) pairs in the order of the state vector; θ_s with the source term, θ_t
        with the target term, φ unless fixed."""
        blocks = (("theta_s", (self.m,), self.source_weight > 0), ("theta_t", (self.m,), self.target_weight > 0),
                  ("phi", (self.d, self.m), self.fixed_phi is None))
        return tuple((name, shape) for name, shape, trained in blocks if trained)

    def unpack(self, y) -> dict:
        """The trained blocks of states y (b, P) by name, each shaped (b,) + its shape (views)."""
        return {name: y[:, start:stop].reshape((y.shape[0],) + shape)
                for name, (start, stop, shape) in self._offsets.items()}

    def pack(self, params: dict):
        xp = get_backend(*params.values())
        return xp.concatenate([params[name].reshape(params[name].shape[0], -1) for name, _ in self.blocks], axis=1)

    @cached_property
    def _source(self):
        """The exact source population loss, validated and built once (:class:`theory.merlin.PopulationLoss`)."""
        return M.population_loss_terms(self.d, self.k)

    @cached_property
    def _validation(self):
        return ValidationSplits(self.X, self.y, self.splits, self.ridge, self.samples)

    @cached_property
    def _samples(self):
        """``samples`` as floats on the data's backend (None when the target sets are not padded)."""
        return None if self.samples is None else get_backend(self.X).asarray(self.samples, dtype=self.X.dtype)

    @cached_property
    def _offsets(self) -> dict:
        """(start, stop, shape) of each trained block in the state vector, by name."""
        out, start = {}, 0
        for name, shape in self.blocks:
            out[name] = (start, start + math.prod(shape), shape)
            start += math.prod(shape)
        return out

    def value_and_grad(self, y, rows):
        """(∇, objective) of the instances ``rows`` at states y (b, P): the integrator's gradient callable.

        The gradient is written into one (b, P) array (the penalty's 2λy first, then each term added into its
        blocks' columns); a term of weight 1 is added as it is (no multiplication by 1)."""
        xp = get_backend(y)
        index = rows if xp is np else xp.asarray(rows)
        grad = 2 * self.lam * y  # the penalty λ‖·‖² of the trained blocks
        value = self.lam * (y * y).sum(axis=1)
        b, blocks, block = y.shape[0], self._offsets, self.unpack(y)
        phi = block["phi"] if self.fixed_phi is None else self.fixed_phi[index]
        terms = []  # (weight, loss, {block: its gradient})
        if self.source_weight > 0:
            loss, g_theta, g_phi = self._source.loss_and_grad(block["theta_s"], phi)
            terms.append((self.source_weight, loss, {"theta_s": g_theta, "phi": g_phi}))
        if self.target_weight > 0:
            samples = None if self.samples is None else self._samples[index]
            loss, g_theta, g_phi = empirical_loss_and_grad(block["theta_t"], phi, self.X[index], self.y[index],
                                                           samples)
            terms.append((self.target_weight, loss, {"theta_t": g_theta, "phi": g_phi}))
        if self.meta_weight > 0:
            loss, g_phi = self._validation.loss_and_grad(phi, rows)
            terms.append((self.meta_weight, loss, {"phi": g_phi}))
        for weight, loss, grads in terms:
            value += loss if weight == 1 else weight * loss
            for name, g in grads.items():
                if name in blocks:  # the block's columns of the gradient (a view), the term added in place
                    start, stop, _ = blocks[name]
                    grad[:, start:stop] += (g if weight == 1 else weight * g).reshape(b, stop - start)
        return grad, value


@dataclass(frozen=True)
class Trained(ReportsConvergence):
    """Final parameters (dict of backend arrays, one row per instance), the final objective, the flow's
    convergence record and the integrator settings it ran at."""

    params: dict
    objective: np.ndarray
    convergence: Convergence
    evaluations: int = 0
    settings: FlowSettings = FLOW_SETTINGS

    def rows(self, index) -> "Trained":
        """The instances ``index`` (a slice or a host integer array) of this record."""
        device_index = index if isinstance(index, slice) else get_backend(*self.params.values()).asarray(index)
        return Trained({name: value[device_index] for name, value in self.params.items()}, self.objective[index],
                       self.convergence[index], self.evaluations, self.settings)


def _pad(array, size):
    """Target data (B, n, …) padded with zero samples to (B, size, …)."""
    xp = get_backend(array)
    padding = xp.zeros((array.shape[0], size - array.shape[1]) + array.shape[2:], dtype=array.dtype)
    return xp.concatenate([array, padding], axis=1)


def stack_objectives(objectives) -> Objective:
    """One objective for the instances of several that differ only in their data (instances in order).

    Target sets of different sizes are padded with zero samples (x = 0, y = 0 add nothing to any loss or
    gradient) and each instance keeps its own n in ``samples``; the integrator's arithmetic is per instance,
    so training the stack trains each objective as if alone, in one call (fewer, larger batched steps).
    """
    first = objectives[0]
    if len(objectives) == 1:
        return first
    data = {}
    if first.X is not None:
        xp = get_backend(first.X)
        size = max(o.X.shape[1] for o in objectives)
        data["X"] = xp.concatenate([_pad(o.X, size) for o in objectives])
        data["y"] = xp.concatenate([_pad(o.y, size) for o in objectives])
        data["samples"] = np.concatenate([np.full(o.X.shape[0], o.X.shape[1]) if o.samples is None else o.samples
                                          for o in objectives])
        if first.splits is not None:
            splits = max(o.splits.shape[1] for o in objectives)
            data["splits"] = np.concatenate([pad_orders(o.splits, size, splits) for o in objectives])
    if first.fixed_phi is not None:
        data["fixed_phi"] = get_backend(first.fixed_phi).concatenate([o.fixed_phi for o in objectives])
    return replace(first, **data)


def random_init(objective: Objective, batch: int, rng, scale: float) -> dict:
    """Gaussian start of the trained blocks: θ entries N(0, scale²), φ entries N(0, scale²/d), drawn from ``rng``
    (an integer seed ≥ 0, a numpy Generator or a SeedSequence) on the host and placed on the backend of the
    objective's target data (the host for a source-only objective); ``scale`` is the ``init_scale`` of the
    callers."""
    rng, scale = as_generator(rng), INIT_SCALE.scalar(scale)
    xp = get_backend(objective.X)
    out = {}
    for name, shape in objective.blocks:
        width = scale / math.sqrt(objective.d) if name == "phi" else scale
        out[name] = xp.asarray(width * rng.standard_normal((batch,) + shape))
    return out


def instance_memory(d, m, *, source=False, samples=0, splits=0) -> float:
    """Peak bytes one instance adds to a flow: its dm + 2m parameters (:func:`~..integrator.flow_state_bytes`);
    with the exact source loss four (d, d) arrays per gradient (A = φ diag(θ) φᵀ, A∘A, the pair term, G); with
    MeRLin's S validation splits of n samples a gathered copy of X (n, d), the (2S, n) masks and their transposes
    (stored and gathered) and the four arrays of one evaluation with m(m + 1)/2 + m entries per sample and per
    half-split (:class:`.losses.ValidationSplits`)."""
    entries = m * (m + 1) // 2 + m
    validation = samples * d + 8 * splits * samples + 2 * entries * (samples + 2 * splits) if splits else 0
    return flow_state_bytes(1, d * m + 2 * m) + FLOAT_BYTES * ((4 * d * d if source else 0) + validation)


def check_flow_memory(what, batch, d, m, *, source=False, samples=0, splits=0, max_memory=None):
    """Refuse (ValueError) a flow of ``batch`` instances whose peak (:func:`instance_memory` each, plus the d × d
    pair weights of the source loss) exceeds the memory limit (:func:`transfertheory._memory.check_memory`)."""
    estimate = batch * instance_memory(d, m, source=source, samples=samples, splits=splits)
    check_memory(estimate + FLOAT_BYTES * d * d * source, what=what, max_memory=max_memory,
                 params={"instances": batch, "d": d, "m": m, "n": samples, "splits": splits})


@guarded_entry_point
def train(objective: Objective, start: dict, *, flow: FlowSettings = FLOW_SETTINGS, max_memory=None,
          **settings) -> Trained:
    """Gradient flow of ``objective`` from ``start`` (a dict of the trained blocks, batch first) at the integrator
    settings ``flow``.

    Keyword ``settings`` (rtol, gtol, max_time, max_steps, …) override ``flow``. ``max_memory``: the memory
    guard's limit (:func:`check_flow_memory`; bytes or ``"64G"``), checked before the flow starts.
    """
    flow = flow.updated(**settings)
    check_flow_memory("train", next(iter(start.values())).shape[0], objective.d, objective.m,
                      source=objective.source_weight > 0,
                      samples=0 if objective.X is None else objective.X.shape[1],
                      splits=0 if objective.splits is None else objective.splits.shape[1], max_memory=max_memory)
    result = integrate_gradient_flow(objective.value_and_grad, objective.pack(start), flow)
    return Trained(objective.unpack(result.y), np.asarray(result.loss), result.convergence, result.evaluations, flow)
