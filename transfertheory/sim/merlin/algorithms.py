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
"""
from __future__ import annotations

from dataclasses import dataclass
from operator import itemgetter

import numpy as np

from ..._memory import guarded_entry_point
from ..._validation import as_generator
from ...backend import get_backend, resolve_backend, to_device, to_host
from ...theory import merlin as M
from ..convergence import Convergence, ReportsConvergence
from .losses import features, ridge_head, seed_split_orders
from .training import Objective, Trained, check_flow_memory, random_init, stack_objectives, train

__all__ = ["Outcome", "OBJECTIVE_TOL", "Problem", "solve", "pretrain", "finetune_head", "finetune_full",
           "target_only_problem", "joint_problem", "merlin_problem", "feature_usage", "MERLIN_RIDGE", "MERLIN_SPLITS",
           "merlin_restarts"]

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


def _keep_best(trained: Trained, seeds: int, restarts: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(flat index of the kept restart per seed, restarts_needed, number of restarts at the best objective)."""
    objective = trained.objective.reshape(seeds, restarts)
    finite = np.where(np.isfinite(objective), objective, np.inf)
    at_best = finite <= finite.min(axis=1, keepdims=True) + OBJECTIVE_TOL
    first = at_best.argmax(axis=1)
    return np.arange(seeds) * restarts + first, first + 1, at_best.sum(axis=1)


def _outcome(trained: Trained, seeds: int, restarts: int, head_of, fixed_phi=None) -> Outcome:
    """Keep one restart per seed; ``head_of(params)`` gives the target head of the kept networks, ``fixed_phi``
    the features of a flow that did not train them (one restart per seed)."""
    keep, needed, at_best = _keep_best(trained, seeds, restarts)
    kept = trained.rows(keep)
    params = kept.params if fixed_phi is None else {**kept.params, "phi": fixed_phi}
    head = head_of(params)
    loss = np.asarray(to_host(M.target_loss(head, params["phi"])))
    return Outcome(params, head, loss, kept.objective, kept.convergence, needed, at_best)


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


def _target_objective(X, y, lam, d, m):
    return Objective(d=d, m=m, lam=lam, target_weight=1.0, X=X, y=y)


def finetune_full(theta_t, phi, X, y, lam, **flow) -> Outcome:
    """Full fine-tuning: (θ_t, φ) by gradient flow on L_D̂t + λ(‖θ_t‖² + ‖φ‖²_F) from the fine-tuned head and φ_pre."""
    objective = _target_objective(X, y, lam, phi.shape[-2], phi.shape[-1])
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

    The objectives are stacked (:func:`.training.stack_objectives`: target sets padded with zero samples, MeRLin's
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


def target_only_problem(X, y, lam, m, restarts, rng, init_scale=0.5) -> Problem:
    """Target-only training: (θ_t, φ) on L_D̂t + λ(‖θ_t‖² + ‖φ‖²_F) from R random starts per seed."""
    seeds, d = X.shape[0], X.shape[-1]
    objective = _target_objective(_repeat(X, restarts), _repeat(y, restarts), lam, d, m)
    start = random_init(objective, seeds * restarts, rng, init_scale)
    return Problem(objective, start, seeds, restarts, _target_head)


def joint_problem(X, y, k, lam, alpha, m, restarts, rng, init_scale=0.5) -> Problem:
    """Joint training: (1 − α)L_Ds(θ_s, φ) + αL_D̂t(θ_t, φ) + λ(‖θ_s‖² + ‖θ_t‖² + ‖φ‖²_F), R restarts per seed."""
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
