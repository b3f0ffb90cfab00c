r"""``python -m transfertheory.figures``: list and build the registered figures.

    python -m transfertheory.figures --list                 # every figure, one line each
    python -m transfertheory.figures faf_fig2 faf_fig5      # build some (quick profile)
    python -m transfertheory.figures --all --quick          # every figure, CPU-sized (a few minutes on 2 cores)
    python -m transfertheory.figures --all --paper --backend cupy   # the papers' sizes, on a GPU

Each figure writes ``NAME.png``, ``NAME.pdf``, ``NAME.csv``, ``NAME.json`` and a thumbnail into ``--out`` (default
``figures/``), and ``README.md`` there is regenerated from the registry. ``--workers N`` builds the figures in N
worker processes (default one per core, at most one per figure; the figures that took longest last time, by the
``NAME.json`` files in ``--out``, start first): each figure's data depend only on its profile and seed, so the files are those
of a serial run. Exit codes: 0 success, 1 output folder not
writable (checked before any work), 2 usage error (e.g. an unknown figure name), 3 array backend unknown or
unusable, 4 a simulation that does not fit in memory (``--max-memory``), 130 interrupted by
Ctrl-C, 143 by SIGTERM, 129 by SIGHUP (the workers stopped, the figures already written kept; see
:mod:`transfertheory.figures.cli`). With ``--paper`` (or ``--store DIR``) the FaF simulations (Figs. 1, 3, 6,
7 and 4) run through the sweep engine (:mod:`transfertheory.sweep`): one point per (γ, θ), and for Fig. 4 one
per chunk of one teacher × a block of its data sets, in a resumable store,
``--workers N`` local processes or ``--scheduler ADDRESS`` (Dask); the figures are then built one after another.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import math
import sys
import time
from pathlib import Path

from .. import cli_support
from .._memory import MemoryLimitError
from ..cli_support import EXIT_MEMORY, EXIT_USAGE, add_backend_argument, add_memory_argument, entry_point
from ..processes import in_workers, worker_count
from .cli import EPILOG, EXIT_OK, EXIT_UNWRITABLE, add_output_arguments, check_before_work, write_and_report

__all__ = ["build_parser", "main"]


def build_parser():
    """The ``python -m transfertheory.figures`` argument parser."""
    parser = argparse.ArgumentParser(
        prog="python -m transfertheory.figures",
        description="Build the registered figures of FaF, MeRLin, TDR and MTL (see --list): PNG + PDF, the CSV of "
        "the data, a metadata JSON and a thumbnail each; regenerates README.md in the output folder. Without --out "
        "they go to figures/, replacing the gallery files committed there: to try a change, give --out DIR.",
        epilog=EPILOG,
    )
    parser.add_argument("names", nargs="*", metavar="NAME", help="figures to build (see --list)")
    parser.add_argument("--list", action="store_true", help="list the figures (those named, else all) with a one-line description and exit")
    parser.add_argument("--all", action="store_true", help="build every registered figure")
    cli_support.add_profile_arguments(
        parser, "CPU-sized parameters (the default): each figure in seconds to minutes on 2 cores",
        "a figure's own CPU size between the two (minutes; the quick size where it gives none)",
        "the papers' sizes (the largest, e.g. FaF's d = 500 simulations, want a GPU: --backend cupy)")
    add_output_arguments(parser)
    add_backend_argument(parser)
    add_memory_argument(parser)
    cli_support.add_workers_argument(parser, "figures (with the sweep engine: its points, the figures one after "
                                     "another)")
    sweep = parser.add_argument_group("sweep engine (FaF §3 simulations: resumable, parallel; docs/sweeps.md)")
    sweep.add_argument("--store", metavar="DIR", help="run the simulations through the sweep engine into DIR "
                       "(with --paper by default, under ~/.cache/transfertheory/sweeps)")
    sweep.add_argument("--scheduler", metavar="ADDRESS", help="run the simulations on the Dask cluster at ADDRESS")
    return parser


def _sweep_runner(args, backend):
    """The sweep engine's runner for this build: with --store, or --paper (default store), else None."""
    if args.store is None and args.profile != "paper":
        return None
    from ..sweep.runner import SweepRunner, default_store  # (it loads pandas, which --help and --list need not)

    store = args.store or str(default_store())
    try:
        return SweepRunner(store, workers=args.workers, scheduler=args.scheduler, backend=backend)
    except ValueError as error:  # not a sweep store: one line, before any figure
        raise cli_support.CommandLineError(f"--store: {error}", EXIT_USAGE) from None


def figures():
    """The registered figures by name (the catalog imports every figure module, with pandas and SciPy: on first
    use, not for ``--help``)."""
    from .catalog import figures as registered

    return registered()


def _context(figure, profile, out):
    """The metadata a build adds to ``NAME.json``: the profile and, at the paper's, how it relates to the paper;
    another profile built into the paper-size gallery says why it stands in for the paper's sizes."""
    from .gallery import PAPER, stand_in_reason

    if profile == "paper":
        return {"profile": profile, "paper_sizes": figure.paper_sizes}
    return {"profile": profile, **({"stands_in_for_paper": stand_in_reason(figure, profile)}
                                   if Path(out).name == PAPER else {})}


def _build_and_write(task):
    """Build one figure and write its files; ``task`` = (name, parsed arguments, backend, progress bars or None).
    Returns (runtime in s, exit code, what it printed, the memory guard's refusal or None): a module-level
    function, so that a worker process can run it and the parent prints its lines in the serial order."""
    from ..sweep.runner import LEDGER  # (pandas: not for --help)

    name, args, backend, progress = task
    figure = figures()[name]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        start, ledger = time.perf_counter(), []
        token = LEDGER.set(ledger)
        try:
            output = figure.make(args.profile, backend, progress)
        except MemoryLimitError as err:  # entry_point would print it too, without the figure's name
            return None, EXIT_MEMORY, printed.getvalue(), f"error: {figure.name}: {err}"
        finally:
            LEDGER.reset(token)
        runtime = time.perf_counter() - start
        context = _context(figure, args.profile, args.out)
        if ledger:  # drawn from a sweep store: what its points cost when they were computed
            context["store_points"] = {"points": sum(e["points"] for e in ledger),
                                       "compute_s": round(sum(e["compute_s"] for e in ledger), 1)}
        code = write_and_report(output, figure.name, args, label=f"{figure.name}: {runtime:.1f} s; ",
                                **figure.labels(), backend=backend if figure.simulates else None,
                                runtime_s=runtime, thumbnail=True, context=context)
    return runtime, code, printed.getvalue(), None


def _previous_runtime(out, name, profile):
    """The build time ``NAME.json`` in ``out`` records for ``profile``, or inf when there is none (unknown figures
    start first among the workers)."""
    from .gallery import load_metadata  # (the catalog, loaded by then)

    meta = load_metadata(Path(out) / f"{name}.json") or {}
    runtime = meta.get("runtime_s") if meta.get("profile") == profile else None
    return runtime if isinstance(runtime, (int, float)) else math.inf


def _selected(parser, args):
    """The figures to build, or with ``--list`` to list (all of them without names)."""
    known = figures()
    if args.all and args.names:
        parser.error("give figure names or --all, not both")
    if not (args.all or args.names or args.list):
        parser.error("name at least one figure, or use --all or --list")
    unknown = [n for n in args.names if n not in known]
    if unknown:
        parser.error(f"unknown figure {', '.join(map(repr, unknown))}; choose from {', '.join(known)}")
    return [known[n] for n in dict.fromkeys(args.names)] if args.names else list(known.values())


@entry_point
def main(argv=None):
    """Entry point; returns the exit code (usage errors exit 2, an unwritable ``--out`` 1 and an unusable backend 3
    before any work; Ctrl-C 130)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    chosen = _selected(parser, args)
    if args.list:
        width = max(len(name) for name in figures())
        for figure in chosen:
            print(f"{figure.name:<{width}}  {figure.title}")
        return EXIT_OK
    backend = check_before_work(args, simulates=any(f.simulates for f in chosen))
    runner = _sweep_runner(args, backend)
    if runner is not None:
        from .simulation import SWEEP_RUNNER

        SWEEP_RUNNER.set(runner)
        print(f"FaF simulations through the sweep engine, store {runner.store} (resumable)", flush=True)
    runtimes = {}
    # with the sweep engine, the workers are its own
    workers = 1 if runner is not None else worker_count(args.workers, len(chosen))
    progress = None if workers == 1 else False  # bars of several processes would overwrite each other
    costs = [_previous_runtime(args.out, f.name, args.profile) for f in chosen]
    named = cli_support.backend_choice(args.backend) not in (None, "auto")
    tasks = [(f.name, args, f.backend_for(backend, named), progress) for f in chosen]
    # the longest start first; leaving the block (an error, a stop signal) closes the results, stopping the workers
    with contextlib.closing(in_workers(_build_and_write, tasks, workers, costs)) as results:
        for figure in chosen:
            print(f"== {figure.name}: {figure.title} ({args.profile})", flush=True)
            runtimes[figure.name], code, printed, refusal = next(results)
            print(printed, end="", flush=True)
            if refusal is not None:
                print(refusal, file=sys.stderr)
            if code != EXIT_OK:
                return code
    from .gallery import PAPER, README, write_readme  # (the catalog: not for --help)

    out = Path(args.out)
    # a paper-size build also changes the gallery above it, whose README lists each figure's paper build
    folders = [out, out.parent] if out.name == PAPER and (out.parent / README).is_file() else [out]
    try:
        readmes = [write_readme(folder) for folder in folders]
    except OSError as err:  # entry_point: one line, exit 1
        raise cli_support.CommandLineError(f"cannot write to {args.out}: {err}", EXIT_UNWRITABLE) from None
    print("runtimes: " + ", ".join(f"{name} {t:.1f} s" for name, t in runtimes.items())
          + f"; wrote {', '.join(map(str, readmes))}")
    return EXIT_OK


if __name__ == "__main__":
    cli_support.exit_process(main())
