#!/usr/bin/env python
r"""Benchmark: the exact deep ReLU NNGP + NTK Gram matrices (MTL §4, :func:`transfertheory.theory.ntk.relu_kernels`)
against a reference implementation in the same run.

Times ``relu_kernels(X, depth=L)`` for an n × n Gram (both kernels) of standard normal inputs standardized to
‖x‖² = d (MTL's convention) and, in the same process on the same inputs, a reference:

* **Neural Tangents** (JAX, CPU, float64) where it is installed: the analytic ``kernel_fn`` of
  ``stax.serial(*[Dense(w_std, b_std), Relu()] * L, Dense(w_std, b_std))``, jit-compiled; the compile call is
  timed separately and excluded. XLA's thread pool is limited to ``--jax-threads`` (default 1, like the BLAS
  thread of NumPy under ``OPENBLAS_NUM_THREADS=1``) before JAX is imported;
* otherwise a **per-pair loop**: the recursion of the module docstring of :mod:`transfertheory.theory.ntk` in
  plain Python floats, one pair at a time, timed on ``--loop-pairs`` random pairs and extrapolated to n² pairs.
  Falling back to it is a warning on stderr with the reason and the versions with which Neural Tangents works
  (``NEURAL_TANGENTS_PINS``; ``pip install -e ".[neural-tangents]"``): neural-tangents 0.6.5 does not import with
  a current JAX.

Prints the medians over ``--repeats`` runs, the ratio reference/ours (> 1: ours is faster), and the largest
relative difference between the two Grams (on the timed pairs for the loop). Reference (2-core CPU, shared,
one thread each): docs/benchmarks.md.

``--empirical WIDTH`` times instead the finite-width empirical NTK of ``--networks`` random networks of that width
(:func:`transfertheory.sim.mtl.empirical_kernels`: explicit per-layer backpropagation, batched over networks)
against Neural Tangents' ``empirical_ntk_fn`` (JAX autodiff, ``jit``, one network at a time) on the same weights.

Examples::

    python benchmarks/bench_ntk.py                         # n = 2000, depth 10, against Neural Tangents
    python benchmarks/bench_ntk.py --reference loop        # against the per-pair loop
    python benchmarks/bench_ntk.py --n 20000 --backend cupy   # GPU Gram (reference skipped: --reference none)
    python benchmarks/bench_ntk.py --quick                 # smoke run (n = 200, depth 3, no speed verdict)
    python benchmarks/bench_ntk.py --empirical 512 --n 200 --depth 3   # finite-width NTK vs NT's autodiff

Exit status: 0 on success, 2 on a usage error (argparse), 3 when the backend is unknown or unavailable, 130 on
Ctrl-C.
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time

import numpy as np

from transfertheory import backend, cli_support
from transfertheory._validation import Interval
from transfertheory.params import Param
from transfertheory.theory.mtl import standardize_inputs
from transfertheory.theory.ntk import B_STD, HIDDEN_DEPTH, W_STD, relu_kernels

POINTS = Param("n", Interval(1, 10**5, "both"), integer=True, description="points of the Gram matrix")
DIM = Param("d", Interval(1, 10**4, "both"), integer=True, description="input dimension")
REPEATS = Param("repeats", Interval(1, 100, "both"), integer=True, description="timed repetitions")
PAIRS = Param("loop_pairs", Interval(1, 10**7, "both"), integer=True, description="pairs timed by the loop")
WIDTH = Param("empirical", Interval(1, 10**6, "both"), integer=True, description="hidden width")
NETWORKS = Param("networks", Interval(1, 1000, "both"), integer=True, description="random networks")
THREADS = Param("jax_threads", Interval(1, 256, "both"), integer=True, description="XLA CPU threads")
#: versions with which Neural Tangents 0.6.5 imports and runs (setup.cfg's extra ``neural-tangents``)
NEURAL_TANGENTS_PINS = "neural-tangents==0.6.5 jax==0.4.30 jaxlib==0.4.30 tf2jax==0.3.6"
#: a speed verdict is printed for this size and above (the 2000 × 2000 depth-10 target: well under a second)
TARGET = dict(n=2000, seconds=1.0)


def inputs(n, d, seed=0):
    return standardize_inputs(np.random.default_rng(seed).standard_normal((n, d)))


def pair_kernels(x, y, depth, w_std, b_std):
    """(K, Θ) of one pair by the scalar recursion (docs/mtl.md), plain Python floats."""
    d, w_var, b_var = len(x), w_std**2, b_std**2
    sigma = w_var * float(np.dot(x, y)) / d + b_var
    sx, sy = w_var * float(np.dot(x, x)) / d + b_var, w_var * float(np.dot(y, y)) / d + b_var
    theta = sigma
    for _ in range(depth):
        root = math.sqrt(sx * sy)
        cos = max(-1.0, min(1.0, sigma / root)) if root > 0 else 1.0
        psi = math.acos(cos)
        sigma = w_var / (2 * math.pi) * root * (math.sin(psi) + (math.pi - psi) * cos) + b_var
        theta = sigma + theta * w_var / (2 * math.pi) * (math.pi - psi)
        sx, sy = w_var / 2 * sx + b_var, w_var / 2 * sy + b_var
    return sigma, theta


def _median_time(call, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def neural_tangents_reference(x, depth, w_std, b_std, repeats, threads):
    """(median seconds, compile seconds, (nngp, ntk)) of Neural Tangents' jitted analytic kernel_fn; None if it
    is not installed."""
    imported = _import_jax(threads)
    if imported is None:
        return None
    jax, stax = imported
    kernel_fn = jax.jit(stax.serial(*[stax.Dense(1, W_std=w_std, b_std=b_std), stax.Relu()] * depth,
                                    stax.Dense(1, W_std=w_std, b_std=b_std))[2], static_argnames="get")
    xj = jax.numpy.asarray(x)

    def call():
        out = kernel_fn(xj, None, get=("nngp", "ntk"))
        out[1].block_until_ready()
        return out

    start = time.perf_counter()
    call()
    compile_seconds = time.perf_counter() - start
    seconds = _median_time(call, repeats)
    nngp, ntk = call()
    return seconds, compile_seconds, (np.asarray(nngp), np.asarray(ntk))


def relative_differences(ours, reference):
    """Largest |ours − reference|/max|reference| over both kernels, off the diagonal and on it (where the arccos
    of an implementation without the near-collinear refinement loses ~8 digits)."""
    off = diag = 0.0
    for a, b in zip(ours, reference):
        gap = np.abs(a - b) / np.abs(b).max()
        diag = max(diag, float(np.diagonal(gap).max()))
        np.fill_diagonal(gap, 0.0)
        off = max(off, float(gap.max()))
    return off, diag


def _import_jax(threads):
    """(jax, stax) with XLA's CPU thread pool limited to ``threads``, or None (and a warning on stderr naming the
    error and the working pins) when Neural Tangents cannot be imported."""
    if "jax" not in sys.modules:
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen="
                                   f"{'true' if threads > 1 else 'false'} intra_op_parallelism_threads={threads}")
    try:
        import jax
        from neural_tangents import stax
    except Exception as error:  # noqa: BLE001  (an installed Neural Tangents that does not fit JAX raises more)
        print(f"bench_ntk: WARNING: Neural Tangents cannot be imported ({type(error).__name__}: {error}); it works "
              f"with {NEURAL_TANGENTS_PINS} (pip install -e \".[neural-tangents]\")", file=sys.stderr)
        return None
    jax.config.update("jax_enable_x64", True)
    return jax, stax


def empirical_comparison(x, depth, width, networks, repeats, threads, implementation=2):
    """(ours s, NT s, NT compile s, max relative difference) of the empirical NTK of ``networks`` random networks;
    None without Neural Tangents. ``implementation``: Neural Tangents' NtkImplementation (1 Jacobian contraction,
    2 NTK-vector products)."""
    from transfertheory.sim.mtl import NetworkShape, empirical_kernels, init_parameters
    from transfertheory.theory.mtl import ReluNetwork
    shape = NetworkShape(x.shape[1], width, ReluNetwork(depth))
    body, head = init_parameters(shape, networks, np.random.default_rng(0))
    ours_seconds = _median_time(lambda: empirical_kernels(shape, body, head, x), repeats)
    ours = empirical_kernels(shape, body, head, x)[1]
    imported = _import_jax(threads)
    if imported is None:
        return None
    jax, stax = imported
    import neural_tangents as nt
    apply_fn = stax.serial(*[stax.Dense(width, W_std=2**0.5, b_std=0.0), stax.Relu()] * depth,
                           stax.Dense(1, W_std=2**0.5, b_std=0.0))[1]
    ntk_fn = jax.jit(nt.empirical_ntk_fn(apply_fn, trace_axes=(), vmap_axes=0, implementation=implementation))

    def params(r):  # our packed layers (W: (h, fan_in)) as stax's [(W (fan_in, h), b), (), …]
        layers = [(jax.numpy.asarray(w[r].T), jax.numpy.asarray(b[r])) for w, b, _ in shape.layers(body)]
        return [p for layer in layers for p in (layer, ())] + [(jax.numpy.asarray(head[r, :-1, None]),
                                                                  jax.numpy.asarray(head[r, -1:]))]

    xj, all_params = jax.numpy.asarray(x), [params(r) for r in range(networks)]

    def call():
        out = [ntk_fn(xj, None, p) for p in all_params]
        out[-1].block_until_ready()
        return out

    start = time.perf_counter()
    reference = np.array([np.asarray(k)[:, :, 0, 0] for k in call()])
    compile_seconds = time.perf_counter() - start
    seconds = _median_time(call, repeats)
    return ours_seconds, seconds, compile_seconds, float(np.abs(ours - reference).max() / np.abs(reference).max())


def loop_reference(x, depth, w_std, b_std, pairs, seed=1):
    """(extrapolated seconds for all n² pairs, max relative difference to ours on the timed pairs)."""
    rng = np.random.default_rng(seed)
    i, j = rng.integers(0, len(x), pairs), rng.integers(0, len(x), pairs)
    start = time.perf_counter()
    values = np.array([pair_kernels(x[a], x[b], depth, w_std, b_std) for a, b in zip(i, j)])
    seconds = (time.perf_counter() - start) / pairs * len(x) ** 2
    ours = relu_kernels(x, x, depth=depth, w_std=w_std, b_std=b_std)  # the n × n Grams, read at the timed pairs
    rel = max(float(np.max(np.abs(o[i, j] - values[:, k]) / np.abs(values[:, k]).max())) for k, o in
              enumerate(ours))
    return seconds, rel


def _parser():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=POINTS.arg_type(), default=None, help="points (default 2000; quick 200)")
    parser.add_argument("--d", type=DIM.arg_type(), default=10, help="input dimension (default 10)")
    parser.add_argument("--depth", type=HIDDEN_DEPTH.arg_type(), default=None,
                        help="hidden ReLU layers (default 10; quick 3)")
    parser.add_argument("--w-std", type=W_STD.arg_type(), default=2**0.5, help="weight SD (default √2, He)")
    parser.add_argument("--b-std", type=B_STD.arg_type(), default=0.0, help="bias SD (default 0)")
    parser.add_argument("--repeats", type=REPEATS.arg_type(), default=None, help="timed repetitions (default 5)")
    parser.add_argument("--reference", choices=("auto", "neural-tangents", "loop", "none"), default="auto",
                        help="auto: Neural Tangents where installed, else the per-pair loop")
    parser.add_argument("--loop-pairs", type=PAIRS.arg_type(), default=20000, help="pairs the loop times")
    parser.add_argument("--jax-threads", type=THREADS.arg_type(), default=1, help="XLA CPU threads (default 1)")
    parser.add_argument("--empirical", type=WIDTH.arg_type(), default=None, metavar="WIDTH",
                        help="time the finite-width empirical NTK at this width against Neural Tangents' autodiff")
    parser.add_argument("--networks", type=NETWORKS.arg_type(), default=4, help="networks of --empirical (default 4)")
    parser.add_argument("--nt-implementation", type=int, choices=(1, 2), default=2,
                        help="Neural Tangents' empirical NTK implementation: 1 Jacobian contraction, 2 NTK-vector "
                             "products (default; 3, structured derivatives, fails with the installed JAX)")
    cli_support.add_backend_argument(parser, help_text="array backend of relu_kernels, NumPy when neither the flag "
                                     "nor the variable is set")
    parser.add_argument("--quick", action="store_true", help="smoke run: n = 200, depth 3, 1 repeat, no verdict")
    return parser


@cli_support.entry_point
def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    n = args.n or (200 if args.quick else TARGET["n"])
    depth = args.depth if args.depth is not None else (3 if args.quick else 10)
    repeats = args.repeats or (1 if args.quick else 5)
    args.backend = cli_support.resolve_backend(args.backend, default="numpy")
    xp = backend.resolve_backend(args.backend)
    x_host = inputs(n, args.d)
    x = xp.asarray(x_host)
    if args.empirical is not None:
        return _empirical_main(x_host, depth, args, repeats)

    def ours_call():
        out = relu_kernels(x, depth=depth, w_std=args.w_std, b_std=args.b_std)
        float(out[1][0, 0])  # synchronize a device backend
        return out

    ours_seconds = _median_time(ours_call, repeats)
    nngp, ntk = (backend.to_host(a) for a in ours_call())
    print(f"relu_kernels: n = {n}, d = {args.d}, depth = {depth}, backend {args.backend}: median {ours_seconds:.3f} s "
          f"over {repeats} runs")
    reference = args.reference
    result = None
    if reference in ("auto", "neural-tangents"):
        result = neural_tangents_reference(x_host, depth, args.w_std, args.b_std, repeats, args.jax_threads)
        if result is None and reference == "neural-tangents":
            print("bench_ntk: --reference neural-tangents needs Neural Tangents", file=sys.stderr)
            return 2
        if result is None:
            print("bench_ntk: WARNING: falling back to the per-pair loop reference (plain Python, extrapolated), not "
                  "the Neural Tangents comparison of docs/benchmarks.md", file=sys.stderr)
        reference = "neural-tangents" if result is not None else "loop"
    if reference == "neural-tangents":
        seconds, compile_seconds, (nt_nngp, nt_ntk) = result
        off, diag = relative_differences((nngp, ntk), (nt_nngp, nt_ntk))
        print(f"Neural Tangents (JAX CPU, jit, {args.jax_threads} thread(s)): median {seconds:.3f} s "
              f"(compile {compile_seconds:.2f} s excluded); max relative difference off the diagonal {off:.2e}, "
              f"on the diagonal {diag:.2e}")
    elif reference == "loop":
        seconds, rel = loop_reference(x_host, depth, args.w_std, args.b_std, min(args.loop_pairs, n * n))
        print(f"per-pair loop (plain Python, extrapolated from {min(args.loop_pairs, n * n)} pairs): {seconds:.3f} s; "
              f"max relative difference {rel:.2e}")
    if reference != "none":
        print(f"ratio reference/relu_kernels: {seconds / ours_seconds:.1f}")
    if args.quick:
        print("smoke run: no speed verdict")
    elif n >= TARGET["n"] and args.backend == "numpy":
        verdict = "met" if ours_seconds < TARGET["seconds"] else "MISSED"
        print(f"target {n} × {n} Gram under {TARGET['seconds']:g} s: {verdict}")
    return 0


def _empirical_main(x, depth, args, repeats) -> int:
    result = empirical_comparison(x, depth, args.empirical, args.networks, repeats, args.jax_threads,
                                  args.nt_implementation)
    if result is None:
        print("bench_ntk: --empirical needs neural_tangents", file=sys.stderr)
        return 2
    ours, theirs, compile_seconds, rel = result
    print(f"empirical NTK, {args.networks} networks of width {args.empirical}, depth {depth}, n = {len(x)}: "
          f"sim.mtl.empirical_kernels median {ours:.3f} s; Neural Tangents empirical_ntk_fn (implementation "
          f"{args.nt_implementation}, jit, "
          f"{args.jax_threads} thread(s)) median {theirs:.3f} s (compile {compile_seconds:.2f} s excluded); "
          f"max relative difference {rel:.2e}")
    print(f"ratio reference/empirical_kernels: {theirs / ours:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
