r"""The regularized objectives of MeRLin §5 as one batched objective, and gradient-flow training of it.

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

import numpy as np

from ..._memory import FLOAT_BYTES, check_memory, guarded_entry_point
from ..._validation import as_generator
from ...backend import get_backend
from ...theory import merlin as M
from ..convergence import Convergence, ReportsConvergence
from ..integrator import RKC2, ErrorController, FlowSettings, flow_state_bytes, integrate_gradient_flow, positive
from .losses import ValidationSplits, empirical_loss_and_grad, pad_orders

__all__ = ["Objective", "Trained", "train", "random_init", "stack_objectives", "FLOW_SETTINGS", "STUDY_TOLERANCES", "INIT_SCALE",
           "instance_memory", "check_flow_memory"]

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
