r"""The FaF §4 transfer experiment (ablated teachers, FaF Eqs. 18–21, Fig. 4) as one tidy table.

For every teacher (FaF Eq. 20, :func:`~transfertheory.theory.relu.random_teacher`) and every μ, a source
teacher drops round(μm*) of its neurons (Eq. 19) and a student of width m is pretrained on its exact
population loss (:func:`.training.pretrain_source`). For every n and data set (draw), n noiseless samples
of the target teacher are drawn and shared by every μ and method (paired comparisons):

* ``scratch`` — gradient flow from FaF's initialization (does not depend on μ: one flow per
  (n, teacher, draw), its row repeated for every μ so that each (μ, n, teacher, draw) has its pair);
* ``linear`` — the pretrained student's output weights trained by gradient flow on the n samples, exactly
  (:func:`.training.linear_transfer_flow`; FaF's stopping rule on the loss above its least-squares minimum);
* ``linear_minnorm`` — kernel interpolation with the pretrained features (minimum-norm least squares,
  :func:`.training.linear_transfer`, the t → ∞ limit from c = 0; the object of FaF Eq. 21);
* ``finetune`` — gradient flow of all weights from the pretrained student (optional).

Every risk is exact: E(f − f_t*)² = 2·(population loss) against the target teacher, no test sampling.
Draws come from the package's seeding rule, :func:`transfertheory.sim.seeding.generator` (``SeedSequence(seed,
spawn_key=key)``), keyed by what they are, so the teachers, ablations, samples and scratch initializations of a
grid point do not depend on the rest of the grid (μ enters a key as round(μ·10⁶)):

* ``(0, t)`` — target teacher t (:func:`~transfertheory.theory.relu.random_teacher`);
* ``(1, μ, t)`` — the neurons teacher t's source drops at μ (:func:`~transfertheory.theory.relu.ablated_teacher`);
* ``(2, μ)`` — the pretraining initializations of every teacher's student at μ (drawn at once, teacher t's the
  t-th; a chunk of teachers draws up to its last and keeps its own);
* ``(3, n, t, i)`` — the n target samples of data set (draw) i of teacher t;
* ``(4, n, t, i)`` — the scratch student's initialization of that draw.

(FaF Fig. 4's Gram-matrix probes use key ``(7,)`` of the figure's seed.) The arguments' ranges and defaults are
the fields of the ``faf_relu`` record, :data:`FAF_RELU`, defined at the end of this module.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np  # pandas is imported by the functions that build tables: a --help needs none

from ... import params as P
from ..._memory import FLOAT_BYTES, check_memory, guarded_entry_point
from ..._validation import root_seed
from ...backend import backend_name, resolve_backend, to_device, to_host
from ...theory.relu import MU, M_STAR, TEACHER_OUTPUTS, ablated_teacher, dropped_count, population_loss
from ...theory.relu import random_teacher, rkhs_projection_norms
from ..convergence import Convergence, convergence_columns
from ..integrator import STATUSES as FLOW_STATUSES
from ..integrator import FlowSettings, count
from ..records import Experiment, Field, checked, flow_arguments, flow_fields
from ..seeding import generator
from .network import M, network_output, paper_init, target_norm_sq, target_variance
from .training import (PRETRAIN_FLOW, TARGET_FLOW, LinearFlow, linear_transfer, linear_transfer_flow, pretrain_source,
                       pretraining_memory, train_on_samples, training_memory)

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["run_transfer_experiment", "METHODS", "FIELDS", "FAF_RELU", "COLUMNS", "ROW_KEYS", "STATUSES",
           "PretrainedStudents", "status_counts"]

ROW_KEYS = ("method", "mu", "n", "teacher", "draw")  # one row per key; the output is sorted by it
COLUMNS = ROW_KEYS + ("d", "m", "m_star", "risk", "risk_normalized", "target_variance", "target_norm_sq", "pperp",
                      "pperp_source", "pretrain_status", "pretrain_converged", "pretrain_loss", "pretrain_initial_loss",
                      "converged", "status", "t_final", "steps", "grad_norm", "loss", "norm_drift")
#: a scratch row's columns of the pretraining it does not use
_NO_PRETRAINING = dict(pperp=np.nan, pperp_source=np.nan, pretrain_status="", pretrain_converged=np.nan,
                       pretrain_loss=np.nan, pretrain_initial_loss=np.nan)
METHODS = ("scratch", "linear", "linear_minnorm", "finetune")


#: the parameters of :func:`run_transfer_experiment`, declared once: each one's default and valid range, through
#: which the entry point validates its arguments, and the fields of the experiment record :data:`FAF_RELU`, by name
#: in the record's order
FIELDS = {f.name: f for f in (
    Field("d", 8, P.D), Field("m", 40, M), Field("m_star", 8, M_STAR),
    Field("mus", (0.5,), MU, sequence=True), Field("ns", (16, 64), P.N, sequence=True),
    Field("teachers", 1, count("teachers", "target teachers drawn")),
    Field("draws", 1, P.DRAWS, description="data sets (with scratch initializations) per teacher and n"),
    Field("teacher_start", 0, count("teacher_start", "index of the chunk's first teacher", low=0)),
    Field("draw_start", 0, count("draw_start", "index of the chunk's first data set per teacher", low=0)),
    Field("draw_seed", -1, count("draw_seed", low=-1),
          description="root seed of every draw, shared by the chunks of one run (-1: the point's own seed "
                      "from the sweep engine)"),
    Field("methods", ("scratch", "linear"), choices=METHODS, sequence=True),
    Field("output", "ones", choices=tuple(TEACHER_OUTPUTS)),
    *flow_fields(TARGET_FLOW, "max_time", "loss_tol"),
    *flow_fields(PRETRAIN_FLOW, "max_time", "loss_tol", stage="pretrain"),
    *flow_fields(TARGET_FLOW, "max_time", stage="linear"))}
_MU_KEY_SCALE = 10 ** 6  # μ enters the draws' keys as round(μ·1e6)
#: pretrainings (one μ of a chunk of teachers each) kept per process by :func:`_pretrained`
PRETRAINED_KEPT = 32
_EXACT = "exact"  # the ``flow`` of a closed-form solve (status "exact")
#: the table's statuses: the integrator's (``loss_tol``: FaF's rule) and ``exact`` (``linear_minnorm``)
STATUSES = tuple(FLOW_STATUSES) + (_EXACT,)


def status_counts(statuses) -> str:
    """"max_time 5, loss_tol 1": how many flows ended with each status, most frequent first (summaries)."""
    import pandas as pd
    return ", ".join(f"{k} {v}" for k, v in pd.Series(np.asarray(statuses, dtype=str)).value_counts().items())


@dataclass(frozen=True)
class _Plan:
    """The validated arguments of :func:`run_transfer_experiment`."""

    d: int
    m: int
    m_star: int
    mus: tuple
    ns: tuple
    teachers: int
    draws: int
    teacher_start: int  #: index of the first teacher (a chunk of teachers teacher_start … + teachers − 1)
    draw_start: int  #: index of the first data set per teacher
    methods: tuple
    seed: int
    output: str
    target_flow: FlowSettings
    pretrain_flow: FlowSettings
    linear_flow: FlowSettings  #: the closed-form flow of ``linear``: its budget and stopping rule


@dataclass(frozen=True, eq=False)
class PretrainedStudents:
    """Host arrays of the students pretrained at one μ and of their source teachers (batch axis = teacher).

    A read-only record kept in ``df.attrs["students"]``: compared by identity and not duplicated by ``deepcopy``
    (pandas copies a table's attrs on every operation and compares them when joining).
    """

    W: np.ndarray  #: (teachers, m, d) pretrained rows
    c: np.ndarray  #: (teachers, m) pretrained output weights
    W_source: np.ndarray  #: (teachers, m* − round(μm*), d) source-teacher rows
    c_source: np.ndarray  #: (teachers, m* − round(μm*)) source-teacher output weights

    def __deepcopy__(self, memo):
        return self


def _values(name, value) -> tuple:
    """A grid argument (``mus``, ``ns``) checked item-wise against its field's range, without repeats."""
    return tuple(FIELDS[name].param.sequence(value, name, distinct=True).tolist())


def _plan(d, m, m_star, mus, ns, teachers, draws, methods, seed, output, flow, pretrain_flow, linear_flow,
          teacher_start=0, draw_start=0) -> _Plan:
    """Validate the arguments through the fields of ``faf_relu`` (ValueError naming the parameter and its range)
    and resolve the flows' settings (``linear_flow`` over the target flow's)."""
    m_star = FIELDS["m_star"].check(m_star)
    mus = _values("mus", mus)
    for mu in mus:
        dropped_count(mu, m_star)
    target_flow = TARGET_FLOW.overridden(flow, "flow")
    return _Plan(**checked(FIELDS, d=d, m=m, teachers=teachers, draws=draws, teacher_start=teacher_start,
                           draw_start=draw_start, methods=methods, output=output),
                 m_star=m_star, mus=mus, ns=tuple(int(n) for n in _values("ns", ns)), seed=root_seed(seed),
                 target_flow=target_flow, pretrain_flow=PRETRAIN_FLOW.overridden(pretrain_flow, "pretrain_flow"),
                 linear_flow=target_flow.overridden(linear_flow, "linear_flow"))


def _mu_key(mu) -> int:
    return int(round(mu * _MU_KEY_SCALE))


def _teacher_indices(plan: _Plan) -> range:
    return range(plan.teacher_start, plan.teacher_start + plan.teachers)


def _draw_indices(plan: _Plan) -> range:
    return range(plan.draw_start, plan.draw_start + plan.draws)


def _teachers(plan: _Plan, xp):
    """Target teachers (T, m*, d), (T, m*), one draw per teacher index (key (0, t))."""
    drawn = [random_teacher(plan.m_star, plan.d, generator(plan.seed, 0, t), output=plan.output)
             for t in _teacher_indices(plan)]
    return to_device(np.stack([w for w, _ in drawn]), xp), to_device(np.stack([c for _, c in drawn]), xp)


@functools.lru_cache(maxsize=PRETRAINED_KEPT)
def _pretrained(plan: _Plan, mu, backend):
    """Students pretrained on the μ-ablated source of every teacher, their table rows and their host arrays.

    Kept per process (least recently used first out): the chunks of one teacher (:func:`run_transfer_experiment`'s
    ``draw_start``) that a process computes in turn pretrain it once. ``plan`` has the fields pretraining does not
    read set to fixed values.
    """
    import pandas as pd
    xp = resolve_backend(backend)
    W_t, c_t = _teachers(plan, xp)
    sources = [ablated_teacher(W_t[k], c_t[k], mu, generator(plan.seed, 1, _mu_key(mu), t))
               for k, t in enumerate(_teacher_indices(plan))]
    W_s, c_s = xp.stack([s.W for s in sources]), xp.stack([s.c for s in sources])
    pre = pretrain_source(W_s, c_s, plan.m, generator(plan.seed, 2, _mu_key(mu)), flow=plan.pretrain_flow,
                          first=plan.teacher_start)
    pperp = np.asarray(to_host(rkhs_projection_norms(pre.W, W_t, c_t).outside))
    pperp_source = np.asarray(to_host(rkhs_projection_norms(W_s, W_t, c_t).outside))
    table = pd.DataFrame(dict(mu=mu, teacher=np.array(_teacher_indices(plan)), loss=pre.loss,
                              initial_loss=pre.initial_loss, **convergence_columns(pre.convergence),
                              norm_drift=pre.norm_drift, pperp=pperp, pperp_source=pperp_source))
    return pre, table, PretrainedStudents(*(np.asarray(to_host(a)) for a in (pre.W, pre.c, W_s, c_s)))


def _samples(plan: _Plan, W_t, c_t, n, xp):
    """X (T·I, n, d), y (T·I, n): noiseless samples of teacher t for draw i (key (3, n, t, i))."""
    X = np.stack([generator(plan.seed, 3, n, t, i).standard_normal((n, plan.d))
                  for t in _teacher_indices(plan) for i in _draw_indices(plan)])
    X = to_device(X, xp)
    return X, network_output(*(xp.repeat(a, plan.draws, axis=0) for a in (W_t, c_t)), X)


def _scratch_init(plan: _Plan, n, xp):
    """FaF initialization per (teacher, draw) of size n (key (4, n, t, i))."""
    drawn = [paper_init(plan.m, plan.d, generator(plan.seed, 4, n, t, i))
             for t in _teacher_indices(plan) for i in _draw_indices(plan)]
    return to_device(np.stack([w for w, _ in drawn]), xp), to_device(np.stack([c for _, c in drawn]), xp)


def _risk(plan: _Plan, W, c, teachers) -> np.ndarray:
    """E(f − f_t*)² = 2·(population loss) of the T·I networks (W, c) against their teachers (W_t, c_t), a host
    array. ``W`` is (T·I, m, d), or (T, m, d) when a teacher's data sets share the hidden weights (its pretrained
    student): the population Gram of that student is then formed once for all of them."""
    W_t, c_t = teachers
    W = W.reshape((plan.teachers, -1) + W.shape[-2:])
    loss = population_loss(W, c.reshape(plan.teachers, plan.draws, -1), W_t[:, None], c_t[:, None])
    return 2 * np.asarray(to_host(loss)).reshape(-1)


def _rows(plan: _Plan, method, mu, n, risk, norms, flow, **columns) -> pd.DataFrame:
    """Rows of one method at (μ, n) for every (teacher, draw), with risks ``risk`` (:func:`_risk`); ``flow`` a
    FlowReport, a LinearFlow (closed-form flow: no steps, no sphere) or ``_EXACT`` (least squares: status
    ``exact``)."""
    import pandas as pd
    count = plan.teachers * plan.draws
    if flow is _EXACT:  # no flow: every instance converged, no loss
        flow = LinearFlow(None, np.nan, Convergence.of_length(count, True, _EXACT, np.nan, 0, np.nan))
    conv = dict(convergence_columns(flow.convergence), loss=flow.loss, norm_drift=getattr(flow, "norm_drift", np.nan))
    return pd.DataFrame(dict(
        method=method, mu=mu, n=n, teacher=np.repeat(np.array(_teacher_indices(plan)), plan.draws),
        draw=np.tile(np.array(_draw_indices(plan)), plan.teachers), d=plan.d, m=plan.m, m_star=plan.m_star,
        risk=risk, risk_normalized=risk / norms["target_variance"], **norms, **columns, **conv), index=range(count))


def _scratch_flows(plan: _Plan, samples, xp) -> dict:
    """n → the scratch flows (a FlowReport of the T·I instances) at every n of ``samples`` (n → (X, y)), integrated
    as one batch: the samples of smaller n padded with zero rows (``train_on_samples``' ``sizes``). Each instance
    has its own step control, so its flow is that of a batch of its n alone up to rounding, and the per-step cost
    of the integrator and of the gradient's small arrays is paid once for all n instead of once per n."""
    n_max, count = max(plan.ns), plan.teachers * plan.draws
    padded = [(xp.pad(X, ((0, 0), (0, n_max - n), (0, 0))), xp.pad(y, ((0, 0), (0, n_max - n))))
              for n, (X, y) in samples.items()]
    inits = [_scratch_init(plan, n, xp) for n in samples]
    flow = train_on_samples(xp.concatenate([W for W, _ in inits]), xp.concatenate([c for _, c in inits]),
                            xp.concatenate([X for X, _ in padded]), xp.concatenate([y for _, y in padded]),
                            flow=plan.target_flow, sizes=np.repeat(list(samples), count))
    rows = {n: slice(k * count, (k + 1) * count) for k, n in enumerate(samples)}  # each n's instances of the batch
    return {n: replace(flow, W=flow.W[r], c=flow.c[r], loss=flow.loss[r], norm_drift=flow.norm_drift[r],
                       convergence=flow.convergence[r]) for n, r in rows.items()}  # (evaluations: the batch's)


def _n_rows(plan: _Plan, n, samples, scratch, norms, pretrained, teachers, xp) -> list:
    """Every method's rows at sample size n (shared samples ``samples`` = (X, y); ``scratch`` the scratch flows at
    n, or None without that method; ``teachers`` the target teachers (W_t, c_t))."""
    X, y = samples
    out = []
    if scratch is not None:
        risk = _risk(plan, scratch.W, scratch.c, teachers)  # one flow per (n, teacher, draw), a row per μ
        out += [_rows(plan, "scratch", mu, n, risk, norms, scratch, **_NO_PRETRAINING) for mu in plan.mus]
    for mu, (pre, table, _) in pretrained.items():
        W_pre, c_pre = (xp.repeat(a, plan.draws, axis=0) for a in (pre.W, pre.c))
        pperp = {f"pretrain_{k}" if k in ("status", "converged", "loss", "initial_loss") else k:
                 np.repeat(table[k].to_numpy(dtype=float if k == "converged" else None), plan.draws)
                 for k in ("pperp", "pperp_source", "status", "converged", "loss", "initial_loss")}
        both = "linear" in plan.methods and "linear_minnorm" in plan.methods  # one SVD of the features for both
        if "linear" in plan.methods:
            flow = linear_transfer_flow(W_pre, c_pre, X, y, flow=plan.linear_flow, minnorm=both)
            out.append(_rows(plan, "linear", mu, n, _risk(plan, pre.W, flow.c, teachers), norms, flow, **pperp))
        if "linear_minnorm" in plan.methods:
            minnorm = flow.minnorm if both else linear_transfer(W_pre, X, y)
            out.append(_rows(plan, "linear_minnorm", mu, n, _risk(plan, pre.W, minnorm, teachers), norms, _EXACT,
                             **pperp))
        if "finetune" in plan.methods:  # every weight from the pretrained student; its own flow's convergence
            flow = train_on_samples(W_pre, c_pre, X, y, flow=plan.target_flow)  # (pretrain_*: the pretraining's)
            out.append(_rows(plan, "finetune", mu, n, _risk(plan, flow.W, flow.c, teachers), norms, flow, **pperp))
    return out


def _memory_estimate(plan: _Plan) -> float:
    """Peak bytes of :func:`run_transfer_experiment`, from the arrays it allocates (the stages run in turn).

    The larger of pretraining (with a transfer method: :func:`.training.pretraining_memory` of the T
    teachers; the projection P⊥ of the pretrained features takes as much as its Grams) and target training at
    the largest n (:func:`.training.training_memory` of the T·I networks; with scratch training, of the
    T·I·len(ns) networks of its one batch over every n, padded to the largest), plus what is kept throughout:
    the teachers and, per μ, the pretrained students and their sources (host and backend copies).
    """
    transfer = any(method != "scratch" for method in plan.methods)
    held = plan.teachers * plan.m_star * plan.d * (1 + 2 * len(plan.mus) * transfer)
    held += 2 * transfer * len(plan.mus) * plan.teachers * plan.m * (plan.d + 1)
    pretrain = transfer * pretraining_memory(plan.teachers, plan.m, plan.m_star, plan.d)
    flows = len(plan.ns) if "scratch" in plan.methods else 1  # the scratch flows of all n run as one batch
    target = training_memory(plan.teachers * plan.draws * flows, plan.m, plan.d, max(plan.ns))
    return FLOAT_BYTES * held + max(pretrain, target)


@guarded_entry_point
def run_transfer_experiment(d, m, m_star, mus, ns, teachers=FIELDS["teachers"].default,
                            draws=FIELDS["draws"].default, methods=FIELDS["methods"].default, seed=0,
                            output=FIELDS["output"].default, flow=None, pretrain_flow=None, linear_flow=None,
                            backend=None, max_memory=None, teacher_start=0, draw_start=0) -> pd.DataFrame:
    r"""Simulate FaF §4's ablated transfer (module docstring); one tidy row per (method, μ, n, teacher, draw).

    Parameters
    ----------
    d, m, m_star : int ≥ 1
        Input dimension, student width, target-teacher width (FaF App. D.2: 100, 1000, 100).
    mus : sequence of distinct floats in [0, 1)
        Fractions of the teacher's neurons the source lacks (round(μm*) ≤ m* − 1).
    ns : sequence of distinct ints ≥ 1
        Target sample sizes.
    teachers, draws : int ≥ 1
        Target teachers, and data sets (with scratch initializations) per teacher and n.
    methods : non-empty subset of :data:`METHODS` ("scratch", "linear", "linear_minnorm", "finetune")
    seed : int ≥ 0, numpy Generator or SeedSequence
        Root of every draw (a Generator or SeedSequence gives the integer root).
    output : "ones" or "normal"
        Teacher output weights (:func:`~transfertheory.theory.relu.random_teacher`).
    flow, pretrain_flow : None, :class:`~transfertheory.sim.integrator.FlowSettings` or a mapping of its settings
        The integrator's settings of target training (scratch, fine-tuning) and of pretraining:
        :data:`~transfertheory.sim.relu_teacher.training.TARGET_FLOW` (rtol 3e-2) and
        :data:`~transfertheory.sim.relu_teacher.training.PRETRAIN_FLOW` (rtol 1e-3), both with max_time 1e3 (half
        FaF's 1e5 iterations at rate 0.01·m, which are t = 2e3 since FaF's losses have no ½) and FaF's stopping
        rule loss ≤ loss_tol = 1e-6 (status ``loss_tol``), with the given changes
        (:meth:`~transfertheory.sim.integrator.FlowSettings.overridden`, e.g. ``flow={"max_time": 3e4}``). FaF's
        own protocol, gradient descent at its rate for its steps, is ``flow=pretrain_flow=``
        :func:`transfertheory.sim.gradient_descent.paper_gradient_descent` ``(0.01 * m, 10**5, time_scale=m)``
        (``linear`` then runs its exact flow for the same time).
    linear_flow : None, FlowSettings or a mapping
        The settings of ``linear``'s flow: target training's (after ``flow``) with the given changes. Its flow is
        solved in closed form, so ``linear_flow={"max_time": 1e30}`` costs no more than 1e3 and lets every flow
        meet its stopping rule (:func:`.training.linear_transfer_flow`: L̂ − L̂_min ≤ ``loss_tol``).
    backend : str or None
        Array backend name (:func:`transfertheory.backend.resolve_backend`).
    max_memory : int, str or None
        Memory limit (bytes or ``"64G"``; None: ``TRANSFERTHEORY_MAX_MEMORY``, else the memory available): the
        peak memory is estimated from the arguments (:func:`_memory_estimate`: O(T·(m + m*)²) for the
        population Grams, O(T·I·m·(d + n)) for target training) and a run above the limit is refused with a
        ValueError before any work.
    teacher_start, draw_start : int ≥ 0
        A chunk of a larger run: teachers ``teacher_start`` … ``teacher_start + teachers − 1`` and data sets
        ``draw_start`` … ``draw_start + draws − 1`` of each (their indices ``teacher``, ``draw`` in the table).
        Every draw is keyed by its absolute index (module docstring), so the chunks of a run give its rows,
        bit-identical on the CPU (each draw's flow has its own step control and its own products and sums in the
        batch). A process keeps the students it pretrained (the :data:`PRETRAINED_KEPT` most recent), so the
        chunks of one teacher that it computes in turn pretrain that teacher once.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`COLUMNS` (docs/relu.md): ``risk`` = E(f − f_t*)² exactly, ``risk_normalized`` =
        risk / Var f_t*(x) (``target_variance``; ``target_norm_sq`` = ‖f_t*‖²), ``pperp`` = ‖P⊥ f_t*‖² with P
        on the pretrained student's features (FaF Eq. 21; NaN for scratch), ``pperp_source`` = the same on the
        source teacher's features, ``pretrain_status``, ``pretrain_converged``, ``pretrain_loss``,
        ``pretrain_initial_loss``: the pretraining flow of the row's student (NaN and "" for scratch; so a table
        read back from a sweep store reports its pretraining too), and the convergence columns (``linear``:
        ``steps`` 0, ``norm_drift`` NaN; ``linear_minnorm``: status ``exact``). ``df.attrs["pretrain"]``: one row per (μ, teacher) of the
        pretraining flows (loss, initial_loss, converged, status, t_final, steps, grad_norm, norm_drift, pperp,
        pperp_source); ``df.attrs["students"]``: μ → :class:`PretrainedStudents` (host arrays of the pretrained
        students and their source teachers); ``df.attrs`` also holds the backend and settings.
    """
    import pandas as pd
    plan = _plan(d, m, m_star, mus, ns, teachers, draws, methods, seed, output, flow, pretrain_flow, linear_flow,
                 teacher_start, draw_start)
    xp = resolve_backend(backend)
    check_memory(_memory_estimate(plan), what="run_transfer_experiment", xp=xp, max_memory=max_memory,
                 params={"d": plan.d, "m": plan.m, "m_star": plan.m_star, "len(mus)": len(plan.mus),
                         "max(ns)": max(plan.ns), "teachers": plan.teachers, "draws": plan.draws})
    W_t, c_t = _teachers(plan, xp)
    norms = {"target_variance": target_variance(W_t, c_t), "target_norm_sq": target_norm_sq(W_t, c_t)}
    norms = {k: np.repeat(np.asarray(to_host(v)), plan.draws) for k, v in norms.items()}
    transfer = [mth for mth in plan.methods if mth != "scratch"]
    key = replace(plan, mus=(), ns=(), draws=1, draw_start=0, methods=(), target_flow=plan.pretrain_flow,
                  linear_flow=plan.pretrain_flow)  # the fields pretraining does not read fixed: _pretrained's key
    pretrained = {mu: _pretrained(key, mu, backend_name(xp)) for mu in plan.mus} if transfer else {}
    samples = {n: _samples(plan, W_t, c_t, n, xp) for n in plan.ns}
    scratch = _scratch_flows(plan, samples, xp) if "scratch" in plan.methods else {}
    rows = [r for n in plan.ns for r in _n_rows(plan, n, samples[n], scratch.get(n), norms, pretrained, (W_t, c_t), xp)]
    df = pd.concat(rows, ignore_index=True).sort_values(list(ROW_KEYS), ignore_index=True)[list(COLUMNS)]
    df.attrs.update(backend=backend_name(xp), seed=plan.seed, output=plan.output,
                    target_flow=plan.target_flow.as_dict(), pretrain_flow=plan.pretrain_flow.as_dict(),
                    pretrain=pd.concat([p[1] for p in pretrained.values()], ignore_index=True).to_dict("list")
                    if pretrained else {},
                    students={mu: p[2] for mu, p in pretrained.items()})
    return df


def _faf_relu(p, seed, backend):
    return run_transfer_experiment(p["d"], p["m"], p["m_star"], p["mus"], p["ns"], teachers=p["teachers"],
                                   draws=p["draws"], methods=p["methods"], output=p["output"], backend=backend,
                                   seed=seed if p["draw_seed"] < 0 else p["draw_seed"], draw_start=p["draw_start"],
                                   teacher_start=p["teacher_start"], **flow_arguments(p, "pretrain", "linear"))


# version 4: loss_tol no longer sets the pretraining's rule too (pretrain_loss_tol does), so a stored point of
# version 3 with another loss_tol than the default had other pretraining flows
#: the experiment record ``faf_relu``: FaF §4's ablated transfer at the fractions ``mus`` over the sample sizes
#: ``ns``; a point may be a chunk of a run's teachers and data sets (``teacher_start``, ``draw_start``, the run's
#: ``draw_seed``), which gives the run's rows bit for bit
FAF_RELU = Experiment(
    name="faf_relu", paper="FaF §4", version=4,
    description="two-layer ReLU students transferred from ablated teachers at the fractions mus, over the sample "
                "sizes ns (the scratch flows shared by every μ); a chunk of a larger run's teachers and data sets",
    fields=tuple(FIELDS.values()),
    example=dict(d=4, m=8, m_star=4, mus=(0.5,), ns=(8,), max_time=20.0, pretrain_max_time=20.0),
    renamed={"instances": "draws", "instance_start": "draw_start", "instance": "draw"},
    simulate=_faf_relu)
