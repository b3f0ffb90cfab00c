#!/usr/bin/env python
r"""MeRLin's flows against the RKC stage cap: gradient calls, instance-evaluations, CPU time and the outcomes.

The table of docs/merlin.md ("The stage cap"): the two studies of ``merlin_fig --quick`` (the d = 12 comparison of
the four algorithms and the d = 4 success study, the figure's arguments and :data:`STUDY_TOLERANCES`) run at each
``max_stages`` in one process, the caps alternating within each repetition (order rotated, after one small warm-up
run per cap), CPU time of the process (``time.process_time``), one BLAS thread (threadpoolctl). A step of the
integrator's dense stage kernel calls the gradient once per stage for the instances still in that stage, so it
costs as many calls as the largest stage count of its batch; the calls are counted by wrapping
:meth:`transfertheory.sim.merlin.Objective.value_and_grad`. Each cap's outcomes are compared with the first cap's:
the discrete columns of the kept flows (``recovered, top_coord, coords, restarts_needed, converged, status``) and
the largest relative difference of their target losses.

Examples::

    python benchmarks/merlin_stage_cap.py                               # caps 40 60 80 100 120 160, 3 repetitions
    python benchmarks/merlin_stage_cap.py --caps 40 60 --repeats 1 --rtol 1e-3
"""
from __future__ import annotations

import argparse
import contextlib
import os
import platform
import statistics
import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

from transfertheory import cli_support
from transfertheory.figures.catalog import registered
from transfertheory.figures.merlin_fig import ALGORITHMS
from transfertheory.sim import merlin as Q

DISCRETE = ("recovered", "top_coord", "coords", "restarts_needed", "converged", "status")


def studies(rtol, gtol):
    """The two studies of ``merlin_fig.build`` at its registered quick profile, as functions of the cap (name →
    callable; ``draws`` overrides the profile's draws, for a warm-up)."""
    p = registered()["merlin_fig"].profiles["quick"]
    common = dict(splits=Q.MERLIN_SPLITS)
    return {
        "comparison": lambda cap, draws=p["draws"]: Q.run_comparison(
            p["d"], p["m"], p["k"], list(p["n_targets"]), p["lam"], draws, algorithms=ALGORITHMS,
            restarts=p["restarts"], seed=0, flow=dict(rtol=rtol, gtol=gtol, max_stages=cap), **common),
        "success": lambda cap, draws=p["success_draws"]: Q.run_comparison(
            p["k"] + 1, p["m"], p["k"], list(p["success_n"]), p["lam"], draws, algorithms=("merlin",),
            restarts=Q.merlin_restarts(p["k"]), seed=1, flow=dict(rtol=rtol, gtol=gtol, max_stages=cap),
            **common),
    }


@contextlib.contextmanager
def counted_calls():
    """Count the objective's gradient calls and the instances they evaluate (a dict, filled inside the block)."""
    counts = {"calls": 0, "evaluations": 0}
    original = Q.Objective.value_and_grad

    def value_and_grad(self, y, rows):
        counts["calls"] += 1
        counts["evaluations"] += y.shape[0]
        return original(self, y, rows)

    Q.Objective.value_and_grad = value_and_grad
    try:
        yield counts
    finally:
        Q.Objective.value_and_grad = original


def outcome_change(reference, frame) -> str:
    """The kept flows' discrete columns that differ from ``reference`` and the largest relative target-loss gap."""
    moved = [f"{c} {int((reference[c].astype(str) != frame[c].astype(str)).sum())}" for c in DISCRETE
             if (reference[c].astype(str) != frame[c].astype(str)).any()]
    gap = np.max(np.abs(frame["target_loss"] - reference["target_loss"]) / np.abs(reference["target_loss"]))
    return f"{'changed: ' + ', '.join(moved) if moved else 'same'}; target loss within {gap:.1e}"


@cli_support.entry_point  # Ctrl-C, SIGTERM: one line and 128 + the signal
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--caps", type=int, nargs="+", default=[40, 60, 80, 100, 120, 160])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rtol", type=float, default=Q.STUDY_TOLERANCES["rtol"])
    parser.add_argument("--gtol", type=float, default=Q.STUDY_TOLERANCES["gtol"])
    a = parser.parse_args(argv)
    threadpool_limits(1)
    runs = studies(a.rtol, a.gtol)
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, load average "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}, 1 BLAS thread, rtol {a.rtol:g}, gtol {a.gtol:g}, "
          f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')}")
    for cap in a.caps:
        runs["success"](cap, draws=3)  # warm-up: the cap's coefficient table, caches, code paths
    cpu, counts, frames = {}, {}, {}
    for repeat in range(a.repeats):
        shift = repeat % len(a.caps)
        for cap in a.caps[shift:] + a.caps[:shift]:
            for name, run in runs.items():
                with counted_calls() as count:
                    start = time.process_time()
                    frames[name, cap] = run(cap)
                    cpu.setdefault((name, cap), []).append(time.process_time() - start)
                counts[name, cap] = count
    print("| study | cap | gradient calls | instance-evaluations | CPU s (median; runs) | outcome vs cap "
          f"{a.caps[0]} |\n|---|---|---|---|---|---|")
    for name in runs:
        for cap in a.caps:
            times = cpu[name, cap]
            print(f"| {name} | {cap} | {counts[name, cap]['calls']} | {counts[name, cap]['evaluations']} | "
                  f"{statistics.median(times):.2f} ({', '.join(f'{t:.2f}' for t in times)}) | "
                  f"{outcome_change(frames[name, a.caps[0]], frames[name, cap])} |")
    print(f"load average at the end {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    sys.exit(main())
