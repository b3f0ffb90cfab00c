#!/usr/bin/env python
r"""Benchmark: the data of MTL Fig. 1 (``theory/mtl_gaps.py``) — Lemma 1's F_MTL and both F_ANIL on every test
task of MTL §5.1's data set — batched over the test tasks against a per-test-task loop, in the same run.

For each depth L, one data set (:func:`transfertheory.theory.mtl.synthetic_problem`: 20 training tasks of 10
points, ``--test-tasks`` test tasks of 5 support and 10 query points) and its Grams (computed once, not timed),
the two paths compute ‖F_ANIL − F_MTL‖₂ per test task for both Φ′_ANIL expressions at each λτ = λτ̂ of
``--lam-taus``:

* **loop**: one :class:`~transfertheory.theory.mtl.TaskKernels` per test task
  (:meth:`~transfertheory.theory.mtl.FewShotProblem.test_task_kernels`) and the single-task predictions — the
  loop ``mtl_fig1`` ran before its test tasks were batched (both paths use today's F_ANIL, without Φ_ANIL⁻¹);
* **batched**: :func:`transfertheory.theory.mtl_gaps.prediction_gaps` — one
  :class:`~transfertheory.theory.mtl.TestTaskBatch`, stacked eigendecompositions, shared training-set solves.

Prints per depth the medians over ``--repeats`` alternated runs, the median paired ratio loop/batched and the
largest relative difference of the gaps. Reference numbers (2-core CPU, shared): docs/benchmarks.md.

Examples::

    python benchmarks/bench_mtl_fig1.py                  # depths 1 10 64, the quick profile's λτ values
    python benchmarks/bench_mtl_fig1.py --quick          # smoke run (seconds; no speed verdict)

Exit status: 0 on success, 2 on a usage error (argparse), 130 on Ctrl-C.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from transfertheory import cli_support
from transfertheory._validation import Interval
from transfertheory.theory import mtl_gaps
from transfertheory.params import Param
from transfertheory.theory import mtl as MTL

REPEATS = Param("repeats", Interval(1, 100, "both"), integer=True, description="timed repetitions")
TESTS = Param("test_tasks", Interval(1, 1000, "both"), integer=True, description="test tasks of the data set")
DEPTH = Param("depths", Interval(0, 10**4, "both"), integer=True, description="hidden layers L")
LAM = Param("lam_taus", Interval(0, 10, "both"), description="λτ = λτ̂")


def loop_gaps(problem, grams, lam_tau):
    """{variant: (test tasks,) ‖F_ANIL − F_MTL‖₂}, one test task at a time."""
    gaps = {variant: [] for variant in MTL.ANIL_VARIANTS}
    for test in range(len(problem.support)):
        tk = problem.test_task_kernels(*grams, test)
        f_mtl = MTL.mtl_predictions(tk, problem.labels, problem.support_labels[test], lam_tau)
        for variant in MTL.ANIL_VARIANTS:
            f_anil = MTL.anil_predictions(tk, problem.labels, problem.support_labels[test], lam_tau, lam_tau, variant)
            gaps[variant].append(float(np.linalg.norm(f_anil - f_mtl)))
    return {variant: np.array(v) for variant, v in gaps.items()}


def _timed(fn):
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def bench_depth(depth, lam_taus, test_tasks, repeats):
    """(median loop s, median batched s, median paired ratio, largest relative gap difference) at one depth."""
    problem = MTL.synthetic_problem(np.random.default_rng([0, depth]), test_tasks=test_tasks)
    grams = MTL.ReluNetwork(depth).kernels(problem.points())
    loop_times, batch_times, worst = [], [], 0.0
    for _ in range(repeats):
        t_loop, by_loop = _timed(lambda: [loop_gaps(problem, grams, lt) for lt in lam_taus])
        t_batch, by_batch = _timed(lambda: [mtl_gaps.prediction_gaps(problem, depth, lt, grams=grams) for lt in lam_taus])
        loop_times.append(t_loop)
        batch_times.append(t_batch)
        for a, b in zip(by_loop, by_batch):
            worst = max(worst, max(float(np.max(np.abs(a[v] - b[v]) / np.abs(a[v]))) for v in a))
    ratio = statistics.median(a / b for a, b in zip(loop_times, batch_times))
    return statistics.median(loop_times), statistics.median(batch_times), ratio, worst


@cli_support.entry_point
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--depths", type=int, nargs="+", default=[1, 10, 64])
    parser.add_argument("--lam-taus", type=float, nargs="+", default=[0.0, 0.01, 0.03, 0.1, 0.2, 0.3, 0.5])
    parser.add_argument("--test-tasks", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="smoke run: depth 2, 4 test tasks, 2 λτ, 1 repeat")
    args = parser.parse_args(argv)
    if args.quick:
        args.depths, args.lam_taus, args.test_tasks, args.repeats = [2], [0.0, 0.3], 4, 1
    try:
        depths = [DEPTH.scalar(d) for d in args.depths]
        lam_taus = [LAM.scalar(lt) for lt in args.lam_taus]
        test_tasks, repeats = TESTS.scalar(args.test_tasks), REPEATS.scalar(args.repeats)
    except ValueError as exc:
        parser.error(str(exc))
    print(f"MTL Fig. 1 data: {test_tasks} test tasks, λτ = {lam_taus}, {repeats} repeats (medians; Grams not timed)")
    print("| L | loop (s) | batched (s) | paired ratio loop/batched | max relative difference |")
    print("|---|---|---|---|---|")
    for depth in depths:
        loop, batch, ratio, worst = bench_depth(depth, lam_taus, test_tasks, repeats)
        print(f"| {depth} | {loop:.3f} | {batch:.3f} | {ratio:.1f} | {worst:.1e} |")
    if args.quick:
        print("smoke run: no speed verdict")
    return 0


if __name__ == "__main__":
    sys.exit(main())
