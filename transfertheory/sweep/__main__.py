r"""``python -m transfertheory.sweep``: run a simulator over a parameter grid into a resumable Parquet store.

    python -m transfertheory.sweep list                                   # experiments and named sweeps
    python -m transfertheory.sweep run faf_fig1 --store runs/fig1 --profile paper --workers 2
    python -m transfertheory.sweep run my_sweep.toml --store runs/mine --set sigma=0.5
    python -m transfertheory.sweep run faf_fig1 --store /shared/fig1 --scheduler tcp://host:8786
    python -m transfertheory.sweep status runs/fig1                       # done / total / failed
    python -m transfertheory.sweep table runs/fig1 --out fig1.csv         # the tidy table of completed points

Exit codes: 0 every point done (or the command succeeded), 1 some points failed (recorded in the store;
``--retry-failed`` reruns them), 2 usage error (unknown sweep or experiment, bad spec, a grid above
``--max-points``, a folder that is not a store, a damaged manifest, an unwritable ``--store`` or ``--out``, ``--out``
inside the store, ``--max-memory`` with ``--scheduler``: checked before any point runs; a bad
``TRANSFERTHEORY_MAX_MEMORY``; the store could not be written
during the run, e.g. a full disk), 3 array backend unknown (``TRANSFERTHEORY_BACKEND``) or
unusable, 4 some point refused by the memory guard (recorded in the store like a failure,
marked ``refused``; ``--retry-failed`` reruns it), 130 interrupted (Ctrl-C), 143 SIGTERM, 129 SIGHUP (the
workers stopped, completed points stay in the store). The plumbing — stop signals, backend checks, output-path
checks, atomic writes — is :mod:`transfertheory.cli_support`, shared with every other command line. See
docs/sweeps.md.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import cli_support
from .._memory import ENV_VAR as MEMORY_VAR
from .._memory import MemoryLimitError, set_limit
from ..params import COUNT
from .named import NAMED_SWEEPS, named_sweep

__all__ = ["build_parser", "main"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
#: the default of --max-points: spec.MAX_POINTS, which a test holds equal (not imported for --help: the specs load
#: the simulators)
_MAX_POINTS = 100_000


def build_parser():
    """The ``python -m transfertheory.sweep`` argument parser."""
    parser = argparse.ArgumentParser(prog="python -m transfertheory.sweep",
                                     description="Sweeps of the package's simulators over parameter grids, cached "
                                     "in a resumable Parquet store, on local worker processes or a Dask cluster.",
                                     epilog=cli_support.exit_status_epilog(
                                         "0 every point done", "1 some points failed (--retry-failed reruns them)",
                                         "2 usage error, or --store / --out not writable",
                                         f"{cli_support.EXIT_BACKEND} backend unknown or unusable",
                                         f"{cli_support.EXIT_MEMORY} some point refused by the memory guard"))
    sub = parser.add_subparsers(dest="command", required=True, metavar="{list,run,status,table}")
    sub.add_parser("list", help="the registered experiments and named sweeps, with their sizes")
    run = sub.add_parser("run", help="compute the points of a sweep the store lacks")
    run.add_argument("sweep", metavar="NAME_OR_TOML", help="a named sweep (see list) or a TOML spec file")
    run.add_argument("--store", required=True, metavar="DIR", help="the store directory (created if absent)")
    run.add_argument("--profile", metavar="PROFILE", help="the spec's profile, e.g. quick or paper (named sweeps: quick by default; `list` names each "
                     "one's profiles)")
    run.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                     help="fix a parameter (replaces an axis), or set draws or seed; VALUE is a TOML value, e.g. 0.5 "
                     "or [1, 2]")
    run.add_argument("--workers", type=COUNT.arg_type(), metavar="N",
                     help="local worker processes (default: the cores; never more than the points to run, a "
                     "warning above the cores); BLAS threads per worker = cores // N")
    run.add_argument("--scheduler", metavar="ADDRESS", help="run on the Dask cluster at ADDRESS (tcp://host:8786)")
    cli_support.add_backend_argument(run, help_text="array backend of every point")
    cli_support.add_memory_argument(run, "points (each, in its worker process)",
                                    f"a point estimated above it is recorded refused (exit {cli_support.EXIT_MEMORY}); "
                                    "not with --scheduler (a cluster's workers read their own "
                                    f"{MEMORY_VAR})")
    run.add_argument("--retry-failed", action="store_true", help="rerun only the points whose last attempt failed")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.add_argument("--max-points", type=COUNT.arg_type(), default=_MAX_POINTS, metavar="N",
                     help=f"refuse a grid of more than N points (default {_MAX_POINTS}), before building it")
    status = sub.add_parser("status", help="done / total / failed points of a store")
    status.add_argument("store", metavar="DIR")
    table = sub.add_parser("table", help="the tidy table of every completed point (CSV on stdout, or --out)")
    table.add_argument("store", metavar="DIR")
    table.add_argument("--out", metavar="FILE", help="write FILE.csv or FILE.parquet instead of printing (a FIFO "
                       "or a device such as /dev/stdout: CSV unless its name ends in .parquet)")
    return parser


def _list():
    from ..sim import experiments
    from .spec import parse_spec

    records = experiments()
    width = max(map(len, [*records, *NAMED_SWEEPS]))
    for name, record in records.items():
        print(f"experiment {name:<{width}}  {record.paper}: {record.description} "
              f"({len(record.fields)} parameters: {', '.join(record.schema)})")
    for name, raw in NAMED_SWEEPS.items():
        sizes = ", ".join(f"{p} {parse_spec(raw, name, p).size()} points" for p in raw["profiles"])
        print(f"sweep      {name:<{width}}  {raw['experiment']}: {raw['description']} ({sizes})")
    return EXIT_OK


def _spec(args):
    from .spec import load_toml, parse_assignment, parse_spec

    overrides = dict(map(parse_assignment, args.overrides))
    if args.sweep.endswith(".toml") or Path(args.sweep).is_file():
        return parse_spec(load_toml(args.sweep), Path(args.sweep).stem, args.profile, overrides, args.max_points)
    return parse_spec(named_sweep(args.sweep), args.sweep, args.profile or "quick", overrides, args.max_points)


def _run(args):
    from .engine import run_sweep  # (pandas, pyarrow and the simulators: not for --help)
    from .store import Store

    if args.max_memory is not None and args.scheduler is not None:
        raise ValueError(f"--max-memory does not reach the workers of a Dask cluster: set {MEMORY_VAR} in their "
                         "environment instead")
    spec = _spec(args)
    set_limit(args.max_memory)  # through the environment: the local worker processes read it too
    backend = cli_support.backend_choice(args.backend)  # an unknown name in the variable exits 3 here
    if backend is not None and args.scheduler is None:
        cli_support.resolve_backend(backend)  # an unusable backend fails here, before any point (a cluster's: on it)
    cli_support.require_writable(EXIT_USAGE, folders=[("--store", args.store)])
    print(f"{spec.name}: {spec.size()} points in the grid; checking the store {args.store}", flush=True)
    Store(args.store).create()  # a folder that is neither a store nor empty is refused here
    report = run_sweep(spec, args.store, workers=args.workers, scheduler=args.scheduler, backend=backend,
                       retry_failed=args.retry_failed, progress=False if args.no_progress else None)
    print(f"{spec.name}: {report.done}/{report.total} points done, {report.failed} failed, "
          f"{report.computed} attempted in this run")
    if report.failed:
        for pid, record in sorted(Store(args.store).failures().items()):
            print(f"{record.get('status', 'failed')} {pid} {record.get('point')}: {record['error']} "
                  f"(traceback: {record['log']})")
        print("rerun the failed points with --retry-failed")
        return cli_support.EXIT_MEMORY if report.refused else EXIT_FAILED
    return EXIT_OK


def _store(path):
    from .store import Store

    return Store(path).require()  # NotAStoreError (a ValueError): one line, exit 2


def _listed(kind, paths, limit=20):
    """One line per path and why (``paths``: path → why; at most ``limit``, then a count) of the things ``status``
    reports."""
    lines = [f"  {kind} {path}: {why}" for path, why in list(paths.items())[:limit]]
    return lines + ([f"  … and {len(paths) - limit} more {kind} file(s)"] if len(paths) > limit else [])


def _status(args):
    store = _store(args.store)
    found, manifest, failed = store.scan(), store.manifest(), store.failures()
    done = set(found.done)
    total = len(set(manifest) | done)
    busy = len(set(found.claimed) & (set(manifest) - done))
    print(f"{args.store}: {len(done)} done / {total} total, {len(set(failed) - done)} failed, "
          f"{total - len(done | set(failed))} not run" + (f" ({busy} being computed now)" if busy else ""))
    lines = _listed("damaged", found.damaged) + _listed("ignored", found.foreign)
    if found.damaged or found.foreign:
        inside = any(p.parent == store.points for p in [*found.damaged, *found.foreign])
        lines.append("damaged and foreign files are never counted nor read" + (
            "; the next run moves those under points/ into _sweep/quarantine/ (their points recomputed)"
            if inside else ""))
    lines += _unknown_experiments(manifest, set(manifest) - done - set(failed))
    print("\n".join(lines) if lines else "", end="\n" if lines else "")
    return EXIT_OK


def _unknown_experiments(manifest, not_run) -> list:
    """The line saying which of the ``not_run`` manifest entries name an experiment that ``sweep run`` does not know
    (``sweep list``), or none: the claims' points are ``verify --store``'s to compute, any other is never run."""
    from ..sim import experiments

    named = [manifest[pid].get("experiment") if isinstance(manifest[pid], dict) else None for pid in not_run]
    unknown = [name for name in named if name not in experiments()]
    if not unknown:
        return []
    return [f"  {len(unknown)} manifest entr{'y' if len(unknown) == 1 else 'ies'} not run by sweep run: experiment(s) "
            f"{', '.join(map(repr, sorted(set(unknown), key=str)))} not in sweep list (a claim's point is computed "
            f"by verify --store; remove any other from _sweep/manifest.json)"]


def _table(args):
    special = args.out is not None and cli_support.special_file(args.out)  # a FIFO or a device: CSV unless .parquet
    if args.out is not None and not special and not args.out.endswith((".csv", ".parquet")):
        raise ValueError(f"--out: FILE must end in .csv or .parquet, got {args.out}")
    store = _store(args.store)
    if args.out is not None and Path(args.out).resolve().is_relative_to(store.root.resolve()):  # (links resolved)
        raise ValueError(f"--out: {args.out} is inside the store {args.store}, which holds only its own files; "
                         f"write it elsewhere")
    cli_support.require_writable(EXIT_USAGE, files=[("--out", args.out)])
    found = store.scan()
    ignored = len(found.damaged) + len(found.foreign)
    if ignored:
        print(f"note: {ignored} damaged or foreign file(s) in {args.store} ignored (sweep status lists them)",
              file=sys.stderr)
    table = store.table()
    if args.out is None:
        table.to_csv(sys.stdout, index=False)
        return EXIT_OK
    with cli_support.staged_files() as stage:
        write = table.to_parquet if args.out.endswith(".parquet") else table.to_csv
        write(stage(args.out), index=False)
    print(f"{len(table)} rows of {table['point_id'].nunique() if len(table) else 0} points -> {args.out}",
          file=sys.stderr if special else sys.stdout)  # (not into the table, when --out is /dev/stdout)
    return EXIT_OK


@cli_support.entry_point
def main(argv=None) -> int:
    """Entry point; the exit code (module docstring). Errors are one line on stderr, never a traceback."""
    args = build_parser().parse_args(argv)
    command = {"list": lambda a: _list(), "run": _run, "status": _status, "table": _table}[args.command]
    try:
        return command(args)
    except MemoryLimitError:
        raise  # cli_support.entry_point: one line, exit 4
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # stdout closed early (``table DIR | head``)
        sys.stderr.close()
        return EXIT_OK
    except OSError as error:
        print(f"error: {cli_support.os_error_line(error)}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    cli_support.exit_process(main())
