"""Benchmark: the batched TDR §6 trainer (sim.ntk_two_layer) against a per-network gradient-descent loop.

The same run in both: for every width and seed, pretraining on P from W(0), fine-tuning on Q from W(P) and
training on Q from scratch, from the same initial weights (``initial_weights``). The simulator integrates
the gradient flow of all seeds of a width at once (RKC, tangent-kernel step control); the baseline is what a
user writes: one network at a time, full-batch gradient descent W ← W − η∇L with the stable step
η = 1/λ_max(H∞) of the data, stopped when the loss is at most the largest final loss the simulator reached
on that width and stage (equal final loss). Printed: wall times, the ratio baseline/simulator, and the
largest difference of the measured distances (gradient descent and gradient flow reach nearby minima).

    python benchmarks/bench_ntk_two_layer.py [--widths 256 1024 4096] [--seeds 8] [--n 10] [--d 8] [--csv PATH]
"""
from __future__ import annotations

import argparse
import csv
import math
import sys
import time

import numpy as np

from transfertheory.sim.ntk_two_layer import initial_weights, simulate_transfer
from transfertheory.theory.ntk_two_layer import two_layer_gram


def _data(n, d, seed):
    rng = np.random.default_rng(seed)
    x_p, x_q = (rng.standard_normal((n, d)) for _ in range(2))
    x_p /= np.linalg.norm(x_p, axis=1, keepdims=True)
    x_q /= np.linalg.norm(x_q, axis=1, keepdims=True)
    return x_p, x_p[:, 0], x_q, math.cos(0.7) * x_q[:, 0] + math.sin(0.7) * x_q[:, 1]


def _gradient_descent(w, a, x, y, eta, loss_target, max_steps):
    """A user's loop: one network, f = aᵀσ(Wx)/√m, GD until ½‖f(X) − y‖² ≤ loss_target."""
    root_m = math.sqrt(w.shape[0])
    for step in range(max_steps):
        pre = w @ x.T
        residual = a @ np.maximum(pre, 0) / root_m - y
        if 0.5 * residual @ residual <= loss_target:
            return w, step
        w = w - eta * ((a[:, None] * (pre > 0) * residual[None, :]) @ x) / root_m
    return w, max_steps


def _baseline(x_p, y_p, x_q, y_q, width, seeds, targets, max_steps):
    w0, a = initial_weights(width, x_p.shape[1], seeds)
    eta_p, eta_q = (1 / np.linalg.eigvalsh(two_layer_gram(x))[-1] for x in (x_p, x_q))
    finetune, scratch, steps = [], [], 0
    for s in range(seeds):
        w_p, k1 = _gradient_descent(w0[s], a[s], x_p, y_p, eta_p, targets[0], max_steps)
        w_q, k2 = _gradient_descent(w_p, a[s], x_q, y_q, eta_q, targets[1], max_steps)
        w_s, k3 = _gradient_descent(w0[s], a[s], x_q, y_q, eta_q, targets[2], max_steps)
        finetune.append(np.linalg.norm(w_q - w_p))
        scratch.append(np.linalg.norm(w_s - w0[s]))
        steps = max(steps, k1, k2, k3)
    return np.array(finetune), np.array(scratch), steps


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--widths", type=int, nargs="+", default=[256, 1024, 4096])
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--n", type=int, default=10, help="points per set")
    parser.add_argument("--d", type=int, default=8, help="input dimension")
    parser.add_argument("--max-steps", type=int, default=1_000_000, help="baseline step budget per stage")
    parser.add_argument("--csv", help="write one row per width")
    args = parser.parse_args(argv)
    if any(m < 2 or m % 2 for m in args.widths) or args.seeds < 1 or args.n < 1 or args.d < 2:
        parser.error("widths must be even and >= 2, seeds and n >= 1, d >= 2")
    data = _data(args.n, args.d, seed=0)
    rows = []
    for width in args.widths:
        start = time.perf_counter()
        (run,) = simulate_transfer(*data, [width], seeds=args.seeds, backend="numpy")
        simulator = time.perf_counter() - start
        targets = [float(stage.loss.max()) for stage in (run.pretrain, run.finetune, run.scratch)]
        start = time.perf_counter()
        finetune, scratch, steps = _baseline(*data, width, args.seeds, targets, args.max_steps)
        baseline = time.perf_counter() - start
        difference = max(np.abs(finetune - run.finetune_distance).max(), np.abs(scratch - run.scratch_distance).max())
        rows.append(dict(width=width, seeds=args.seeds, simulator_s=simulator, baseline_s=baseline,
                         ratio=baseline / simulator, final_loss=max(targets), baseline_max_steps=steps,
                         converged=bool(run.converged.all()), max_distance_difference=difference))
        print(f"m = {width:6d}: simulator {simulator:7.2f} s (converged: {run.converged.all()}), baseline GD "
              f"{baseline:7.2f} s ({steps} steps max), ratio baseline/simulator: {baseline / simulator:.1f}, "
              f"final loss <= {max(targets):.2g}, max |Δ distance| {difference:.1e}")
    if args.csv:
        with open(args.csv, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
