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
simulators' array backend. ``--workers N`` runs the claims in N worker processes (default one per
core, :func:`transfertheory.cli_support.worker_count`; :func:`transfertheory.cli_support.in_workers`): every claim's points and seeds are fixed by its id, so the table is
the serial run's, row for row and in its order.

Exit status: 0 when every claim has its expected status (PASS or KNOWN-ERRATUM); 1 when any claim
is FAIL, UNEXPECTED-PASS or ERROR; 2 on a usage error (argparse, or ``-k`` matching no claim — answered
from the claim modules' source, before the claims are imported); 3 when the JSON or CSV report cannot be
written (checked before any claim runs; the reports are written under a temporary name and renamed), a
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
            f"{EXIT_USAGE} usage error", f"{EXIT_ENVIRONMENT} report file not writable (checked before any claim runs), "
            "hypothesis missing, or backend unknown or unusable"),
    )
    size = parser.add_mutually_exclusive_group()
    for name, text in (("quick", "CI size, CPU, seconds per claim (default)"), ("full", "d = 64-100"),
                       ("paper", "the paper's size, d = 500 (GPU recommended)")):
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
    cli_support.add_workers_argument(parser, "claims")
    return parser


def _run_claim(task):
    """Outcome of one claim, ``task`` = (claim id, profile, explore, seed), with the claim record replaced by its
    id (the record holds functions that do not pickle): a module-level function, so that a worker process can run
    it; :func:`main` puts the record back."""
    from . import claims

    claim_id, profile, explore, seed = task
    return replace(claims.run(claim_id, profile, explore=explore, seed=seed), claim=claim_id)


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


def _check_before_work(parser, args):
    """Usage, output paths and backend, before the claims are imported; returns the profile's backend override."""
    if args.seed is not None and not args.explore:
        parser.error("--seed only applies with --explore")
    if args.pattern and select_ids(args.pattern, args.profile) == []:
        parser.error(f"no claim matches -k {args.pattern!r} in profile {args.profile}")
    cli_support.require_writable(EXIT_ENVIRONMENT, files=[("--json", args.json), ("--csv", args.csv)])
    choice = cli_support.backend_choice(args.backend)
    return None if choice is None else cli_support.resolve_backend(choice)


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
    table = AuditTable([claim.id for claim in selected], width)
    progress_lines = not args.no_progress and not sys.stdout.isatty()
    workers = cli_support.worker_count(args.workers, len(selected))
    costs = _previous_seconds(args.json, [claim.id for claim in selected], args.profile)  # the longest start first
    results = cli_support.in_workers(_run_claim, [(claim.id, profile, args.explore or 0, seed) for claim in selected],
                                     workers, costs)
    with tqdm(selected, desc=f"verify --{args.profile}", unit="claim", file=sys.stderr, leave=False,
              disable=True if args.no_progress else None) as bar:  # None: no bar when stderr is not a terminal
        _emit(bar, table.header())
        for index, claim in enumerate(bar, 1):  # the bar is closed also on Ctrl-C, before the one line "interrupted"
            bar.set_postfix_str(claim.id)
            if progress_lines:
                _emit(bar, progress_line(index, len(selected), claim.id))
            outcomes.append(replace(next(results), claim=claim))
            records.append(outcome_record(outcomes[-1]))
            _emit(bar, table.row(records[-1]))
    elapsed = time.perf_counter() - start
    for outcome in outcomes:
        for line in format_notes(outcome, args.profile, width):
            print(line)
    counts = {s: sum(o.status == s for o in outcomes) for s in claims.STATUSES}
    print(f"\n{len(outcomes)} claims ({args.profile}): "
          + ", ".join(f"{counts[s]} {s}" for s in claims.STATUSES if counts[s] or s in (claims.PASS, claims.KNOWN_ERRATUM))
          + f"; {sum(len(o.points) for o in outcomes)} points in {elapsed:.1f} s")
    try:
        _write(records, args.json, args.csv)
    except OSError as err:
        print(f"error: cannot write the report: {err}", file=sys.stderr)
        return EXIT_ENVIRONMENT
    return EXIT_UNEXPECTED if any(o.unexpected for o in outcomes) else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
