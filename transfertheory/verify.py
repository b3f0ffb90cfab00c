r"""``python -m transfertheory.verify``: run the registered claims and print the audit table.

Every claim of :mod:`transfertheory.claims` (FaF Eqs. 10–17, Lemma 3.3, Thms 2.2 and 3.4–3.9, Fig. 5,
and the errata) is checked in a size profile — ``--quick`` (default; CPU, seconds per claim),
``--full`` or ``--paper`` (the paper's d = 500; GPU recommended) — and reported as one row as soon as it
finishes: claim, what its check requires (|z| ≤ 4, z > 4, |Δ| ≤ tol, paper fails by > 0, …), the measured
statistic, whether it held, status, seconds, and under it the source (KNOWN-ERRATUM rows: and their entry in
docs/errata.md), within the terminal's width (:mod:`transfertheory.audit_table`). When stdout is not a
terminal, a progress line precedes each claim. ``--explore N`` checks each selected claim with a strategy
at N fresh random points; a failing point is printed with a one-line command that reproduces it. See
docs/verify.md.

``--backend`` (else ``TRANSFERTHEORY_BACKEND``, else the profile's: NumPy for ``--quick``, auto otherwise) is the
simulators' array backend. ``--workers N`` runs the claims in N worker processes (default one per core,
:func:`transfertheory.cli_support.worker_count`; :func:`transfertheory.cli_support.in_workers`; claims that share a
cached computation, the registry's ``shares``, run one after the other in one of them): every claim's points
and seeds are fixed by its id, so the table is the serial run's, row for row and in its order.

With ``--paper`` (or ``--store DIR`` in any profile, or ``--scheduler ADDRESS``) the points of the simulation and
Monte Carlo claims run through the sweep engine (:mod:`transfertheory.claims.sweep_points`): one stored point per
claim point, in ``--store`` (default: under the cache directory,
:func:`transfertheory.sweep.runner.default_store`), on ``--workers N`` local processes (default: the cores) or the
Dask cluster at ``--scheduler``; a rerun recomputes no stored point, so an audit stopped by Ctrl-C resumes where it
stopped, and the claims are judged from the stored rows (the table is the in-process audit's). The closed-form
claims run in this process. ``--explore`` always runs in this process.

Exit status: 0 when every claim has its expected status (PASS or KNOWN-ERRATUM); 1 when any claim
is FAIL, UNEXPECTED-PASS or ERROR; 2 on a usage error (argparse, or ``-k`` matching no claim — answered
from the claim modules' source, before the claims are imported); 3 when the JSON or CSV report or the ``--store``
folder cannot be written (checked before any claim runs; the reports are written under a temporary name and renamed), a
dependency of the claims (hypothesis) is missing, or the backend is unknown or unusable; 130 when
interrupted (Ctrl-C), with one line ``interrupted`` and no report written.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import random
import sys
import time
from dataclasses import replace

from . import _memory, cli_support
from .audit_table import (COLUMNS, AuditTable, format_listing, format_notes, format_table, outcome_record,
                          progress_line, table_width)
from .claim_index import select_ids
from .params import DRAWS, SEED

__all__ = ["build_parser", "main", "outcome_record", "format_table"]

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
            "hypothesis missing, or backend unknown or unusable"),
    )
    size = parser.add_mutually_exclusive_group()
    for name, text in (("quick", "CI size, CPU, seconds per claim (default)"), ("full", "d = 64-100"),
                       ("paper", "the paper's size, d = 500 (GPU recommended); simulation and Monte Carlo claims through the "
                        "sweep engine: resumable, --workers, --scheduler")):
        size.add_argument(f"--{name}", dest="profile", action="store_const", const=name, help=text)
    parser.set_defaults(profile="quick")
    parser.add_argument("-k", dest="pattern", metavar="PATTERN",
                        help="only claims whose id, source or method contains PATTERN (a glob on the id if it has * ? [)")
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
    parser.add_argument("--max-memory", type=_memory.arg_type, metavar="SIZE",
                        help=f"memory the checks may use, e.g. 64G (default: ${_memory.ENV_VAR}, else the memory "
                        "available); a check estimated above it is an ERROR naming its sizes")
    cli_support.add_workers_argument(parser, "claims (with the sweep engine: its points; default there: the cores)")
    sweep = parser.add_argument_group(
        "sweep engine (simulation and Monte Carlo claims: resumable, parallel, distributed; docs/sweeps.md)")
    sweep.add_argument("--store", metavar="DIR", help="run the sampling claims' points through the sweep engine, "
                       "stored in DIR (with --paper by default, under ~/.cache/transfertheory/sweeps); a rerun "
                       "recomputes no stored point")
    sweep.add_argument("--scheduler", metavar="ADDRESS",
                       help="run them on the Dask cluster at ADDRESS (tcp://host:8786; the store on a shared path)")
    return parser


def _run_claims(task):
    """Outcomes of claims run one after the other in one process, ``task`` = (claim ids, profile, explore, seed),
    each with its claim record replaced by its id (the record holds functions that do not pickle): a module-level
    function, so that a worker process can run it; :func:`main` puts the records back."""
    from . import claims

    claim_ids, profile, explore, seed = task
    return [replace(claims.run(claim_id, profile, explore=explore, seed=seed), claim=claim_id) for claim_id in claim_ids]


def _outcomes_in_order(selected, groups, results):
    """Yield the outcome of every claim of ``selected`` in its order, from ``results``: one list of outcomes per
    group of ``groups`` (:func:`~transfertheory.cli_support.task_groups`, in their order), each yielded once it
    and those before it are done."""
    done = {}
    for claim in selected:
        while claim.id not in done:
            done.update((outcome.claim, outcome) for outcome in next(results))
        yield replace(done.pop(claim.id), claim=claim)


def _previous_seconds(json_path, claim_ids, profile):
    """Each claim's ``seconds`` in an earlier ``--json`` record of ``profile`` at ``json_path`` (inf where the record,
    or the claim in it, is missing): the costs with which the workers start the longest claims first."""
    records = []
    if json_path:
        try:
            with open(json_path, encoding="utf-8") as record:
                records = json.load(record)
        except (OSError, ValueError):
            records = []
    records = records if isinstance(records, list) else []
    seconds = {r.get("claim"): r.get("seconds") for r in records if isinstance(r, dict) and r.get("profile") == profile}
    return [s if isinstance(s, (int, float)) else math.inf for s in map(seconds.get, claim_ids)]


#: the order in which claims without a recorded time start, by kind: in the quick audit of the idle 2-core machine a
#: simulation claim took 1.55 s on average (30 claims, 46.4 s), a Monte Carlo one 0.38 s (31, 11.8 s) and an exact
#: one 0.18 s (31, 5.7 s) — simulations first, so that the longest do not start last (docs/benchmarks.md, "Worker
#: processes"); a check against an external reference (no claim yet) ranks with the exact ones
KIND_START_RANK = {"simulation": 2, "monte-carlo": 1, "exact": 0, "external": 0}


def _start_costs(groups, seconds):
    """One sort key per task group (costliest first, :func:`~transfertheory.cli_support.start_order`): a group with
    a claim of unknown time — (1, the highest :data:`KIND_START_RANK` of its kinds) — before every group whose
    claims all have a recorded time, (0, their sum in seconds), so that without a ``--json`` record the simulations
    start first."""
    costs = []
    for group in groups:
        recorded = [seconds[claim.id] for claim in group]
        costs.append((0, sum(recorded)) if all(math.isfinite(s) for s in recorded)
                     else (1, max(KIND_START_RANK[claim.kind] for claim in group)))
    return costs


def _in_process_outcomes(args, selected, profile, seed, workers=None):
    """Yield the outcomes of ``selected`` in their order (:func:`_outcomes_in_order`), run in this process or in
    ``workers`` worker processes (None: ``--workers``, else one per core), the costliest tasks first by the seconds of
    the previous ``--json`` record, and claims without one first, simulations before Monte Carlo before exact checks
    (:func:`_start_costs`)."""
    groups = cli_support.task_groups(selected)  # the claims that share a computation: one task
    workers = cli_support.worker_count(args.workers, len(groups)) if workers is None else workers
    seconds = dict(zip([claim.id for claim in selected],
                       _previous_seconds(args.json, [claim.id for claim in selected], args.profile)))
    tasks = [(tuple(claim.id for claim in group), profile, args.explore or 0, seed) for group in groups]
    return _outcomes_in_order(selected, groups, cli_support.in_workers(
        _run_claims, tasks, workers, _start_costs(groups, seconds)))


def _write(records, json_path, csv_path):
    with cli_support.staged_files() as stage:
        _write_staged(stage, records, json_path, csv_path)


def _write_staged(stage, records, json_path, csv_path):
    if json_path:
        with open(stage(json_path), "w", encoding="utf-8") as fh:
            json.dump(records, fh, indent=1, ensure_ascii=False)
    if csv_path:
        with open(stage(csv_path), "w", encoding="utf-8", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(records[0]) if records else list(COLUMNS))
            writer.writeheader()
            for record in records:
                writer.writerow({**record, "params": json.dumps(record["params"])})


def _emit(bar, text):
    """Print ``text`` on stdout now (above the progress bar, if one is shown), so that rows stream as claims finish."""
    bar.write(text, file=sys.stdout)
    sys.stdout.flush()


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
    """Usage, output paths and backend, before the claims are imported; returns the profile's backend override."""
    if args.seed is not None and not args.explore:
        parser.error("--seed only applies with --explore")
    if args.explore and (args.store is not None or args.scheduler is not None):
        parser.error("--explore checks fresh random points in this process: not with --store or --scheduler")
    if args.pattern and select_ids(args.pattern, args.profile) == []:
        parser.error(f"no claim matches -k {args.pattern!r} in profile {args.profile}")
    cli_support.require_writable(EXIT_ENVIRONMENT, files=[("--json", args.json), ("--csv", args.csv)],
                                 folders=[("--store", _store(args))])
    if _store(args) is not None:
        from .sweep.store import Store  # (pyarrow: only for a run through the sweep engine)

        try:
            Store(_store(args)).check_usable()
        except ValueError as error:  # a folder that is not a sweep store: one line, before any claim
            raise cli_support.CommandLineError(f"--store: {error}", EXIT_USAGE) from None
    choice = cli_support.backend_choice(args.backend)
    return None if choice is None else cli_support.resolve_backend(choice)


def _totals_line(claims, outcomes, profile, elapsed) -> str:
    """The audit's last line, after a blank one: "91 claims (quick): 83 PASS, 8 KNOWN-ERRATUM; 201 points in 43.0 s"
    (a status no claim has is left out, but PASS and KNOWN-ERRATUM)."""
    counts = {s: sum(o.status == s for o in outcomes) for s in claims.STATUSES}
    return (f"\n{len(outcomes)} claims ({profile}): "
            + ", ".join(f"{counts[s]} {s}" for s in claims.STATUSES if counts[s] or s in (claims.PASS, claims.KNOWN_ERRATUM))
            + f"; {sum(len(o.points) for o in outcomes)} points in {elapsed:.1f} s")


def _through_engine(args, selected, profile, backend) -> dict:
    """claim id → outcome of the sampling claims of ``selected``, judged from the rows of the sweep engine's store
    (computing the points it lacks first); {} when the claims run in this process (:func:`_store`)."""
    store = _store(args)
    if store is None:
        return {}
    from .claims import sweep_points
    from .sweep.runner import SweepRunner

    sampling = [claim for claim in selected if sweep_points.through_engine(claim)]
    print(f"{len(sampling)} simulation and Monte Carlo claims through the sweep engine, store {store} (resumable; "
          f"the other {len(selected) - len(sampling)} in this process)", flush=True)
    runner = SweepRunner(store, workers=args.workers, scheduler=args.scheduler, backend=backend,
                         progress=False if args.no_progress or not sys.stderr.isatty() else None)
    return sweep_points.run_claims(sampling, profile, runner)


@cli_support.entry_point
def main(argv=None):
    """Entry point; returns the exit status (module docstring)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    backend = _check_before_work(parser, args)
    _memory.set_limit(args.max_memory)
    try:
        from . import claims
    except ImportError as err:  # hypothesis (the strategies' library) comes with the test extra
        print(f"error: the claims need {err.name or err}: pip install 'transfertheory[test]'", file=sys.stderr)
        return EXIT_ENVIRONMENT

    selected = claims.select(args.pattern, profile=args.profile)
    if not selected:
        parser.error(f"no claim matches -k {args.pattern!r} in profile {args.profile}")
    width = table_width()
    if args.list:
        print(format_listing(selected, width))
        return EXIT_OK
    seed = None
    if args.explore:
        seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
        print(f"exploring {args.explore} random points per claim with a strategy, seed {seed} "
              f"(repeat with --explore {args.explore} --seed {seed})")
    from tqdm.auto import tqdm

    profile = claims.get_profile(args.profile)
    profile = profile if backend is None else replace(profile, backend=backend)
    outcomes, records, start = [], [], time.perf_counter()
    stored = _through_engine(args, selected, profile, backend)
    in_process = [claim for claim in selected if claim.id not in stored]
    table = AuditTable([claim.id for claim in selected], width)
    progress_lines = not args.no_progress and not sys.stdout.isatty()
    # with the sweep engine, the workers are its own
    results = _in_process_outcomes(args, in_process, profile, seed, workers=1 if stored else None)
    with tqdm(selected, desc=f"verify --{args.profile}", unit="claim", file=sys.stderr, leave=False,
              disable=True if args.no_progress else None) as bar:  # None: no bar when stderr is not a terminal
        _emit(bar, table.header())
        for index, claim in enumerate(bar, 1):  # the bar is closed also on Ctrl-C, before the one line "interrupted"
            bar.set_postfix_str(claim.id)
            if progress_lines:
                _emit(bar, progress_line(index, len(selected), claim.id))
            outcomes.append(stored[claim.id] if claim.id in stored else next(results))
            records.append(outcome_record(outcomes[-1]))
            _emit(bar, table.row(records[-1]))
    elapsed = time.perf_counter() - start
    for outcome in outcomes:
        for line in format_notes(outcome, args.profile, width):
            print(line)
    print(_totals_line(claims, outcomes, args.profile, elapsed))
    try:
        _write(records, args.json, args.csv)
    except OSError as err:
        print(f"error: cannot write the report: {err}", file=sys.stderr)
        return EXIT_ENVIRONMENT
    return EXIT_UNEXPECTED if any(o.unexpected for o in outcomes) else EXIT_OK


if __name__ == "__main__":
    cli_support.exit_process(main())
