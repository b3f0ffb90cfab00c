"""Instrumentation of the simulator for ``bench_deep_linear.py``: exclusive time per phase.

:class:`PhaseTimer` wraps, for the duration of a ``with`` block, the functions the experiment pipeline calls
(looked up in ``transfertheory.sim.deep_linear.experiment``, and ``integrate_gradient_flow`` and the stage
kernel in ``...training``); :func:`run_simulator` times one ``run_transfer_experiment`` call. Times are by
:func:`bench_clock`: process CPU time on NumPy, wall time on a GPU.
"""
from __future__ import annotations

import functools
import time
from collections import defaultdict

import numpy as np

from transfertheory.backend import backend_name
from transfertheory.sim.deep_linear import experiment as _experiment
from transfertheory.sim.deep_linear import run_transfer_experiment
from transfertheory.sim.deep_linear import training as _training


def bench_clock(xp):
    """The benchmarks' clock: process CPU time on NumPy (on a machine shared with other jobs it counts this
    process's work, not the time others took; with one BLAS thread it is the work done), wall time on a GPU
    backend (the device's work is not CPU time)."""
    return time.perf_counter if backend_name(xp) == "cupy" else time.process_time


def sync(xp) -> None:
    """Wait for queued device work (no-op on NumPy) so that wall times are honest."""
    if backend_name(xp) == "cupy":
        xp.cuda.Device().synchronize()


class PhaseTimer:
    """Exclusive time per phase (:func:`bench_clock`), by wrapping the functions the experiment pipeline calls.

    The names are looked up in ``transfertheory.sim.deep_linear.experiment`` (and
    ``integrate_gradient_flow`` in ``...training``), so they are patched there. A call nested inside ``pretrain`` is charged to pretraining. Each wrapped
    ``integrate_gradient_flow`` call records its progress timeline (wall time
    vs fraction of instances finished) and the final statuses; the stage kernel of every flow counts its
    stage evaluations and the instances they evaluate (``stage_evaluations``, ``stage_instances``: their
    ratio is the mean batch size of a stage).
    """

    WRAPPED = {
        "pretrain": "pretraining",
        "train": "target flows",
        "_target_statistics": "target data (X, XᵀX/n)",
        "feature_basis": "linear transfer (exact)",
        "linear_transfer_exact": "linear transfer (exact)",
        "init_weights": "init + diagnostics",
        "assumption22_margin": "init + diagnostics",
        "imbalance_drift": "init + diagnostics",
    }

    def __init__(self, xp):
        self.xp = xp
        self.excl = defaultdict(float)
        self.evals = defaultdict(int)
        self.stack = []
        self.flows = []
        self._saved = {}
        self.clock = bench_clock(xp)
        self.stage_evaluations = self.stage_instances = 0

    def _label(self, name):
        if any(frame[0] == "pretraining" for frame in self.stack):
            return "pretraining"
        return self.WRAPPED[name]

    def _wrap(self, name, fn):
        def wrapped(*args, **kwargs):
            label = self._label(name)
            t0 = self.clock()
            self.stack.append([label, 0.0])
            try:
                out = fn(*args, **kwargs)
                if name == "train":
                    sync(self.xp)
                    self.evals[label] += int(getattr(out, "evaluations", 0))
                return out
            finally:
                lab, child = self.stack.pop()
                elapsed = self.clock() - t0
                self.excl[lab] += elapsed - child
                if self.stack:
                    self.stack[-1][1] += elapsed
        return wrapped

    def _wrap_flow(self, fn):
        def wrapped(gradient, y0, *args, **kwargs):  # args: the FlowSettings record
            timeline = []
            t0 = self.clock()
            user = kwargs.get("progress")

            def progress(frac):
                timeline.append((self.clock() - t0, frac))
                if user is not None:
                    user(frac)

            kwargs["progress"] = progress
            out = fn(gradient, y0, *args, **kwargs)
            self.flows.append(dict(label=self._label("train"), B=int(y0.shape[0]), wall=self.clock() - t0,
                                   timeline=timeline, status=np.asarray(out.status), evaluations=out.evaluations,
                                   max_stages=out.max_stages, rejected=out.rejected))
            return out
        return wrapped

    def _counting_kernel(self, kernel_class):
        timer = self

        class CountingStages(kernel_class):
            def __call__(self, step):
                if not timer.stack or timer.stack[-1][0] != "target flows":  # pretraining: one instance
                    return super().__call__(step)
                s_max = int(step.stages.max())
                timer.stage_evaluations += s_max + (step.carried is None)  # + stage 0 when nothing is carried
                timer.stage_instances += int(step.stages.sum()) + (step.stages.size if step.carried is None else 0)
                return super().__call__(step)

        return CountingStages

    def __enter__(self):
        for name in self.WRAPPED:
            self._saved[(_experiment, name)] = getattr(_experiment, name)
            setattr(_experiment, name, self._wrap(name, self._saved[(_experiment, name)]))
        self._saved[(_training, "integrate_gradient_flow")] = _training.integrate_gradient_flow
        _training.integrate_gradient_flow = self._wrap_flow(_training.integrate_gradient_flow)
        self._saved[(_training, "LowRankStages")] = _training.LowRankStages
        _training.LowRankStages = self._counting_kernel(_training.LowRankStages)
        return self

    def __exit__(self, *exc):
        for (module, name), fn in self._saved.items():
            setattr(module, name, fn)
        return False

    def tail(self, flow):
        """Wall time spent while only instances that end unconverged remain active (γ = 1 rows:
        max_time, step_underflow, ...); returns (seconds, number of such instances)."""
        n_budget = int(np.sum(flow["status"] != "converged"))
        if n_budget == 0 or not flow["timeline"]:
            return 0.0, n_budget
        B = flow["B"]
        for wall, frac in flow["timeline"]:
            if B * (1.0 - frac) <= n_budget + 0.5:
                return flow["wall"] - wall, n_budget
        return 0.0, n_budget


def run_simulator(xp, timer=None, early_verdict=True, **kwargs):
    """(DataFrame, seconds by :func:`bench_clock`) of one ``run_transfer_experiment(**kwargs)``;
    ``early_verdict=False`` runs the target flows without the early verdict (``train(..., early_verdict=False)``:
    every flow that does not converge is integrated to ``max_time``, the previous behaviour)."""
    clock = bench_clock(xp)
    original = _experiment.train
    if not early_verdict:
        _experiment.train = functools.partial(original, early_verdict=False)
    try:
        t0 = clock()
        if timer is None:
            df = run_transfer_experiment(**kwargs)
        else:
            with timer:
                df = run_transfer_experiment(**kwargs)
        sync(xp)
        return df, clock() - t0
    finally:
        _experiment.train = original
