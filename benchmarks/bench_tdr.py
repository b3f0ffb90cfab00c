"""Benchmark: the batched TDR §6 trainer (sim.tdr) against a per-network gradient-descent loop.

The same run in both: for every width and seed, pretraining on P from W(0), fine-tuning on Q from W(P) and
training on Q from scratch, from the same initial weights (``initial_weights``). The package's trainer
(``simulate_transfer``, default ``scheme="euler"``) trains all seeds of a width as one batch by gradient
descent with the per-instance step 1/λ_max of the empirical tangent kernel, stopped at ‖∇L‖ ≤ 10⁻⁵; the
baseline is what a user writes: one network at a time, full-batch gradient descent W ← W − η∇L with the
stable step η = 1/λ_max(H∞) of the data, stopped when the loss is at most the largest final loss the trainer
reached on that width and stage (equal final loss). Both are timed ``--repeats`` times, alternating, after an
untimed warm-up run of each (process CPU time with the NumPy trainer, wall time with ``--backend cupy``); printed
are the medians and the median of the paired ratios baseline/trainer, the time of the RKC gradient flow
(``scheme="rkc"``) relative to the trainer, and the largest differences of the measured distances (gradient
descent and gradient flow reach nearby minima).

The sweep (last line): the whole experiment over all widths — one ``simulate_transfer`` call with every width,
which trains all widths × seeds networks of a stage in one integration (``RaggedBatch``, one block per width) —
against one call per width and against the per-network loop over every (width, seed), in rotating order, paired.
``--backend cupy`` times the package's trainer on a GPU (the loop stays NumPy on the host).

    python benchmarks/bench_tdr.py [--widths 256 1024 4096] [--draws 8] [--n 10] [--d 8]
        [--repeats 5] [--csv PATH] [--quick] [--sweep-only] [--backend numpy|cupy]
"""
from __future__ import annotations

import argparse
import csv
import math
import sys
import time

import numpy as np

from transfertheory import cli_support
from transfertheory.sim.tdr import STAGES, initial_weights, simulate_transfer
from transfertheory.theory.tdr import two_layer_gram


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


#: the clock of every timing: process CPU time for the NumPy trainer (on a shared machine it counts this process's
#: work, not the time other jobs took), wall time for a GPU trainer (set by ``main``)
_CLOCK = [time.process_time]


def _timed(function):
    start = _CLOCK[0]()
    value = function()
    return _CLOCK[0]() - start, value


def _stage_losses(table):
    """The largest final loss of each stage (:data:`STAGES`) of a one-width table of ``simulate_transfer``."""
    return [float(table.loc[table["stage"] == stage, "loss"].max()) for stage in STAGES]


def _distances(table):
    """(fine-tuning, scratch) distances of a one-width table of ``simulate_transfer``."""
    return tuple(table.loc[table["stage"] == stage, "distance"].to_numpy() for stage in ("finetune", "scratch"))


def _width_row(data, width, args):
    trainer_times, baseline_times, ratios = [], [], []
    warm = simulate_transfer(*data, [width], draws=args.draws, backend=args.backend)  # untimed warm-up of both
    _baseline(*data, width, args.draws, _stage_losses(warm), args.max_steps)
    for _ in range(args.repeats):
        seconds, run = _timed(lambda: simulate_transfer(*data, [width], draws=args.draws, backend=args.backend))
        targets = _stage_losses(run)
        baseline, (finetune, scratch, steps) = _timed(lambda: _baseline(*data, width, args.draws, targets,
                                                                        args.max_steps))
        trainer_times.append(seconds)
        baseline_times.append(baseline)
        ratios.append(baseline / seconds)
    flow_seconds, flow = _timed(lambda: simulate_transfer(*data, [width], draws=args.draws, flow={"scheme": "rkc"},
                                                          backend=args.backend))
    trained = _distances(run)
    difference = max(np.abs(ours - theirs).max() for ours, theirs in zip((finetune, scratch), trained))
    flow_difference = max(np.abs(ours - theirs).max() for ours, theirs in zip(_distances(flow), trained))
    trainer = float(np.median(trainer_times))
    return dict(width=width, seeds=args.draws, trainer_s=trainer, baseline_s=float(np.median(baseline_times)),
                ratio=float(np.median(ratios)), flow_s_over_trainer=flow_seconds / trainer,
                final_loss=max(targets), trainer_steps=int(run["steps"].max()),
                baseline_max_steps=steps, converged=bool(run["converged"].all() and flow["converged"].all()),
                max_distance_difference=difference, flow_distance_difference=flow_difference)


def _sweep_row(data, args):
    """The whole sweep (every width and seed): one call with all widths (the batched-width trainer) against one
    call per width and against the per-network loop, in rotating order, ``--repeats`` times; paired ratios."""
    table = simulate_transfer(*data, args.widths, draws=args.draws, backend=args.backend)  # the loop's loss targets
    targets = [_stage_losses(part) for _, part in table.groupby("width", sort=False)]
    contenders = {
        "batched": lambda: simulate_transfer(*data, args.widths, draws=args.draws, backend=args.backend),
        "per_width": lambda: [simulate_transfer(*data, [m], draws=args.draws, backend=args.backend)
                              for m in args.widths],
        "per_network": lambda: [_baseline(*data, m, args.draws, t, args.max_steps)
                                for m, t in zip(args.widths, targets)],
    }
    times = {name: [] for name in contenders}
    for repeat in range(args.repeats):  # the order rotates from repeat to repeat
        names = list(contenders)
        for name in names[repeat % 3:] + names[:repeat % 3]:
            times[name].append(_timed(contenders[name])[0])
    batched = np.array(times["batched"])
    return dict(widths=" ".join(map(str, args.widths)), seeds=args.draws, backend=args.backend,
                batched_s=float(np.median(batched)), per_width_s=float(np.median(times["per_width"])),
                per_network_s=float(np.median(times["per_network"])),
                per_width_over_batched=float(np.median(np.array(times["per_width"]) / batched)),
                per_network_over_batched=float(np.median(np.array(times["per_network"]) / batched)),
                converged=bool(table["converged"].all()))


@cli_support.entry_point
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=cli_support.exit_status_epilog("0 success", "1 --csv not writable (checked first)", "2 usage error", "3 backend unknown or unusable"))
    parser.add_argument("--widths", type=int, nargs="+", default=[256, 1024, 4096])
    parser.add_argument("--draws", type=int, default=8)
    parser.add_argument("--n", type=int, default=10, help="points per set")
    parser.add_argument("--d", type=int, default=8, help="input dimension")
    parser.add_argument("--repeats", type=int, default=5, help="paired timings per width (medians reported)")
    parser.add_argument("--max-steps", type=int, default=1_000_000, help="baseline step budget per stage")
    parser.add_argument("--quick", action="store_true", help="smoke mode: widths 64 and 128, 2 draws, 1 repeat")
    parser.add_argument("--sweep-only", action="store_true", help="only the whole-sweep comparison")
    cli_support.add_backend_argument(parser, help_text="backend of the package's trainer (the loop is NumPy), NumPy "
                                     "when neither the flag nor the variable is set")
    parser.add_argument("--csv", help="write one row per width, and the sweep to PATH with _sweep before .csv")
    args = parser.parse_args(argv)
    if args.quick:
        args.widths, args.draws, args.repeats = [64, 128], 2, 1
    if any(m < 2 or m % 2 for m in args.widths) or args.draws < 1 or args.n < 1 or args.d < 2 or args.repeats < 1:
        parser.error("widths must be even and >= 2, draws, n and repeats >= 1, d >= 2")
    args.backend = cli_support.resolve_backend(args.backend, default="numpy")
    _CLOCK[0] = time.process_time if args.backend == "numpy" else time.perf_counter
    sweep_csv = None if args.csv is None else args.csv.removesuffix(".csv") + "_sweep.csv"
    cli_support.require_writable(1, files=[("--csv", args.csv), ("--csv", sweep_csv)])
    data = _data(args.n, args.d, seed=0)
    rows = []
    for width in [] if args.sweep_only else args.widths:
        row = _width_row(data, width, args)
        rows.append(row)
        print(f"m = {width:6d}: trainer {row['trainer_s']:7.3f} s ({row['trainer_steps']} steps max, converged: "
              f"{row['converged']}), per-network GD {row['baseline_s']:7.3f} s ({row['baseline_max_steps']} steps "
              f"max), ratio GD/trainer {row['ratio']:.2f}, RKC flow/trainer {row['flow_s_over_trainer']:.1f}, "
              f"final loss <= {row['final_loss']:.2g}, max |Δ distance| vs GD {row['max_distance_difference']:.1e}, "
              f"vs flow {row['flow_distance_difference']:.1e}")
    sweep = _sweep_row(data, args)
    print(f"sweep m = {sweep['widths']} ({args.draws} seeds, trainer on {args.backend}): all widths in one call "
          f"{sweep['batched_s']:.3f} s, one call per width {sweep['per_width_s']:.3f} s, per-network GD loop "
          f"{sweep['per_network_s']:.3f} s; paired ratios per-width/batched {sweep['per_width_over_batched']:.2f}, "
          f"loop/batched {sweep['per_network_over_batched']:.2f}; converged: {sweep['converged']}")
    if args.csv:
        _write_tables({args.csv: rows, sweep_csv: [sweep]})
    return 0


def _write_tables(tables):
    """Write each non-empty table (list of dicts) as CSV, atomically (temporary names, renamed together)."""
    with cli_support.staged_files() as stage:
        for path, table in tables.items():
            if table:
                with open(stage(path), "w", newline="") as handle:
                    writer = csv.DictWriter(handle, fieldnames=list(table[0]))
                    writer.writeheader()
                    writer.writerows(table)


if __name__ == "__main__":
    sys.exit(main())
