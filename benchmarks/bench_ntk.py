#!/usr/bin/env python
r"""Benchmark: the exact deep ReLU NNGP + NTK Gram matrices (MTL §4, :func:`transfertheory.theory.ntk.relu_kernels`).

Times ``relu_kernels(X, depth=L)`` for an n × n Gram of standard normal inputs standardized to ‖x‖² = d (MTL's
convention) and prints the median and minimum over the repeats, with the machine's backend. Reference (2-core
CPU, NumPy, one BLAS thread): n = 2000, d = 10, depth 10 in 0.50–0.56 s.

Examples::

    python benchmarks/bench_ntk.py                         # n = 2000, depth 10
    python benchmarks/bench_ntk.py --n 8000 --depth 20 --backend cupy

Exit status: 0 on success, 2 on a usage error (argparse), 3 when the backend is unavailable.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from transfertheory import backend
from transfertheory.params import Param
from transfertheory._validation import Interval
from transfertheory.theory.ntk import HIDDEN_DEPTH, relu_kernels

POINTS = Param("n", Interval(1, 10**5, "both"), integer=True, description="points of the Gram matrix")
DIM = Param("d", Interval(1, 10**4, "both"), integer=True, description="input dimension")
REPEATS = Param("repeats", Interval(1, 100, "both"), integer=True, description="timed repetitions")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=POINTS.arg_type(), default=2000, help="points (default 2000)")
    parser.add_argument("--d", type=DIM.arg_type(), default=10, help="input dimension (default 10)")
    parser.add_argument("--depth", type=HIDDEN_DEPTH.arg_type(), default=10, help="hidden ReLU layers (default 10)")
    parser.add_argument("--repeats", type=REPEATS.arg_type(), default=3, help="timed repetitions (default 3)")
    parser.add_argument("--backend", choices=backend.backend_names(), default="numpy")
    args = parser.parse_args(argv)
    try:
        xp = backend.resolve_backend(args.backend)
    except backend.BackendUnavailableError as err:
        print(f"bench_ntk: {err}", file=sys.stderr)
        return backend.EXIT_BACKEND_UNAVAILABLE
    x = np.random.default_rng(0).standard_normal((args.n, args.d))
    x = xp.asarray(x / np.linalg.norm(x, axis=1, keepdims=True) * np.sqrt(args.d))
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        nngp, ntk = relu_kernels(x, depth=args.depth)
        float(ntk[0, 0])  # synchronize a device backend
        times.append(time.perf_counter() - start)
    print(f"relu_kernels: n = {args.n}, d = {args.d}, depth = {args.depth}, backend {args.backend}: "
          f"median {statistics.median(times):.3f} s, min {min(times):.3f} s over {args.repeats} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
