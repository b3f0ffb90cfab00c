r"""The FaF §3 transfer experiment as a pipeline of short steps, each returning a DataFrame.

:func:`run_transfer_experiment` validates its arguments (:func:`_plan`), draws
the task vectors (:func:`.draws.task_vectors`), pretrains one network on β_s, and for
each chunk of target draws (:func:`_chunk`, draws from :func:`.draws.target_draw`)
emits the rows of the gradient-flow methods (:func:`_flow_rows`: scratch and
fine-tuning of every (γ, θ, draw) as one batched flow in the data eigenbasis)
and of linear transfer (:func:`_linear_rows`: exact solve per λ, or gradient
flow on the last layer). Every draw comes from the package's seeding rule,
:func:`transfertheory.sim.seeding.generator` (``SeedSequence(seed, spawn_key=key)``), keyed by what it is and
its grid position, so results do not depend on chunking or on the backend beyond rounding:

* ``(0,)`` — the task vectors β_s, ν (:func:`.draws.task_vectors`);
* ``(1,)`` — the pretrained network's initial weights (:func:`~.training.pretrain`);
* ``(2, γ index, draw)`` — the target draw X, ε (:func:`.draws.target_draw`);
* ``(3, γ index, draw)`` — the scratch network's initial weights.

The arguments' ranges and defaults are the fields of the ``faf_linear`` record, :data:`FAF_LINEAR`, defined at
the end (:data:`FIELDS`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ... import params as P
from ..._memory import FLOAT_BYTES, check_memory, guarded_entry_point, items_per_chunk, memory_limit
from ..._validation import Interval, one_of, root_seed
from ...backend import backend_name, resolve_backend, to_device, to_host
from ...theory.methods import get_method
from ...theory.spectra import SPECTRUM_SYNTAX, TEACHER_SYNTAX, check_spectrum_text, check_teacher_text
from ...theory.spectra import spectrum as parse_spectrum
from ..convergence import Convergence, convergence_columns
from ..integrator import FlowSettings, count, flow_state_bytes
from ..records import Experiment, Field, checked, flow_arguments, flow_fields
from ..seeding import generator
from .losses import LastLayerLoss, LeastSquaresLoss, rotate_to_data_eigenbasis
from .network import INITS, Architecture, assumption22_margin, end_to_end, imbalance_drift, init_weights, rmatvec
from .draws import target_draw, task_vectors
from .training import PRETRAIN_FLOW, TARGET_FLOW, PretrainResult, pretrain, train
from .transfer import feature_basis, linear_transfer_exact

__all__ = ["run_transfer_experiment", "METHODS", "FIELDS", "ROW_KEYS", "COLUMNS", "FAF_LINEAR",
           "LINEAR_RISK_ALLOWANCE"]

ROW_KEYS = ("method", "gamma", "theta", "lam", "draw")  # one row per key; the output is sorted by it
COLUMNS = ("method", "gamma", "n", "d", "theta", "sigma", "lam", "draw", "risk", "converged", "status",
           "t_final", "steps", "grad_norm", "beta_grad_norm", "loss", "imbalance_drift", "assumption22",
           "feature_rank")
METHODS = ("scratch", "linear", "finetune")
#: Accuracy (risk units) of a ``linear`` row's risk from the exact solver (``status`` "exact"): the last layer is
#: solved exactly on the pretrained features (no integrator), so what is left is pretraining, which stops at
#: ‖β − β_s‖ ≤ gtol = 1e-8 (α = 1e-5, rtol = 1e-4): an O(1e-8) error of the feature direction and of the risk.
#: Measured against α = 1e-6 and pretraining at rtol = 1e-6, gtol = 1e-10 on the same draws: every draw's risk moved
#: by ≤ 2.2e-9 (d = 16, 32: 40 draws, γ ∈ {0.28, 0.3, 0.5, 0.56, 0.75, 1.25, 1.5, 2}, θ ∈ {0, π/6, π/3, π/2},
#: σ ∈ {0.3, 1}, λ ∈ {0, 0.05, 0.1, 1, 2}; d = 100, 500: 10 draws). That is for isotropic inputs: with a spectrum
#: the default pretraining left draws up to 2e-8 from their limit, so anisotropic uses pretrain at gtol = 1e-10
#: (docs/anisotropic.md). The integrated rows (scratch, fine-tuning, the
#: flow solver's linear rows) carry the integrator's error instead (at the default rtol a fine-tuned risk lies up to
#: 6e-3 above its exact limit at θ = π/2, docs/simulator.md), and so does a paired T = R_sc − R_lt through its
#: scratch part (≤ 3.6e-4 at d = 32, |n − d| = 8).
LINEAR_RISK_ALLOWANCE = 1e-8


def _teacher_text(text):
    return text if text == "random" else check_teacher_text(text)


#: the parameters of :func:`run_transfer_experiment` at one (γ, θ), declared once: each one's default and valid
#: range, through which the entry point validates its arguments (a grid argument through its scalar field's range),
#: and the fields of the experiment record :data:`FAF_LINEAR`, by name in the record's order
FIELDS = {f.name: f for f in (
    Field("d", 64, P.D.with_range(low=2)), Field("gamma", 0.5, P.GAMMA), Field("theta", 0.5, P.THETA),
    Field("sigma", 0.2, P.SIGMA), Field("draws", 4, P.DRAWS, description="target draws per γ"),
    Field("depth", 2, P.DEPTH), Field("alpha", 1e-5, P.ALPHA),
    Field("methods", ("scratch", "linear"), choices=METHODS, sequence=True), Field("lam", 0.0, P.LAM),
    *flow_fields(TARGET_FLOW, "gtol", "max_time", "rtol"),
    Field("spectrum", "isotropic", text=check_spectrum_text, syntax=SPECTRUM_SYNTAX, added=True,
          description="input covariance spectrum (docs/anisotropic.md); isotropic: FaF's x ~ N(0, I)"),
    Field("teacher", "random", text=_teacher_text, syntax="random | " + TEACHER_SYNTAX, added=True,
          description="where β_s, β_t sit on the spectrum; random: the isotropic draw, Σ-normalised"))}


# the simulator's own settings
_FEATURE_CUTOFF = P.Param("feature_cutoff", Interval(0, np.inf, "left"), description="singular-value cutoff")
_CHUNK_SIZE = count("chunk_size", "target draws per batched integration")


# --------------------------------------------------------------------------- plan


@dataclass(frozen=True)
class _Plan:
    """Validated settings of one experiment."""

    d: int
    depth: int
    gammas: np.ndarray
    ns: np.ndarray
    thetas: np.ndarray
    sigma: float
    draws: int
    alpha: float
    methods: tuple
    ridge: np.ndarray
    seed: int
    flow: FlowSettings
    pretrain_flow: FlowSettings
    init: str
    linear_solver: str
    feature_cutoff: float | None
    chunk_size: int | None
    spectrum: np.ndarray | None = None  # eigenvalues of a diagonal Σ (None: Σ = I)
    teacher: object = None  # a teacher family or the source's coefficients (None: the random draw)

    def risk(self, diff):
        """‖β̂ − β_t‖²_Σ of each row of ``diff`` (‖·‖² at Σ = I)."""
        return (diff**2).sum(axis=1) if self.spectrum is None else (diff**2 * self.spectrum).sum(axis=1)

    @property
    def flow_methods(self) -> list:
        return [m for m in ("scratch", "finetune") if m in self.methods]


def _plan(d, gammas, thetas, sigma, draws, depth, alpha, methods, ridge, seed, flow, pretrain_flow, init,
          linear_solver, feature_cutoff, chunk_size, spectrum=None, teacher=None) -> _Plan:
    """Validate the arguments of :func:`run_transfer_experiment` through the fields of ``faf_linear`` (ValueError
    naming the parameter and its range)."""
    d = FIELDS["d"].check(d)
    gammas = FIELDS["gamma"].param.sequence(gammas, "gammas", distinct=True)  # a grid: one row per value
    methods = FIELDS["methods"].check(methods)
    ns = np.round(gammas * d).astype(int)
    min_n = max(get_method(m).min_n for m in methods)  # the smallest n every method's exact expected risk allows
    if (ns < min_n).any():
        gamma = gammas[ns < min_n][0]
        reason = ("the exact linear-transfer risk needs n >= 3 and 'linear' is among the methods" if min_n == 3
                  else "every method needs at least one sample")
        raise ValueError(f"gammas: gamma = {gamma:g} gives n = round(gamma*d) = {round(gamma * d)} samples at "
                         f"d = {d}, below the minimum n = {min_n} ({reason})")
    one_of(linear_solver, "linear_solver", ("exact", "flow"))
    one_of(init, "init", INITS)
    isotropic = spectrum is None or (isinstance(spectrum, str) and spectrum.strip() == "isotropic")
    lam = None if isotropic else parse_spectrum(spectrum, d)
    if isinstance(teacher, str) and teacher.strip() == "random":  # the sweep field's name of the default
        teacher = None
    if teacher is not None:  # the family's syntax and its Σ-norm, before any work
        task_vectors(d, [0.0], 0, lam, teacher)
    return _Plan(
        d=d, gammas=gammas, ns=ns, thetas=FIELDS["theta"].param.sequence(thetas, "thetas", distinct=True),
        methods=methods, **checked(FIELDS, depth=depth, sigma=sigma, draws=draws, alpha=alpha),
        ridge=FIELDS["lam"].param.sequence(ridge, "ridge", distinct=True), seed=root_seed(seed),
        flow=TARGET_FLOW.overridden(flow, "flow"), init=init, linear_solver=linear_solver,
        pretrain_flow=PRETRAIN_FLOW.overridden(pretrain_flow, "pretrain_flow"),
        feature_cutoff=None if feature_cutoff is None else _FEATURE_CUTOFF.scalar(feature_cutoff),
        chunk_size=None if chunk_size is None else _CHUNK_SIZE.scalar(chunk_size), spectrum=lam, teacher=teacher,
    )


# --------------------------------------------------------------------------- memory

#: bytes of one output row: ~19 eight-byte columns, held three times at the end (the frames, their
#: concatenation, the sorted copy)
_ROW_BYTES = 19 * FLOAT_BYTES * 3
#: bytes of one entry of the list of (γ index, draw) pairs: a tuple of two ints and its pointer
_DRAW_BYTES = 120


def _memory_estimate(plan: _Plan) -> tuple[float, float]:
    """(bytes that do not grow with the chunk, bytes per target draw in a chunk), from the arrays allocated.

    Fixed: the output table, draws·Θ·(flow methods + λs of linear transfer) rows of :data:`_ROW_BYTES`, and
    the draw list; the largest target draw X (n, d) with its Gram d² while it is reduced; the pretrained
    network and its feature SVD (≈ 6 d² at depth L: (L − 1)d² weights, F, U, Vᵀ). Per draw of a chunk: Σ̂,
    its eigenvectors Q and the device copies (4 d²), and the flow of scratch/fine-tuning, Θ·(flow methods)
    instances of P = (L − 1)d² + d parameters (:func:`~..integrator.flow_state_bytes`: the RKC integrator's
    copies, the start and the rotated start).
    """
    d, n_theta, draws = plan.d, len(plan.thetas), len(plan.gammas) * plan.draws
    n_params = (plan.depth - 1) * d * d + d
    linear_rows = len(plan.ridge) if "linear" in plan.methods else 0
    rows = draws * n_theta * (len(plan.flow_methods) + linear_rows)
    fixed = rows * _ROW_BYTES + draws * _DRAW_BYTES + FLOAT_BYTES * (int(plan.ns.max()) * d + d * d
                                                                     + 2 * n_params + 6 * d * d)
    flow_rows = n_theta * len(plan.flow_methods)
    per_draw = FLOAT_BYTES * (4 * d * d + 2 * n_theta * d) + flow_state_bytes(flow_rows, n_params)
    return fixed, per_draw


def _chunk_draws(plan: _Plan, xp, max_memory) -> int:
    """Target draws per batched integration: ``chunk_size``, else as many as fit the memory limit (all of
    them on an ordinary machine); ValueError when even the given chunk (or one draw) does not fit."""
    fixed, per_draw = _memory_estimate(plan)
    draws = len(plan.gammas) * plan.draws
    chunk = plan.chunk_size or 1
    check_memory(fixed + min(chunk, draws) * per_draw, what="run_transfer_experiment", xp=xp,
                 max_memory=max_memory,
                 params={"d": plan.d, "depth": plan.depth, "draws": plan.draws,
                         "len(gammas)": len(plan.gammas), "len(thetas)": len(plan.thetas),
                         "len(ridge)": len(plan.ridge), "chunk_size": chunk})
    return plan.chunk_size or items_per_chunk(per_draw, fixed, draws, memory_limit(max_memory, xp)[0])


# --------------------------------------------------------------------------- chunks of target draws


@dataclass(frozen=True)
class _Chunk:
    """Sufficient statistics of some target draws, and the row labels of their (draw, θ) pairs."""

    draws: list  # (γ index, draw)
    gram: np.ndarray  # (m, d, d): Σ̂ = XᵀX/n per draw
    c: np.ndarray  # (m, Θ, d): ĉ = Xᵀy/n per draw and θ
    y2: np.ndarray  # (m, Θ): ‖y‖²/n
    targets: np.ndarray  # (m·Θ, d): β_t of each (draw, θ)


def _chunk(plan: _Plan, draws, beta_t) -> _Chunk:
    """Draw the target sets of ``draws`` and reduce them to Σ̂, ĉ and ‖y‖²/n (one X per draw, shared by all θ)."""
    stats = [_target_statistics(*target_draw(plan.d, plan.ns[gi], beta_t, plan.sigma, plan.seed, gi, i,
                                             plan.spectrum)) for gi, i in draws]
    gram, c, y2 = (np.stack(s) for s in zip(*stats))
    return _Chunk(draws, gram, c, y2, np.repeat(beta_t[None], len(draws), axis=0).reshape(-1, plan.d))


def _target_statistics(X, Y):
    """Σ̂ = XᵀX/n and, for each target (column of Y), ĉ = Xᵀy/n and ‖y‖²/n."""
    n = X.shape[0]
    return X.T @ X / n, (X.T @ Y / n).T, (Y * Y).sum(axis=0) / n


def _rows(plan: _Plan, chunk: _Chunk, method: str, risk, lam=0.0, **columns) -> pd.DataFrame:
    """One row per (draw, θ) of ``chunk``, in that order: the grid labels, the risk and ``columns``."""
    gi = np.repeat([g for g, _ in chunk.draws], len(plan.thetas))
    return pd.DataFrame({"method": method, "gamma": plan.gammas[gi], "n": plan.ns[gi], "d": plan.d,
                         "theta": np.tile(plan.thetas, len(chunk.draws)), "sigma": plan.sigma, "lam": lam,
                         "draw": np.repeat([i for _, i in chunk.draws], len(plan.thetas)), "risk": risk, **columns})


# --------------------------------------------------------------------------- methods


def _totals(flows) -> dict:
    """Integrator statistics summed over a run's flows (``df.attrs["integrator"]``)."""
    return {"evaluations": sum(f.evaluations for f in flows), "rejected": sum(f.rejected for f in flows),
            "max_stages": max((f.max_stages for f in flows), default=0)}


def _flow_rows(plan: _Plan, arch: Architecture, chunk: _Chunk, pre: PretrainResult | None, xp, flows: list,
               progress) -> pd.DataFrame:
    """Scratch (from αW̄) and fine-tuning (from the pretrained weights) of every (draw, θ): one batched flow
    in the eigenbasis of each draw's Σ̂ (:func:`~.losses.rotate_to_data_eigenbasis`), added to ``flows``."""
    methods, m, n_theta, d = plan.flow_methods, len(chunk.draws), len(plan.thetas), plan.d
    starts = []
    if "scratch" in methods:
        rngs = [generator(plan.seed, 3, gi, i) for gi, i in chunk.draws]
        scratch0 = to_device(init_weights(arch, plan.alpha, rngs, plan.init), xp)
        starts.append(xp.repeat(scratch0[:, None, :], n_theta, axis=1))
    if "finetune" in methods:
        starts.append(xp.broadcast_to(pre.weights[None], (m, n_theta, arch.n_params)))
    y0 = xp.stack(starts, axis=1).reshape(-1, arch.n_params)  # (draw, method, θ)
    c = to_device(np.concatenate([chunk.c] * len(methods), axis=1).reshape(-1, d), xp)
    y2 = to_device(np.concatenate([chunk.y2] * len(methods), axis=1).reshape(-1), xp)
    lam, Q, c_rot, y0_rot = rotate_to_data_eigenbasis(arch, to_device(chunk.gram, xp), c, y0)
    flows.append(flow := train(LeastSquaresLoss(arch, lam, c_rot, y2), y0_rot, plan.flow, progress=progress))
    beta_rot = end_to_end(arch, flow.y).reshape(m, -1, d)
    beta_hat = to_host((Q[:, None] @ beta_rot[..., None])[..., 0]).reshape(m, len(methods), n_theta, d)  # β = Qβ̃
    drift = to_host(imbalance_drift(arch, y0_rot, flow.y))
    order = np.arange(flow.loss.size).reshape(m, len(methods), n_theta)  # (draw, method, θ) → instance
    frames = []
    for mi, method in enumerate(methods):
        rows = order[:, mi].reshape(-1)
        convergence = flow.convergence[rows]
        if method == "scratch":
            holds = np.repeat(to_host(assumption22_margin(arch, scratch0)) > 0, n_theta)
        else:
            holds, convergence = pre.assumption22_margin > 0, convergence.requiring(pre.flow.converged[0])
        risk = plan.risk(beta_hat[:, mi].reshape(-1, d) - chunk.targets)
        frames.append(_rows(plan, chunk, method, risk, **convergence_columns(convergence),
                            beta_grad_norm=flow.residual[rows], loss=flow.loss[rows], imbalance_drift=drift[rows],
                            assumption22=holds))
    return pd.concat(frames, ignore_index=True)


def _linear_rows(plan: _Plan, arch: Architecture, chunk: _Chunk, pre: PretrainResult, basis, xp,
                 flows: list) -> pd.DataFrame:
    """Linear transfer on the pretrained features for every λ of ``plan.ridge``: exact solve on the kept
    feature directions (:func:`~.transfer.linear_transfer_exact`) or gradient flow on the last layer (added to
    ``flows``)."""
    U, s_feat, V, F = basis
    c = to_device(chunk.c.reshape(-1, plan.d), xp)
    target = LeastSquaresLoss(arch, to_device(chunk.gram, xp), c, to_device(chunk.y2.reshape(-1), xp))
    pre_ok = bool(pre.flow.converged[0])
    frames = []
    for lam in map(float, plan.ridge):
        if plan.linear_solver == "exact":
            beta_hat, w_last = linear_transfer_exact(target, U, s_feat, V, lam)
            g_beta, loss = target.beta_gradient(beta_hat, np.arange(c.shape[0]))
            grad = rmatvec(F[None], g_beta) + lam * w_last
            convergence = Convergence(True, "exact", np.nan, 0, to_host(xp.linalg.norm(grad, axis=1)))
            loss = to_host(loss + 0.5 * lam * xp.sum(w_last * w_last, axis=1))
        else:
            w0 = xp.repeat(arch.layers(pre.weights)[1], c.shape[0], axis=0)
            flows.append(flow := train(LastLayerLoss(target, F, lam), w0, plan.flow))
            beta_hat = flow.y @ F.T
            convergence, loss = flow.convergence, flow.loss
        risk = plan.risk(to_host(beta_hat) - chunk.targets)
        frames.append(_rows(plan, chunk, "linear", risk, lam=lam, imbalance_drift=np.nan, beta_grad_norm=np.nan,
                            assumption22=pre.assumption22_margin > 0, feature_rank=int(U.shape[1]), loss=loss,
                            **convergence_columns(convergence.requiring(pre_ok))))
    return pd.concat(frames, ignore_index=True)


def _progress_bar(total: int, progress):
    from tqdm.auto import tqdm

    # None: tqdm's own choice, shown only on a terminal (a log file would collect a line every tenth of a second)
    return tqdm(total=float(total), desc="transfer experiment", unit="draw", delay=0 if progress else 2.0,
                disable=None if progress is None else not progress,
                bar_format="{l_bar}{bar}| {n:.1f}/{total:.0f} draws [{elapsed}<{remaining}]")


# --------------------------------------------------------------------------- entry point


@guarded_entry_point
def run_transfer_experiment(
    d,
    gammas,
    thetas,
    sigma,
    draws,
    depth=FIELDS["depth"].default,
    alpha=FIELDS["alpha"].default,
    methods=METHODS,
    ridge=(0.0,),
    seed=0,
    backend=None,
    flow=None,
    pretrain_flow=None,
    init="gaussian",
    linear_solver="exact",
    feature_cutoff=None,
    chunk_size=None,
    progress=None,
    max_memory=None,
    spectrum=None,
    teacher=None,
) -> pd.DataFrame:
    r"""Simulate FaF §3 transfer experiments; one tidy row per (method, γ, θ, λ, draw).

    For each γ and draw a target set (X, ε) with n = round(γd) is drawn;
    all θ share it (common random numbers, so T = R_sc − R_tx is estimated
    with a paired difference). One network is pretrained on β_s. Scratch and
    fine-tuning of every (γ, θ, draw) advance together as one batched
    gradient flow; linear transfer is solved exactly per λ in ``ridge`` (or
    by gradient flow on W_L, ``linear_solver="flow"``).

    Parameters
    ----------
    d : int ≥ 2
    gammas, thetas : non-empty sequences (γ > 0, θ ∈ [0, π])
        n = round(γd) must be ≥ 3 when "linear" is among the methods (the
        exact expected linear-transfer risk needs n ≥ 3), else ≥ 1.
    sigma : float ≥ 0
    draws : int ≥ 1
        Target draws per γ (the table's ``draw`` is 0 … draws − 1).
    depth : int ≥ 2
    alpha : float > 0
        Initialization scale (FaF App. D.1 uses 1e-5).
    methods : non-empty subset of ("scratch", "linear", "finetune")
    ridge : non-empty sequence of λ ≥ 0 for linear transfer (Eq. 14)
    seed : int ≥ 0, numpy Generator or SeedSequence
        Seeds the task vectors, initializations and target draws; results do
        not depend on ``chunk_size`` or the backend beyond rounding. A Generator
        or SeedSequence gives the integer root seed, ``df.attrs["seed"]``.
    backend : "auto" | "numpy" | "cupy" | None
        None (default) reads the environment variable
        ``TRANSFERTHEORY_BACKEND`` (default "auto": CuPy when a GPU is usable).
    flow : None, :class:`~transfertheory.sim.integrator.FlowSettings` or a mapping of its settings by name
        The integrator's settings of the target flows (scratch, fine-tuning, linear transfer by flow):
        :data:`~transfertheory.sim.deep_linear.training.TARGET_FLOW` (gtol 1e-6, max_time 1e4, rtol 1e-3) with the given changes
        (:meth:`~transfertheory.sim.integrator.FlowSettings.overridden`, e.g. ``flow={"rtol": 1e-5}``).
        Convergence is ‖∇L‖ ≤ gtol (gradient w.r.t. all trained weights) and ‖∇_βL‖ ≤ gtol (end-to-end
        gradient; rules out the saddle W = 0); ``max_time`` is the flow-time budget per draw; ``rtol`` the
        integrator's relative local-error tolerance. At the default 1e-3 a fine-tuned risk lies above its exact
        limit by a bias that grows with θ and σ: ≤ 1.8e-3 per draw at σ = 0.2 up to θ = 3π/8, 6e-3 at σ = 2,
        θ = π/2; each decade of rtol divides it by ≈ 4.5 (scratch: ≤ 2e-5; docs/simulator.md, "Tolerance vs risk").
    pretrain_flow : None, FlowSettings or a mapping
        The same for pretraining: :data:`~transfertheory.sim.deep_linear.training.PRETRAIN_FLOW` (gtol 1e-8, rtol 1e-4) with the changes.
    init : "gaussian" | "balanced" | "assumption22"
    linear_solver : "exact" | "flow"
    feature_cutoff : float ≥ 0 or None
        Singular values of the pretrained features treated as residue
        (default 10·√‖D(0)‖, see :func:`~.transfer.feature_basis`); 0 keeps them all.
    chunk_size : int ≥ 1 or None
        Target draws (γ, draw pairs) per batched integration (memory); None: as many as fit in the
        memory limit (all of them unless the run is large).
    progress : bool or None
        tqdm progress bar (None: shown only if the run exceeds 2 s and stderr is a terminal).
    max_memory : int, str or None
        Memory limit in bytes or as ``"64G"`` (:mod:`transfertheory._memory`); None: the environment
        variable ``TRANSFERTHEORY_MAX_MEMORY``, else the memory available now. The peak memory is estimated
        from the arguments (:func:`_memory_estimate`) before any work: the draws are chunked to fit, and a
        run whose output table (or one draw) does not fit is refused.
    spectrum : None, str or sequence of d positive floats
        Anisotropic inputs x ~ N(0, diag λ) (docs/anisotropic.md): a family (``"power:1.5"``, ``"block:0.25:8"``,
        :data:`~transfertheory.theory.spectra.SPECTRUM_SYNTAX`) or the eigenvalues; the source loss becomes
        ½(β − β_s)ᵀΣ(β − β_s), the rows x = z·√λ, the risk ‖β̂ − β_t‖²_Σ, and the drawn teachers are
        normalised in the Σ-norm with θ the Σ-angle. None (default): Σ = I, bit for bit the isotropic run.
    teacher : None, str or sequence of d floats
        A teacher family (``"flat"``, ``"power:1"``, ``"power:1:bottom"``,
        :data:`~transfertheory.theory.spectra.TEACHER_SYNTAX`) or the source's coefficients, placing β_s and
        β_t(θ) on the spectrum (:func:`~transfertheory.theory.spectra.teacher_pair`); None or ``"random"`` (the
        sweep field's default): the random draw.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`COLUMNS` (``feature_rank`` only with linear transfer;
        ``beta_grad_norm`` = ‖∇_βL‖ of the flows, which must also be ≤ gtol for
        ``converged``; NaN for linear transfer); ``df.attrs`` holds the
        pretraining diagnostics, the backend, the integrator statistics, ``spectrum`` (``"isotropic"`` or the d
        eigenvalues) and ``teacher`` (``"random"``, the family or the source's coefficients).

    Raises
    ------
    ValueError
        An argument out of its range (the message names it), or a run that does not fit in memory (the
        message names the sizes, the estimate and the limit).
    transfertheory.backend.BackendUnavailableError
        ``backend="cupy"`` (or the variable) without a usable GPU.
    """
    plan = _plan(d, gammas, thetas, sigma, draws, depth, alpha, methods, ridge, seed, flow, pretrain_flow, init,
                 linear_solver, feature_cutoff, chunk_size, spectrum, teacher)
    xp = resolve_backend(backend)
    size = _chunk_draws(plan, xp, max_memory)
    arch = Architecture(plan.d, plan.depth)
    beta_s, nu, beta_t = task_vectors(plan.d, plan.thetas, plan.seed, plan.spectrum, plan.teacher)
    pre = basis = None
    if "linear" in plan.methods or "finetune" in plan.methods:
        pre = pretrain(arch, beta_s, plan.alpha, seed=generator(plan.seed, 1), init=plan.init, flow=plan.pretrain_flow,
                       backend=backend_name(xp), spectrum=plan.spectrum)
        basis = feature_basis(pre, plan.feature_cutoff)
    draws = [(gi, i) for gi in range(len(plan.gammas)) for i in range(plan.draws)]  # (γ index, draw) of each
    frames, flows = [], []
    with _progress_bar(len(draws), progress) as bar:  # closed also on Ctrl-C, before the CLI's one line
        for start in range(0, len(draws), size):
            chunk = _chunk(plan, draws[start:start + size], beta_t)
            if plan.flow_methods:
                def advance(fraction, base=bar.n, count=len(chunk.draws)):  # draws finished in this chunk
                    bar.update(base + fraction * count - bar.n)

                frames.append(_flow_rows(plan, arch, chunk, pre, xp, flows, advance))
            if "linear" in plan.methods:
                frames.append(_linear_rows(plan, arch, chunk, pre, basis, xp, flows))
            bar.update(start + len(chunk.draws) - bar.n)
    df = pd.concat(frames, ignore_index=True).sort_values(list(ROW_KEYS), kind="stable", ignore_index=True)
    df = df[[c for c in COLUMNS if c in df.columns]]
    df.attrs.update(backend=backend_name(xp), seed=plan.seed, depth=plan.depth, alpha=plan.alpha, init=plan.init,
                    rtol=plan.flow.rtol, gtol=plan.flow.gtol, max_time=plan.flow.max_time, integrator=_totals(flows),
                    beta_s=tuple(beta_s), nu=tuple(nu),
                    pretrain=None if pre is None else pre.summary())
    df.attrs.update(spectrum="isotropic" if plan.spectrum is None else tuple(plan.spectrum),
                    teacher="random" if plan.teacher is None else plan.teacher if isinstance(plan.teacher, str)
                    else tuple(np.asarray(plan.teacher, float)))
    return df


def _faf_linear(p, seed, backend):
    return run_transfer_experiment(p["d"], [p["gamma"]], [p["theta"]], p["sigma"], p["draws"], depth=p["depth"],
                                   alpha=p["alpha"], methods=p["methods"], ridge=(p["lam"],), seed=seed,
                                   backend=backend, progress=False, spectrum=p["spectrum"], teacher=p["teacher"],
                                   **flow_arguments(p))


#: the experiment record ``faf_linear``: the simulator at one (γ, θ), with isotropic inputs by default or a
#: ``spectrum`` and ``teacher`` family (docs/anisotropic.md); its fields are :data:`FIELDS`
FAF_LINEAR = Experiment(
    name="faf_linear", paper="FaF §3", version=1,
    description="deep linear network: scratch, linear transfer and fine-tuning at one (γ, θ)",
    fields=tuple(FIELDS.values()),
    example=dict(d=8, gamma=0.5, theta=0.5, draws=2, methods=("scratch", "linear", "finetune")),
    renamed={"instances": "draws", "tol": "gtol", "instance": "draw"},
    simulate=_faf_linear)
