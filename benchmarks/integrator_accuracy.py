#!/usr/bin/env python
r"""Integrator accuracy vs cost: how far the default tolerances move the risks.

Runs the scratch and fine-tuning flows of :func:`transfertheory.sim.run_transfer_experiment`
at several (rtol, tol) pairs and compares every per-draw risk with a tight reference run
(rtol = 1e-6, tol = 1e-9) on the same draws. Fine-tuning is the sensitive method (for n < d its
limit depends on the path); scratch at n > d has a unique limit. Prints, per setting: wall time,
gradient evaluations, max |Δ risk| per draw and of the mean per (method, γ, θ), and the largest
imbalance drift (FaF Eq. 35). These are the numbers behind the theorem checks' allowance
(tests/sim/test_deep_linear.py) and docs/simulator.md.

Examples::

    python benchmarks/integrator_accuracy.py                  # d = 100, the benchmark's grid
    python benchmarks/integrator_accuracy.py --d 32 --thetas 0.5236 1.0472 --sigma 0.3 --draws 40 --seed 11
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from transfertheory import cli_support
from transfertheory.sim import run_transfer_experiment

SETTINGS = ((1e-4, 1e-8), (1e-3, 1e-6), (1e-2, 1e-5))
REFERENCE = (1e-6, 1e-9)


def run(args, rtol, tol):
    t0 = time.perf_counter()
    df = run_transfer_experiment(args.d, args.gammas, args.thetas, args.sigma, args.draws,
                                 methods=("scratch", "finetune"), seed=args.seed, backend="numpy",
                                 flow={"rtol": rtol, "gtol": tol}, progress=False)
    return df, time.perf_counter() - t0


@cli_support.entry_point
def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--d", type=int, default=100)
    p.add_argument("--gammas", type=float, nargs="+", default=[0.5, 1.5])
    p.add_argument("--thetas", type=float, nargs="+", default=[np.pi / 4])
    p.add_argument("--sigma", type=float, default=0.2)
    p.add_argument("--draws", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    ref, t_ref = run(args, *REFERENCE)
    keys = ["method", "gamma", "theta"]
    print(f"d = {args.d}, γ ∈ {args.gammas}, θ ∈ {np.round(args.thetas, 4).tolist()}, σ = {args.sigma}, "
          f"{args.draws} draws, scratch + fine-tune; reference rtol = {REFERENCE[0]:g}, tol = {REFERENCE[1]:g}")
    print("| rtol | tol | wall (s) | evaluations | converged | max |Δ risk| (draw) | max |Δ mean risk| "
          "| max |Δ risk| scratch | max imbalance drift |")
    print("|---|---|---|---|---|---|---|---|---|")
    rows = [(REFERENCE, ref, t_ref)] + [((r, t), *run(args, r, t)) for r, t in SETTINGS]
    for (rtol, tol), df, wall in rows:
        delta = (df.risk - ref.risk).abs()
        mean_delta = (df.groupby(keys).risk.mean() - ref.groupby(keys).risk.mean()).abs().max()
        scratch = delta[df.method == "scratch"].max()
        print(f"| {rtol:g} | {tol:g} | {wall:.1f} | {df.attrs['integrator']['evaluations']} | "
              f"{df.converged.mean():.2f} | {delta.max():.1e} | {mean_delta:.1e} | {scratch:.1e} | "
              f"{df.imbalance_drift.max():.1e} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
