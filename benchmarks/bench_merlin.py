"""Benchmark: cost of the MeRLin §5 simulators (transfertheory.sim.merlin) per algorithm, and of MeRLin's splits.

Part 1 trains each algorithm alone with `run_comparison` on the same target sets (d, k, m, n_t, seeds, restarts)
and prints, per algorithm, the median wall time over ``--repeats`` runs, the median accepted steps of the kept
flows and the time relative to pre-training + head-only fine-tuning (paired: every algorithm runs in the same
process, interleaved per repeat). Part 2 times MeRLin alone for S ∈ ``--splits`` and λ_h ∈ ``--ridges``, with the
success frequency, relative to the first setting. Part 3 times, paired in the same process, the pieces that
make a MeRLin flow cheap: the validated public population loss against the validated-once
``PopulationLoss.loss_and_grad`` (one gradient evaluation of B = seeds × restarts networks), and MeRLin trained for n_t/4, n_t/2, n_t one integrator call per n_t against one ``solve`` for all three
(identical flows: the largest objective difference is printed).

    python benchmarks/bench_merlin.py [--d 12] [--k 3] [--m 2] [--n-t 16] [--draws 8] [--restarts 9]
                                         [--repeats 3] [--splits 1 2 4 8] [--ridges 1e-3 1e-2] [--backend numpy]
    python benchmarks/bench_merlin.py --quick     # smoke run (seconds; no timing verdict)
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from transfertheory import cli_support
from transfertheory.backend import resolve_backend, to_device
from transfertheory.sim import merlin as Q
from transfertheory.sim.merlin import run_comparison
from transfertheory.theory import merlin as M

ALGORITHMS = ("finetune", "finetune_full", "joint", "target_only", "merlin")
FLOW = {"rtol": 1e-4, "gtol": 1e-6}


def _positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text}")
    return value


def _positive_float(text):
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a number > 0, got {text}")
    return value


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=_positive_int, default=12)
    parser.add_argument("--k", type=_positive_int, default=3)
    parser.add_argument("--m", type=_positive_int, default=2)
    parser.add_argument("--n-t", type=_positive_int, default=16)
    parser.add_argument("--lam", type=_positive_float, default=0.1)
    parser.add_argument("--draws", type=_positive_int, default=8)
    parser.add_argument("--restarts", type=_positive_int, default=9)
    parser.add_argument("--repeats", type=_positive_int, default=3)
    parser.add_argument("--splits", type=_positive_int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--ridges", type=_positive_float, nargs="+", default=[1e-3, 1e-2])
    cli_support.add_backend_argument(parser, help_text="array backend of the simulators, NumPy when neither the "
                                     "flag nor the variable is set")
    parser.add_argument("--quick", action="store_true", help="smoke run: tiny sizes, one repeat")
    args = parser.parse_args(argv)
    if args.k < 2 or args.k > args.d:
        parser.error(f"--k must be an integer in [2, d] = [2, {args.d}], got {args.k}")
    if args.n_t < 2:
        parser.error(f"--n-t must be an integer >= 2 (MeRLin splits the target set), got {args.n_t}")
    if args.quick:
        args.d, args.k, args.m, args.n_t, args.draws, args.restarts, args.repeats = 4, 2, 2, 4, 1, 1, 1
        args.splits, args.ridges = args.splits[:2], args.ridges[-1:]
    args.flow = {"rtol": 1e-3, "gtol": 1e-5} if args.quick else FLOW
    return args


def _timed(args, algorithms, **settings):
    start = time.perf_counter()
    df = run_comparison(args.d, args.m, args.k, [args.n_t], args.lam, args.draws, algorithms=algorithms,
                        restarts=args.restarts, backend=args.backend, flow=args.flow, **settings)
    return time.perf_counter() - start, df


def algorithm_table(args):
    """Median wall time and steps per algorithm (pre-training and head-only fine-tuning run together)."""
    groups = [("finetune",), ("finetune", "finetune_full"), ("joint",), ("target_only",), ("merlin",)]
    times = {g: [] for g in groups}
    frames = {}
    for _ in range(args.repeats):
        for group in groups:
            seconds, frames[group] = _timed(args, group)
            times[group].append(seconds)
    base = np.median(times[groups[0]])
    print("| algorithm | median wall (s) | × pre-training + head | median steps | converged | recovered |")
    print("|---|---|---|---|---|---|")
    for group in groups:
        part = frames[group][frames[group]["algorithm"] == group[-1]]
        name = "pre-training + head-only" if group == ("finetune",) else (
            "pre-training + head + full fine-tuning" if group[-1] == "finetune_full" else group[-1])
        print(f"| {name} | {np.median(times[group]):.2f} | {np.median(times[group]) / base:.2f} | "
              f"{np.median(part['steps']):.0f} | {part['converged'].mean():.2f} | {part['recovered'].mean():.2f} |")


def split_table(args):
    """MeRLin alone for each (S, λ_h): median wall time relative to the first setting, success frequency."""
    settings = [(s, r) for r in args.ridges for s in args.splits]
    times = {key: [] for key in settings}
    frames = {}
    for _ in range(args.repeats):
        for splits, ridge in settings:
            seconds, frames[(splits, ridge)] = _timed(args, ("merlin",), splits=splits, ridge=ridge)
            times[(splits, ridge)].append(seconds)
    base = np.median(times[settings[0]])
    print("| S | λ_h | median wall (s) | relative | median steps | recovered | converged |")
    print("|---|---|---|---|---|---|---|")
    for key in settings:
        df = frames[key]
        print(f"| {key[0]} | {key[1]:g} | {np.median(times[key]):.2f} | {np.median(times[key]) / base:.2f} | "
              f"{np.median(df['steps']):.0f} | {df['recovered'].mean():.2f} | {df['converged'].mean():.2f} |")


def _median_time(fun, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fun()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def evaluation_table(args):
    """Paired: validating public vs validated-once population loss, one integrator call per n_t vs one for all
    (MeRLin)."""
    xp = resolve_backend(args.backend)
    B, calls = args.draws * args.restarts, 20 * args.repeats
    rng = np.random.default_rng(0)
    theta, phi = xp.asarray(rng.normal(size=(B, args.m))), xp.asarray(rng.normal(size=(B, args.d, args.m)) / 2)
    fast_loss = M.population_loss_terms(args.d, args.k)
    pairs = [("population loss + gradient", lambda: M.population_loss_and_grad(theta, phi, args.k),
              lambda: fast_loss.loss_and_grad(theta, phi))]
    print(f"| per evaluation of B = {B} networks | public per-call form (µs) | form the flows use (µs) | ratio |")
    print("|---|---|---|---|")
    for name, before, after in pairs:
        t_before = _median_time(lambda: [before() for _ in range(calls)], 3) / calls * 1e6
        t_after = _median_time(lambda: [after() for _ in range(calls)], 3) / calls * 1e6
        print(f"| {name} | {t_before:.0f} | {t_after:.0f} | {t_before / t_after:.2f} |")
    sizes = sorted({max(2, args.n_t // 4), max(2, args.n_t // 2), args.n_t})

    def problems():
        draw = np.random.default_rng(2)
        sets = [[to_device(a, xp) for a in Q.target_sets(n, args.d, args.draws, 0)] for n in sizes]
        return [Q.merlin_problem(X, y, args.k, args.lam, args.m, args.restarts, draw, ridge=args.ridges[-1],
                                 splits=args.splits[-1]) for X, y in sets]

    results = {}
    one_call = _median_time(lambda: results.__setitem__("stacked", Q.solve(problems(), **args.flow)), args.repeats)
    per_n = _median_time(lambda: results.__setitem__("alone", [Q.solve([p], **args.flow)[0] for p in problems()]),
                         args.repeats)
    gap = max(float(np.abs(a.objective - b.objective).max()) for a, b in zip(results["stacked"], results["alone"]))
    print(f"| MeRLin training, n_t ∈ {sizes} (wall, s) | {per_n:.2f} (one call per n_t) | {one_call:.2f} (one call) | "
          f"{per_n / one_call:.2f} |")
    print(f"largest objective difference between the two: {gap:.1e}")


@cli_support.entry_point
def main(argv=None):
    args = parse(argv)
    args.backend = cli_support.resolve_backend(args.backend, default="numpy")
    print(f"MeRLin §5 simulators: d = {args.d}, k = {args.k}, m = {args.m}, n_t = {args.n_t}, λ = {args.lam}, "
          f"{args.draws} seeds × {args.restarts} restarts, {args.repeats} repeats, backend {args.backend}"
          + (" (smoke run: no timing verdict)" if args.quick else ""))
    try:
        print("\nper algorithm (same target sets)")
        algorithm_table(args)
        print("\nMeRLin: fixed splits S and inner ridge λ_h")
        split_table(args)
        print("\ncost of an evaluation, and of one integrator call per n_t (paired)")
        evaluation_table(args)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
