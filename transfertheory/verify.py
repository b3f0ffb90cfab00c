r"""``python -m transfertheory.verify``: run the registered claims and print the audit table.

Every claim of :mod:`transfertheory.claims` (FaF Eqs. 10–17, Lemma 3.3, Thms 2.2 and 3.4–3.9, Fig. 5,
and the errata) is checked in a size profile — ``--quick`` (default; CPU, seconds per claim),
``--full`` or ``--paper`` (the paper's d = 500; GPU recommended) — and reported as one row: claim,
source, method, discrepancy, tolerance, status, seconds. KNOWN-ERRATUM rows link to their entry in
docs/errata.md. ``--explore N`` checks each selected claim with a strategy at N fresh random points;
a failing point is printed with a one-line command that reproduces it. See docs/verify.md.

``--backend`` (else ``TRANSFERTHEORY_BACKEND``, else the profile's: NumPy for ``--quick``, auto otherwise) is the
simulators' array backend.

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

from . import cli_support
from .claim_index import select_ids
from .params import DRAWS, SEED

__all__ = ["build_parser", "main", "outcome_record", "format_table"]

COLUMNS = ("claim", "source", "method", "discrepancy", "tolerance", "status", "seconds")
EXIT_OK, EXIT_UNEXPECTED, EXIT_USAGE, EXIT_ENVIRONMENT = 0, 1, 2, 3


def build_parser():
    """The ``python -m transfertheory.verify`` argument parser."""
    parser = argparse.ArgumentParser(
        prog="python -m transfertheory.verify",
        description="Audit the papers' claims: run every registered check (simulation, Monte Carlo, exact identity) "
        "and print claim, source, method, discrepancy, tolerance, status and seconds. Exit 0 when every claim has "
        "its expected status (PASS, or KNOWN-ERRATUM where the paper is wrong), 1 otherwise.",
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
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    cli_support.add_backend_argument(parser, help_text="array backend of the simulation claims (without it and "
                                     "the variable: the profile's, NumPy for --quick, auto otherwise)")
    return parser


def _number(value):
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def outcome_record(outcome):
    """One JSON/CSV object for a claim's :class:`~transfertheory.claims.Outcome`."""
    from .claims import reproduction

    claim, worst = outcome.claim, outcome.worst
    result = worst.result
    failing = outcome.failing
    return {
        "claim": claim.id,
        "source": claim.source,
        "method": claim.method or "",
        "kind": claim.kind,
        "statement": claim.statement,
        "profile": outcome.profile,
        "expected": claim.expected,
        "status": outcome.status,
        "discrepancy": _number(result.discrepancy) if result else None,
        "tolerance": _number(result.tolerance) if result else None,
        "z": _number(result.z) if result else None,
        "threshold": _number(result.threshold) if result else None,
        "allowance": claim.allowance,
        "allowance_reason": claim.allowance_reason,
        "points": len(outcome.points),
        "confirmations": sum(p.first is not None for p in outcome.points),
        "seconds": round(outcome.seconds, 3),
        "erratum": claim.erratum_link or "",
        "detail": (result.detail if result else worst.error) or "",
        "params": dict(worst.params),
        "example": reproduction(claim, failing[0].params, outcome.profile) if failing else "",
    }


def _fmt(value):
    if value is None:
        return "-"
    if value == 0:
        return "0"
    return f"{value:.3g}"


def format_table(records):
    """The audit table (one line per claim; KNOWN-ERRATUM rows end with their errata link)."""
    rows = [[r["claim"], r["source"], r["method"] or "-", _fmt(r["discrepancy"]), _fmt(r["tolerance"]), r["status"],
             f"{r['seconds']:.2f}", r["erratum"] if r["status"] == "KNOWN-ERRATUM" else ""] for r in records]
    header = [*COLUMNS, ""]
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(header, widths)).rstrip()]
    lines.append("  ".join("-" * w for w in widths[:-1]))
    lines += ["  ".join(str(x).ljust(w) for x, w in zip(row, widths)).rstrip() for row in rows]
    return "\n".join(lines)


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
    try:
        from . import claims
    except ImportError as err:  # hypothesis (the strategies' library) comes with the test extra
        print(f"error: the claims need {err.name or err}: pip install 'transfertheory[test]'", file=sys.stderr)
        return EXIT_ENVIRONMENT

    selected = claims.select(args.pattern, profile=args.profile)
    if not selected:
        parser.error(f"no claim matches -k {args.pattern!r} in profile {args.profile}")
    if args.list:
        for claim in selected:
            print(f"{claim.id:30s} {claim.expected:14s} {claim.kind:12s} {claim.source}")
        return EXIT_OK
    seed = None
    if args.explore:
        seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
        print(f"exploring {args.explore} random points per claim with a strategy, seed {seed} "
              f"(repeat with --explore {args.explore} --seed {seed})")
    from tqdm.auto import tqdm

    profile = claims.get_profile(args.profile)
    profile = profile if backend is None else replace(profile, backend=backend)
    outcomes, start = [], time.perf_counter()
    with tqdm(selected, desc=f"verify --{args.profile}", unit="claim", file=sys.stderr, leave=False,
              disable=True if args.no_progress else None) as bar:  # None: no bar when stderr is not a terminal
        for claim in bar:  # the bar is closed also on Ctrl-C, before the one line "interrupted"
            bar.set_postfix_str(claim.id)
            outcomes.append(claims.run(claim, profile, explore=args.explore or 0, seed=seed))
    elapsed = time.perf_counter() - start
    records = [outcome_record(o) for o in outcomes]
    print(format_table(records))
    for outcome in outcomes:
        for point in outcome.points:
            if point.first is not None:
                second = point.result.z if point.result is not None else None
                print(f"\n{outcome.claim.id}: at {dict(point.params)} the first stage was unexpected (z = "
                      f"{point.first.z:+.2f}); re-checked with {claims.CONFIRM_FACTOR}x the draws: {point.status}"
                      + (f" (z = {second:+.2f})" if second is not None else ""))
        for point in outcome.failing:
            why = point.error or (point.result.detail if point.result else "")
            print(f"\n{outcome.claim.id}: {point.status} at {dict(point.params) or 'its fixed point'} — {why}\n"
                  f"  reproduce: {claims.reproduction(outcome.claim, point.params, args.profile)}")
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
