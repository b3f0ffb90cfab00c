#!/usr/bin/env python
r"""Benchmark: gradient-flow simulator vs plain fixed-step gradient descent.

Runs, in one process, the same FaF §3 deep-linear transfer experiment twice:

* **baseline** — the paper's setup written plainly (FaF App. D.1, public code):
  full-batch gradient descent with a fixed step η on the forward pass
  (X·W₁)·W₂, vectorized over instances with batched matmul. Pretraining: GD on
  the population loss ½‖W₁W₂ − β_s‖² from αW̄; per target size n: scratch GD
  from αW̄ and fine-tuning GD from the pretrained weights on (1/2n)‖y − XW₁W₂‖²
  (advanced together as one batch), and linear transfer = GD on W₂ alone with
  W₁ frozen at its pretrained value (features Φ = XW₁ formed once). Same η and
  number of steps everywhere.
* **simulator** — :func:`transfertheory.sim.run_transfer_experiment` with its
  defaults (adaptive RKC2 gradient flow to ‖∇L‖ ≤ tol, exact linear transfer).

Both use the *same* draws: the baseline regenerates the simulator's task
vectors, initializations and target sets from the same ``SeedSequence``
spawn keys (checked at run time against ``df.attrs["beta_s"]``), so their
per-instance risks are paired and differ only by optimization error.

Printed: per method × n the mean risk ± SE of each implementation, the exact
finite-size theory of the gradient-flow limit (the method records of
:mod:`transfertheory.theory.methods`), |error| and z-scores, the risk of the exact
t → ∞, α → 0 limit on the same draws, convergence diagnostics, both times
(process CPU seconds on NumPy, wall seconds on a GPU) and their ratio, the
simulator's cost per instance-evaluation against the bare matrix–vector floor
measured in the same run (:mod:`matvec_floor`), and where the simulator's time
goes. ``--scaling`` instead prints that cost against d and its fitted exponent.

``--fig1`` instead times the full FaF Fig. 1 data set (20 θ × 20 γ × 20
draws at d = 500; meant for ``--backend cupy`` on a GPU).

Examples::

    python benchmarks/bench_deep_linear.py                    # default settings (~2 min on 2 cores)
    python benchmarks/bench_deep_linear.py --quick            # smoke run
    python benchmarks/bench_deep_linear.py --scaling          # cost per evaluation vs the floor, d = 25 … 400
    python benchmarks/bench_deep_linear.py --backend cupy --fig1
"""
from __future__ import annotations

import os
import sys


def _blas_threads_from_argv(argv):
    """``--blas-threads N`` must act before NumPy loads its BLAS: set the usual env variables."""
    for k, arg in enumerate(argv):
        value = arg.split("=", 1)[1] if arg.startswith("--blas-threads=") else (
            argv[k + 1] if arg == "--blas-threads" and k + 1 < len(argv) else None)
        if value is not None and value.isdigit() and int(value) > 0:
            for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
                os.environ[var] = value


if __name__ == "__main__":
    _blas_threads_from_argv(sys.argv[1:])

import argparse
import contextlib
import cProfile
import io
import math
import platform
import pstats

import numpy as np
import pandas as pd
from bench_report import print_report, summarize
from matvec_floor import matvec_floor, per_evaluation, print_scaling, scaling_rows
from phase_timer import PhaseTimer, bench_clock, run_simulator, sync

from transfertheory import cli_support
from transfertheory.backend import backend_name, resolve_backend, to_device, to_host
from transfertheory.sim.deep_linear import Architecture, init_weights, run_transfer_experiment, target_draw, task_vectors
from transfertheory.theory.fine_tuning import fine_tune_limit
from transfertheory.theory.methods import get_method

METHODS = ("scratch", "finetune", "linear")
ALPHA = 1e-5  # FaF App. D.1


# --------------------------------------------------------------------------- helpers


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def machine_line(xp) -> str:
    parts = [f"CPU: {cpu_name()} ({os.cpu_count()} logical cores)"]
    with contextlib.suppress(OSError):
        parts.append("load avg %.2f %.2f %.2f" % os.getloadavg())
    parts.append("BLAS threads: " + os.environ.get("OPENBLAS_NUM_THREADS", "library default"))
    if backend_name(xp) == "cupy":
        with contextlib.suppress(Exception):
            props = xp.cuda.runtime.getDeviceProperties(xp.cuda.Device().id)
            parts.append(f"GPU: {props['name'].decode() if isinstance(props['name'], bytes) else props['name']}")
    parts.append(f"numpy {np.__version__}, python {platform.python_version()}")
    parts.append(git_line())
    return "; ".join(parts)


def git_line() -> str:
    """Commit of the checkout and whether the simulator sources differ from it."""
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                              timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "transfertheory/sim"], cwd=root,
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "git: unavailable"
    return f"git {head or '?'}" + (" (transfertheory/sim has uncommitted changes)" if dirty else "")


def load_warning() -> str | None:
    with contextlib.suppress(OSError):
        load = os.getloadavg()[0]
        if load > 0.75 * (os.cpu_count() or 1):
            return (f"WARNING: 1-min load average {load:.2f} on {os.cpu_count()} logical cores: other processes "
                    "compete for the CPU; wall times are inflated and noisy (see --blas-threads 1)")
    return None


# --------------------------------------------------------------------------- draws (shared with the simulator)


def initial_weights(d: int, seeds, xp):
    """W₁ (b, d, d), W₂ (b, d) = αW̄ with the simulator's Gaussian init (FaF App. D.1)."""
    y0 = to_device(init_weights(Architecture(d, 2), ALPHA, seeds, "gaussian"), xp)
    return y0[:, : d * d].reshape(-1, d, d).copy(), y0[:, d * d:].copy()


# --------------------------------------------------------------------------- baseline


def baseline_experiment(d, gammas, theta, sigma, instances, eta, steps, seed, xp):
    """Plain fixed-step full-batch GD, paper style; returns (tidy rows, timings dict).

    Forward pass (X·W₁)·W₂ as in a Sequential of two Linear layers; the
    backward pass is the hand-derived one (cheaper than autograd's, which
    would add a second n·d² product Xᵀ(rW₂ᵀ)): ∇W₂ = (XW₁)ᵀr, ∇W₁ = (Xᵀr)W₂ᵀ
    with r = (XW₁W₂ − y)/n. Cost per step and instance: one n·d² product.
    """
    timings = {}
    rows = []
    clock = bench_clock(xp)
    t_all = clock()
    beta_s, _, beta_t = task_vectors(d, np.array([theta]), seed)
    beta_t = beta_t[0]

    # pretraining: GD on ½‖W₁W₂ − β_s‖² (population loss, FaF Eq. 4)
    t0 = clock()
    W1, W2 = initial_weights(d, [np.random.SeedSequence(seed, spawn_key=(1,))], xp)
    W1, W2 = W1[0], W2[0]
    bs = xp.asarray(beta_s)
    for _ in range(steps):
        r = W1 @ W2 - bs
        g1 = xp.outer(r, W2)
        g2 = W1.T @ r
        W1 -= eta * g1
        W2 -= eta * g2
    r = W1 @ W2 - bs
    pre_grad = float(to_host(xp.sqrt(xp.sum(xp.outer(r, W2) ** 2) + xp.sum((W1.T @ r) ** 2))))
    pre_loss = float(to_host(0.5 * r @ r))
    W1_pre, W2_pre = W1, W2
    sync(xp)
    timings["pretrain"] = clock() - t0
    timings["pretrain_grad_norm"] = pre_grad
    timings["pretrain_loss"] = pre_loss

    timings["target"] = {}
    timings["linear"] = {}
    for gi, gamma in enumerate(gammas):
        n = max(1, int(round(gamma * d)))
        t0 = clock()
        draws = [target_draw(d, n, beta_t[None], sigma, seed, gi, i) for i in range(instances)]
        X = xp.asarray(np.stack([x for x, _ in draws]))  # (I, n, d)
        y = xp.asarray(np.stack([yy[:, 0] for _, yy in draws]))  # (I, n)
        # batch (2, I): scratch from αW̄, fine-tuning from the pretrained weights
        S1, S2 = initial_weights(d, [np.random.SeedSequence(seed, spawn_key=(3, gi, i)) for i in range(instances)], xp)
        W1 = xp.stack([S1, xp.broadcast_to(W1_pre, S1.shape)])  # (2, I, d, d)
        W2 = xp.stack([S2, xp.broadcast_to(W2_pre, S2.shape)])  # (2, I, d)

        def gradients(W1, W2):
            H = xp.matmul(X, W1)  # (2, I, n, d): the n·d² forward product
            r = (xp.matmul(H, W2[..., None])[..., 0] - y) / n  # (2, I, n)
            g2 = xp.matmul(r[..., None, :], H)[..., 0, :]  # (XW₁)ᵀr
            a = xp.matmul(r[..., None, :], X)[..., 0, :]  # Xᵀr
            return a[..., :, None] * W2[..., None, :], g2, r

        for _ in range(steps):
            g1, g2, _ = gradients(W1, W2)
            W1 -= eta * g1
            W2 -= eta * g2
        g1, g2, r = gradients(W1, W2)
        grad = to_host(xp.sqrt(xp.sum(g1 * g1, axis=(2, 3)) + xp.sum(g2 * g2, axis=2)))
        loss = to_host(0.5 * n * xp.sum(r * r, axis=2))
        beta = to_host(xp.matmul(W1, W2[..., None])[..., 0])  # (2, I, d)
        sync(xp)
        timings["target"][n] = clock() - t0

        # linear transfer: GD on W₂ with W₁ frozen (Φ = XW₁ is formed once)
        t0 = clock()
        Phi = xp.matmul(X, W1_pre)  # (I, n, d)
        w = xp.repeat(W2_pre[None], instances, axis=0)
        for _ in range(steps):
            r_l = (xp.matmul(Phi, w[:, :, None])[:, :, 0] - y) / n
            w -= eta * xp.matmul(r_l[:, None, :], Phi)[:, 0, :]
        r_l = (xp.matmul(Phi, w[:, :, None])[:, :, 0] - y) / n
        g_l = to_host(xp.linalg.norm(xp.matmul(r_l[:, None, :], Phi)[:, 0, :], axis=1))
        loss_l = to_host(0.5 * n * xp.sum(r_l * r_l, axis=1))
        beta_l = to_host(w @ W1_pre.T)
        sync(xp)
        timings["linear"][n] = clock() - t0

        for mi, method in enumerate(("scratch", "finetune")):
            for i in range(instances):
                rows.append(dict(impl="baseline", method=method, n=n, instance=i,
                                 risk=float(np.sum((beta[mi, i] - beta_t) ** 2)),
                                 grad_norm=float(grad[mi, i]), loss=float(loss[mi, i]), converged=np.nan))
        for i in range(instances):
            rows.append(dict(impl="baseline", method="linear", n=n, instance=i,
                             risk=float(np.sum((beta_l[i] - beta_t) ** 2)),
                             grad_norm=float(g_l[i]), loss=float(loss_l[i]), converged=np.nan))
    timings["total"] = clock() - t_all
    return rows, timings


def limit_risks(d, gammas, theta, sigma, instances, seed):
    """Risk of the t → ∞, α → 0 limits on the same draws: scratch X⁺y (FaF Thm 3.5); linear transfer
    bβ_s, b = zᵀy/‖z‖², z = Xβ_s (Thm 3.7); fine-tuning the corrected limit X⁺y + c(I − P)β_s
    (``theory.fine_tuning.fine_tune_limit``, docs/errata.md on Thm 3.9).
    Their mean minus theory is sampling error only."""
    beta_s, _, beta_t = task_vectors(d, np.array([theta]), seed)
    beta_t = beta_t[0]
    rows = []
    for gi, gamma in enumerate(gammas):
        n = max(1, int(round(gamma * d)))
        for i in range(instances):
            X, Y = target_draw(d, n, beta_t[None], sigma, seed, gi, i)
            y = Y[:, 0]
            b_sc = np.linalg.lstsq(X, y, rcond=None)[0]
            b_ft = fine_tune_limit(X, y, beta_s)
            z = X @ beta_s
            b_lt = (z @ y) / (z @ z) * beta_s
            for method, b in (("scratch", b_sc), ("finetune", b_ft), ("linear", b_lt)):
                rows.append(dict(impl="limit", method=method, n=n, instance=i, risk=float(np.sum((b - beta_t) ** 2))))
    return rows

# --------------------------------------------------------------------------- Fig. 1


def run_fig1(args, xp):
    d, grid, draws = args.d, args.fig1_grid, args.draws
    gammas = np.linspace(0.1, 2.0, grid)
    gammas = gammas[np.round(gammas * d) >= 3]  # linear transfer needs n >= 3 (only bites at smoke-test sizes)
    thetas = np.linspace(0.0, np.pi / 2, grid)
    # without --chunk, as many draws per batched integration as the memory limit allows (the library's rule): on a
    # GPU, batches are what pays — measured on an H200 at d = 500, 320 instances per batch cost 16.9 µs per
    # instance-evaluation, 100 instances 50.9 µs (docs/benchmarks.md)
    chunk = args.chunk
    print(f"FaF Fig. 1 data: d = {d}, {grid} θ ∈ [0, π/2] × {len(gammas)} γ ∈ [{gammas[0]:.2g}, 2] × {draws} draws, "
          f"σ = {args.sigma}, methods scratch + linear, "
          f"chunk = {'as many draws as fit in memory' if chunk is None else f'{chunk} draws'}, backend {backend_name(xp)}")
    print(machine_line(xp))
    timer = PhaseTimer(xp)
    df, wall = run_simulator(xp, timer, d=d, gammas=gammas, thetas=thetas, sigma=args.sigma, draws=draws,
                             methods=("scratch", "linear"), seed=args.seed, backend=backend_name(xp),
                             chunk_size=chunk, progress=False)
    verdict = ("smoke run: sizes too small for a speed verdict" if args.quick
               else f"target < 60 s on one H100: {'met' if wall < 60 else 'NOT met'}")
    print(f"Fig. 1 wall time: {wall:.2f} s  ({verdict})")
    for label, t in sorted(timer.excl.items(), key=lambda kv: -kv[1]):
        ev = timer.evals.get(label, 0)
        extra = f", {ev} evaluations, {1e6 * t / ev:.2f} µs/eval" if ev else ""
        print(f"  {label:28s}{t:8.2f} s  {100 * t / wall:5.1f}%{extra}")
    print(f"  {'other (DataFrame, glue)':28s}{wall - sum(timer.excl.values()):8.2f} s")
    for k, flow in enumerate(f for f in timer.flows if f["label"] == "target flows"):
        tail, nb = timer.tail(flow)
        st = pd.Series(flow["status"]).value_counts().to_dict()
        print(f"  chunk {k}: {flow['B']} instances, {flow['wall']:.2f} s, {flow['evaluations']} evaluations, "
              f"max {flow['max_stages']} stages, statuses {st}; unconverged-only tail {tail:.2f} s")
    sc = df[df.method == "scratch"].set_index(["gamma", "theta", "draw"])["risk"]
    lt = df[(df.method == "linear")].set_index(["gamma", "theta", "draw"])["risk"]
    T = (sc - lt.reindex(sc.index)).groupby(level=[0, 1]).agg(["mean", "sem"]).reset_index()
    n = np.maximum(1, np.round(T["gamma"].to_numpy() * d).astype(int))
    T["theory"] = np.nan
    linear = get_method("linear")
    valid = n >= linear.min_n
    if valid.any():
        T.loc[valid, "theory"] = linear.flow_transferability_finite(n[valid], d, T["theta"].to_numpy()[valid],
                                                                   args.sigma)[0]
    T["z"] = (T["mean"] - T["theory"]) / T["sem"]
    ok = np.isfinite(T["theory"]) & np.isfinite(T["z"])
    conv = df[df.method == "scratch"].groupby("gamma")["converged"].mean()
    if ok.any():
        print(f"  transferability T = R_sc − R_lt vs exact finite theory: {int(ok.sum())} cells with finite theory, "
              f"median |z| {np.median(np.abs(T.z[ok])):.2f}, max |z| {np.max(np.abs(T.z[ok])):.2f}")
    print("  scratch fraction converged per γ: " + ", ".join(f"{g:.1f}:{c:.2f}" for g, c in conv.items()))
    if args.csv:
        with cli_support.staged_files() as stage:
            df.to_csv(stage(args.csv), index=False)
        print(f"wrote {args.csv}")
    print(f"fig1 time: {wall:.2f} s")
    return 0


# --------------------------------------------------------------------------- scaling with d


def run_scaling(args, xp):
    """Cost per instance-evaluation of the target flows against the matrix–vector floor, for every d of
    ``--scaling`` (scratch + fine-tuning at γ ∈ {½, 3/2}, so that every flow converges)."""
    print(f"deep-linear simulator, cost against d: d ∈ {list(args.scaling)}, L = 2, γ ∈ {{0.5, 1.5}}, "
          f"θ = {args.theta:.4f}, σ = {args.sigma}, {args.draws} draws, scratch + fine-tuning, "
          f"backend {backend_name(xp)}")
    print(machine_line(xp))
    if load_warning():
        print(load_warning())
    kwargs = dict(gammas=(0.5, 1.5), thetas=(args.theta,), sigma=args.sigma, draws=args.draws,
                  methods=("scratch", "finetune"), seed=args.seed, backend=backend_name(xp), progress=False)
    rows = scaling_rows(xp, args.scaling, kwargs)
    print_scaling(rows)
    if args.csv:
        with cli_support.staged_files() as stage:
            pd.DataFrame(rows).to_csv(stage(args.csv), index=False)
        print(f"wrote {args.csv}")
    return 0


# --------------------------------------------------------------------------- main


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Benchmark: gradient-flow simulator vs plain fixed-step full-batch GD on the FaF "
                    "deep-linear transfer experiment (pretrain + scratch + fine-tune + linear transfer).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        epilog=cli_support.exit_status_epilog("0 success", "1 --csv not writable (checked first)", "2 usage error", "3 backend unknown or unusable"),
    )
    p.add_argument("--d", type=int, default=None, help="input dimension (default 100; 500 with --fig1; 40 with --quick)")
    p.add_argument("--draws", type=int, default=None, help="target draws per n (default 20; 4 with --quick)")
    p.add_argument("--steps", type=int, default=5000, help="GD steps of the baseline (pretraining and each target run)")
    p.add_argument("--eta", type=float, default=1e-2, help="GD learning rate of the baseline")
    p.add_argument("--gammas", type=float, nargs="+", default=[0.5, 1.0, 1.5], help="n/d values")
    p.add_argument("--theta", type=float, default=math.pi / 4, help="angle between source and target")
    p.add_argument("--sigma", type=float, default=0.2, help="label noise")
    cli_support.add_backend_argument(p, help_text="array backend of both runs, NumPy when neither the flag nor the "
                                     "variable is set")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="smoke run: 2000 steps, 4 draws, d = 40 (unless given)")
    p.add_argument("--fig1", action="store_true",
                   help="time the full FaF Fig. 1 data (20 θ × 20 γ ∈ [0.1, 2] × 20 draws, d = 500) with the simulator")
    p.add_argument("--fig1-grid", type=int, default=None, help="θ and γ grid size for --fig1 (default 20; 3 with --quick)")
    p.add_argument("--scaling", type=int, nargs="*", default=None, metavar="D",
                   help="instead: cost per instance-evaluation of the target flows against the bare matrix–vector "
                        "floor for each D (no D: 25 50 100 200 400), and the fitted exponent of cost ∝ d^p")
    p.add_argument("--chunk", type=int, default=None, help="target draws per batched integration for --fig1 (default: as many as fit in memory)")
    p.add_argument("--csv", default=None, help="write per-instance results here (summary next to it, *_summary.csv)")
    p.add_argument("--profile", action="store_true", help="also run the simulator once more under cProfile")
    p.add_argument("--blas-threads", type=int, default=None,
                   help="BLAS threads for both implementations (sets OPENBLAS/OMP/MKL_NUM_THREADS before NumPy "
                        "loads; default: the library's own choice). 1 avoids OpenBLAS oversubscription on a loaded machine")
    p.add_argument("--no-baseline", action="store_true", help="skip the baseline (simulator timing only)")
    p.add_argument("--repeat", type=int, default=3,
                   help="timed simulator runs (median reported) after one untimed warm-up run")
    p.add_argument("--max-time", type=float, default=None,
                   help="the simulator's gradient-flow time budget (default: run_transfer_experiment's, 1e4)")
    args = p.parse_args(argv)

    def default(name, value):
        if getattr(args, name) is None:
            setattr(args, name, value)

    if args.quick:
        if args.steps == p.get_default("steps"):
            args.steps = 2000
        default("draws", 4)
        default("d", 16 if args.fig1 else 40)
        default("fig1_grid", 3)
    if args.scaling is not None and not args.scaling:
        args.scaling = [25, 50, 100] if args.quick else [25, 50, 100, 200, 400]
    if args.scaling and min(args.scaling) < 2:
        p.error("--scaling dimensions must be >= 2")
    default("fig1_grid", 20)
    default("d", 500 if args.fig1 else 100)
    default("draws", 20)
    for name in ("d", "draws", "steps", "fig1_grid", "repeat"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.d < 2:
        p.error("--d must be >= 2")
    if args.draws < 2:
        p.error("--draws must be >= 2 (standard errors)")
    if args.eta <= 0:
        p.error("--eta must be > 0")
    return args


@cli_support.entry_point
def main(argv=None) -> int:
    args = parse_args(argv)
    xp = resolve_backend(cli_support.resolve_backend(args.backend, default="numpy"))
    cli_support.require_writable(1, files=[("--csv", args.csv)])
    if args.fig1:
        return run_fig1(args, xp)
    if args.scaling:
        return run_scaling(args, xp)
    d, steps, eta, inst = args.d, args.steps, args.eta, args.draws
    gammas = tuple(args.gammas)
    ns = [max(1, int(round(g * d))) for g in gammas]
    print(f"deep-linear transfer benchmark: d = {d}, L = 2, n ∈ {ns}, θ = {args.theta:.4f}, σ = {args.sigma}, "
          f"{inst} draws, α = {ALPHA:g}, seed {args.seed}, backend {backend_name(xp)}")
    print(f"baseline: fixed-step full-batch GD, η = {eta:g}, {steps} steps (pretraining and every target run)")
    print("simulator: run_transfer_experiment defaults (gtol=1e-6, rtol=1e-3, exact linear transfer), max_time="
          + ("1e4 (default)" if args.max_time is None else f"{args.max_time:g}"))
    print(machine_line(xp))
    if load_warning():
        print(load_warning())

    sim_kwargs = dict(d=d, gammas=gammas, thetas=(args.theta,), sigma=args.sigma, draws=inst,
                      seed=args.seed, backend=backend_name(xp), progress=False)
    if args.max_time is not None:
        sim_kwargs["flow"] = {"max_time": args.max_time}
    rows = []
    times = {}
    if not args.no_baseline:
        print("running baseline ...", flush=True)
        base_rows, times = baseline_experiment(d, gammas, args.theta, args.sigma, inst, eta, steps, args.seed, xp)
        rows += base_rows
    print("running simulator ...", flush=True)
    _, times["simulator_cold"] = run_simulator(xp, None, **sim_kwargs)  # first run: imports, tables, allocator
    # alternating with the same runs without the early verdict (the previous behaviour: every unconverged
    # flow integrated to max_time), paired
    walls, walls_without, without = [], [], None
    for _ in range(args.repeat):
        walls.append(run_simulator(xp, None, **sim_kwargs)[1])
        without, seconds = run_simulator(xp, None, early_verdict=False, **sim_kwargs)
        walls_without.append(seconds)
    times["simulator"] = float(np.median(walls))
    times["simulator_without_verdict"] = float(np.median(walls_without))
    times["verdict_paired_ratio"] = float(np.median(np.array(walls_without) / np.array(walls)))
    times["without_verdict_df"] = without
    timer = PhaseTimer(xp)  # one more, instrumented run for the breakdown (its wall time is not reported)
    sim_df, _ = run_simulator(xp, timer, **sim_kwargs)
    times["per_evaluation"], times["mean_batch"] = per_evaluation(timer)
    times["floor"] = matvec_floor(d, round(times["mean_batch"]), xp)
    times["evaluations"] = sim_df.attrs["integrator"]["evaluations"]
    times["with_verdict_df"] = sim_df
    beta_s, _, _ = task_vectors(d, np.array([args.theta]), args.seed)
    same = "beta_s" in sim_df.attrs and np.allclose(sim_df.attrs["beta_s"], beta_s)
    print(f"identical task vectors and draw seeds in both implementations: {'yes' if same else 'NO (same law only)'}")
    for r in sim_df.itertuples():
        rows.append(dict(impl="simulator", method=r.method, n=int(r.n), instance=int(r.draw), risk=float(r.risk),
                         grad_norm=float(r.grad_norm), loss=float(r.loss), converged=bool(r.converged),
                         t_final=float(r.t_final), status=str(r.status)))
    rows += limit_risks(d, gammas, args.theta, args.sigma, inst, args.seed)
    tidy = pd.DataFrame(rows)
    if args.no_baseline:
        print(f"simulator wall time: {times['simulator']:.2f} s (median of {args.repeat}; first, cold run "
              f"{times['simulator_cold']:.2f} s)")
        return 0
    summary = summarize(tidy, d, args.theta, args.sigma)
    print_report(summary, times, sim_df, timer, args, d, eta, steps, steps * eta)
    if args.profile:
        prof, clock = cProfile.Profile(), bench_clock(xp)
        t0 = clock()
        prof.runcall(run_transfer_experiment, **sim_kwargs)
        sync(xp)
        print(f"\n== cProfile of a second simulator run ({clock() - t0:.2f} s with profiling) ==")
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(15)
        print(s.getvalue())
    print(machine_line(xp))
    if args.csv:
        root, ext = os.path.splitext(args.csv)
        with cli_support.staged_files() as stage:
            tidy.to_csv(stage(args.csv), index=False)
            summary.to_csv(stage(root + "_summary" + (ext or ".csv")), index=False)
        print(f"wrote {args.csv} and {root}_summary{ext or '.csv'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
