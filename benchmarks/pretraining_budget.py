"""How far FaF §4's source pretraining gets in a given flow time at a given size: the exact population loss over
its value at initialization at a sequence of flow times, one continued flow per teacher.

The claim ``faf.relu.sim.pretraining-aligns-kernel`` asks for a loss reduction of 1e-3 within t = 4e3; this script
shows whether a miss at some size is an unconverged flow (the ratio still falling through the budget and below
1e-3 later) or a floor. Each segment continues the previous one's students (the same ODE, restarted integrator).

    python benchmarks/pretraining_budget.py --d 100 --m 1000 --m-star 100 --teachers 3 --times 4e3 8e3 1.6e4
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time

import numpy as np

from transfertheory import cli_support
from transfertheory.sim.relu_teacher.network import paper_init, sphere_flow
from transfertheory.sim.relu_teacher.training import PRETRAIN_FLOW
from transfertheory.theory import relu as R
from transfertheory.threads import blas_threads


@cli_support.entry_point  # Ctrl-C, SIGTERM: one line and 128 + the signal
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, default=100)
    parser.add_argument("--m", type=int, default=1000)
    parser.add_argument("--m-star", type=int, default=100)
    parser.add_argument("--mu", type=float, default=0.5)
    parser.add_argument("--teachers", type=int, default=3)
    parser.add_argument("--times", type=float, nargs="+", default=[4e3, 8e3, 1.6e4])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="write the measurements here")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    W_t, c_t = R.random_teacher(args.m_star, args.d, rng, batch=(args.teachers,))
    source = R.ablated_teacher(W_t, c_t, args.mu, rng)
    W, c = paper_init(args.m, args.d, rng, batch=(args.teachers,))
    initial = R.population_loss(W, c, source.W, source.c)

    def loss_and_gradients(W, c, rows):
        g = R.population_loss_and_gradients(W, c, source.W[rows], source.c[rows])
        return g.loss, g.grad_W_sphere, g.grad_c

    rows, t_done, start = [], 0.0, time.perf_counter()
    for t in args.times:
        report = sphere_flow(loss_and_gradients, W, c, PRETRAIN_FLOW.updated(max_time=t - t_done), atol=1e-6)
        W, c, t_done = report.W, report.c, t
        ratio = R.population_loss(W, c, source.W, source.c) / initial
        rows.append({"t": t, "ratio": ratio.tolist(), "status": [str(s) for s in report.status],
                     "seconds": round(time.perf_counter() - start, 1)})
        print(f"t = {t:9.4g}: loss/initial {np.array2string(ratio, formatter={'float': '{:.3e}'.format})}  statuses "
              f"{sorted(set(rows[-1]['status']))}  ({rows[-1]['seconds']} s)", flush=True)
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"args": vars(args), "machine": platform.processor() or platform.machine(),
                       "rows": rows}, out, indent=1)


if __name__ == "__main__":
    with blas_threads(1):
        sys.exit(main())
