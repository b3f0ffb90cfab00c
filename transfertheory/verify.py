r"""``python -m transfertheory.verify``: run the registered claims and print the audit table — a front over pytest.

Every claim of :mod:`transfertheory.claims` is one pytest test of the plugin :mod:`transfertheory.audit_plugin`;
this command runs them with ``pytest.main`` in a size profile — ``--quick`` (default; CPU, seconds per claim),
``--full`` or ``--paper`` (the paper's d = 500; GPU recommended) — and the plugin prints one row per claim as soon
as it and those above it have finished: claim, what its check requires (|z| ≤ 4, z > 4, |Δ| ≤ tol, paper fails by
> 0, …), the measured statistic, whether it held, status, seconds, and under it the source (and the claim's entry
in docs/errata.md), within the terminal's width (:mod:`transfertheory.audit_table`); ``--json`` / ``--csv`` write
the records. Only the package's claim tests run: no configuration file, conftest, cache or auto-loaded plugin of
the current folder (:func:`pytest_args`).

The options map onto pytest's: ``-k`` is pytest's keyword expression, matched against the claim id, its source and
its method (a pattern with ``*``, ``?`` or ``[`` is a glob on the id); ``--workers N`` is pytest-xdist's ``-n N``
with ``--dist loadgroup`` (default one per core; 1: this process), so that claims sharing a cached computation run
in one worker; ``--explore N`` checks each claim with a strategy at N fresh points drawn from hypothesis's
``--hypothesis-seed`` (``--seed``; default random, printed). ``--backend`` (else ``TRANSFERTHEORY_BACKEND``, else the
profile's) is the simulators' array backend. With ``--paper`` (or ``--store DIR``, or ``--scheduler ADDRESS``) the
points of the simulation and Monte Carlo claims run through the sweep engine first
(:mod:`transfertheory.claims.sweep_points`; resumable; its own ``--workers``), and the claims are judged from its
stored rows. See docs/verify.md.

Exit status: 0 when every claim has its expected status (PASS or KNOWN-ERRATUM); 1 when any claim is FAIL,
UNEXPECTED-PASS or ERROR; 2 on a usage error (argparse, a ``-k`` that is not a keyword expression or matches no
claim); 3 when the JSON or CSV report or the ``--store`` folder cannot be written (checked before any claim runs;
the reports are written under a temporary name and renamed), hypothesis is missing, or the backend is unknown or
unusable; 130 after Ctrl-C (SIGINT), 128 + the signal's number after SIGTERM (143) or SIGHUP (129): one line
``interrupted`` (``interrupted (SIGTERM)``, ``interrupted (SIGHUP)``), no report written, no worker left; 141 (128 + SIGPIPE), silently, when the reader of stdout has gone
(``verify | head``).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import signal
import sys
from pathlib import Path

from . import _memory, cli_support
from .audit_table import COLUMNS, outcome_record, table_width
from .params import DRAWS, SEED
from .processes import Interrupted, stop_signals_to, warn_oversubscribed
from .threads import available_cores

__all__ = ["COLUMNS", "build_parser", "main", "outcome_record", "pytest_args"]

EXIT_OK, EXIT_UNEXPECTED, EXIT_USAGE, EXIT_ENVIRONMENT = 0, 1, 2, 3


def build_parser():
    """The ``python -m transfertheory.verify`` argument parser."""
    parser = argparse.ArgumentParser(
        prog="python -m transfertheory.verify",
        description="Audit the papers' claims: run every registered check (simulation, Monte Carlo, exact identity) "
        "and print, as each finishes, the claim, what its check requires (e.g. |z| <= 4), the measured value, whether "
        "it held, the status, the seconds and the claim's source. Exit 0 when every claim has "
        "its expected status (PASS, or KNOWN-ERRATUM where the paper is wrong: a paper error), 1 otherwise.",
        epilog=cli_support.exit_status_epilog(
            f"{EXIT_OK} all expected", f"{EXIT_UNEXPECTED} unexpected FAIL / UNEXPECTED-PASS / ERROR",
            f"{EXIT_USAGE} usage error", f"{EXIT_ENVIRONMENT} report file or --store not writable (checked before any "
            "claim runs), "
            "hypothesis missing, or backend unknown or unusable", "128+N after signal N (SIGTERM 143, SIGHUP 129; 141: stdout closed)"),
    )
    cli_support.add_profile_arguments(parser, "CI size, CPU, seconds per claim (default)", "d = 64-100",
                                      "the paper's size, d = 500 (GPU recommended); simulation and Monte Carlo claims "
                                      "through the sweep engine: resumable, --workers, --scheduler")
    parser.add_argument("-k", dest="pattern", metavar="EXPRESSION",
                        help="pytest's -k: only claims whose id, source or method match the keyword EXPRESSION "
                        "(e.g. 'faf.thm3 and not finite'); a glob on the id if it has * ? [")
    parser.add_argument("--json", metavar="PATH", help="write the results as a JSON list of objects")
    parser.add_argument("--csv", metavar="PATH", help="write the results as CSV")
    parser.add_argument("--explore", type=DRAWS.arg_type(), metavar="N",
                        help="check each claim that has a strategy at N fresh random points instead of the fixed ones")
    parser.add_argument("--seed", type=SEED.arg_type(), metavar="S",
                        help="seed of --explore (default: random, printed so that the run can be repeated)")
    parser.add_argument("--list", action="store_true", help="list the selected claims and exit")
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress bar (and, when stdout is not a terminal, no progress lines)")
    cli_support.add_backend_argument(parser, help_text="array backend of the simulation claims (without it and "
                                     "the variable: the profile's, NumPy for --quick, auto otherwise)")
    cli_support.add_memory_argument(parser, "checks", "a check estimated above it is an ERROR naming its sizes")
    cli_support.add_workers_argument(parser, "claims (with the sweep engine: its points; default there: the cores)")
    sweep = parser.add_argument_group(
        "sweep engine (simulation and Monte Carlo claims: resumable, parallel, distributed; docs/sweeps.md)")
    sweep.add_argument("--store", metavar="DIR", help="run the sampling claims' points through the sweep engine, "
                       "stored in DIR (with --paper by default, under ~/.cache/transfertheory/sweeps); a rerun "
                       "recomputes no stored point")
    sweep.add_argument("--scheduler", metavar="ADDRESS",
                       help="run them on the Dask cluster at ADDRESS (tcp://host:8786; the store on a shared path)")
    return parser


def _store(args):
    """The sweep engine's store of this run (--store, or the default store with --paper or --scheduler), or None
    when the claims run in this process (also for --explore, whose points are fresh each run)."""
    if args.explore or args.list or (args.store is None and args.profile != "paper" and args.scheduler is None):
        return None
    if args.store is not None:
        return args.store
    from .sweep.runner import default_store  # (pandas: not for --help, --list or an in-process audit)

    return str(default_store())


def _check_before_work(parser, args):
    """Usage, output paths, hypothesis and backend, before any claim is collected; returns the profile's backend
    override (None: the profile's)."""
    if args.seed is not None and not args.explore:
        parser.error("--seed only applies with --explore")
    if args.list and (args.json or args.csv):
        parser.error("--json and --csv write an audit's records: not with --list")
    if args.explore and (args.store is not None or args.scheduler is not None):
        parser.error("--explore checks fresh random points in this process: not with --store or --scheduler")
    if args.pattern and not any(ch in args.pattern for ch in "*?["):
        from _pytest.mark import expression  # pytest's own -k grammar

        try:
            expression.Expression.compile(args.pattern)
        except (SyntaxError, getattr(expression, "ParseError", SyntaxError)) as err:  # ParseError before pytest 9
            parser.error(f"-k {args.pattern!r} is not a pytest keyword expression: {err}")
    cli_support.require_writable(EXIT_ENVIRONMENT, files=[("--json", args.json), ("--csv", args.csv)],
                                 folders=[("--store", _store(args))])
    if _store(args) is not None:
        from .sweep.store import Store  # (pyarrow: only for a run through the sweep engine)

        try:
            Store(_store(args)).check_usable()
        except ValueError as error:  # a folder that is not a sweep store: one line, before any claim
            raise cli_support.CommandLineError(f"--store: {error}", EXIT_USAGE) from None
    if importlib.util.find_spec("hypothesis") is None:  # the strategies' library comes with the test extra
        raise cli_support.CommandLineError("the claims need hypothesis: pip install 'transfertheory[test]'",
                                           EXIT_ENVIRONMENT)
    choice = cli_support.backend_choice(args.backend)
    return None if choice is None else cli_support.resolve_backend(choice)


def _progress(args) -> str:
    """The plugin's progress mode: a bar on a terminal's stderr, lines when stdout is not a terminal, or none."""
    if args.no_progress:
        return "none"
    return "lines" if not sys.stdout.isatty() else "bar" if sys.stderr.isatty() else "none"


def pytest_args(args, backend, workers=None, audit=True) -> list[str]:
    """The ``pytest.main`` arguments of a ``verify`` command line: this package's claim tests only (no
    configuration file, conftest or cache of the current folder; no unraisable-exception plugin, whose hook would
    print a Ctrl-C that lands in a garbage-collector callback as a warning instead of letting the command line's
    hook deliver it again: :func:`~transfertheory.cli_support.entry_point`), the audit plugin's options, ``-k`` (a pattern
    with ``*``, ``?`` or ``[`` is a glob on the claim id), and the worker processes (pytest-xdist: ``workers``, else
    ``--workers``, else one per core; none for ``--list`` and with the sweep engine, whose workers are its own).
    ``audit=False``: only collect the claims, silently."""
    package = Path(__file__).parent
    argv = [str(package / "audit_plugin.py"), "-c", os.devnull, "--rootdir", str(package.parent), "--noconftest",
            "--disable-plugin-autoload", "-p", "_hypothesis_pytestplugin", "-p", "transfertheory.audit_plugin",
            "-p", "no:cacheprovider", "-p", "no:warnings", "-p", "no:terminal", "-p", "no:unraisableexception",
            "--capture=no", "--claims-profile", args.profile, "--audit-width", str(table_width()),
            "--audit-progress", _progress(args)] + (["--audit"] if audit else [])
    if args.pattern:
        argv += ["--claims-glob" if any(ch in args.pattern for ch in "*?[") else "-k", args.pattern]
    options = {"--audit-json": args.json, "--audit-csv": args.csv, "--claims-backend": backend,
               "--claims-explore": args.explore, "--hypothesis-seed": args.seed, "--claims-store": _store(args),
               "--claims-scheduler": args.scheduler}
    argv += [str(a) for flag, value in options.items() if value is not None for a in (flag, value)]
    if args.list or not audit:
        return argv + ["--collect-only"]
    if _store(args) is not None:  # the engine's own workers
        return argv + ([] if args.workers is None else ["--claims-engine-workers", str(args.workers)])
    workers = workers or (available_cores() if args.workers is None else args.workers)
    return argv + ([] if workers == 1 else ["-p", "xdist.plugin", "-n", str(workers), "--dist", "loadgroup"])


def _signals_stop_pytest(received):
    """While pytest runs: SIGINT, SIGTERM and SIGHUP stop it as Ctrl-C does (pytest's KeyboardInterrupt ends the
    session and the xdist workers); the first signal's number is appended to ``received`` (exit status 128 + it),
    later ones are ignored so that the workers' teardown finishes. Only the main thread handles signals, and a
    signal ignored before stays ignored (:func:`~transfertheory.processes.stop_signals_to`)."""

    def handle(signum, frame):
        if not received:
            received.append(signum)
            raise KeyboardInterrupt

    return stop_signals_to(handle)


class _Session:
    """Plugin object of one run: its configuration (whose stash says whether a report failed) and whether pytest
    stopped on a KeyboardInterrupt (a signal, or Ctrl-C raised inside a check)."""

    config, interrupted, collected = None, False, None

    def pytest_configure(self, config):
        self.config = config

    def pytest_collection_finish(self, session):
        self.collected = len(session.items)

    def pytest_keyboard_interrupt(self, excinfo):
        self.interrupted = True


def _workers_for_the_selection(parser, args, backend):
    """With ``-k`` and worker processes: the claims it selects are collected here first (the worker processes start
    only for a selection, each a fresh interpreter that imports the claims), so that a pattern matching nothing is a
    usage error without them and a selection of k claims gets at most k workers. None: no such limit."""
    requested = available_cores() if args.workers is None else args.workers
    if not args.pattern or args.list or _store(args) is not None or requested == 1:
        return None
    import pytest

    counter = _Session()
    pytest.main(pytest_args(args, backend, audit=False), plugins=[counter])
    if counter.interrupted:
        raise KeyboardInterrupt
    if not counter.collected:
        parser.error(f"no claim matches -k {args.pattern!r} in profile {args.profile}")
    return min(requested, counter.collected)


@cli_support.entry_point
def main(argv=None):
    """Entry point; returns the exit status (module docstring)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    backend = _check_before_work(parser, args)
    _memory.set_limit(args.max_memory)  # through the environment: the worker processes read it too
    import pytest

    from .audit_plugin import STDOUT_CLOSED, WRITE_FAILED

    session, received, code = _Session(), [], None
    try:
        with _signals_stop_pytest(received):
            workers = _workers_for_the_selection(parser, args, backend)
            if not args.list and _store(args) is None:  # (the engine's workers warn for themselves)
                warn_oversubscribed(workers or args.workers or 1)
            code = pytest.main(pytest_args(args, backend, workers), plugins=[session])
    except KeyboardInterrupt:  # (before pytest ran: while the selection was collected)
        session.interrupted = True
    if session.config is not None and session.config.stash.get(STDOUT_CLOSED, False):
        return 128 + signal.SIGPIPE  # the reader of the table has gone: nothing to say, to nobody
    if received or session.interrupted:  # cli_support.entry_point: one line, exit 128 + the signal's number
        raise Interrupted((received or [signal.SIGINT])[0])
    if code == pytest.ExitCode.NO_TESTS_COLLECTED:
        parser.error(f"no claim matches -k {args.pattern!r} in profile {args.profile}")
    if code == pytest.ExitCode.USAGE_ERROR:
        return EXIT_USAGE
    if session.config is not None and session.config.stash.get(WRITE_FAILED, False):
        return EXIT_ENVIRONMENT
    return EXIT_OK if code == pytest.ExitCode.OK else EXIT_UNEXPECTED


if __name__ == "__main__":
    cli_support.exit_process(main())
