#!/usr/bin/env python
r"""Fine-tuning's integrator error against the exact gradient-flow limit, draw by draw.

Runs the fine-tuning flows of :func:`transfertheory.sim.run_transfer_experiment` at the given target rtol
values and compares every draw's risk with the risk of the same draw's exact limit X⁺y + c(I − P)β_s
(:func:`transfertheory.theory.fine_tuning.fine_tune_limit`; X, y rebuilt with
:func:`~transfertheory.sim.deep_linear.target_draw`). Prints, per (rtol, γ, θ): the largest and the mean
signed error (simulated − limit), the largest error relative to the limit's risk, the mean limit risk, the
largest error of the paired T = R_scratch − R_ft per draw (scratch against X⁺y) and the wall time. These are the numbers behind the fine-tuning allowances (docs/simulator.md).

Examples::

    python benchmarks/finetune_limit_accuracy.py --d 32 --gammas 0.25 --thetas 1.5708 --sigma 2 --draws 40
    python benchmarks/finetune_limit_accuracy.py --d 32 --gammas 0.3125 0.5 --thetas 0.7854 --sigma 0.2 \
        --spectrum power:1.5 --teacher power:1:bottom
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from transfertheory import cli_support
from transfertheory.sim import run_transfer_experiment
from transfertheory.sim.deep_linear import target_draw, task_vectors
from transfertheory.theory import spectra as S
from transfertheory.theory.fine_tuning import fine_tune_limit


def limit_risks(args, ns, thetas, lam, draws):
    """Risks of the exact fine-tuning and scratch limits per (γ index, θ index, draw) of the run's seed."""
    beta_s, _, beta_t = task_vectors(args.d, thetas, args.seed, lam, args.teacher)
    weight = np.ones(args.d) if lam is None else lam
    out = np.empty((2, len(ns), len(thetas), draws))
    for gi, n in enumerate(ns):
        for i in range(draws):
            X, Y = target_draw(args.d, n, beta_t, args.sigma, args.seed, gi, i, lam)
            for ti in range(len(thetas)):
                for k, beta in enumerate((fine_tune_limit(X, Y[:, ti], beta_s), np.linalg.pinv(X) @ Y[:, ti])):
                    out[k, gi, ti, i] = np.sum(weight * (beta - beta_t[ti]) ** 2)
    return out


@cli_support.entry_point
def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--d", type=int, default=32)
    p.add_argument("--gammas", type=float, nargs="+", default=[0.25])
    p.add_argument("--thetas", type=float, nargs="+", default=[np.pi / 2])
    p.add_argument("--sigma", type=float, default=2.0)
    p.add_argument("--draws", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rtols", type=float, nargs="+", default=[1e-3, 1e-4])
    p.add_argument("--spectrum", default=None, help="anisotropic inputs, e.g. power:1.5")
    p.add_argument("--teacher", default=None, help="teacher family, e.g. power:1:bottom")
    args = p.parse_args(argv)
    lam = None if args.spectrum is None else S.spectrum(args.spectrum, args.d)
    ns = [int(round(g * args.d)) for g in args.gammas]
    thetas = np.asarray(args.thetas, float)
    limits, scratch = limit_risks(args, ns, thetas, lam, args.draws)
    print(f"d = {args.d}, n ∈ {ns}, θ ∈ {np.round(thetas, 4).tolist()}, σ = {args.sigma}, {args.draws} draws, "
          f"seed {args.seed}, spectrum {args.spectrum}, teacher {args.teacher}")
    print("| rtol | n | θ | max (sim − limit) | max |sim − limit| | mean (sim − limit) | max |Δ|/limit "
          "| mean limit risk | max |Δ paired T| | wall (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for rtol in args.rtols:
        t0 = time.perf_counter()
        df = run_transfer_experiment(args.d, [n / args.d for n in ns], thetas, args.sigma, args.draws,
                                     methods=("scratch", "finetune"), seed=args.seed, backend="numpy", progress=False,
                                     flow={"rtol": rtol}, spectrum=args.spectrum, teacher=args.teacher)
        wall = time.perf_counter() - t0
        assert df["converged"].all(), "a draw did not converge"
        for gi, n in enumerate(ns):
            for ti, theta in enumerate(thetas):
                at = df[(df["n"] == n) & np.isclose(df["theta"], theta)].sort_values("draw")
                rows, rows_sc = (at[at["method"] == m]["risk"].to_numpy() for m in ("finetune", "scratch"))
                gap = rows - limits[gi, ti]
                paired = np.abs((rows_sc - rows) - (scratch[gi, ti] - limits[gi, ti])).max()
                print(f"| {rtol:g} | {n} | {theta:.4g} | {gap.max():.2e} | {np.abs(gap).max():.2e} | "
                      f"{gap.mean():.2e} | {np.max(np.abs(gap) / limits[gi, ti]):.2e} | {limits[gi, ti].mean():.3g} "
                      f"| {paired:.2e} | {wall:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
