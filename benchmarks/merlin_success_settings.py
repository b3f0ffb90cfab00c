#!/usr/bin/env python
r"""MeRLin's success frequency against one setting at a time: splits, inner ridge, restarts, tolerances.

The table of docs/merlin.md ("What the success frequency depends on"): MeRLin (MeRLin §5, Eq. 70) at one target
size, the same target sets in every run, one setting changed per run. ``--splits per-restart`` draws S random
splits for every restart (the package's former behaviour), ``shared`` S random splits per seed shared by its
restarts, ``seed`` the package's splits (:func:`transfertheory.sim.merlin.seed_split_orders`: all balanced
splits when there are at most S). Prints one line: successes/seeds, the seeds where some restart recovered e₁.

Examples::

    python benchmarks/merlin_success_settings.py                       # n_t = 3, k = 3, 200 seeds, the defaults
    python benchmarks/merlin_success_settings.py --splits per-restart --S 4 --rtol 1e-5 --gtol 1e-7
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from transfertheory import cli_support
from transfertheory.sim import merlin as Q
from transfertheory.theory import merlin as M


def split_sets(mode, seeds, restarts, n_t, splits, rng):
    """(seeds · restarts, S', n_t) orders of every instance for the ``--splits`` mode."""
    if mode == "per-restart":
        return Q.split_orders(seeds * restarts, n_t, splits, rng)
    per_seed = Q.split_orders(seeds, n_t, splits, rng) if mode == "shared" else Q.seed_split_orders(
        seeds, n_t, splits, rng)
    return np.repeat(per_seed, restarts, axis=0)


def success(n_t, k, seeds, restarts, splits, mode, ridge, rtol, gtol, lam=0.1, m=2, seed=1):
    """(successes, seeds with some restart on e₁) of MeRLin at one setting."""
    d = k + 1
    X, y = Q.target_sets(n_t, d, seeds, seed)
    rng = np.random.default_rng([seed, 7])
    Xr, yr = np.repeat(X, restarts, axis=0), np.repeat(y, restarts, axis=0)
    objective = Q.Objective(d=d, m=m, lam=lam, k=k, source_weight=1.0, meta_weight=1.0, ridge=ridge, X=Xr, y=yr,
                            splits=split_sets(mode, seeds, restarts, n_t, splits, rng))
    start = Q.random_init(objective, seeds * restarts, rng, 0.5)
    every = Q.Problem(objective, start, seeds * restarts, 1, lambda p: Q.ridge_head(
        Q.features(Xr, p["phi"])[1], yr, ridge))  # one "seed" per instance: every restart kept, for "any restart"
    kept = Q.Problem(objective, start, seeds, restarts, lambda p: Q.ridge_head(  # the kept restarts: one per seed
        Q.features(X, p["phi"])[1], y, ridge))
    flow = dict(rtol=rtol, gtol=gtol)
    recovered = [(o.target_loss <= Q.RECOVERY_LOSS) & (Q.feature_usage(o.params["phi"])[0] == 1)
                 for o in (Q.solve([kept], **flow)[0], Q.solve([every], **flow)[0])]
    return int(recovered[0].sum()), int(recovered[1].reshape(seeds, restarts).any(axis=1).sum())


@cli_support.entry_point  # Ctrl-C, SIGTERM: one line and 128 + the signal
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-t", type=int, default=3)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--restarts", type=int, default=None, help="default 3k")
    parser.add_argument("--S", type=int, default=Q.MERLIN_SPLITS)
    parser.add_argument("--splits", choices=("seed", "shared", "per-restart"), default="seed")
    parser.add_argument("--ridge", type=float, default=Q.MERLIN_RIDGE)
    parser.add_argument("--rtol", type=float, default=Q.STUDY_TOLERANCES["rtol"])
    parser.add_argument("--gtol", type=float, default=Q.STUDY_TOLERANCES["gtol"])
    a = parser.parse_args(argv)
    restarts = Q.merlin_restarts(a.k) if a.restarts is None else a.restarts
    begin = time.perf_counter()
    wins, any_restart = success(a.n_t, a.k, a.draws, restarts, a.S, a.splits, a.ridge, a.rtol, a.gtol)
    print(f"n_t={a.n_t} k={a.k} splits={a.splits} S={a.S} ridge={a.ridge:g} R={restarts} rtol={a.rtol:g} "
          f"gtol={a.gtol:g}: success {wins}/{a.draws} = {wins / a.draws:.3f} (SE "
          f"{np.sqrt(wins / a.draws * (1 - wins / a.draws) / a.draws):.3f}), some restart on e1 {any_restart}, "
          f"1 - P(some wrong feature fits) = {1 - M.any_wrong_feature_fit_probability(a.n_t, a.k):.3f}, "
          f"{time.perf_counter() - begin:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
