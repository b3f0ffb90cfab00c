#!/usr/bin/env python
r"""Benchmark: the sweep engine's scaling (1 vs N local workers) and the BLAS thread setting of one process.

* ``workers`` — a named sweep (default ``faf_fig1``, quick profile) run into a fresh store with 1 worker and with
  N workers (default: the cores), alternately, ``--repeats`` times (paired: the same machine load on both
  sides of a pair); prints every wall time, the medians and the speed-up. The workers get ⌊cores/N⌋ BLAS
  threads each (:mod:`transfertheory.threads`).
* ``threads`` — one point of the sweep's experiment (its first point) in this process with 1 BLAS thread and
  with one per core, alternately; prints the medians and their ratio (the setting
  :data:`transfertheory.threads.SERIAL_THREADS` should be).

Examples::

    python benchmarks/bench_sweep.py workers --repeats 2
    python benchmarks/bench_sweep.py threads --repeats 5
    python benchmarks/bench_sweep.py workers --sweep tdr --workers 2 --quick    # smoke run
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from transfertheory import cli_support
from transfertheory.sweep import NAMED_SWEEPS, parse_spec, run_sweep  # noqa: E402
from transfertheory.sweep.engine import point_seed, plan  # noqa: E402
from transfertheory.sweep.store import Store  # noqa: E402
from transfertheory.sim import get_experiment  # noqa: E402
from transfertheory.threads import available_cores, blas_threads  # noqa: E402


def _timed(function):
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def bench_workers(spec, workers, repeats):
    """Paired wall times of the whole sweep with 1 and with ``workers`` workers, each into a fresh store."""
    times = {1: [], workers: []}
    for _ in range(repeats):
        for count in (1, workers):
            with tempfile.TemporaryDirectory() as store:
                times[count].append(_timed(lambda: run_sweep(spec, store, workers=count, progress=False,
                                                             echo=lambda line: None)))
                print(f"  {count} worker(s): {times[count][-1]:.1f} s", flush=True)
    one, many = statistics.median(times[1]), statistics.median(times[workers])
    print(f"{spec.name}: {spec.size()} points; median 1 worker {one:.1f} s, {workers} workers {many:.1f} s, "
          f"speed-up {one / many:.2f}x ({repeats} paired runs, {available_cores()} cores)")


def bench_threads(spec, repeats):
    """Paired times of the sweep's first point in this process with 1 BLAS thread and with one per core."""
    (task, *_) = plan(spec, Store(tempfile.mkdtemp()))
    record, seed = get_experiment(task.experiment), point_seed(task.base_seed, task.pid)
    cores = available_cores()
    times = {1: [], cores: []}
    for _ in range(repeats):
        for threads in (1, cores):
            with blas_threads(threads):
                times[threads].append(_timed(lambda: record.run(seed=seed, **task.point)))
            print(f"  {threads} BLAS thread(s): {times[threads][-1]:.2f} s", flush=True)
    one, many = statistics.median(times[1]), statistics.median(times[cores])
    print(f"{spec.name} point 1 ({task.experiment}): median 1 BLAS thread {one:.2f} s, {cores} threads {many:.2f} s, "
          f"ratio {many / one:.2f} ({repeats} paired runs)")


@cli_support.entry_point  # Ctrl-C, SIGTERM: one line and 128 + the signal
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=("workers", "threads"))
    parser.add_argument("--sweep", default="faf_fig1", choices=sorted(NAMED_SWEEPS))
    parser.add_argument("--profile", default="quick", choices=("quick", "paper"))
    parser.add_argument("--workers", type=int, default=available_cores())
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="smoke run: 1 repeat, the sweep's first axis value")
    args = parser.parse_args(argv)
    spec = parse_spec(NAMED_SWEEPS[args.sweep], args.sweep, args.profile)
    if args.quick:
        first = next(iter(spec.axes))
        spec = parse_spec(NAMED_SWEEPS[args.sweep], args.sweep, args.profile,
                          {first: spec.axes[first][0]})
        args.repeats = 1
    if args.what == "workers":
        bench_workers(spec, args.workers, args.repeats)
    else:
        bench_threads(spec, args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
