r"""``python -m transfertheory.figures``: list and build the registered figures.

    python -m transfertheory.figures --list                 # every figure, one line each
    python -m transfertheory.figures faf_fig2 faf_fig5      # build some (quick profile)
    python -m transfertheory.figures --all --quick          # every figure, CPU-sized (a few minutes on 2 cores)
    python -m transfertheory.figures --all --paper --backend cupy   # the papers' sizes, on a GPU

Each figure writes ``NAME.png``, ``NAME.pdf``, ``NAME.csv``, ``NAME.json`` and a thumbnail into ``--out`` (default
``figures/``), and ``README.md`` there is regenerated from the registry. Exit codes: 0 success, 1 output folder not
writable (checked before any work), 2 usage error (e.g. an unknown figure name), 3 array backend unknown or
unusable, 4 a simulation that does not fit in memory (``--max-memory``), 130 interrupted by
Ctrl-C (see :mod:`transfertheory.figures.cli`). With ``--paper`` (or ``--store DIR``) the FaF §3 simulations (Figs.
1, 3, 6, 7) run through the sweep engine (:mod:`transfertheory.sweep`): one point per (γ, θ) in a resumable store,
``--workers N`` local processes or ``--scheduler ADDRESS`` (Dask).
"""
from __future__ import annotations

import argparse
import sys

from .._memory import MemoryLimitError, set_limit
from ..sweep.runner import SweepRunner, default_store
from ..threads import WORKERS
from .cli import (EPILOG, EXIT_MEMORY, EXIT_OK, EXIT_UNWRITABLE, Timer, add_backend_argument, add_memory_argument,
                  add_output_arguments, check_before_work, entry_point, write_and_report)
from .catalog import figures
from .simulation import SWEEP_RUNNER

__all__ = ["build_parser", "main"]


def build_parser():
    """The ``python -m transfertheory.figures`` argument parser."""
    parser = argparse.ArgumentParser(
        prog="python -m transfertheory.figures",
        description="Build the registered figures of FaF, MeRLin, TDR and MTL (see --list): PNG + PDF, the CSV of "
        "the data, a metadata JSON and a thumbnail each; regenerates README.md in the output folder.",
        epilog=EPILOG,
    )
    parser.add_argument("names", nargs="*", metavar="NAME", help="figures to build (see --list)")
    parser.add_argument("--list", action="store_true", help="list the figures with a one-line description and exit")
    parser.add_argument("--all", action="store_true", help="build every registered figure")
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", dest="profile", action="store_const", const="quick",
                      help="CPU-sized parameters (the default): each figure in seconds to minutes on 2 cores")
    size.add_argument("--paper", dest="profile", action="store_const", const="paper",
                      help="the papers' sizes (the largest, e.g. FaF's d = 500 simulations, want a GPU: --backend cupy)")
    parser.set_defaults(profile="quick")
    add_output_arguments(parser)
    add_backend_argument(parser)
    add_memory_argument(parser)
    sweep = parser.add_argument_group("sweep engine (FaF §3 simulations: resumable, parallel; docs/sweeps.md)")
    sweep.add_argument("--store", metavar="DIR", help="run the simulations through the sweep engine into DIR "
                       "(with --paper by default, under ~/.cache/transfertheory/sweeps)")
    sweep.add_argument("--workers", type=WORKERS.arg_type(), metavar="N", help="local worker processes (default: cores)")
    sweep.add_argument("--scheduler", metavar="ADDRESS", help="run the simulations on the Dask cluster at ADDRESS")
    return parser


def _sweep_runner(args, backend):
    """The sweep engine's runner for this build: with --store, or --paper (default store), else None."""
    if args.store is None and args.profile != "paper":
        return None
    store = args.store or str(default_store())
    return SweepRunner(store, workers=args.workers, scheduler=args.scheduler, backend=backend)


def _selected(parser, args):
    known = figures()
    if args.list:
        return []
    if args.all and args.names:
        parser.error("give figure names or --all, not both")
    if not args.all and not args.names:
        parser.error("name at least one figure, or use --all or --list")
    unknown = [n for n in args.names if n not in known]
    if unknown:
        parser.error(f"unknown figure {', '.join(map(repr, unknown))}; choose from {', '.join(known)}")
    return list(known.values()) if args.all else [known[n] for n in dict.fromkeys(args.names)]


@entry_point
def main(argv=None):
    """Entry point; returns the exit code (usage errors exit 2, an unwritable ``--out`` 1 and an unusable backend 3
    before any work, via ``SystemExit``; Ctrl-C 130)."""
    from .gallery import write_readme

    parser = build_parser()
    args = parser.parse_args(argv)
    chosen = _selected(parser, args)
    if args.list:
        width = max(len(name) for name in figures())
        for name, figure in figures().items():
            print(f"{name:<{width}}  {figure.title}")
        return EXIT_OK
    backend = check_before_work(args, simulates=any(f.simulates for f in chosen))
    set_limit(args.max_memory)
    runner = _sweep_runner(args, backend)
    if runner is not None:
        SWEEP_RUNNER.set(runner)
        print(f"FaF §3 simulations through the sweep engine, store {runner.store} (resumable)", flush=True)
    runtimes = {}
    for figure in chosen:
        print(f"== {figure.name}: {figure.title} ({args.profile})", flush=True)
        timer = Timer()
        try:
            output = figure.make(args.profile, backend)
        except MemoryLimitError as err:  # entry_point would print it too, without the figure's name
            print(f"error: {figure.name}: {err}", file=sys.stderr)
            return EXIT_MEMORY
        runtimes[figure.name] = timer.elapsed
        code = write_and_report(output, figure.name, args, label=f"{figure.name}: {runtimes[figure.name]:.1f} s; ",
                                **figure.labels(), backend=backend if figure.simulates else None,
                                runtime_s=runtimes[figure.name], thumbnail=True, context={"profile": args.profile})
        if code != EXIT_OK:
            return code
    try:
        readme = write_readme(args.out)
    except OSError as err:
        print(f"error: cannot write to {args.out}: {err}", file=sys.stderr)
        return EXIT_UNWRITABLE
    print("runtimes: " + ", ".join(f"{name} {t:.1f} s" for name, t in runtimes.items()) + f"; wrote {readme}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
