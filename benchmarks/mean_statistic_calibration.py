#!/usr/bin/env python
r"""How far from normal is the z of a mean of N simulated risks (or transferabilities)? The false-alarm rates of the 4-SE rule.

Draws the per-draw values of the *exact* gradient-flow limits (no training: X⁺y for scratch, the last layer on the
one pretrained feature for linear transfer and ridge, the corrected limit for fine-tuning; isotropic inputs, the
task vectors of :func:`~transfertheory.sim.deep_linear.task_vectors`), forms ``--reps`` means of ``--draws`` draws
each, and prints the fraction of z = (mean − reference)/SE beyond ±4 (and ±3) per n. The reference is the record's
exact finite-size expectation (:data:`transfertheory.theory.methods.METHODS`); for fine-tuning, whose record is
itself a Monte Carlo, the mean of all reps × draws values. The per-draw risks are right-skewed, so these rates are
far above the normal 3.2e-5 per side at small N: the numbers behind docs/figures.md ("The transferabilities are
skewed too") and docs/testing.md ("The mean-risk simulation claims").

Examples::

    python benchmarks/mean_statistic_calibration.py --d 64 --ns 16 48 80 --theta 0.7854 --sigma 0.2 --draws 20
    python benchmarks/mean_statistic_calibration.py --d 19 --ns 38 --theta 0.0093 --sigma 0.5 --quantity risk \
        --draws 100 --reps 20000
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from transfertheory import cli_support
from transfertheory.claims.faf_linear_sim import _limit_risks
from transfertheory.sim.deep_linear import task_vectors
from transfertheory.theory.methods import METHODS


def values(args, n, rng):
    """The per-draw values (reps, draws) of the exact limit's risk or paired T at this n."""
    beta_s, _, beta_t = task_vectors(args.d, [args.theta], args.seed)
    out, total = [], args.reps * args.draws
    chunk = max(1, 4_000_000 // (n * args.d))
    for start in range(0, total, chunk):
        X = rng.standard_normal((min(chunk, total - start), n, args.d))
        y = X @ beta_t[0] + args.sigma * rng.standard_normal(X.shape[:2])
        scratch, method = _limit_risks(X, y, beta_s, beta_t[0], args.method, args.lam)
        out.append(method if args.quantity == "risk" else scratch - method)
    return np.concatenate(out).reshape(args.reps, args.draws)


def reference(args, n, sample):
    """The record's exact expectation at n (fine-tuning: the mean of all values drawn)."""
    if args.method == "finetune":
        return float(sample.mean())
    record = METHODS[args.method]
    expectation = record.flow_risk_finite if args.quantity == "risk" else record.flow_transferability_finite
    return float(expectation(n, args.d, args.theta, args.sigma, args.lam)[0])


def build_parser():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--ns", type=int, nargs="+", default=[16, 48, 80], help="sample sizes n (|n − d| ≥ 8)")
    parser.add_argument("--theta", type=float, default=0.7854)
    parser.add_argument("--sigma", type=float, default=0.2)
    parser.add_argument("--lam", type=float, default=0.0, help="ridge λ (method ridge)")
    parser.add_argument("--method", choices=("scratch", "linear", "ridge", "finetune"), default="linear")
    parser.add_argument("--quantity", choices=("T", "risk"), default="T",
                        help="the paired transferability R_scratch − R_method, or the method's risk")
    parser.add_argument("--draws", type=int, default=20, help="draws per mean (20: the figures; 100: quick claims)")
    parser.add_argument("--reps", type=int, default=20000, help="means per n")
    parser.add_argument("--seed", type=int, default=1)
    return parser


@cli_support.entry_point
def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.method == "scratch" and args.quantity == "T":
        parser.error("scratch has no transferability: use --quantity risk")
    if min(args.draws, args.reps, args.d, *args.ns) < 2:
        parser.error("--d, --ns, --draws and --reps must be >= 2")
    rng = np.random.default_rng(args.seed)
    print(f"{args.method} {args.quantity}: d = {args.d}, θ = {args.theta:g}, σ = {args.sigma:g}, λ = {args.lam:g}; "
          f"{args.reps} means of {args.draws} draws per n (normal: P(z < −4) = P(z > 4) = 3.2e-5)")
    print("| n | P(z < −4) | P(z > 4) | P(z < −3) | P(z > 3) | reference | seconds |")
    print("|---|---|---|---|---|---|---|")
    for n in args.ns:
        start = time.perf_counter()
        sample = values(args, n, rng)
        ref = reference(args, n, sample)
        z = (sample.mean(1) - ref) / (sample.std(1, ddof=1) / np.sqrt(args.draws))
        rates = [np.mean(z < -4), np.mean(z > 4), np.mean(z < -3), np.mean(z > 3)]
        print(f"| {n} | " + " | ".join(f"{r:.2e}" for r in rates)
              + f" | {ref:.6g} | {time.perf_counter() - start:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
