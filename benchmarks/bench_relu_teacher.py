#!/usr/bin/env python
r"""Benchmark: the exact population-gradient step of FaF §4 pretraining against a sampled-batch gradient.

FaF §4 pretrains on the population loss L = ½E(f − f_s*)², x ~ N(0, I_d). The simulator evaluates L and its
gradients exactly through the arc-cosine kernel
(:func:`transfertheory.theory.relu.population_loss_and_gradients`, O((m + m*)²d), no data). The alternative a
user would write is the sampled loss on a large batch of N fresh inputs with hand-written NumPy gradients (no
autograd; :func:`transfertheory.sim.relu_teacher.empirical_loss_and_gradients` with y = f_s*(x), O(Nmd)).

Equal accuracy: the exact loss is exact to rounding, so the sampled estimate is given the batch N(ε) at which its
relative standard error equals ε, N(ε) = CV²/ε² with CV the coefficient of variation of ½(f − f*)² (estimated from
2·10⁵ pilot inputs at the same weights). Both are timed in the same run (alternating, medians over the
repeats) at two states: FaF's initialization (output weights 1e−7) and a student pretrained for flow time 100 (a
small loss, where training needs the relative accuracy). The sampled gradient is timed on batches of at most 10⁵
inputs (and 2·10⁷ features) and scaled linearly to N(ε) (its cost is linear in N). Reported: the ratio t_sampled(N(ε))/t_exact.

Examples::

    python benchmarks/bench_relu_teacher.py                 # d = 20, m = 200, m* = 10 (FaF Fig. 4's CPU size)
    python benchmarks/bench_relu_teacher.py --d 100 --m 1000 --m-star 50    # FaF's widths, μ = 0.5
    python benchmarks/bench_relu_teacher.py --quick         # smoke run (seconds; small sizes)

Exit status: 0 on success, 2 on a usage error (argparse), 3 when the backend is unknown or unavailable, 130 on
Ctrl-C.
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
import time

import numpy as np

from transfertheory import backend, cli_support
from transfertheory._validation import Interval
from transfertheory.backend import to_host
from transfertheory.params import Param
from transfertheory.sim.relu_teacher import empirical_loss_and_gradients, network_output, paper_init, pretrain_source
from transfertheory.theory.relu import population_loss_and_gradients, random_teacher

SIZE = Param("size", Interval(1, 10**5, "both"), integer=True, description="d, m or m*")
REPEATS = Param("repeats", Interval(1, 1000, "both"), integer=True, description="timed repetitions")
PILOT, CHUNK, CHUNK_ELEMENTS = 200_000, 100_000, 2 * 10**7  # timed batch: ≤ CHUNK inputs, ≤ CHUNK_ELEMENTS features
ACCURACIES = (1e-2, 1e-3)


def _median_times(calls, repeats, sync):
    """Median seconds of each call, the calls alternating within every repeat (paired under the same load)."""
    times = [[] for _ in calls]
    for _ in range(repeats):
        for call, record in zip(calls, times):
            start = time.perf_counter()
            sync(call())
            record.append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def compare_at(W, c, W_s, c_s, rng, repeats, xp):
    """(exact seconds, sampled seconds per input, CV of ½(f − f*)², exact loss) at one state (batch of 1)."""
    batch = min(CHUNK, CHUNK_ELEMENTS // W.shape[-2])
    half_sq = []
    for _ in range(PILOT // batch):
        pilot = xp.asarray(rng.standard_normal((batch, W.shape[-1])))
        half_sq.append(to_host(0.5 * (network_output(W[0], c[0], pilot) - network_output(W_s[0], c_s[0], pilot)) ** 2))
    half_sq = np.concatenate(half_sq)
    cv = float(half_sq.std() / half_sq.mean())
    X = xp.asarray(rng.standard_normal((1, batch, W.shape[-1])))
    y = network_output(W_s, c_s, X)

    def sync(out):
        float(out[0][0] if out[0].ndim else out[0])  # waits for a device backend

    exact, sampled = _median_times((lambda: (population_loss_and_gradients(W, c, W_s, c_s).loss,),
                                    lambda: empirical_loss_and_gradients(W, c, X, y)), repeats, sync)
    sampled /= X.shape[1]
    loss = float(population_loss_and_gradients(W, c, W_s, c_s).loss[0])
    return exact, sampled, cv, loss


def report(label, exact, per_input, cv, loss):
    lines = [f"{label}: exact L = {loss:.3g}, exact step {exact * 1e3:.2f} ms; sampled CV of ½(f − f*)² = {cv:.3g}, "
             f"{per_input * 1e9:.1f} ns per input"]
    for eps in ACCURACIES:
        n_eps = math.ceil((cv / eps) ** 2)
        lines.append(f"  relative SE {eps:g}: N = {n_eps:,} inputs, sampled step {per_input * n_eps * 1e3:.1f} ms, "
                     f"ratio sampled/exact = {per_input * n_eps / exact:.0f}")
    return lines


@cli_support.entry_point
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--d", type=SIZE.arg_type(), default=20, help="input dimension (default 20)")
    parser.add_argument("--m", type=SIZE.arg_type(), default=200, help="student width (default 200)")
    parser.add_argument("--m-star", type=SIZE.arg_type(), default=10, help="source-teacher width (default 10)")
    parser.add_argument("--repeats", type=REPEATS.arg_type(), default=21, help="timed repetitions (default 21)")
    parser.add_argument("--quick", action="store_true", help="smoke run: d = 5, m = 20, m* = 3, 3 repeats")
    cli_support.add_backend_argument(parser, help_text="array backend, NumPy when neither the flag nor the variable "
                                     "is set")
    args = parser.parse_args(argv)
    if args.quick:
        args.d, args.m, args.m_star, args.repeats = 5, 20, 3, 3
    args.backend = cli_support.resolve_backend(args.backend, default="numpy")
    xp = backend.resolve_backend(args.backend)
    rng = np.random.default_rng(0)
    W_s, c_s = (backend.to_device(a, xp) for a in random_teacher(args.m_star, args.d, rng, batch=(1,)))
    W0, c0 = (backend.to_device(a, xp) for a in paper_init(args.m, args.d, rng, batch=(1,)))
    pre = pretrain_source(W_s, c_s, args.m, rng, max_time=100.0)
    print(f"bench_relu_teacher: d = {args.d}, m = {args.m}, m* = {args.m_star}, backend {args.backend}, "
          f"{args.repeats} repeats (medians)")
    for label, (W, c) in (("initialization", (W0, c0)), ("pretrained t = 100", (pre.W, pre.c))):
        print("\n".join(report(label, *compare_at(W, c, W_s, c_s, rng, args.repeats, xp))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
