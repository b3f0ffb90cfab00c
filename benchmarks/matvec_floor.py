"""The arithmetic floor of the deep-linear simulator, and its cost against d, for ``bench_deep_linear.py``.

An instance-gradient evaluation of the factored RKC stage kernel
(:class:`~transfertheory.sim.deep_linear.LowRankStages`, FaF §3 networks of depth 2) multiplies the first
layer's d × d matrix by a vector each way, W⁰r and W⁰ᵀa; everything else is O(k·d) for the stage factors and
O(d) for the loss. :func:`matvec_floor` times these two batched products alone, in the simulator's layout (the
matrices are views into rows of the packed states) and at the batch size the simulator's stages actually had
(:class:`~phase_timer.PhaseTimer` counts it): the cost per instance-evaluation that no implementation of the
same stages goes below. :func:`scaling_rows` times the simulator at several d against that floor and
:func:`fitted_exponent` fits cost ∝ d^p.
"""
from __future__ import annotations

import math

import numpy as np

from phase_timer import PhaseTimer, bench_clock, run_simulator


def matvec_floor(d: int, batch: int, xp, min_seconds: float = 0.3) -> float:
    """Seconds per instance of the two batched matrix–vector products W⁰r, W⁰ᵀa of one stage evaluation
    (W⁰ a (batch, d, d) view into packed (batch, d² + d) states), by the benchmark's clock."""
    batch = max(1, int(batch))
    rng = np.random.default_rng(0)
    states = xp.asarray(rng.standard_normal((batch, d * d + d)))
    W = states[:, : d * d].reshape(batch, d, d)
    r = xp.asarray(rng.standard_normal((batch, d)))
    clock, reps, elapsed = bench_clock(xp), 0, 0.0
    start = clock()
    while elapsed < min_seconds or reps < 20:
        beta = (W @ r[:, :, None])[:, :, 0]
        r = (beta[:, None, :] @ W)[:, 0, :]
        r /= xp.sqrt(xp.sum(r * r, axis=1, keepdims=True))  # O(d), keeps the iterate finite
        reps += 1
        if reps % 10 == 0:
            elapsed = clock() - start
    return (clock() - start) / (reps * batch)


def per_evaluation(timer: PhaseTimer):
    """(seconds per instance-evaluation of the target flows, mean batch per stage evaluation) of a timed run."""
    evals = timer.evals.get("target flows", 0)
    seconds = timer.excl.get("target flows", 0.0)
    mean_batch = timer.stage_instances / timer.stage_evaluations if timer.stage_evaluations else 1.0
    return (seconds / evals if evals else math.nan), mean_batch


def scaling_rows(xp, ds, sim_kwargs):
    """One row per d: the target flows' cost per instance-evaluation against the floor at their batch size."""
    rows = []
    for d in ds:
        timer = PhaseTimer(xp)
        run_simulator(xp, timer, d=d, **sim_kwargs)
        cost, batch = per_evaluation(timer)
        floor = matvec_floor(d, round(batch), xp)
        rows.append(dict(d=d, evaluations=timer.evals.get("target flows", 0), mean_batch=batch,
                         seconds=timer.excl.get("target flows", 0.0), cost_us=1e6 * cost, floor_us=1e6 * floor,
                         ratio=cost / floor))
    return rows


def fitted_exponent(ds, costs) -> float:
    """Least-squares slope p of log(cost) against log(d)."""
    return float(np.polyfit(np.log(np.asarray(ds, dtype=float)), np.log(np.asarray(costs, dtype=float)), 1)[0])


def print_scaling(rows) -> None:
    print()
    print("== cost per instance-evaluation against d (target flows; floor = the two d×d matrix–vector products "
          "alone, same batch size, same run) ==")
    print(f"{'d':>5s}{'evaluations':>13s}{'mean batch':>12s}{'flows s':>9s}{'µs/eval':>10s}{'floor µs':>10s}"
          f"{'ratio':>7s}")
    for r in rows:
        print(f"{r['d']:5d}{r['evaluations']:13d}{r['mean_batch']:12.1f}{r['seconds']:9.2f}{r['cost_us']:10.2f}"
              f"{r['floor_us']:10.2f}{r['ratio']:7.2f}")
    ds = [r["d"] for r in rows]
    for label, keep in (("all d", [True] * len(rows)), ("d ≤ 100", [d <= 100 for d in ds])):
        sel = [r for r, k in zip(rows, keep) if k]
        if len(sel) >= 2 and (label == "all d" or len(sel) < len(rows)):
            sel_d = [r["d"] for r in sel]
            print(f"fitted exponent, cost ∝ d^p over {label} ({sel_d[0]} … {sel_d[-1]}): simulator p = "
                  f"{fitted_exponent(sel_d, [r['cost_us'] for r in sel]):.2f}, floor p = "
                  f"{fitted_exponent(sel_d, [r['floor_us'] for r in sel]):.2f}")
